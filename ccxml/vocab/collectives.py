"""Collective definitions: buffer sizes, in-place aliasing, and the postcondition.

Shared by the front end (which lays out buffers) and the interpreter (which checks results).
Sizes are in chunks, following the runtime's convention (msccl-runtime.md §6-§7): the call's
``count × sizeMultiplier`` elements are cut into ``nchunksperloop`` (C) chunks.

=============  ===========  ===========  ==========================================
collective     input        output       in-place alias (runtime §7)
=============  ===========  ===========  ==========================================
allreduce      C            C            i == o
allgather      C/p          C            i == o + rank·C/p
reducescatter  C            C/p          o == i + rank·C/p
alltoall       C            C            i == o
alltoallv      Σ_j M[r][j]  Σ_i M[i][r]  i == o
broadcast      C            C            i == o
reduce         C            C            i == o
gather         C            p·C          i == o + rank·C
scatter        p·C          C            o == i + rank·C
=============  ===========  ===========  ==========================================

The postcondition is expressed as, for every (rank, output chunk) that the collective defines,
the multiset of input chunks ``(rank, index)`` whose reduction (or, for one element, copy) the
chunk must hold. A reduction over an empty multiset never occurs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Iterator, Sequence

from ccxml.vocab import limits
from ccxml.vocab.errors import CollectiveError
from ccxml.vocab.wire import Coll

Contribution = tuple[int, int]          # (rank, input chunk index)


@dataclass(frozen=True)
class Collective:
    """One collective call's shape: ``coll`` over ``ngpus`` ranks, C = ``nchunksperloop``."""

    coll: Coll
    ngpus: int
    nchunksperloop: int
    root: int | None = None
    counts: tuple[tuple[int, ...], ...] | None = None   # alltoallv: M[i][j] chunks i -> j

    def __post_init__(self) -> None:
        p, c = self.ngpus, self.nchunksperloop
        if p < 1:
            raise CollectiveError(f"ngpus must be >= 1, got {p}")
        if self.coll.rooted:
            if self.root is None or not 0 <= self.root < p:
                raise CollectiveError(f"{self.coll.value} needs a root in 0..{p - 1}, got {self.root}")
        if self.coll in (Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.ALLTOALL) and c % p:
            raise CollectiveError(f"{self.coll.value}: nchunksperloop {c} is not a multiple of ngpus {p}")
        if self.coll is Coll.ALLTOALLV:
            m = self.counts
            if m is None or len(m) != p or any(len(row) != p for row in m):
                raise CollectiveError(f"alltoallv needs a {p}x{p} matrix of chunk counts")
            if any(x < 0 for row in m for x in row):
                raise CollectiveError("alltoallv counts must be >= 0")

    # ---- sizes -------------------------------------------------------------------------
    @property
    def matrix(self) -> tuple[tuple[int, ...], ...]:
        """The alltoallv count matrix (``counts``; an error for the other collectives)."""
        if self.counts is None:
            raise CollectiveError(f"{self.coll.value} has no matrix of chunk counts")
        return self.counts

    @property
    def root_rank(self) -> int:
        """The root of a rooted collective (``root``; an error for the others)."""
        if self.root is None:
            raise CollectiveError(f"{self.coll.value} has no root")
        return self.root

    @property
    def per_rank(self) -> int:
        """Chunks per rank-block: C/p for the ×p collectives, C for gather/scatter."""
        if self.coll in (Coll.GATHER, Coll.SCATTER):
            return self.nchunksperloop
        return self.nchunksperloop // self.ngpus

    def input_chunks(self, rank: int) -> int:
        c, p = self.nchunksperloop, self.ngpus
        if self.coll is Coll.ALLGATHER:
            return c // p
        if self.coll is Coll.SCATTER:
            return p * c
        if self.coll is Coll.ALLTOALLV:
            return sum(self.matrix[rank])
        return c

    def output_chunks(self, rank: int) -> int:
        c, p = self.nchunksperloop, self.ngpus
        if self.coll is Coll.REDUCESCATTER:
            return c // p
        if self.coll is Coll.GATHER:
            return p * c
        if self.coll is Coll.ALLTOALLV:
            return sum(row[rank] for row in self.matrix)
        return c

    def inplace_input_offset(self, rank: int) -> int:
        """In an in-place call, input chunk j is output chunk j + this (may be negative).

        For reducescatter/scatter the output lies inside the input: output chunk j is input
        chunk j + rank·block, i.e. input chunk j is output chunk j − rank·block.
        """
        if self.coll in (Coll.ALLGATHER, Coll.GATHER):
            return rank * self.per_rank
        if self.coll in (Coll.REDUCESCATTER, Coll.SCATTER):
            return -rank * self.per_rank
        return 0

    def alltoallv_offsets(self) -> tuple[list[list[int]], list[list[int]]]:
        """(send displacement of i→j in i's input, recv displacement of i→j in j's output)."""
        return alltoallv_offsets(self.matrix)

    # ---- postcondition -----------------------------------------------------------------
    def expected(self) -> Iterator[tuple[int, int, tuple[Contribution, ...]]]:
        """Yield (rank, output chunk, contributions) for every output chunk the call defines.

        One contribution means "a copy of that input chunk"; several mean "their reduction,
        each exactly once".
        """
        p, c, coll = self.ngpus, self.nchunksperloop, self.coll
        b = self.per_rank
        root = self.root_rank if coll.rooted else 0
        everyone = range(p)
        if coll is Coll.ALLREDUCE:
            for r in everyone:
                for j in range(c):
                    yield r, j, tuple((q, j) for q in everyone)
        elif coll is Coll.REDUCE:
            for j in range(c):
                yield root, j, tuple((q, j) for q in everyone)
        elif coll is Coll.BROADCAST:
            for r in everyone:
                for j in range(c):
                    yield r, j, ((root, j),)
        elif coll is Coll.ALLGATHER:
            for r in everyone:
                for q in everyone:
                    for j in range(b):
                        yield r, q * b + j, ((q, j),)
        elif coll is Coll.GATHER:
            for q in everyone:
                for j in range(b):
                    yield root, q * b + j, ((q, j),)
        elif coll is Coll.REDUCESCATTER:
            for r in everyone:
                for j in range(b):
                    yield r, j, tuple((q, r * b + j) for q in everyone)
        elif coll is Coll.SCATTER:
            for r in everyone:
                for j in range(b):
                    yield r, j, ((root, r * b + j),)
        elif coll is Coll.ALLTOALL:
            for r in everyone:
                for q in everyone:
                    for j in range(b):
                        yield r, q * b + j, ((q, r * b + j),)
        elif coll is Coll.ALLTOALLV:
            send, recv = self.alltoallv_offsets()
            m = self.matrix
            for i in everyone:
                for j in everyone:
                    for k in range(m[i][j]):
                        yield j, recv[i][j] + k, ((i, send[i][j] + k),)
        else:  # pragma: no cover - every Coll member is handled above
            raise CollectiveError(f"no postcondition for {coll}")


