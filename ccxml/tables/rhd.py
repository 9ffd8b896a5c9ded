"""RHD — recursive halving-doubling tables (hccl-algorithms.md §4).

Folding (n not a power of two): B = 2^⌊log2 n⌋, rr = n − B, m = log2 B. Members 0 … 2rr−1 form
the pairs (2i, 2i+1); one member of each pair stays in the power-of-two *block*, the other is
folded into it (the even one stays, or the odd one for a rooted collective whose root is odd and
< 2rr). Block rank b is member b·2 (+1 when odd) for b < rr, b + rr above.

The halving and doubling tables work on B *block-slices*: slice u is either one unit of the data
(``per_rank=False``: AllReduce, Reduce) or the blocks of the members it stands for (``per_rank=
True``: slice u = blocks {2u, 2u+1} for u < rr, {u + rr} otherwise: ReduceScatter, AllGather).
"""
from __future__ import annotations

from typing import Callable, Iterator

from ccxml.tables import Table


class Fold:
    """The power-of-two block for n members: m, B, rr and the block-rank ↔ member maps."""

    def __init__(self, n: int, odd: bool = False):
        self.n = n
        self.m = n.bit_length() - 1
        self.B = 1 << self.m
        self.rr = n - self.B
        self.odd = odd

    def real(self, b: int) -> int:
        """The member of block rank b."""
        return 2 * b + self.odd if b < self.rr else b + self.rr

    def block(self, r: int) -> int | None:
        """The block rank of member r, None if r is folded out."""
        if r >= 2 * self.rr:
            return r - self.rr
        return r // 2 if r % 2 == self.odd else None

    def pairs(self) -> Iterator[tuple[int, int]]:
        """(member in the block, member folded into it) for every pair."""
        for i in range(self.rr):
            yield 2 * i + self.odd, 2 * i + 1 - self.odd

    def blocks(self, lo: int, hi: int) -> list[int]:
        """The per-member blocks of block-slices lo … hi−1."""
        return [j for u in range(lo, hi) for j in ((2 * u, 2 * u + 1) if u < self.rr else (u + self.rr,))]

    def units(self, per_rank: bool) -> Callable[[int, int], list[int]]:
        return self.blocks if per_rank else (lambda lo, hi: list(range(lo, hi)))


def _root_block(f: Fold, root: int) -> int:
    """The block rank of ``root`` under :func:`for_root`'s fold (which keeps the root)."""
    b = f.block(root)
    if b is None:
        raise ValueError(f"internal: root {root} is folded out")
    return b


def for_root(n: int, root: int) -> Fold:
    """The fold of a rooted collective: the odd pair members stay when the root is one of them."""
    rr = n - (1 << (n.bit_length() - 1))
    return Fold(n, odd=root < 2 * rr and root % 2 == 1)


def halving(f: Fold, per_rank: bool = True) -> Table:
    """Reduce-scatter by distance halving: step s, mask = 2^(m−1−s), block rank b sends the
    slices [(b⊕mask) & ~(mask−1), +mask) to b⊕mask; b ends with slice b."""
    units, out = f.units(per_rank), []
    for s in range(f.m):
        mask = 1 << (f.m - 1 - s)
        out.append([(f.real(b), f.real(b ^ mask), units((b ^ mask) & ~(mask - 1), ((b ^ mask) & ~(mask - 1)) + mask))
                    for b in range(f.B)])
    return out


def doubling(f: Fold, per_rank: bool = True) -> Table:
    """All-gather by distance doubling: step s, mask = 2^s, b sends [b & ~(mask−1), +mask)."""
    units, out = f.units(per_rank), []
    for s in range(f.m):
        mask = 1 << s
        out.append([(f.real(b), f.real(b ^ mask), units(b & ~(mask - 1), (b & ~(mask - 1)) + mask))
                    for b in range(f.B)])
    return out


def fold(f: Fold, blocks: Callable[[int], list[int]]) -> Table:
    """One step (none when n is a power of two): each folded member sends ``blocks(itself)`` to
    its partner in the block."""
    return [[(gone, keep, blocks(gone)) for keep, gone in f.pairs()]] if f.rr else []


def unfold(f: Fold, blocks: Callable[[int], list[int]]) -> Table:
    """One step: each member in the block sends ``blocks(partner)`` to its folded partner."""
    return [[(keep, gone, blocks(gone)) for keep, gone in f.pairs()]] if f.rr else []


def reduce_scatter(n: int) -> Table:
    """ReduceScatter without the final hand-over: fold 2i+1 → 2i (every block), then halving;
    block j is then complete at :func:`holder`."""
    f = Fold(n)
    return fold(f, lambda g: list(range(n))) + halving(f)


def holder(n: int, j: int) -> int:
    """Where block j is complete after :func:`reduce_scatter`: the kept member of its pair."""
    return j - j % 2 if j < 2 * Fold(n).rr else j


def rs_tail(n: int) -> Table:
    """ReduceScatter's last step: 2i hands block 2i+1 to 2i+1."""
    return unfold(Fold(n), lambda g: [g])


def all_gather(n: int, resend_own: bool = False) -> Table:
    """AllGather: 2i+1 sends its block to 2i, doubling, then 2i sends the complete output to
    2i+1 — all but 2i+1's own block, or every block with ``resend_own`` (when 2i+1 has not put
    its own block in place itself)."""
    f = Fold(n)
    rest = (lambda g: list(range(n))) if resend_own else (lambda g: [j for j in range(n) if j != g])
    return fold(f, lambda g: [g]) + doubling(f) + unfold(f, rest)


def allreduce_ag(n: int) -> Table:
    """The all-gather half of an all-reduce: doubling from the kept members, then 2i sends the
    whole result to 2i+1."""
    f = Fold(n)
    return doubling(f) + unfold(f, lambda g: list(range(n)))


def bcast(n: int, root: int) -> Table:
    """Broadcast of one block: binomial tree among the block ranks, distance halving (in round
    i, mask = 2^(m−1−i), every block rank holding the data sends it to b ⊕ mask), then each
    pair's block member sends it to its partner."""
    f = for_root(n, root)
    rootb, out = _root_block(f, root), []
    for i in range(f.m):
        mask = 1 << (f.m - 1 - i)
        out.append([(f.real(b), f.real(b ^ mask), [0]) for b in range(f.B) if (b ^ rootb) & ((mask << 1) - 1) == 0])
    return out + unfold(f, lambda g: [0])


def gather(n: int, root: int) -> Table:
    """Reduce's last phase: the block-slices (one unit each) go to the root by distance
    doubling: step s, mask = 2^s, block ranks b ≡ root_b (mod 2^s) whose bit s differs from
    root_b's send their slices [b & ~(mask−1), +mask) to b ⊕ mask."""
    f = for_root(n, root)
    rootb, out = _root_block(f, root), []
    for s in range(f.m):
        mask = 1 << s
        out.append([(f.real(b), f.real(b ^ mask), list(range(b & ~(mask - 1), (b & ~(mask - 1)) + mask)))
                    for b in range(f.B) if (b ^ rootb) & (mask - 1) == 0 and (b ^ rootb) & mask])
    return out
