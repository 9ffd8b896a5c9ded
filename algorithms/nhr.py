"""NHR — Nonuniform Hierarchical Ring (HCCL ``*_nhr.cc``; hccl-algorithms.md §7).

ns = ⌈log2 p⌉ (the bit length of p−1) steps per phase for any p, no special case for p not a power
of two. Step k moves n_k = ⌊(p−1+2^k)/2^(k+1)⌋ blocks (≈ p/2, p/4, …, 1: the "non-uniform"
slicing; Σ n_k = p−1). All rank and block arithmetic is mod p.

* ReduceScatter, step k = 0…ns−1, d = 2^k: rank r sends to r−d the blocks {r−d−2d·i : i < n_k};
  the receiver reduces them into its copy (the last step into the output). Rank r ends with block r.
* AllGather, step s = 0…ns−1, d = 2^(ns−1−s), n = ⌊(p−1+d)/(2d)⌋: rank r sends to r+d the blocks
  {r−2d·i : i < n}, which the receiver stores (the time-reverse of ReduceScatter).
* AllReduce = ReduceScatter + AllGather on p blocks, 2·ns steps.
* Scatter, step k, d = 2^k: the nR ranks nearest the root (δ = (root−r) mod p < nR, with nR = p−d
  in the last step when p is not a power of two, else d) send to r−d the blocks {r−d−2d·i} of the
  ranks at root-distance δ+d+2d·i < p. This is the useful-data rule: HCCL's code takes i < n_k and
  for p ∈ {7, 11, 13–15, 19, 21–23, 25–31, …} also sends a block the sender never received and
  nobody needs (p = 7, root 0: rank 6 → 4 carries block 0 as well); otherwise the two agree.
* Broadcast = Scatter + AllGather on p blocks, 2·ns steps.

Blocks: stand-alone ReduceScatter, AllGather and Scatter keep block order (block j is rank j's);
AllReduce and Broadcast place logical block j at physical block ``slice_map(p)[j]`` (HCCL's tree map,
§7.1), which makes most per-step transfers one contiguous range. Touching blocks going to the same
peer in one step travel as one step (HCCL's ``MergeSlices``). Every block is ``channels`` chunks and
channel c carries chunk c of each block, so that many instances run side by side. HCCL rounds its
AllReduce/Broadcast blocks to 128 bytes (§0.4); MSCCL chunks are equal fractions of the buffer, so
ccxml's blocks are equal. The one-shot small-message variants are not generated.

HCCL runs a rank's steps one after another on one stream, and only the per-rank order and pairing are
normative (§0.3); MSCCL runs a rank's thread blocks in parallel, so every transfer a rank makes in
step k+1 is made to wait for its transfers of step k (:class:`StepOrder`).

Cost (HCCL doc, n bytes): RS ⌈log2 p⌉α + (p−1)/p·n(β+γ); AG ⌈log2 p⌉α + (p−1)/p·nβ;
AR 2⌈log2 p⌉α + 2(p−1)/p·nβ + (p−1)/p·nγ; SC ⌈log2 p⌉α + (p−1)/p·nβ; BC 2⌈log2 p⌉α + 2(p−1)/p·nβ.
"""
from __future__ import annotations

from typing import Callable

from ccxml.algorithm import Options, check_ranks, check_root, program
from ccxml.chunk import Program
from ccxml.wire import Buffer, Coll

#: (rank, block, channel) -> (buffer, chunk index) of that rank's copy of the block
Where = Callable[[int, int, int], tuple[Buffer, int]]


def ns(p: int) -> int:
    """⌈log2 p⌉ computed as HCCL does: the bit length of p−1."""
    return (p - 1).bit_length()


def n_blocks(p: int, k: int) -> int:
    """n_k: how many blocks step k moves (the integers in 0…p−1 that are ≡ 2^k mod 2^(k+1))."""
    return (p - 1 + (1 << k)) >> (k + 1)


