"""NB — Nonuniform Bruck (HCCL ``*_nb.cc``; hccl-algorithms.md §8).

ns = ⌈log2 p⌉ (the bit length of p−1) steps per phase for any p. Distances grow 1, 2, 4, … in every
collective; blocks are never permuted (block j is rank j's). All arithmetic is mod p;
n_k = ⌊(p−1+2^k)/2^(k+1)⌋ as in NHR.

* ReduceScatter, step k, d = 2^k: rank r sends to r+d the blocks {r+d+2d·i : i < n_k}; the receiver
  reduces them into its copy (the last step into the output). Rank r ends with block r.
* AllGather, step k, d = 2^k: rank r sends to r+d the blocks {r−i : i < n}, n = 2^k except in the
  last step of a p that is not a power of two, where n = p − 2^(ns−1) (Bruck concatenation with a
  truncated last step). Distances increase, as in HCCL's code (the doc's prose says decrease, §12.1).
* AllReduce = ReduceScatter + AllGather on p blocks, 2·ns steps.
* Scatter, step k, d = 2^k, δ = (r − root) mod p: a rank with δ < d (and δ < p−d in the last step)
  sends to r+d the blocks of the ranks at root-distance δ+d+2d·i < p. This is the reference's clean
  "useful-data" rule; HCCL's code sends n_k block indices and for p ∈ {7, 11, 13–15, 19, 21–23,
  25–31, …} also ships a wrapped block nobody needs (p = 7: rank 1 → 3 carries block 0 too).
* Broadcast = Scatter + AllGather on p blocks, 2·ns steps (the binomial "binary" variant HCCL uses
  for small data or p = 2 is not generated).

Every block is ``channels`` chunks and channel c carries chunk c of each block. Blocks are equal
(MSCCL chunks are equal fractions of the buffer), so NB's skipping of empty blocks never applies.
Touching blocks sent to the same peer in one step travel as one step, and each rank runs its steps
in order (:class:`ccxml.algorithms.nhr.StepOrder`), as HCCL's single stream per rank does.

Cost (HCCL doc, n bytes): RS ⌈log p⌉α + (p−1)/p·n(β+γ); AG ⌈log p⌉α + (p−1)/p·nβ;
AR 2⌈log p⌉α + 2(p−1)/p·nβ + (p−1)/p·nγ; SC ⌈log p⌉α + (p−1)/p·nβ; BC 2⌈log p⌉α + 2(p−1)/p·nβ.
"""
from __future__ import annotations

from ccxml.algorithm import Options, check_ranks, check_root, program
from ccxml.algorithms.nhr import StepOrder, Where, n_blocks, ns, transfer
from ccxml.chunk import Program
from ccxml.wire import Buffer, Coll


def reduce_scatter_steps(prog: Program, order: StepOrder, p: int, k_: int, own: Where, acc: Where,
                         final: Where) -> None:
    """NB reduce-scatter: ``own`` is a rank's initial copy of a block, ``acc`` its running sum,
    ``final`` where rank r's block r lands in the last step."""
    summed = [set() for _ in range(p)]
    cur = lambda r, j, c: acc(r, j, c) if j in summed[r] else own(r, j, c)  # noqa: E731
    steps = ns(p)
    for k in range(steps):
        d, n = 1 << k, n_blocks(p, k)
        moves = [(r, (r + d) % p, [(r + d + 2 * d * i) % p for i in range(n)]) for r in range(p)]
        for c in range(k_):
            for r, to, blocks in moves:
                transfer(prog, r, to, blocks, c, cur, cur, final if k == steps - 1 else acc)
        for _, to, blocks in moves:
            summed[to].update(blocks)
        order.next_step()


