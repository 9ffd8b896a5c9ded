"""NB — Nonuniform Bruck tables (hccl-algorithms.md §8).

ns = ⌈log2 n⌉ steps per phase; distances grow 1, 2, 4, … in every collective and blocks are
never permuted. All arithmetic is mod n; n_k as in NHR.
"""
from __future__ import annotations

from ccxml.tables import Table
from ccxml.tables.blocks import Rules
from ccxml.tables.nhr import n_blocks, ns


def reduce_scatter(n: int) -> Table:
    """Step k, d = 2^k: r sends to r+d the blocks {r+d+2d·i : i < n_k}; r ends with block r."""
    return [[(r, (r + (1 << k)) % n, [(r + (1 << k) + (2 << k) * i) % n for i in range(n_blocks(n, k))])
             for r in range(n)] for k in range(ns(n))]


def all_gather(n: int) -> Table:
    """Step k, d = 2^k: r sends to r+d the blocks {r−i : i < min(d, n−d)} (Bruck concatenation,
    the last step truncated when n is not a power of two; distances increase as in HCCL's code,
    §12.1)."""
    return [[(r, (r + (1 << k)) % n, [(r - i) % n for i in range(min(1 << k, n - (1 << k)))])
             for r in range(n)] for k in range(ns(n))]


def scatter(n: int, root: int) -> Table:
    """Step k, d = 2^k, δ = (r − root) mod n: members with δ < d (δ < n − d in the last step)
    send to r+d the blocks of the members at root-distance δ+d+2d·i < n (useful-data rule)."""
    table, steps = [], ns(n)
    for k in range(steps):
        d = 1 << k
        senders = min(d, n - d) if k == steps - 1 else d
        table.append([((root + delta) % n, (root + delta + d) % n,
                       [(root + e) % n for e in range(delta + d, n, 2 * d)])
                      for delta in range(senders)])
    return table


def identity(n: int) -> list[int]:
    """NB never permutes blocks."""
    return list(range(n))


#: NB's tables for the collectives of :mod:`ccxml.tables.blocks`
RULES = Rules("nb", reduce_scatter, all_gather, scatter, identity)
