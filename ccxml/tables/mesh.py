"""Full-mesh tables (hccl-algorithms.md §2): every pair of members is linked and a phase is one
step. A member talks to its peers nearest first in ring order (HCCL: stream k talks to peer
r+1+k), or, with ``nearest_first=False``, in member order (the phases of the hierarchical
algorithms)."""
from __future__ import annotations

from ccxml.tables import Table


def peers(r: int, n: int) -> list[int]:
    """Every member but r, nearest first in ring order."""
    return [(r + k) % n for k in range(1, n)]


def slot(src: int, dst: int, n: int) -> int:
    """Where ``dst`` keeps what ``src`` sent it, among its n−1 peers (0 … n−2)."""
    return (src - dst) % n - 1


def _others(a: int, n: int, nearest_first: bool) -> list[int]:
    return peers(a, n) if nearest_first else [b for b in range(n) if b != a]


def reduce_scatter(n: int, nearest_first: bool = True) -> Table:
    """One step: every member a sends block b to member b, which reduces the n−1 copies."""
    return [[(a, b, [b]) for a in range(n) for b in _others(a, n, nearest_first)]] if n > 1 else []


def all_gather(n: int, skip: int | None = None, nearest_first: bool = True) -> Table:
    """One step: every member a sends its block to every other member (but ``skip``, which
    already holds every block)."""
    return [[(a, b, [a]) for a in range(n) for b in _others(a, n, nearest_first) if b != skip]] if n > 1 else []


def one_shot(n: int) -> Table:
    """One step: every member sends its whole buffer (block 0) to every other member."""
    return [[(a, b, [0]) for a in range(n) for b in peers(a, n)]] if n > 1 else []


def alltoall(n: int) -> Table:
    """One step: member a sends its data for b to b, for every b at once; block a·n + b is a's
    data for b."""
    return [[(a, b, [a * n + b]) for a in range(n) for b in peers(a, n)]] if n > 1 else []
