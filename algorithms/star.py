"""Star (HCCL ``broadcast_star.cc``, ``gather_star.cc``; hccl-algorithms.md §6).

The root talks to every other rank directly, in one step; the other ranks talk only to the root.
HCCL loops over the peers on one stream; here each peer has its own thread block, so the root's
p−1 transfers run side by side (peers spread over channels as in Mesh, at most 32 per channel).
With ``channels`` = K the buffer (or block) is K chunks and channel instance c carries chunk c.

* Broadcast, 1 step: root sends the whole buffer to every rank.
* Gather, 1 step: every rank sends its block to root, which places rank j's block at j·block
  (root's own block: local copy).
* Reduce, 1 step: every rank sends its buffer to root, which receives them side by side into
  scratch and reduces them with its own. HCCL has no Star Reduce template (§12.11); this is the
  rooted reduction the Star description names.
* Scatter, 1 step: root sends block j to rank j (own block: local copy). Also not an HCCL
  template (§12.11).

Cost (HCCL doc, n = bytes between root and each rank; root-side serialization ignored): α + nβ
(Reduce adds (p−1)nγ at the root).
"""
from __future__ import annotations

from ccxml.algorithms.mesh import by_peer, root_gather, root_scatter, slots
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import star
from ccxml.tables.plan import Copy, Reduce, fixed
from ccxml.vocab.wire import Buffer, Coll


@algorithm("star", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("star", Coll.BROADCAST, p, k, options, root=root)
    prog.input(root, 0, k).copy(prog.output(root, 0, k))
    run(prog, Copy(star.bcast(p, 1, root), loc=fixed(Buffer.OUTPUT), first=fixed(Buffer.INPUT)),
        instances=k, channel=by_peer(p))
    return prog


@algorithm("star", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("star", Coll.REDUCE, p, k, options, root=root)
    run(prog, Reduce(star.reduce(p, 1, root), own=fixed(Buffer.INPUT), acc=fixed(Buffer.OUTPUT),
                     land=slots(p, k)), instances=k, channel=by_peer(p))
    return prog


@algorithm("star", Coll.SCATTER)
def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_scatter("star", p, root, options)


@algorithm("star", Coll.GATHER)
def gather(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_gather("star", p, root, options)


COLLECTIVES = registry.get("star").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("star")
