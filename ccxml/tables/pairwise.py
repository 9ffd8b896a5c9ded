"""The pairwise tables: the all-to-all (hccl-algorithms.md §5) and the pairwise-exchange
reduce-scatter (the same partners, step k: r → r+k)."""
from __future__ import annotations

from ccxml.tables import Table


def alltoall(n: int) -> Table:
    """Step k = 1 … n−1: member r sends its data for r+k to r+k (block r·n + (r+k), as in
    :func:`ccxml.tables.mesh.alltoall`), so every member has one send and one receive in flight."""
    return [[(r, (r + k) % n, [r * n + (r + k) % n]) for r in range(n)] for k in range(1, n)]


def reduce_scatter(n: int) -> Table:
    """Pairwise exchange (Thakur, Rabenseifner & Gropp 2005): step k = 1 … n−1, member r sends
    its contribution to block r+k to r+k, which reduces it into its own; r ends with block r."""
    return [[(r, (r + k) % n, [(r + k) % n]) for r in range(n)] for k in range(1, n)]
