"""What every algorithm script shares: options, up-front validation, and the Program it starts.

An algorithm module in ``algorithms/`` defines one builder per collective and a table
``COLLECTIVES = {Coll.X: builder}``. A builder takes the rank count first and keyword options
(``root``, ``counts``, ``topology`` where it needs them, and the :class:`Options` fields), validates
them with the helpers here, and returns a :class:`ccxml.frontend.chunk.Program`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ccxml.frontend.chunk import Program
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Coll, Proto


@dataclass(frozen=True)
class Options:
    """Options every builder accepts."""

    channels: int = 1
    proto: Proto = Proto.SIMPLE
    inplace: bool = False
    min_bytes: int = 0
    max_bytes: int = 0

    def __post_init__(self):
        if self.channels < 1:
            raise AlgorithmError(f"--channels must be >= 1, got {self.channels}")
        object.__setattr__(self, "proto", Proto(self.proto))
        if self.min_bytes < 0 or self.max_bytes < 0:
            raise AlgorithmError("--min-bytes and --max-bytes must be >= 0")
        if self.max_bytes and self.max_bytes < self.min_bytes:
            raise AlgorithmError(f"--max-bytes {self.max_bytes} < --min-bytes {self.min_bytes}")


def check_ranks(p: int, minimum: int = 2) -> None:
    if not isinstance(p, int) or p < minimum:
        raise AlgorithmError(f"--ranks must be an integer >= {minimum}, got {p}")


def check_root(root: int, p: int) -> None:
    if not isinstance(root, int) or not 0 <= root < p:
        raise AlgorithmError(f"--root {root} is out of range for {p} ranks (0..{p - 1})")


def program(algorithm: str, coll: Coll, p: int, nchunksperloop: int, opts: Options, *,
            root: int | None = None, counts=None, extra_attrs=None) -> Program:
    """A Program named ``<algorithm>_<coll>`` with the options applied."""
    return Program(f"{algorithm}_{coll.value}", coll, p, nchunksperloop, proto=opts.proto,
                   inplace=opts.inplace, root=root, counts=counts, min_bytes=opts.min_bytes,
                   max_bytes=opts.max_bytes, extra_attrs=extra_attrs)

