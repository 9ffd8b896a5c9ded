"""Binary-tree tables: NCCL's binary tree and double binary tree (NCCL ``src/graph/trees.cc``).

A tree is a list ``parent`` over members 0 … n−1 (``parent[top] = -1``). The tables pipeline
``nblocks`` blocks along it: block j leaves member m for its parent in step j + height(m) (a leaf
has height 0, a node one more than its highest child, so it has both children's block j when it
sends it) and leaves a member for its children in step j + depth(member) (the top has depth 0).
"""
from __future__ import annotations

from typing import Callable

from ccxml.tables import Table


def btree(n: int) -> list[int]:
    """NCCL's ``ncclGetBtree``: the parent of each of n members; member 0 is the top, with one
    child (the largest power of two below n), and leaves and nodes alternate (odd members are
    leaves). A node xx10…0 has the children xx01…0 and xx11…0 (or the next one in range)."""
    parent = [-1] * n
    for rank in range(1, n):
        bit = 1
        while bit < n and not bit & rank:
            bit <<= 1
        up = (rank ^ bit) | (bit << 1)
        parent[rank] = up if up < n else rank ^ bit
    return parent


def dtree(n: int) -> tuple[list[int], list[int]]:
    """NCCL's ``ncclGetDtree``: the binary tree and its complement, the mirror image (n even) or
    the tree shifted by one member (n odd), so that a leaf of one tree is a node of the other."""
    first = btree(n)
    if n % 2:
        label = [(r + 1) % n for r in range(n)]
    else:
        label = [n - 1 - r for r in range(n)]
    second = [-1] * n
    for r in range(n):
        if first[r] >= 0:
            second[label[r]] = label[first[r]]
    return first, second


def rooted_at_zero(parent: list[int]) -> list[int]:
    """``parent`` with member 0 and the top swapping places: a tree whose top is member 0 (the
    root of a Reduce or Broadcast)."""
    top = parent.index(-1)
    if top == 0:
        return list(parent)
    swap = {0: top, top: 0}
    out = [-1] * len(parent)
    for r, q in enumerate(parent):
        if q >= 0:
            out[swap.get(r, r)] = swap.get(q, q)
    return out


def heights(parent: list[int]) -> list[int]:
    """Per member: 0 for a leaf, else one more than its highest child."""
    n = len(parent)
    h = [0] * n
    for r in sorted(range(n), key=lambda r: -_depth(parent, r)):
        if parent[r] >= 0:
            h[parent[r]] = max(h[parent[r]], h[r] + 1)
    return h


def depths(parent: list[int]) -> list[int]:
    """Per member: its distance from the top."""
    return [_depth(parent, r) for r in range(len(parent))]


def _depth(parent: list[int], r: int) -> int:
    d = 0
    while parent[r] >= 0:
        r, d = parent[r], d + 1
    return d


def reduce_up(parent: list[int], blocks: list[int]) -> Table:
    """Every member sends each of ``blocks`` (in order) to its parent, which reduces it: block
    number i leaves member m in step i + height(m)."""
    h = heights(parent)
    return _pipelined(parent, blocks, lambda r: h[r], up=True)


def broadcast_down(parent: list[int], blocks: list[int]) -> Table:
    """Every member sends each of ``blocks`` (in order) to its children: block number i leaves
    member m in step i + depth(m)."""
    d = depths(parent)
    return _pipelined(parent, blocks, lambda r: d[parent[r]], up=False)


def _pipelined(parent: list[int], blocks: list[int], lag: Callable[[int], int], up: bool) -> Table:
    """Block number i crosses the edge of member r and its parent in step i + lag(r), upward or
    downward; edges in the order (parent, member)."""
    n = len(parent)
    edges = sorted((r for r in range(n) if parent[r] >= 0), key=lambda r: (parent[r], r))
    table: Table = [[] for _ in range(len(blocks) + max((lag(r) for r in edges), default=0))]
    for r in edges:
        a, b = (r, parent[r]) if up else (parent[r], r)
        for i, j in enumerate(blocks):
            table[i + lag(r)].append((a, b, [j]))
    return [step for step in table if step]
