"""Bruck's all-to-all (Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for all-to-all
communications in multiport message-passing systems", IEEE TPDS 8(11), 1997: the index algorithm
with radix 2).

Slot i of member r first holds r's data for r+i (a local rotation). In step k = 0 … ⌈log2 n⌉−1
every member sends the slots whose index has bit k set to r + 2^k, which keeps them at the same
index; afterwards slot i of member r holds the data of r−i for r (the inverse rotation puts it in
place). A slot travels once per set bit of its index, so every member sends in every step, and
the steps are ⌈log2 n⌉ for any n.

The blocks of the table are *slots as sent in a step*: block 3·(k·n + i) + h is slot i in step
k sent by a member of colour h (:func:`colour`), so that a layout can put the slots of each step
side by side (:func:`packed`) and a member never sends a block it receives in the same step (every
member sends and receives the same slots in a step; the colours tell the two copies apart).
"""
from __future__ import annotations

import math

from ccxml.tables import Table


def steps(n: int) -> int:
    """⌈log2 n⌉."""
    return (n - 1).bit_length()


def sent(n: int, k: int) -> list[int]:
    """The slots sent in step k: those whose index has bit k set."""
    return [i for i in range(n) if i >> k & 1]


def colour(n: int, k: int, r: int) -> int:
    """0, 1 or 2, different for r and r + 2^k: the members r, r + d, r + 2d, … (d = 2^k, mod n)
    form a cycle of L = n / gcd(n, d) members; r at place t of its cycle has colour t mod 2, and
    the last member of an odd cycle colour 2."""
    d = 1 << k
    g = math.gcd(n, d)
    length = n // g
    t = ((r - r % g) // g * pow(d // g, -1, length)) % length if length > 1 else 0
    return 2 if length % 2 and t == length - 1 else t % 2


def block(n: int, k: int, i: int, h: int) -> int:
    """The table's block of slot i sent in step k by a member of colour h."""
    return 3 * (k * n + i) + h


def slot(b: int) -> int:
    """k·n + i of table block b (its step and slot, whoever sent it)."""
    return b // 3


def alltoall(n: int) -> Table:
    """Step k: member r sends to r + 2^k the slots i of :func:`sent` (as blocks of its colour)."""
    return [[(r, (r + (1 << k)) % n, [block(n, k, i, colour(n, k, r)) for i in sent(n, k)])
             for r in range(n)] for k in range(steps(n))]


def next_step(i: int, k: int) -> int | None:
    """The step after k (−1: before the first) that sends slot i, i.e. its next set bit; None
    if it has arrived."""
    rest = i >> (k + 1)
    return None if rest == 0 else k + 1 + (rest & -rest).bit_length() - 1


def packed(n: int) -> tuple[dict[int, int], dict[int, int], int]:
    """A layout of one member's slots in which every step sends one range and receives one:
    (outbox, inbox, size): slot i of step k leaves from position outbox[k·n + i] and lands at
    inbox[k·n + i]; each step's outbox and inbox are ranges of the slots of :func:`sent` in
    order, the ranges of all steps after one another, ``size`` positions in all."""
    outbox, inbox, at = {}, {}, 0
    for k in range(steps(n)):
        slots = sent(n, k)
        for x, i in enumerate(slots):
            outbox[k * n + i] = at + x
            inbox[k * n + i] = at + len(slots) + x
        at += 2 * len(slots)
    return outbox, inbox, at
