"""The pairwise all-to-all table (hccl-algorithms.md §5)."""
from __future__ import annotations

from ccxml.tables import Table


def alltoall(n: int) -> Table:
    """Step k = 1 … n−1: member r sends its data for r+k to r+k (block r·n + (r+k), as in
    :func:`ccxml.tables.mesh.alltoall`), so every member has one send and one receive in flight."""
    return [[(r, (r + k) % n, [r * n + (r + k) % n]) for r in range(n)] for k in range(1, n)]
