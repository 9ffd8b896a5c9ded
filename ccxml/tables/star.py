"""Star tables (hccl-algorithms.md §6): member 0, the root, talks to every other member directly,
in one step; the others talk only to the root."""
from __future__ import annotations

from ccxml.tables import Table


def reduce(n: int, nblocks: int) -> Table:
    """Every member sends every block straight to the root, which reduces them in turn."""
    return [[(a, 0, list(range(nblocks))) for a in range(1, n)]] if n > 1 else []


def bcast(n: int, nblocks: int) -> Table:
    """The root sends every block straight to every member."""
    return [[(0, b, list(range(nblocks))) for b in range(1, n)]] if n > 1 else []


def scatter(n: int) -> Table:
    """The root sends block b straight to member b."""
    return [[(0, b, [b]) for b in range(1, n)]] if n > 1 else []


def gather(n: int) -> Table:
    """Member a sends its block straight to the root."""
    return [[(a, 0, [a]) for a in range(1, n)]] if n > 1 else []
