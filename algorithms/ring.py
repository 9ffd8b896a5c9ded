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

from ccxml.frontend.algorithm import Options, check_ranks, check_root, program
from ccxml.frontend.chunk import Program
from ccxml.vocab.wire import Coll


def _reduce_scatter_steps(prog: Program, p: int, k_: int, final) -> None:
    """Ring reduce-scatter over p blocks of K chunks; ``final(r, c)`` is where r's block lands.
    Running sums are kept in the output where it has room for every block, else in scratch."""
    partial = prog.scratch if prog.collective.coll is Coll.REDUCESCATTER else prog.output
    for c in range(k_):
        for k in range(p - 1):
            last = k == p - 2
            for r in range(p):
                b, nxt = (r - 1 - k) % p, (r + 1) % p
                i = b * k_ + c
                src = prog.input(r, i) if k == 0 else partial(r, i)
                out = final(nxt, c) if last else partial(nxt, i)
                src.reduce(prog.input(nxt, i), chan=c, out=out)


def reducescatter(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("ring", Coll.REDUCESCATTER, p, p * k_, options)
    _reduce_scatter_steps(prog, p, k_, final=lambda r, c: prog.output(r, c))
    return prog


def _all_gather_steps(prog: Program, p: int, k_: int, first) -> None:
    """Ring all-gather of the blocks in the output; ``first(r, c)`` is r's own block to send."""
    for c in range(k_):
        for k in range(p - 1):
            for r in range(p):
                b, nxt = (r - k) % p, (r + 1) % p
                src = first(r, c) if k == 0 else prog.output(r, b * k_ + c)
                src.copy(prog.output(nxt, b * k_ + c), chan=c)


def allgather(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("ring", Coll.ALLGATHER, p, p * k_, options)
    for r in range(p):
        prog.input(r, 0, k_).copy(prog.output(r, r * k_, k_))
    _all_gather_steps(prog, p, k_, first=lambda r, c: prog.input(r, c))
    return prog


def allreduce(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("ring", Coll.ALLREDUCE, p, p * k_, options)
    _reduce_scatter_steps(prog, p, k_, final=lambda r, c: prog.output(r, r * k_ + c))
    _all_gather_steps(prog, p, k_, first=lambda r, c: prog.output(r, r * k_ + c))
    return prog


def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("ring", Coll.BROADCAST, p, p * k_, options, root=root)
    prog.input(root, 0, p * k_).copy(prog.output(root, 0, p * k_))
    for j in range(p * k_):
        for d in range(p - 1):
            r = (root + d) % p
            src = prog.input(r, j) if d == 0 else prog.output(r, j)
            src.copy(prog.output((r + 1) % p, j), chan=j % k_)
    return prog


def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("ring", Coll.REDUCE, p, k_, options, root=root)
    for c in range(k_):
        acc = prog.input((root + 1) % p, c)
        for k in range(p - 1):
            r = (root + 2 + k) % p
            out = prog.output(r, c) if r == root else prog.scratch(r, c)
            acc = acc.reduce(prog.input(r, c), chan=c, out=out)
    return prog


def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("ring", Coll.SCATTER, p, k_, options, root=root)
    prog.input(root, root * k_, k_).copy(prog.output(root, 0, k_))
    rank = lambda d: (root + d) % p   # noqa: E731 - distance from the root -> rank
    for c in range(k_):
        for t in range(1, p):
            for d in range(min(t, p - 1)):
                owner = rank(p - t + d)                       # whose block moves in this slot
                src = prog.input(root, owner * k_ + c) if d == 0 else prog.scratch(rank(d), owner * k_ + c)
                dst_rank = rank(d + 1)
                dst = prog.output(dst_rank, c) if dst_rank == owner else prog.scratch(dst_rank, owner * k_ + c)
                src.copy(dst, chan=c)
    return prog


def gather(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("ring", Coll.GATHER, p, k_, options, root=root)
    prog.input(root, 0, k_).copy(prog.output(root, root * k_, k_))
    rank = lambda d: (root + d) % p   # noqa: E731 - distance from the root -> rank
    for c in range(k_):
        for t in range(1, p):
            for d in range(p - 1, t - 1, -1):
                owner = rank(d - t + 1)
                src = prog.input(owner, c) if t == 1 else prog.scratch(rank(d), owner * k_ + c)
                dst_rank = rank(d + 1)
                dst = prog.output(root, owner * k_ + c) if dst_rank == root else prog.scratch(dst_rank, owner * k_ + c)
                src.copy(dst, chan=c)
    return prog


COLLECTIVES = {
    Coll.ALLREDUCE: allreduce,
    Coll.ALLGATHER: allgather,
    Coll.REDUCESCATTER: reducescatter,
    Coll.BROADCAST: broadcast,
    Coll.REDUCE: reduce,
    Coll.SCATTER: scatter,
    Coll.GATHER: gather,
}

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("ring")
