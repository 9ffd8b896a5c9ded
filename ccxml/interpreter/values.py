"""Symbolic chunk values and the finding collector of one execution.

:class:`Values` encodes the value of a chunk (the set of input contributions it is the reduction
of, plus the "unwritten memory was read" and "counted twice" flags) as one Python int;
:class:`Reporter` keeps at most a few findings per code and counts the rest. Both serve the
exact engine (:mod:`ccxml.interpreter.execute`), its fast twin (:mod:`ccxml.interpreter.levels`)
and the postcondition check (:mod:`ccxml.interpreter.postcondition`).
"""
from __future__ import annotations

from ccxml.interpreter.program import Program
from ccxml.vocab.findings import Finding


class Reporter:
    """Collects findings, at most ``limit`` per code (the rest are counted)."""

    def __init__(self, limit: int = 20):
        self.limit = limit
        self.findings: list[Finding] = []
        self.counts: dict[str, int] = {}

    def add(self, f: Finding) -> None:
        n = self.counts.get(f.code, 0)
        self.counts[f.code] = n + 1
        if n < self.limit:
            self.findings.append(f)

    def skip(self, code: str) -> bool:
        """Count one finding of ``code`` without building it, if ``limit`` of them are kept
        already (True); else False, and the caller adds it. Describing a finding costs far
        more than finding it: a file with a million wrong chunks describes only 20."""
        n = self.counts.get(code, 0)
        if n < self.limit:
            return False
        self.counts[code] = n + 1
        return True


class Values:
    """Encoding of symbolic chunk values as Python ints (cheap to copy, compare and combine).

    A value is a set of contributions (gpu position p, input chunk index j) plus two flags,
    ``UNINIT`` (unwritten memory was read) and ``DUP`` (a contribution was reduced twice).
    With G GPUs in the file:

    * *simple* form, when every contribution has the same index j (what every correct schedule
      produces): ``j << (G + 2) | flags << G | rank mask`` — a non-negative int; reducing two
      simple values with the same j is a bitwise OR and a double count is a non-zero AND of the
      rank masks;
    * *mixed* form otherwise: ``-(1 + (flags | Σ 1 << (2 + j·G + p)))`` — negative.

    The form is canonical (mixed only with two or more indices; no contribution means index 0),
    so two values are equal iff their ints are.
    """

    def __init__(self, prog: Program):
        self.prog = prog
        self.G = G = max(len(prog.gpu_ids), 1)
        self.RM = (1 << G) - 1
        self.UNINIT = 1 << G
        self.DUP = 1 << (G + 1)
        self.FLAGS = self.UNINIT | self.DUP
        self.SH = G + 2
        self.LIM = 1 << self.SH

    def simple(self, j: int, mask: int) -> int:
        return (j << self.SH) | mask if mask else 0

    def decode(self, v: int) -> tuple[int, dict]:
        """(flags as 0..3, {index: rank mask})."""
        if v >= 0:
            m = v & self.RM
            return (v >> self.G) & 3, ({v >> self.SH: m} if m else {})
        x = -v - 1
        flags = x & 3
        x >>= 2
        G = self.G
        out: dict[int, int] = {}
        while x:
            low = x & -x
            k = low.bit_length() - 1
            x ^= low
            j, p = divmod(k, G)
            out[j] = out.get(j, 0) | (1 << p)
        return flags, out

    def encode(self, flags: int, d: dict) -> int:
        d = {j: m for j, m in d.items() if m}
        if len(d) <= 1:
            j, m = next(iter(d.items())) if d else (0, 0)
            return (j << self.SH) | (flags << self.G) | m
        x = 0
        G = self.G
        for j, m in d.items():
            while m:
                low = m & -m
                x |= 1 << (j * G + low.bit_length() - 1)
                m ^= low
        return -(1 + (flags | (x << 2)))

    def pairs(self, v: int) -> list[tuple[int, int]]:
        """Contributions of ``v`` as sorted (gpu position, chunk) pairs."""
        _, d = self.decode(v)
        out = []
        for j, m in d.items():
            while m:
                low = m & -m
                out.append((low.bit_length() - 1, j))
                m ^= low
        out.sort()
        return out

    def combine(self, x: int, y: int) -> tuple[int, list]:
        """(x ⊕ y without the DUP marking, contributions present in both)."""
        fx, dx = self.decode(x)
        fy, dy = self.decode(y)
        both = []
        for j, m in dy.items():
            c = dx.get(j, 0) & m
            while c:
                low = c & -c
                both.append((low.bit_length() - 1, j))
                c ^= low
            dx[j] = dx.get(j, 0) | m
        both.sort()
        return self.encode(fx | fy, dx), both

    def describe_pairs(self, pairs: list, limit: int = 8) -> str:
        ids = self.prog.gpu_ids
        out = [f"({ids[p]},{j})" for p, j in pairs[:limit]]
        if len(pairs) > limit:
            out.append(f"... {len(pairs)} in all")
        return "{" + ", ".join(out) + "}" if out else "{}"

    def describe(self, v: int, limit: int = 8) -> str:
        """Human list of the contributions in ``v``: ``{(rank 0, chunk 3), ...}``."""
        return self.describe_pairs(self.pairs(v), limit)
