"""Recursive-doubling all-gather for any member count (Thakur, Rabenseifner & Gropp 2005, §4.1).

Step s = 0 … ⌈log2 n⌉−1, mask = 2^s: the members form groups of ``mask`` consecutive members
(the last one cut at n); after step s every member holds every block of its group of 2·mask.
Member r's group starts at a = r & ~(mask−1), its partner group at b = a ⊕ mask and has
q = min(mask, n − b) members (none when b ≥ n). For n a power of two r receives the partner
group's blocks from r ⊕ mask (the classic exchange). Otherwise a partner group cut at n has fewer
members than r's group: its member b + (i mod q) serves the i-th member of r's group, so every
member still receives once per step and the step count stays ⌈log2 n⌉ (MPICH instead sends the
missing blocks on in up to ⌊log2 n⌋ extra steps).
"""
from __future__ import annotations

from ccxml.tables import Table


def all_gather(n: int) -> Table:
    """Per step, (sender, receiver, the partner group's blocks) for every member whose partner
    group is not empty (module docstring); block j is member j's."""
    table, mask = [], 1
    while mask < n:
        step = []
        for r in range(n):
            a = r & ~(mask - 1)
            b = a ^ mask
            if b < n:
                q = min(mask, n - b)
                step.append((b + (r - a) % q, r, list(range(b, b + q))))
        table.append(step)
        mask <<= 1
    return table
