"""MSCCLang's symbolic data: the buffer names, the chunks a buffer slot holds, and scratch slices.

An MSCCLang program runs twice over: every call records an operation (lowered later by
:mod:`ccxml.mscclang.lower`) and moves symbolic chunks between per-rank buffer lists, as
msccl-tools does. The symbolic state is what ``chunk()`` (an empty slot is ``None``),
``Ref.get_dst_rank()`` and a custom collective's ``check(prog)`` read; the proof of a built-in
collective comes from ccxml's interpreter instead.

* :class:`Chunk` — one input chunk: where it started and, where the collective says, where it ends.
* :class:`ReduceChunk` — the reduction of several chunks, compared as a multiset.
* :class:`BufferSlice` — a named scratch buffer, grown as chunks are copied into it.

Both constructor forms of msccl-tools are accepted: ``ReduceChunk(creation_rank, chunks)`` and
``chunk.reduce(dst, other)`` (since 2022-05), ``ReduceChunk(chunks)`` and ``chunk.reduce(other)``
(before).
"""
from __future__ import annotations

from enum import Enum

from ccxml.vocab.errors import MSCCLangError


class Buffer(Enum):
    """MSCCLang's buffer names; the values are the wire letters."""

    input = "i"
    output = "o"
    scratch = "s"

    # members are singletons compared by identity: hash them the same way, in C (Enum's own
    # __hash__ is a Python call, and every buffer lookup of a program pays it)
    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.value

    def __lt__(self, other) -> bool:
        return self.value < other.value


class ThreadblockPolicy(Enum):
    """``auto``: the compiler places steps in thread blocks; ``manual``: the program's
    ``sendtb``/``recvtb``/``ch`` hints do (where the runtime's rules allow)."""

    auto = "auto"
    manual = "manual"

    def __str__(self) -> str:
        return self.value


class Chunk:
    """An input chunk: it started at ``origin_rank``/``origin_index``; ``dst_rank``/``dst_index``
    say where the collective wants it (-1: on every rank / not fixed)."""

    __slots__ = ("origin_rank", "origin_index", "dst_rank", "dst_index")

    def __init__(self, origin_rank: int, origin_index: int, dst_rank: int = -1, dst_index: int = -1):
        self.origin_rank = origin_rank
        self.origin_index = origin_index
        self.dst_rank = dst_rank
        self.dst_index = dst_index

    def reduce(self, *args) -> "ReduceChunk":
        """``reduce(dst, other)`` or ``reduce(other)``: this chunk combined with ``other``."""
        other = _reduce_operand(args)
        dst = args[0] if len(args) == 2 else -1
        if type(other) is ReduceChunk:
            return other.reduce(dst, self)
        return ReduceChunk(dst, [self, other])

    def __hash__(self) -> int:
        return hash((self.origin_rank, self.origin_index))

    def __eq__(self, other) -> bool:
        return (type(other) is Chunk and self.origin_rank == other.origin_rank
                and self.origin_index == other.origin_index)

    def __lt__(self, other) -> bool:
        return (self.origin_rank, self.origin_index) < (other.origin_rank, other.origin_index)

    def __repr__(self) -> str:
        return (f"Chunk(origin_rank={self.origin_rank}, origin_index={self.origin_index}, "
                f"dst_rank={self.dst_rank}, dst_index={self.dst_index})")


class ReduceChunk:
    """The reduction of ``chunks``; two are equal when they reduce the same multiset of chunks."""

    __slots__ = ("creation_rank", "chunks")

    def __init__(self, *args):
        if len(args) == 1:                  # ReduceChunk(chunks), msccl-tools before 2022-05
            self.creation_rank, self.chunks = -1, list(args[0])
        elif len(args) == 2:
            self.creation_rank, self.chunks = args[0], list(args[1])
        else:
            raise MSCCLangError(f"ReduceChunk takes (creation_rank, chunks), got {len(args)} arguments")

    def reduce(self, *args) -> "ReduceChunk":
        """``reduce(dst, other)`` or ``reduce(other)``: this reduction combined with ``other``."""
        other = _reduce_operand(args)
        more = other.chunks if type(other) is ReduceChunk else [other]
        return ReduceChunk(self.creation_rank, self.chunks + more)

    def sort(self) -> None:
        self.chunks.sort()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.chunks)))

    def __eq__(self, other) -> bool:
        return type(other) is ReduceChunk and sorted(self.chunks) == sorted(other.chunks)

    def __repr__(self) -> str:
        return f"ReduceChunk(creation_rank={self.creation_rank}, chunks={self.chunks!r})"


def _reduce_operand(args: tuple):
    if len(args) not in (1, 2):
        raise MSCCLangError(f"reduce takes (dst, chunk) or (chunk), got {len(args)} arguments")
    other = args[-1]
    if type(other) not in (Chunk, ReduceChunk):
        raise MSCCLangError("reduce with an empty slot: the chunk reduced in holds no data")
    return other


class BufferSlice:
    """A named scratch buffer of one rank: it grows as chunks are copied into it; the lowering
    gives it an offset in the rank's one scratch buffer."""

    def __init__(self, buf: Buffer, name):
        self.name = name
        self.buf = buf
        self.offset = -1            # into the rank's scratch buffer, set when lowered
        self.chunks: list = []

    def get_global_index(self, index: int) -> int:
        if self.offset < 0:
            raise MSCCLangError(f"scratch buffer {self.name!r} has no offset before the program is lowered")
        return self.offset + index

    def get_buffer(self) -> Buffer:
        return self.buf

    def instance_size(self) -> int:
        return len(self.chunks)

    def set_offset(self, offset: int) -> None:
        self.offset = offset

    def __getitem__(self, index):
        return self.chunks[index]

    def __setitem__(self, index: int, value) -> None:
        n = len(self.chunks)
        if index >= n:
            self.chunks.extend([None] * (index + 1 - n))
        self.chunks[index] = value

    def __len__(self) -> int:
        return len(self.chunks)


__all__ = ["Buffer", "BufferSlice", "Chunk", "ReduceChunk", "ThreadblockPolicy"]
