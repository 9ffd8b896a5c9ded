"""Message sizes the way nccl-tests reads them: ``1K`` = 1024 bytes, ``8M``, ``1G``; sweeps
``-b MIN -e MAX -f FACTOR`` multiply by FACTOR from MIN until MAX is passed; what a size means
per collective (:func:`chunk_bytes`) and nccl-tests' bus-bandwidth factors, which the simulator
and the executor both report."""
from __future__ import annotations

import math
from typing import Callable

from ccxml.vocab.errors import SizeError
from ccxml.vocab.limits import MAX_MESSAGE_BYTES, MAX_SWEEP_POINTS, MIN_SWEEP_FACTOR

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int) -> int:
    """``"8M"`` → 8388608. Accepts an optional ``B``/``iB`` suffix (``8MB``, ``8MiB``), any case.

    The one size parser of every command: a size over
    :data:`~ccxml.vocab.limits.MAX_MESSAGE_BYTES` (1 PiB), negative, fractional, nan or inf is a
    :class:`SizeError` (one line)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise SizeError(f"size must be >= 0, got {text}")
        if text > MAX_MESSAGE_BYTES:
            raise SizeError(f"size {text} is over the limit of {MAX_MESSAGE_BYTES} bytes (1P)")
        return text
    s = str(text).strip().upper()
    if len(s) > 40:
        raise SizeError(f"cannot read size {str(text)[:40]!r}...: too long")
    for tail in ("IB", "B"):
        if len(s) > 1 and s.endswith(tail) and s[-len(tail) - 1:-len(tail)] in "KMGT":
            s = s[:-len(tail)]
            break
    unit = s[-1:] if s[-1:] in "KMGTB" else ""
    num = s[:-1] if unit else s
    try:
        value = float(num) if any(c in num for c in ".E") else int(num)
    except ValueError:
        raise SizeError(f"cannot read size {text!r}; use bytes or a suffix like 1K, 8M, 1G") from None
    n = value * _UNITS[unit]
    if isinstance(n, float) and not math.isfinite(n):
        raise SizeError(f"size {text!r} must be a whole number of bytes >= 0")
    if n > MAX_MESSAGE_BYTES:
        raise SizeError(f"size {text!r} is over the limit of {MAX_MESSAGE_BYTES} bytes (1P)")
    if n < 0 or n != int(n):
        raise SizeError(f"size {text!r} must be a whole number of bytes >= 0")
    return int(n)


def size_range(min_bytes: int, max_bytes: int, factor: float = 2.0) -> list[int]:
    """nccl-tests' ``-b -e -f`` sweep: min, min·f, min·f², … as long as the size is ≤ max.

    At most :data:`~ccxml.vocab.limits.MAX_SWEEP_POINTS` sizes, with a factor of at least
    :data:`~ccxml.vocab.limits.MIN_SWEEP_FACTOR`: anything else is a SizeError naming the count,
    checked before a single size is made."""
    if min_bytes <= 0:
        raise SizeError(f"sweep minimum must be > 0, got {min_bytes}")
    if max_bytes < min_bytes:
        raise SizeError(f"sweep maximum {max_bytes} is below the minimum {min_bytes}")
    if not factor >= MIN_SWEEP_FACTOR or not math.isfinite(factor):     # nan included
        raise SizeError(f"sweep factor must be a number >= {MIN_SWEEP_FACTOR}, got {factor}")
    points = math.floor(math.log(max_bytes / min_bytes) / math.log(factor) + 1e-9) + 1
    if points > MAX_SWEEP_POINTS:
        raise SizeError(f"sweep -b {min_bytes} -e {max_bytes} -f {factor} has {points} sizes "
                        f"(limit {MAX_SWEEP_POINTS}): raise the factor")
    out, n = [], float(min_bytes)
    while n <= max_bytes:
        out.append(int(n))
        n *= factor
    return out


def format_size(n: float) -> str:
    """Short human form: 1024 → ``1K``, 1536 → ``1536``, 8388608 → ``8M``."""
    n = int(n)
    for unit in ("G", "M", "K"):
        u = _UNITS[unit]
        if n >= u and n % u == 0:
            return f"{n // u}{unit}"
    return str(n)


#: collectives whose nccl-tests byte count is ngpus × the runtime's buffer (gather: the root's
#: receive buffer; scatter: the root's send buffer)
_PER_RANK_BUFFER = {"gather", "scatter"}

#: nccl-tests bus-bandwidth factors, as functions of p
BUSBW_FACTORS: dict[str, Callable[[int], float]] = {
    "allreduce": lambda p: 2 * (p - 1) / p,
    "allgather": lambda p: (p - 1) / p,
    "reducescatter": lambda p: (p - 1) / p,
    "alltoall": lambda p: (p - 1) / p,
    "alltoallv": lambda p: (p - 1) / p,
    "gather": lambda p: (p - 1) / p,
    "scatter": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}


def busbw_factor(coll: str, p: int) -> float:
    """nccl-tests' bus-bandwidth factor for ``coll`` on ``p`` ranks (1 for unknown collectives)."""
    f = BUSBW_FACTORS.get(coll)
    return f(p) if f is not None and p > 0 else 1.0


def chunk_bytes(coll: str, nbytes: float, nchunksperloop: int, ngpus: int) -> float:
    """Bytes in one chunk when the collective moves ``nbytes`` (nccl-tests convention).

    ``nbytes`` is nccl-tests' size: allreduce, broadcast, reduce: the buffer; allgather: the
    output; reducescatter: the input; alltoall(v): the total send buffer (the runtime's
    ``count·sizeMultiplier``, msccl-runtime.md §6); gather/scatter: the root's whole buffer,
    ngpus × the runtime's."""
    mult = ngpus if coll in _PER_RANK_BUFFER else 1
    return nbytes / (nchunksperloop * mult)