def all_gather_steps(prog: Program, order: StepOrder, p: int, k_: int, src: Where,
                     dst: Where) -> None:
    """NB all-gather: rank r starts with block r (read with ``src``) and stores blocks in ``dst``."""
    steps = ns(p)
    for k in range(steps):
        d = 1 << k
        n = p - d if (k == steps - 1 and p != 2 * d) else d
        for c in range(k_):
            for r in range(p):
                transfer(prog, r, (r + d) % p, [(r - i) % p for i in range(n)], c, src, dst)
        order.next_step()


def scatter_steps(prog: Program, order: StepOrder, p: int, root: int, k_: int, src: Where,
                  dst: Where) -> None:
    """NB scatter from ``root`` (useful-data rule): afterwards rank r holds block r."""
    steps = ns(p)
    for k in range(steps):
        d = 1 << k
        senders = min(d, p - d) if k == steps - 1 else d
        for c in range(k_):
            for delta in range(senders):
                r = (root + delta) % p
                blocks = [(root + e) % p for e in range(delta + d, p, 2 * d)]
                transfer(prog, r, (r + d) % p, blocks, c, src, dst)
        order.next_step()


# ---- the collectives ------------------------------------------------------------------------------

def reducescatter(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("nb", Coll.REDUCESCATTER, p, p * k_, options)
    reduce_scatter_steps(prog, StepOrder(prog), p, k_,
                         own=lambda r, j, c: (Buffer.INPUT, j * k_ + c),
                         acc=lambda r, j, c: (Buffer.SCRATCH, j * k_ + c),
                         final=lambda r, j, c: (Buffer.OUTPUT, c))
    return prog


def allgather(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("nb", Coll.ALLGATHER, p, p * k_, options)
    out = lambda r, j, c: (Buffer.OUTPUT, j * k_ + c)   # noqa: E731
    for r in range(p):
        prog.input(r, 0, k_).copy(prog.output(r, r * k_, k_))
    all_gather_steps(prog, StepOrder(prog), p, k_,
                     src=lambda r, j, c: (Buffer.INPUT, c) if j == r else out(r, j, c), dst=out)
    return prog


def allreduce(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("nb", Coll.ALLREDUCE, p, p * k_, options)
    # channel c works on its own p chunks, so blocks that touch make one transfer
    at = lambda buf: lambda r, j, c: (buf, c * p + j)   # noqa: E731
    order = StepOrder(prog)
    reduce_scatter_steps(prog, order, p, k_, own=at(Buffer.INPUT), acc=at(Buffer.OUTPUT),
                         final=at(Buffer.OUTPUT))
    all_gather_steps(prog, order, p, k_, src=at(Buffer.OUTPUT), dst=at(Buffer.OUTPUT))
    return prog


def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("nb", Coll.BROADCAST, p, p * k_, options, root=root)
    out = lambda r, j, c: (Buffer.OUTPUT, c * p + j)   # noqa: E731
    src = lambda r, j, c: (Buffer.INPUT, c * p + j) if r == root else out(r, j, c)  # noqa: E731
    prog.input(root, 0, p * k_).copy(prog.output(root, 0, p * k_))
    order = StepOrder(prog)
    scatter_steps(prog, order, p, root, k_, src, out)
    all_gather_steps(prog, order, p, k_, src, out)
    return prog


def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("nb", Coll.SCATTER, p, k_, options, root=root)
    prog.input(root, root * k_, k_).copy(prog.output(root, 0, k_))

    def held(r: int, j: int, c: int) -> tuple[Buffer, int]:
        if r == root:
            return Buffer.INPUT, j * k_ + c
        return (Buffer.OUTPUT, c) if j == r else (Buffer.SCRATCH, c * p + j)

    scatter_steps(prog, StepOrder(prog), p, root, k_, held, held)
    return prog


COLLECTIVES = {
    Coll.ALLREDUCE: allreduce,
    Coll.ALLGATHER: allgather,
    Coll.REDUCESCATTER: reducescatter,
    Coll.BROADCAST: broadcast,
    Coll.SCATTER: scatter,
}

if __name__ == "__main__":
    from ccxml.algorithm import run_script
    run_script("nb")
