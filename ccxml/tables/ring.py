"""Ring and chain tables (hccl-algorithms.md §3).

Members form the ring 0 → 1 → … → n−1 → 0. Block j is member j's block.
"""
from __future__ import annotations

from ccxml.tables import Table


def reduce_scatter(n: int) -> Table:
    """n−1 steps: in step k member r sends block r−1−k to r+1, which reduces it; member r ends
    with block r."""
    return _rotations(n, 1)


def all_gather(n: int) -> Table:
    """n−1 steps: in step k member r sends block r−k to r+1, which stores it."""
    return _rotations(n, 0)


def _rotations(n: int, lag: int) -> Table:
    """Step k: member r sends block r−lag−k to r+1, i.e. the blocks rotated by lag+k. (The
    one-block lists are shared between steps: a ring of 1024 members is a million moves, and
    tables are read, never changed.)"""
    one = [[j] for j in range(n)]
    members, nxt = range(n), [(r + 1) % n for r in range(n)]
    table = []
    for k in range(n - 1):
        s = n - (lag + k) % n
        table.append(list(zip(members, nxt, one[s:] + one[:s])))
    return table


def chain_reduce(n: int, nblocks: int) -> Table:
    """Blocks pipelined along the chain 1 → 2 → … → n−1 → 0; member 0 ends with every block
    reduced (ring reduce, cut into ``nblocks`` pieces so that consecutive hops overlap). Step s
    moves block s−h over hop h."""
    if n < 2:
        return []
    chain = list(range(1, n)) + [0]
    hops = len(chain) - 1
    return [[(chain[h], chain[h + 1], [s - h]) for h in range(hops) if 0 <= s - h < nblocks]
            for s in range(nblocks + hops - 1)]


def chain_bcast(n: int, nblocks: int) -> Table:
    """Blocks pipelined along the chain 0 → 1 → … → n−1 (ring broadcast); step s moves block
    s−h over hop h."""
    if n < 2:
        return []
    hops = n - 1
    return [[(h, h + 1, [s - h]) for h in range(hops) if 0 <= s - h < nblocks]
            for s in range(nblocks + hops - 1)]


def block_bcast(n: int, nblocks: int) -> Table:
    """The moves of :func:`chain_bcast` listed block by block: step b carries block b over every
    hop (the data dependencies pipeline them the same way)."""
    return [[(h, h + 1, [b]) for h in range(n - 1)] for b in range(nblocks)]


def scatter(n: int) -> Table:
    """Ring scatter from member 0: in slot t = 1 … n−1 the block of member n−t leaves the root
    (farthest first) while every member d < t forwards what it received in the previous slot
    (the block of member n−t+d); each member keeps the last block it receives, its own."""
    return [[(d, d + 1, [n - t + d]) for d in range(min(t, n - 1))] for t in range(1, n)]


def gather(n: int) -> Table:
    """Ring gather to member 0 (the mirror image of :func:`scatter`): in slot t = 1 … n−1 member
    d ≥ t sends the block of member d−t+1 on toward the root (member n ≡ 0)."""
    return [[(d, (d + 1) % n, [d - t + 1]) for d in range(n - 1, t - 1, -1)] for t in range(1, n)]
