"""Ring (HCCL ``*_ring.cc``; hccl-algorithms.md §3).

Ranks form the ring 0 → 1 → … → p−1 → 0; every rank sends only to r+1 and receives only
from r−1. With ``channels`` = K, every block is K chunks and channel c carries chunk c of each
block, so K rings run side by side.

* ReduceScatter, p−1 steps: in step k rank r sends block r−1−k to r+1, which reduces it with its
  own copy; afterwards rank r holds block r fully reduced.
* AllGather, p−1 steps: in step k rank r sends block r−k to r+1, which stores it.
* AllReduce = ReduceScatter + AllGather on p blocks, 2(p−1) steps.
* Broadcast: the data is cut into p chunks pipelined along the chain root → root+1 → … → root−1.
* Reduce: not chunked; the whole buffer is accumulated along root+1 → root+2 → … → root.
* Scatter: root sends the block of rank root−t in slot t (farthest first); every rank forwards what
  it received in the previous slot and keeps the last, its own.
* Gather: the mirror image, toward the root.

Cost (HCCL doc, n bytes): RS (p−1)α + (p−1)/p·n(β+γ); AG (p−1)α + (p−1)/p·nβ;
AR 2(p−1)α + 2(p−1)/p·nβ + (p−1)/p·nγ; SC, GA (p−1)α + (p−1)/p·nβ; RD (p−1)(α + nβ + nγ);
BC (pipelined, p chunks) (2p−2)(α + nβ/p).
"""
from __future__ import annotations

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import ring
from ccxml.tables.plan import Copy, Reduce, by_block, fixed
from ccxml.vocab.wire import Buffer, Coll

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


@algorithm("ring", Coll.ALLREDUCE)
def allreduce(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.ALLREDUCE, p, p * k, options)
    run(prog, Reduce(ring.reduce_scatter(p), own=by_block(I, k), acc=by_block(O, k)), instances=k,
        order="channels")
    run(prog, Copy(ring.all_gather(p), loc=by_block(O, k)), instances=k, order="channels")
    return prog


@algorithm("ring", Coll.ALLGATHER)
def allgather(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.ALLGATHER, p, p * k, options)
    for r in range(p):
        prog.input(r, 0, k).copy(prog.output(r, r * k, k))
    run(prog, Copy(ring.all_gather(p), loc=by_block(O, k), first=fixed(I)), instances=k, order="channels")
    return prog


@algorithm("ring", Coll.REDUCESCATTER)
def reducescatter(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.REDUCESCATTER, p, p * k, options)
    run(prog, Reduce(ring.reduce_scatter(p), own=by_block(I, k), acc=by_block(S, k), final=fixed(O)),
        instances=k, order="channels")
    return prog


@algorithm("ring", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.BROADCAST, p, p * k, options, root=root)
    prog.input(root, 0, p * k).copy(prog.output(root, 0, p * k))
    run(prog, Copy(ring.block_bcast(p, p), loc=by_block(O, k), first=by_block(I, k)),
        members=_from(root, p), instances=k)
    return prog


@algorithm("ring", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.REDUCE, p, k, options, root=root)
    run(prog, Reduce(ring.chain_reduce(p, 1), own=fixed(I), acc=fixed(S), final=fixed(O),
                     owner=lambda j: 0), members=_from(root, p), instances=k, order="channels")
    return prog


@algorithm("ring", Coll.SCATTER)
def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.SCATTER, p, k, options, root=root)
    prog.input(root, root * k, k).copy(prog.output(root, 0, k))

    def held(r: int, j: int, c: int):
        """The block of member j (from the root): in r's output if it is r's own, else in scratch."""
        owner = (root + j) % p
        return (O, c, 1) if r == owner else (S, owner * k + c, 1)

    run(prog, Copy(ring.scatter(p), loc=held, first=lambda r, j, c: (I, (root + j) % p * k + c, 1)),
        members=_from(root, p), instances=k, order="channels")
    return prog


@algorithm("ring", Coll.GATHER)
def gather(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("ring", Coll.GATHER, p, k, options, root=root)
    prog.input(root, 0, k).copy(prog.output(root, root * k, k))

    def held(r: int, j: int, c: int):
        """The block of member j (from the root): in the root's output, else in scratch."""
        owner = (root + j) % p
        return (O, owner * k + c, 1) if r == root else (S, owner * k + c, 1)

    run(prog, Copy(ring.gather(p), loc=held, first=fixed(I)), members=_from(root, p), instances=k,
        order="channels")
    return prog


def _from(root: int, p: int) -> list[int]:
    """The ranks in ring order from the root (the tables' member 0)."""
    return [(root + i) % p for i in range(p)]


COLLECTIVES = registry.get("ring").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("ring")