def slice_map(p: int) -> list[int]:
    """HCCL's tree map (``NHRBase::GetRankMapping``): physical block of each logical block."""
    tree, size = list(range(p)), p
    for step in range(ns(p)):
        if n_blocks(p, step) <= 1:
            break
        new, odd = list(tree), False
        for start in range(0, p, size):
            end = min(start + size, p)
            for i in range(start, end):
                o = i - start
                new[start + (o // 2 if o % 2 == 0 else (o + size) // 2)] = tree[i]
            odd = odd or (end - start) % 2 == 1
        tree = new
        if odd:
            break
        size //= 2
    out = [0] * p
    for i, t in enumerate(tree):
        out[t] = i
    return out


class StepOrder:
    """Run each rank's algorithm steps in order, as HCCL's single stream per rank does.

    Call :meth:`next_step` after issuing every transfer of one algorithm step. The first send a
    rank then issues to each peer on a channel depends on the last send and the last receive of
    every connection it used on that channel in its previous active step. The Chunk API infers
    only data dependencies, so this reaches one level down, to the IR steps the program issued.
    """

    def __init__(self, prog: Program):
        self.gpus = prog.algo.gpus
        self.mark = [len(g.pending) for g in self.gpus]
        self.prev: dict[tuple[int, int], list] = {}     # (rank, chan) -> steps to wait for

    def next_step(self) -> None:
        for g, start in zip(self.gpus, self.mark):
            last: dict[int, dict] = {}
            for st in g.pending[start:]:
                if st.send_peer < 0 and st.recv_peer < 0:
                    continue
                seen = last.setdefault(st.chan, {})
                if st.send_peer >= 0 and ("s", st.send_peer) not in seen:
                    for before in self.prev.get((g.id, st.chan), ()):
                        st.add_dep(before)
                seen["s" if st.send_peer >= 0 else "r", max(st.send_peer, st.recv_peer)] = st
            for chan, conns in last.items():
                self.prev[(g.id, chan)] = list(conns.values())
        self.mark = [len(g.pending) for g in self.gpus]


def transfer(prog: Program, sender: int, receiver: int, blocks, chan: int, src: Where, dst: Where,
             out: Where | None = None) -> None:
    """Move ``blocks`` from ``sender`` to ``receiver`` on ``chan``: copy into ``dst``, or, with
    ``out``, reduce with ``dst`` into ``out``. Blocks whose chunks touch go as one step."""
    locs = sorted((src(sender, j, chan), dst(receiver, j, chan),
                   out(receiver, j, chan) if out else None) for j in blocks)
    runs: list[list] = []
    for loc in locs:
        if runs and all(b is None or (a[0] == b[0] and a[1] + runs[-1][1] == b[1])
                        for a, b in zip(runs[-1][0], loc)):
            runs[-1][1] += 1
        else:
            runs.append([loc, 1])
    for (s, d, o), n in runs:
        a = prog.chunk(sender, s[0], s[1], n)
        b = prog.chunk(receiver, d[0], d[1], n)
        if o is None:
            a.copy(b, chan=chan)
        else:
            a.reduce(b, chan=chan, out=prog.chunk(receiver, o[0], o[1], n))


# ---- the phases, on logical blocks --------------------------------------------------------------

def reduce_scatter_steps(prog: Program, order: StepOrder, p: int, k_: int, own: Where, acc: Where,
                         final: Where) -> None:
    """NHR reduce-scatter: ``own`` is a rank's initial copy of a block, ``acc`` its running sum,
    ``final`` where rank r's block r lands in the last step."""
    summed = [set() for _ in range(p)]             # blocks a rank has already reduced into acc
    cur = lambda r, j, c: acc(r, j, c) if j in summed[r] else own(r, j, c)  # noqa: E731
    steps = ns(p)
    for k in range(steps):
        d, n = 1 << k, n_blocks(p, k)
        moves = [(r, (r - d) % p, [(r - d - 2 * d * i) % p for i in range(n)]) for r in range(p)]
        for c in range(k_):
            for r, to, blocks in moves:
                transfer(prog, r, to, blocks, c, cur, cur, final if k == steps - 1 else acc)
        for _, to, blocks in moves:
            summed[to].update(blocks)
        order.next_step()


def all_gather_steps(prog: Program, order: StepOrder, p: int, k_: int, src: Where,
                     dst: Where) -> None:
    """NHR all-gather: rank r starts with block r (read with ``src``) and stores blocks in ``dst``."""
    steps = ns(p)
    for s in range(steps):
        d = 1 << (steps - 1 - s)
        n = (p - 1 + d) // (2 * d)
        for c in range(k_):
            for r in range(p):
                transfer(prog, r, (r + d) % p, [(r - 2 * d * i) % p for i in range(n)], c, src, dst)
        order.next_step()


def scatter_steps(prog: Program, order: StepOrder, p: int, root: int, k_: int, src: Where,
                  dst: Where) -> None:
    """NHR scatter from ``root``: afterwards rank r holds block r (the root holds all)."""
    steps = ns(p)
    pow2 = p & (p - 1) == 0
    for k in range(steps):
        d, n = 1 << k, n_blocks(p, k)
        senders = p - d if (not pow2 and k == steps - 1) else d
        for c in range(k_):
            for r in range(p):
                delta = (root - r) % p
                if delta < senders:
                    blocks = [(r - d - 2 * d * i) % p for i in range(n) if delta + d + 2 * d * i < p]
                    transfer(prog, r, (r - d) % p, blocks, c, src, dst)
        order.next_step()


# ---- the collectives ------------------------------------------------------------------------------

def reducescatter(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("nhr", Coll.REDUCESCATTER, p, p * k_, options)
    idx = lambda j, c: j * k_ + c                   # noqa: E731 - block j, channel c
    reduce_scatter_steps(prog, StepOrder(prog), p, k_,
                         own=lambda r, j, c: (Buffer.INPUT, idx(j, c)),
                         acc=lambda r, j, c: (Buffer.SCRATCH, idx(j, c)),
                         final=lambda r, j, c: (Buffer.OUTPUT, c))
    return prog


def allgather(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("nhr", Coll.ALLGATHER, p, p * k_, options)
    out = lambda r, j, c: (Buffer.OUTPUT, j * k_ + c)   # noqa: E731
    for r in range(p):
        prog.input(r, 0, k_).copy(prog.output(r, r * k_, k_))
    all_gather_steps(prog, StepOrder(prog), p, k_,
                     src=lambda r, j, c: (Buffer.INPUT, c) if j == r else out(r, j, c), dst=out)
    return prog


def allreduce(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("nhr", Coll.ALLREDUCE, p, p * k_, options)
    phys = slice_map(p)
    # channel c works on its own p chunks, so blocks that touch make one transfer
    at = lambda buf: lambda r, j, c: (buf, c * p + phys[j])   # noqa: E731
    order = StepOrder(prog)
    reduce_scatter_steps(prog, order, p, k_, own=at(Buffer.INPUT), acc=at(Buffer.OUTPUT),
                         final=at(Buffer.OUTPUT))
    all_gather_steps(prog, order, p, k_, src=at(Buffer.OUTPUT), dst=at(Buffer.OUTPUT))
    return prog


def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("nhr", Coll.BROADCAST, p, p * k_, options, root=root)
    phys = slice_map(p)
    out = lambda r, j, c: (Buffer.OUTPUT, c * p + phys[j])   # noqa: E731
    src = lambda r, j, c: (Buffer.INPUT, c * p + phys[j]) if r == root else out(r, j, c)  # noqa: E731
    prog.input(root, 0, p * k_).copy(prog.output(root, 0, p * k_))
    order = StepOrder(prog)
    scatter_steps(prog, order, p, root, k_, src, out)
    all_gather_steps(prog, order, p, k_, src, out)
    return prog


def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("nhr", Coll.SCATTER, p, k_, options, root=root)
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
    run_script("nhr")