_COUNT = re.compile(r"[0-9]{1,30}")


def parse_counts(text: str | bytes) -> tuple[tuple[int, ...], ...]:
    """Parse a P×P matrix of chunk counts from CSV text (commas or whitespace).

    Every count is a plain number 0..:data:`~ccxml.vocab.limits.MAX_COUNT_CHUNKS`, P is at
    most :data:`~ccxml.vocab.limits.MAX_RANKS` and the chunks a rank sends or receives (a row or
    a column sum: its buffer) at most :data:`~ccxml.vocab.limits.MAX_CHUNKS`; anything else,
    or bytes that are not UTF-8, is a CollectiveError (one line), checked before any buffer is
    sized by the counts."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > limits.MAX_COUNTS_BYTES:
            raise CollectiveError(f"counts: more than {limits.MAX_COUNTS_BYTES} bytes (the limit)")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CollectiveError(f"counts: not UTF-8 text (byte {e.start})") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        row = []
        for x in line.replace(",", " ").split():
            if not _COUNT.fullmatch(x):
                shown = x if len(x) <= 20 else x[:20] + "..."
                why = "counts must be >= 0" if x.startswith("-") else "expected integers"
                raise CollectiveError(f"counts line {lineno}: {why}, got {shown!r}")
            c = int(x)
            if c > limits.MAX_COUNT_CHUNKS:
                raise CollectiveError(f"counts line {lineno}: {c} chunks is over the limit of "
                                      f"{limits.MAX_COUNT_CHUNKS}")
            row.append(c)
        if len(row) > limits.MAX_RANKS:
            raise CollectiveError(f"counts line {lineno}: {len(row)} columns is over the limit of "
                                  f"{limits.MAX_RANKS} ranks")
        rows.append(tuple(row))
    if not rows or any(len(r) != len(rows) for r in rows):
        raise CollectiveError(f"counts must be a square matrix, got {len(rows)} rows of lengths "
                              f"{sorted({len(r) for r in rows})}")
    for i, r in enumerate(rows):
        if sum(r) > limits.MAX_CHUNKS:
            raise CollectiveError(f"counts: rank {i} sends {sum(r)} chunks, over the limit of "
                                  f"{limits.MAX_CHUNKS}")
    for j, col in enumerate(zip(*rows)):
        if sum(col) > limits.MAX_CHUNKS:
            raise CollectiveError(f"counts: rank {j} receives {sum(col)} chunks, over the limit "
                                  f"of {limits.MAX_CHUNKS}")
    return tuple(rows)


def read_counts(path: str) -> tuple[tuple[int, ...], ...]:
    """:func:`parse_counts` of the file at ``path``, read with a size cap (at most
    MAX_COUNTS_BYTES + 1 bytes: /dev/zero is refused, not read to the end); OSError as
    ``open`` raises it."""
    try:
        data = limits.read_capped(path, limits.MAX_COUNTS_BYTES, "a counts file")
    except ValueError as e:      # more than the cap (OSError goes to the caller)
        raise CollectiveError(str(e)) from None
    return parse_counts(data)


def alltoallv_offsets(m: Sequence[Sequence[int]]) -> tuple[list[list[int]], list[list[int]]]:
    """For a P×P count matrix (i sends m[i][j] chunks to j): (send displacement of i→j in i's
    input, recv displacement of i→j in j's output), the runtime's packed layout."""
    p = len(m)
    send = [[0, *accumulate(row[:-1])] for row in m]
    recv = [[0] * p for _ in range(p)]
    for i in range(1, p):
        above, row = recv[i - 1], m[i - 1]
        recv[i] = [above[j] + row[j] for j in range(p)]
    return send, recv
