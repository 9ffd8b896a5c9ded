"""The numbers ``ccxml run`` moves and how its results are compared with MPI's.

Each rank's input is drawn from a generator seeded with its rank, so a run is repeatable:
integers in [-100, 100) (unsigned: [0, 100); 8-bit types: [0, 8)), floats uniform in [-1, 1)
(rounded to the type, so |x| <= 1).
Memory that is not input starts as :func:`poison` (NaN, or the type's smallest integer), so an
output chunk the schedule never writes shows up as a mismatch.

The comparison is exact, except for a *reducing* collective (allreduce, reducescatter, reduce)
on a floating-point type, where the schedule and MPI add the p contributions in different
orders: there an element passes if ``|ours - mpi| <= 2·(p-1)·p·eps`` (eps of the type). That is
the worst-case gap between two summation orders of p terms of magnitude at most 1 (each order is
within (p-1)·eps·Σ|x| of the exact sum, and Σ|x| <= p).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ccxml.vocab.collectives import Collective
from ccxml.vocab.sizes import chunk_bytes

#: the types ``ccxml run --dtype`` offers (numpy names; MPI has a matching type for each)
DTYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64")

#: collectives whose result is a sum of the ranks' contributions
REDUCING = frozenset({"allreduce", "reducescatter", "reduce"})


def chunk_elems(collective: Collective, nbytes: int, dtype: np.dtype) -> int:
    """Elements per chunk for nccl-tests' size ``nbytes`` (rounded down, at least 1)."""
    c = collective
    return max(1, int(chunk_bytes(c.coll.value, nbytes, c.nchunksperloop, c.ngpus) // dtype.itemsize))


def size_of(collective: Collective, chunk_elems: int, dtype: np.dtype) -> int:
    """nccl-tests' size in bytes of a call with ``chunk_elems`` elements per chunk."""
    c = collective
    return round(chunk_elems * dtype.itemsize / chunk_bytes(c.coll.value, 1, c.nchunksperloop, c.ngpus))


def make_input(dtype: np.dtype, n: int, rank: int) -> np.ndarray:
    """``n`` elements of rank ``rank``'s input (repeatable: seeded with the rank)."""
    rng = np.random.default_rng(1_000_003 + rank)
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, n).astype(dtype)
    if dtype.itemsize == 1:
        return rng.integers(0, 8, n).astype(dtype)
    lo = 0 if dtype.kind == "u" else -100
    return rng.integers(lo, 100, n).astype(dtype)


def poison(dtype: np.dtype):
    """The value memory holds before a run: NaN, or the smallest integer of the type."""
    return np.nan if dtype.kind == "f" else np.iinfo(dtype).min


def tolerance(coll: str, dtype: np.dtype, p: int) -> float:
    """The largest difference from MPI's result that passes (0: exact)."""
    if coll in REDUCING and dtype.kind == "f":
        return 2.0 * (p - 1) * p * float(np.finfo(dtype).eps)
    return 0.0


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Output chunks of one rank that differ from the reference."""
    rank: int
    chunks: tuple          # indices of the wrong output chunks, ascending
    first: int             # first wrong element (index into the output buffer)
    got: float
    expected: float
    wrong: int             # wrong elements in the first wrong chunk
    chunk_elems: int

    def describe(self) -> str:
        c = self.chunks[0]
        lo = c * self.chunk_elems
        more = f"; and {len(self.chunks) - 1} more chunk(s): {_list(self.chunks[1:])}" if len(self.chunks) > 1 else ""
        unwritten = " (memory no step wrote)" if isinstance(self.got, float) and self.got != self.got else ""
        return (f"rank {self.rank}, output chunk {c} (elements {lo}..{lo + self.chunk_elems - 1}): "
                f"{self.wrong} of {self.chunk_elems} elements differ; element {self.first} holds "
                f"{_num(self.got)}{unwritten}, expected {_num(self.expected)}{more}")


def compare(out: np.ndarray, ref: np.ndarray, chunk_elems: int, tol: float, rank: int) -> Mismatch | None:
    """The output chunks where ``out`` differs from ``ref`` by more than ``tol``; None if none."""
    if tol > 0:
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~(np.abs(out.astype(np.float64) - ref.astype(np.float64)) <= tol)
    else:
        bad = out != ref
        if out.dtype.kind == "f":
            bad &= ~(np.isnan(out) & np.isnan(ref))
    if not bad.any():
        return None
    per_chunk = bad.reshape(-1, chunk_elems)
    chunks = np.flatnonzero(per_chunk.any(axis=1))
    first = int(np.flatnonzero(bad)[0])
    return Mismatch(rank, tuple(int(c) for c in chunks), first, out[first].item(), ref[first].item(),
                    int(per_chunk[chunks[0]].sum()), chunk_elems)


def _num(x) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _list(xs, limit: int = 8) -> str:
    s = ", ".join(map(str, xs[:limit]))
    return s + (", ..." if len(xs) > limit else "")
