"""AHC — Asymmetric Hierarchical Concatenate (hccl-algorithms.md §9): its groups and logic cards.

The phases themselves are flat tables (:mod:`ccxml.tables.schemes`) among the members of a group
or of a card; this module gives who those members are, and how many data units the segment axis
[0, L) is laid on (:func:`axis`, :func:`scale`).
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


def axis(sizes: list[int], most: int) -> int:
    """U, the data units the segment axis [0, L) is laid on (L = lcm of the sizes): L itself when
    L ≤ ``most``, so that every range is a whole number of units (§9.2); else the U in
    [max(max size, L / min size), ``most``] whose largest group range exceeds the mean by least
    (ties: the smallest U), ranges then differing by one unit. (A large L, {7, 9} → 63,
    {16, 17} → 272, makes more chunks than the runtimes' step limits allow when every message is
    one chunk.) U ≥ L / min size keeps every card at least one unit wide in the ReduceScatter
    and AllGather regions (a card is ≥ 1/L of the axis)."""
    big_l = math.lcm(*sizes)
    if big_l <= most:
        return big_l
    low = max(max(sizes), -(-big_l // min(sizes)))
    return min(range(low, max(most, low) + 1),
               key=lambda u: (max(-(-u // m) * m / u for m in sizes), u))


def scale(x: int, units: int, big_l: int) -> int:
    """Axis position x ∈ [0, L] as a data unit on an axis of ``units`` units (rounded down: the
    ranges of consecutive positions tile the units)."""
    return x * units // big_l
