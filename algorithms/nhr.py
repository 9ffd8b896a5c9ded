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
step k+1 is made to wait for its transfers of step k (``Program.next_round``). The step tables are
below; the builders that run them are shared with NB (:mod:`ccxml.algorithms._blocks`).

Cost (HCCL doc, n bytes): RS ⌈log2 p⌉α + (p−1)/p·n(β+γ); AG ⌈log2 p⌉α + (p−1)/p·nβ;
AR 2⌈log2 p⌉α + 2(p−1)/p·nβ + (p−1)/p·nγ; SC ⌈log2 p⌉α + (p−1)/p·nβ; BC 2⌈log2 p⌉α + 2(p−1)/p·nβ.
ccxml's schedule sends the blocks of a step that are not adjacent in memory as separate messages (one
α each) and reduces each message as it arrives; ccxml.simulator.formulas gives its exact time
(``planned``), which ``benchmarks/formula_report.py`` compares with the doc's.
"""
from __future__ import annotations

from ccxml.algorithms import _blocks
from ccxml.algorithms._blocks import Rules, Table


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


def reduce_scatter_table(p: int) -> Table:
    """RS, step k, d = 2^k: r sends to r−d the blocks {r−d−2d·i : i < n_k}."""
    table = []
    for k in range(ns(p)):
        d, n = 1 << k, n_blocks(p, k)
        table.append([(r, (r - d) % p, [(r - d - 2 * d * i) % p for i in range(n)])
                      for r in range(p)])
    return table


def all_gather_table(p: int) -> Table:
    """AG, step s, d = 2^(ns−1−s), n = ⌊(p−1+d)/(2d)⌋: r sends to r+d the blocks {r−2d·i : i < n}."""
    table, steps = [], ns(p)
    for s in range(steps):
        d = 1 << (steps - 1 - s)
        n = (p - 1 + d) // (2 * d)
        table.append([(r, (r + d) % p, [(r - 2 * d * i) % p for i in range(n)]) for r in range(p)])
    return table


def scatter_table(p: int, root: int) -> Table:
    """SC, step k, d = 2^k: the nR ranks nearest the root send to r−d the blocks of the ranks at
    root-distance δ+d+2d·i < p (the useful-data rule)."""
    table, steps = [], ns(p)
    pow2 = p & (p - 1) == 0
    for k in range(steps):
        d, n = 1 << k, n_blocks(p, k)
        senders = p - d if (not pow2 and k == steps - 1) else d
        moves = []
        for r in range(p):
            delta = (root - r) % p
            if delta < senders:
                moves.append((r, (r - d) % p,
                              [(r - d - 2 * d * i) % p for i in range(n) if delta + d + 2 * d * i < p]))
        table.append(moves)
    return table


RULES = Rules("nhr", reduce_scatter_table, all_gather_table, scatter_table, slice_map)


# ---- the collectives (builders shared with NB: ccxml.algorithms._blocks) -----------------------

COLLECTIVES = _blocks.collectives(RULES)
allreduce, allgather, reducescatter, broadcast, scatter = COLLECTIVES.values()

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("nhr")
