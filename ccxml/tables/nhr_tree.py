"""NHR's single-tree (one-shot) tables (hccl-algorithms.md §7.2, ``reduce_nhr_oneshot.cc``,
``broadcast_nhr_oneshot.cc``): one binomial tree over the whole buffer, one block.

Members are root-relative distances δ = (r − root) mod n; ns = ⌈log2 n⌉ steps each way, n_k as
in NHR. Block 0 is the whole buffer.
"""
from __future__ import annotations

from ccxml.tables import Table
from ccxml.tables.nhr import ns


def reduce(n: int) -> Table:
    """Step k, d = 2^k: every δ ≡ d (mod 2d) (⌊δ/2d⌋ < n_k: all of them in 0 … n−1) sends the
    whole buffer to δ − d, which reduces it; member 0 ends with the sum."""
    return [[(delta, delta - (1 << k), [0]) for delta in range(1 << k, n, 2 << k)] for k in range(ns(n))]


def broadcast(n: int) -> Table:
    """Step s, d = 2^(ns−1−s): every δ ≡ 0 (mod 2d) with δ + d < n (⌊δ/2d⌋ < ⌊(n−1+d)/2d⌋) sends
    the whole buffer to δ + d (the time-reverse of :func:`reduce`)."""
    steps = ns(n)
    return [[(delta - (1 << s), delta, [0]) for delta in range(1 << s, n, 2 << s)]
            for s in reversed(range(steps))]
