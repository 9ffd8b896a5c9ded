"""Star tables (hccl-algorithms.md §6): the root talks to every other member directly, in one
step, nearest first in ring order; the others talk only to the root."""
from __future__ import annotations

from ccxml.tables import Table


def _others(n: int, root: int) -> list[int]:
    return [(root + k) % n for k in range(1, n)]


def reduce(n: int, nblocks: int, root: int = 0) -> Table:
    """Every member sends every block straight to the root, which reduces them in turn."""
    return [[(a, root, list(range(nblocks))) for a in _others(n, root)]] if n > 1 else []


def bcast(n: int, nblocks: int, root: int = 0) -> Table:
    """The root sends every block straight to every member."""
    return [[(root, b, list(range(nblocks))) for b in _others(n, root)]] if n > 1 else []


def scatter(n: int, root: int = 0) -> Table:
    """The root sends block b straight to member b."""
    return [[(root, b, [b]) for b in _others(n, root)]] if n > 1 else []


def gather(n: int, root: int = 0) -> Table:
    """Member a sends its block straight to the root."""
    return [[(a, root, [a]) for a in _others(n, root)]] if n > 1 else []
