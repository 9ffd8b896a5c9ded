"""AHC — Asymmetric Hierarchical Concatenate (hccl-algorithms.md §9): its groups and logic cards.

The phases themselves are flat tables (:mod:`ccxml.tables.schemes`) among the members of a group
or of a card; this module gives who those members are.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Card:
    """Logic card ``index``: segments [lo, hi) of the axis; ``members[i]`` is group i's rank."""

    index: int
    lo: int
    hi: int
    members: tuple[int, ...]
    order: int                     # e_k


def split_groups(sizes: list[int]) -> list[int]:
    """HCCL's ``AHCSubGroupInit`` splitting of the group sizes (§9.1): with mn the smallest size
    and g the gcd of the sizes, if g = mn or ⌊max/mn⌋ > 1 a group of size m is cut into ⌊m/mn⌋
    pieces, the last taking the rest ({1,4} → {1,1,1,1,1})."""
    mn, mx = min(sizes), max(sizes)
    g = math.gcd(*sizes)
    if not (g == mn or mx // mn > 1):
        return list(sizes)
    out = []
    for m in sizes:
        k = m // mn
        out.extend([mn] * (k - 1) + [m - mn * (k - 1)] if k > 1 else [m])
    return out


def logic_cards(groups: list[list[int]]) -> tuple[int, list[Card]]:
    """L and the logic cards in execution order (sorted by e_k, then k) (§9.2): L = lcm of the
    sizes; group i cuts [0, L) into m_i equal ranges, one per member; the boundaries of all
    groups cut [0, L) into cards, whose members are, per group, the rank whose range holds it."""
    sizes = [len(g) for g in groups]
    big_l = math.lcm(*sizes)
    bounds = sorted({0} | {big_l // m * (j + 1) for m in sizes for j in range(m)})
    mi = sizes.index(min(sizes))
    cards = []
    for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        members = tuple(g[-(-hi // (big_l // len(g))) - 1] for g in groups)
        t_min = groups[mi].index(members[mi])
        cards.append(Card(k, lo, hi, members, lo - t_min * (big_l // sizes[mi])))
    return big_l, sorted(cards, key=lambda c: (c.order, c.index))
