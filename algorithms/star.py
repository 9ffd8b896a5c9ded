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

from ccxml.algorithms.mesh import accumulate, peer_channel, peers, root_gather, root_scatter, slot
from ccxml.frontend.algorithm import Options, check_ranks, check_root, program
from ccxml.frontend.chunk import Program
from ccxml.vocab.wire import Coll


def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("star", Coll.BROADCAST, p, k_, options, root=root)
    prog.input(root, 0, k_).copy(prog.output(root, 0, k_))
    for c in range(k_):
        for j in peers(root, p):
            prog.input(root, c).copy(prog.output(j, c), chan=peer_channel(root, j, p, c))
    return prog


def gather(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_gather("star", p, root, options)


def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("star", Coll.REDUCE, p, k_, options, root=root)
    for c in range(k_):
        for j in peers(root, p):
            prog.input(j, c).copy(prog.scratch(root, slot(j, root, p) * k_ + c),
                                  chan=peer_channel(j, root, p, c))
    for c in range(k_):
        accumulate(prog, root, p, k_, c, own=prog.input(root, c), final=prog.output(root, c))
    return prog


def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_scatter("star", p, root, options)


COLLECTIVES = {
    Coll.BROADCAST: broadcast,
    Coll.REDUCE: reduce,
    Coll.SCATTER: scatter,
    Coll.GATHER: gather,
}

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("star")
