"""NHR — Nonuniform Hierarchical Ring tables (hccl-algorithms.md §7).

ns = ⌈log2 n⌉ steps per phase for any n; step k moves n_k = ⌊(n−1+2^k)/2^(k+1)⌋ blocks (≈ n/2,
n/4, …, 1; Σ n_k = n−1). All arithmetic is mod n.
"""
from __future__ import annotations

from ccxml.tables import Table
from ccxml.tables.blocks import Rules


def ns(n: int) -> int:
    """⌈log2 n⌉ as HCCL computes it: the bit length of n−1."""
    return (n - 1).bit_length()


def n_blocks(n: int, k: int) -> int:
    """n_k: how many blocks step k moves (the integers in 0…n−1 that are ≡ 2^k mod 2^(k+1))."""
    return (n - 1 + (1 << k)) >> (k + 1)


def slice_map(n: int) -> list[int]:
    """HCCL's tree map (``NHRBase::GetRankMapping``): the physical block of each logical block
    in AllReduce and Broadcast, which makes most steps move one contiguous range."""
    tree, size = list(range(n)), n
    for step in range(ns(n)):
        if n_blocks(n, step) <= 1:
            break
        new, odd = list(tree), False
        for start in range(0, n, size):
            end = min(start + size, n)
            for i in range(start, end):
                o = i - start
                new[start + (o // 2 if o % 2 == 0 else (o + size) // 2)] = tree[i]
            odd = odd or (end - start) % 2 == 1
        tree = new
        if odd:
            break
        size //= 2
    out = [0] * n
    for i, t in enumerate(tree):
        out[t] = i
    return out


def reduce_scatter(n: int) -> Table:
    """Step k, d = 2^k: r sends to r−d the blocks {r−d−2d·i : i < n_k}; r ends with block r."""
    table = []
    for k in range(ns(n)):
        d, nk = 1 << k, n_blocks(n, k)
        table.append([(r, (r - d) % n, [(r - d - 2 * d * i) % n for i in range(nk)]) for r in range(n)])
    return table


def all_gather(n: int) -> Table:
    """Step s, d = 2^(ns−1−s): r sends to r+d the blocks {r−2d·i : i < ⌊(n−1+d)/2d⌋} (the
    time-reverse of the reduce-scatter)."""
    table, steps = [], ns(n)
    for s in range(steps):
        d = 1 << (steps - 1 - s)
        cnt = (n - 1 + d) // (2 * d)
        table.append([(r, (r + d) % n, [(r - 2 * d * i) % n for i in range(cnt)]) for r in range(n)])
    return table


def scatter(n: int, root: int) -> Table:
    """Step k, d = 2^k: the nR members nearest the root (δ = (root−r) mod n < nR, nR = n−d in
    the last step when n is not a power of two, else d) send to r−d the blocks of the members at
    root-distance δ+d+2d·i < n (the useful-data rule; HCCL's code also sends, for some n, a
    block nobody needs)."""
    table, steps = [], ns(n)
    pow2 = n & (n - 1) == 0
    for k in range(steps):
        d, nk = 1 << k, n_blocks(n, k)
        senders = n - d if (not pow2 and k == steps - 1) else d
        moves = []
        for r in range(n):
            delta = (root - r) % n
            if delta < senders:
                moves.append((r, (r - d) % n,
                              [(r - d - 2 * d * i) % n for i in range(nk) if delta + d + 2 * d * i < n]))
        table.append(moves)
    return table


#: NHR's tables for the collectives of :mod:`ccxml.tables.blocks`
RULES = Rules("nhr", reduce_scatter, all_gather, scatter, slice_map)
