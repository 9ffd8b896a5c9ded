# cython: nonecheck=True
"""The Chunk API: write a collective as moves of chunks between ranks.

A :class:`Program` names the collective and its buffers; :meth:`Program.chunk` returns a
:class:`Chunk`, a range of ``size`` consecutive chunks of one buffer on one rank. Operations on
chunks issue IR steps (:mod:`ccxml.ir.nodes`):

===========================  ==========================================================
``a.copy(b)``                same rank: ``cpy``; other rank: ``copy_diff`` (``s`` + ``r``)
``a.copy_diff(b)``           a matched send on a's rank and receive on b's rank
``a.reduce(b)``              b ⊕= a. Same rank: ``re``; other rank: ``s`` + ``rrc``
``a.reduce(b, out=c)``       c = b ⊕ a, c on b's rank (receive-reduce-copy into c)
``a.send(rank)``             one ``s`` of a to ``rank`` (one end of a message)
``b.recv(rank)``             one ``r`` into b from ``rank`` (the other end)
``a.rcs(c, via)``            rank ``via`` receives a into c's place and forwards it to c's
                             rank (a receive and a send there, fused into ``rcs``)
===========================  ==========================================================

``send``/``recv`` issue one end of a message each, as the framework design's Chunk does: the
k-th send from rank x to rank y on a channel is matched with the k-th receive on y from x on that
channel when the program is compiled, and an end left over is an error naming both ranks.
Buffers are named by :class:`~ccxml.vocab.wire.Buffer` or by ``"input"``/``"output"``/
``"scratch"`` (or ``"i"``/``"o"``/``"s"``).

Ranges longer than a message may be (:func:`message_cap`: what a link can buffer without
wedging, from the protocol and ``max_bytes``) go as several messages, and local steps longer than
the runtime's ``cnt`` limit as several steps: algorithms never need to cut ranges themselves. A
scratch buffer holds up to :data:`SCRATCH_LIMIT` (2^24) chunks per rank.

Every operation returns the chunk that now holds the result, so chains read naturally:
``prog.chunk(0, I, 3).copy(prog.chunk(1, O, 3)).copy(prog.chunk(2, O, 3))``.

Dependencies are collected while the API is called (phase one of the two-phase build): a step
that reads a chunk depends on its last writer on that rank, a step that writes it also on the
readers since. The passes place the steps in thread blocks, fuse receive+send pairs into
``rcs``/``rrcs``/``rrs`` and number everything when the schedule is compiled.

There is no global "current program": every chunk knows its program.
"""
from __future__ import annotations

from ccxml.frontend.compiled import compile_recorded
from ccxml.ir.nodes import Algo, Step, new_step, pack_deps
from ccxml.vocab.collectives import Collective
from ccxml.vocab.errors import ChunkError, IRError, LinkError
from ccxml.vocab.wire import (
    COPY,
    CUSTOM_COLL,
    INPUT,
    OUTPUT,
    RECV,
    RECV_REDUCE_COPY,
    REDUCE,
    SCRATCH,
    SEND,
    Buffer,
    Coll,
    Profile,
    Proto,
    StepType,
    message_cap,
    profile,
)
from ccxml.writer.msccl import to_xml

#: largest ``cnt`` every runtime accepts
MAX_CNT = 71

_INT32_MAX = 2**31 - 1

#: largest scratch index + 1 a program may use (its access tables are flat lists per rank)
SCRATCH_LIMIT = 1 << 24


class Chunk:
    """``size`` consecutive chunks at ``index`` of buffer ``chunk_type`` on rank ``gpu_id``."""

    __slots__ = ("gpu_id", "chunk_type", "index", "size", "program", "ref")

    def __init__(self, program: "Program", gpu_id: int, chunk_type: Buffer, index: int, size: int):
        self.program = program
        self.gpu_id = gpu_id
        self.chunk_type = chunk_type
        self.index = index
        self.size = size
        self.ref = _shared_ref(program, chunk_type, index)     # the (buffer, offset) a step names

    @property
    def algo(self):
        return self.program.algo

    def __eq__(self, other) -> bool:
        return (isinstance(other, Chunk) and other.program is self.program
                and (other.gpu_id, other.chunk_type, other.index, other.size)
                == (self.gpu_id, self.chunk_type, self.index, self.size))

    def __hash__(self) -> int:
        return hash((self.gpu_id, self.chunk_type, self.index, self.size))

    def __repr__(self) -> str:
        return f"Chunk(rank={self.gpu_id}, {self.chunk_type.name.lower()}[{self.index}:+{self.size}])"

    def _check_size(self, other: "Chunk") -> None:
        if other.program is not self.program:
            raise ChunkError("chunks of two different programs cannot be combined")
        if other.size != self.size:
            raise ChunkError(f"size mismatch: {self} has {self.size} chunks, {other} has {other.size}")

    # ---- operations ---------------------------------------------------------------------
    def _pieces(self, dst: "Chunk", limit: int):
        """(source piece, destination piece) pairs of at most ``limit`` chunks."""
        for lo in range(0, self.size, limit):
            n = min(limit, self.size - lo)
            yield (_new_chunk(self.program, self.gpu_id, self.chunk_type, self.index + lo, n),
                   _new_chunk(dst.program, dst.gpu_id, dst.chunk_type, dst.index + lo, n))

    def copy(self, dst: "Chunk", chan: int = 0, lane: int = -1) -> "Chunk":
        """Copy into ``dst`` (a ``cpy`` on one rank, a send/receive pair across ranks).

        ``lane``, a group of :meth:`Program.lane_group`, leaves the channel of a transfer to the
        threadblocks pass (``chan`` is then only a placeholder)."""
        if dst.program is not self.program or dst.size != self.size:
            self._check_size(dst)
        if dst.gpu_id != self.gpu_id:
            return self._transfer(dst, chan, lane)
        if dst.ref == self.ref:
            return dst
        if self.size > MAX_CNT:
            for a, b in self._pieces(dst, MAX_CNT):
                a.copy(b, chan, lane)
            return dst
        self.program._issue(COPY, self.gpu_id, self.ref, dst.ref, self.size, -1, -1, chan, lane)
        return dst

    def copy_diff(self, dst: "Chunk", chan: int = 0) -> "Chunk":
        """Send to another rank: ``s`` on this rank matched with ``r`` into ``dst`` on its rank.

        A range longer than the program's ``message_cap`` goes as several messages."""
        if dst.program is not self.program or dst.size != self.size:
            self._check_size(dst)
        if dst.gpu_id == self.gpu_id:
            raise ChunkError(f"copy_diff needs two ranks, both chunks are on rank {self.gpu_id}")
        return self._transfer(dst, chan, -1)

    def _transfer(self, dst: "Chunk", chan: int, lane: int) -> "Chunk":
        prog = self.program
        if self.size > prog.message_cap:
            prog._note_cut(self.size)
            for a, b in self._pieces(dst, prog.message_cap):
                a._transfer(b, chan, lane)
            return dst
        send = prog._issue(SEND, self.gpu_id, self.ref, None, self.size, dst.gpu_id, -1, chan, lane)
        recv = prog._issue(RECV, dst.gpu_id, None, dst.ref, self.size, -1, self.gpu_id, chan, lane)
        send.send_to, recv.recv_from = recv, send
        return dst

    def send(self, dst: int, chan: int = 0) -> Step:
        """One ``s`` of this chunk to rank ``dst``: one end of a message, matched with a
        :meth:`recv` on ``dst`` when the program is compiled (the k-th send from this rank to
        ``dst`` on ``chan`` with the k-th receive there). Returns the step."""
        if isinstance(dst, Chunk):
            raise ChunkError(f"Chunk.send takes the destination rank (one s step); for the "
                             f"send/receive pair into {dst} use copy_diff")
        self.program._check_peer(self.gpu_id, dst, "send to")
        return self.program._issue_end(SEND, self.gpu_id, self.ref, None, self.size, dst, -1, chan)

    def recv(self, src: int, chan: int = 0) -> Step:
        """One ``r`` into this chunk from rank ``src``: the other end of a :meth:`send` issued
        on ``src``. Returns the step."""
        if isinstance(src, Chunk):
            raise ChunkError(f"Chunk.recv takes the source rank (one r step); for the "
                             f"send/receive pair from {src} use copy_diff")
        self.program._check_peer(self.gpu_id, src, "receive from")
        return self.program._issue_end(RECV, self.gpu_id, None, self.ref, self.size, -1, src, chan)

    def rcs(self, dst: "Chunk", via: int, chan: int = 0) -> Step:
        """Receive-copy-send on rank ``via``: it receives this chunk from this chunk's rank into
        ``dst``'s buffer and index, and forwards it to ``dst``'s rank. The two ends outside
        ``via`` are issued apart (:meth:`send` here, :meth:`recv` on ``dst``'s rank); the compiler
        fuses the receive and the send into one ``rcs`` where they share a TB. Returns the
        receive step."""
        if dst.program is not self.program or dst.size != self.size:
            self._check_size(dst)
        prog = self.program
        if len({self.gpu_id, dst.gpu_id, via}) != 3:
            raise ChunkError(f"rcs needs three different ranks: {self} -> rank {via} -> {dst}")
        prog._check_peer(via, self.gpu_id, "receive from")
        prog._check_peer(via, dst.gpu_id, "send to")
        here = prog._chunk(via, dst.chunk_type, dst.index, dst.size)
        recv = prog._issue_end(RECV, via, None, here.ref, self.size, -1, self.gpu_id, chan)
        prog._issue_end(SEND, via, here.ref, None, self.size, dst.gpu_id, -1, chan)
        return recv

    def reduce(self, dst: "Chunk", chan: int = 0, out: "Chunk | None" = None, lane: int = -1) -> "Chunk":
        """Combine this chunk into ``dst``: ``out`` (default ``dst``) = ``dst`` ⊕ this.

        Same rank: a local ``re`` (after a ``cpy`` of ``dst`` into ``out`` if they differ).
        Other rank: a send here and a receive-reduce-copy (``rrc``) on ``dst``'s rank whose local
        operand is ``dst`` and whose destination is ``out``.
        """
        if dst.program is not self.program or dst.size != self.size:
            self._check_size(dst)
        if out is None:
            out = dst
        elif out.program is not self.program or out.size != self.size:
            dst._check_size(out)
        if out.gpu_id != dst.gpu_id:
            raise ChunkError(f"reduce: out {out} must be on the rank of dst {dst}")
        prog = self.program
        limit = MAX_CNT if dst.gpu_id == self.gpu_id else prog.message_cap
        if self.size > limit:
            if dst.gpu_id != self.gpu_id:
                prog._note_cut(self.size)
            for (a, b), (_, o) in zip(self._pieces(dst, limit), dst._pieces(out, limit)):
                a.reduce(b, chan, o, lane)
            return out
        if dst.gpu_id == self.gpu_id:
            if out.ref != dst.ref:
                dst.copy(out, chan, lane)
            prog._issue(REDUCE, self.gpu_id, self.ref, out.ref, self.size, -1, -1, chan, lane)
            return out
        send = prog._issue(SEND, self.gpu_id, self.ref, None, self.size, dst.gpu_id, -1, chan, lane)
        recv = prog._issue(RECV_REDUCE_COPY, dst.gpu_id, dst.ref, out.ref, self.size, -1,
                           self.gpu_id, chan, lane)
        send.send_to, recv.recv_from = recv, send
        return out

    def split(self, n: int) -> list["Chunk"]:
        """Cut into ``n`` equal consecutive pieces."""
        if n < 1 or self.size % n:
            raise ChunkError(f"cannot split {self} into {n} equal pieces")
        k = self.size // n
        return [_new_chunk(self.program, self.gpu_id, self.chunk_type, self.index + i * k, k)
                for i in range(n)]


def _new_chunk(program: "Program", gpu_id: int, chunk_type: Buffer, index: int, size: int) -> Chunk:
    """``Chunk(program, gpu_id, chunk_type, index, size)`` (compiled: without the constructor's
    argument parsing)."""
    c = Chunk.__new__(Chunk)
    c.program = program
    c.gpu_id = gpu_id
    c.chunk_type = chunk_type
    c.index = index
    c.size = size
    c.ref = _shared_ref(program, chunk_type, index)
    return c


def piece(program: "Program", rank: int, buffer: Buffer, index: int, size: int) -> Chunk:
    """``program.chunk(rank, buffer, index, size)`` for a ``buffer`` that is a Buffer (compiled:
    a C call from the executor, which issues millions of them)."""
    return program._chunk(rank, buffer, index, size)


def _shared_ref(program: "Program", chunk_type: Buffer, index: int) -> tuple[Buffer, int]:
    """The program's one tuple (``chunk_type``, ``index``): the steps keep their operands, and
    millions of steps name a few thousand of them."""
    refs = program._refs[_buffer_code(chunk_type)]
    if index < len(refs):
        ref = refs[index]
        if ref is None:
            ref = refs[index] = (chunk_type, index)
        return ref
    if 0 <= index < SCRATCH_LIMIT:
        refs.extend([None] * (index + 1 - len(refs)))
        ref = refs[index] = (chunk_type, index)
        return ref
    return (chunk_type, index)


def _gather(held, item):
    """``held`` with ``item`` added, for the records that hold None, one item, or a list of
    items (most hold one, and a list each would cost millions of objects); an item equal to the
    last one held is not added twice."""
    if held is None:
        return item
    if type(held) is list:
        if held[-1] is not item:
            held.append(item)
        return held
    if held is item:
        return held
    return [held, item]


#: the names a buffer goes by: the wire letters and the framework design's words
_BUFFER_NAMES = {"i": INPUT, "o": OUTPUT, "s": SCRATCH,
                 "input": INPUT, "output": OUTPUT, "scratch": SCRATCH}


def buffer_named(name) -> Buffer:
    """The buffer called ``name`` (a Buffer, ``"input"``/``"output"``/``"scratch"`` or
    ``"i"``/``"o"``/``"s"``)."""
    if isinstance(name, Buffer):
        return name
    try:
        return _BUFFER_NAMES[name]
    except (KeyError, TypeError):
        raise ChunkError(f"unknown buffer {name!r}: use input, output or scratch "
                         f"(or i, o, s)") from None


#: dense code of a buffer in the per-rank access tables (key = chunk index · 3 + code)
_CODE = {INPUT: 0, OUTPUT: 1, SCRATCH: 2}

#: what a step of each type does to the local chunk tables (one dict lookup per issued step
#: instead of the members' flag attributes): bit 1 reads ``src``, 2 reads ``dst`` (``re``),
#: 4 writes ``dst``; _ACCESS_DST: either of the last two
_READS_SRC, _READS_DST, _WRITES_DST = 1, 2, 4
_ACCESS_DST = _READS_DST | _WRITES_DST
_ACCESS = {t: (_READS_SRC if t.reads_src else 0) | (_READS_DST if t is REDUCE else 0)
              | (_WRITES_DST if t.writes_dst else 0) for t in StepType}


# Hashing a member of a str Enum with ``__hash__ = str.__hash__`` goes through a Python-level
# ``__hash__`` call: the buffers, looked up twice per step, are tested by identity first.
def _buffer_code(buf: Buffer) -> int:
    """``_CODE[buf]``."""
    if buf is INPUT:
        return 0
    if buf is OUTPUT:
        return 1
    if buf is SCRATCH:
        return 2
    return _CODE[buf]


class Program:
    """A collective being written with the Chunk API; compiles to an :class:`ccxml.ir.nodes.Algo`."""

    def __init__(self, name: str, coll: Coll | str, ngpus: int, nchunksperloop: int, *,
                 proto: Proto | str = Proto.SIMPLE, inplace: bool = False, root: int | None = None,
                 counts=None, min_bytes: int = 0, max_bytes: int = 0,
                 extra_attrs: dict[str, str] | None = None, buffers=None):
        """``coll`` is a :class:`~ccxml.vocab.wire.Coll`, or ``"custom"`` for a collective ccxml
        does not define (MSCCLang's custom collectives, loaded only by the legacy runtime): then
        ``buffers`` gives each rank's (input, output) chunk counts, the buffers never alias and
        the program has no postcondition (``inplace`` only sets the call form the file
        declares)."""
        custom = coll == CUSTOM_COLL
        proto = Proto(proto)
        if ngpus < 2:
            raise ChunkError(f"a collective needs at least 2 ranks, got {ngpus}")
        if nchunksperloop < 1:
            raise ChunkError(f"nchunksperloop must be >= 1, got {nchunksperloop}")
        if custom:
            if buffers is None or len(buffers) != ngpus:
                raise ChunkError(f"a custom collective needs the (input, output) chunk counts of "
                                 f"each of its {ngpus} ranks")
            self.collective = None
            sizes = [(int(i), int(o)) for i, o in buffers]
            if min(min(size) for size in sizes) < 0:
                raise ChunkError("a custom collective's buffers cannot have fewer than 0 chunks")
            root = None
        else:
            coll = Coll(coll)
            if buffers is not None:
                raise ChunkError(f"buffers= is for custom collectives; {coll.value} sizes its own")
            if not coll.rooted:
                root = None
            self.collective = Collective(
                coll, ngpus, nchunksperloop, root,
                tuple(tuple(r) for r in counts) if counts is not None else None)
            sizes = [(self.collective.input_chunks(r), self.collective.output_chunks(r))
                     for r in range(ngpus)]
        self.inplace = inplace
        self.algo = Algo(name, coll, ngpus, nchunksperloop, proto=proto, inplace=inplace,
                         min_bytes=min_bytes, max_bytes=max_bytes, root=root,
                         extra_attrs=extra_attrs)
        aliased = inplace and not custom
        for gpu in self.algo.gpus:
            i, o = sizes[gpu.id]
            if aliased:
                # one buffer holds both; the other is declared empty like real in-place files
                if coll in (Coll.ALLGATHER, Coll.GATHER):
                    i = 0
                else:
                    o = 0
            gpu.input_chunks, gpu.output_chunks = i, o
        self.message_cap = message_cap(proto, max_bytes, nchunksperloop)
        self._ngpus = ngpus
        self._in_sizes = [i for i, _ in sizes]
        self._out_sizes = [o for _, o in sizes]
        self._pending = [gpu.pending for gpu in self.algo.gpus]
        # in place, one buffer stands for both: input j == output j + inplace_input_offset
        self._aliased = self._alias = None
        if aliased:
            shifts = [self.collective.inplace_input_offset(r) for r in range(ngpus)]
            if coll in (Coll.ALLGATHER, Coll.GATHER):
                self._aliased, self._alias, self._alias_shift = INPUT, OUTPUT, shifts
            else:
                self._aliased, self._alias = OUTPUT, INPUT
                self._alias_shift = [-x for x in shifts]
        self._round_mark = [0] * ngpus
        self._issued_on = bytearray(ngpus)   # ranks with steps issued since the last round...
        self._issued_ranks: list[int] = []   # ...in the order they got their first one
        self._round_last: list[list[Step]] = [[] for _ in range(ngpus)]
        self._seq = 0
        # per rank, per chunk key (index·3 + buffer code, grown with the scratch used): the last
        # writer, and the readers since (None, the one step, or a list of steps)
        self._writer: list[list] = []
        self._readers: list[list] = []
        for r in range(ngpus):
            size = 3 * max(self._in_sizes[r], self._out_sizes[r])
            self._writer.append([None] * size)
            self._readers.append([None] * size)
        self._refs: list[list] = [[], [], []]  # per buffer code, per index: the one (buffer, index)
        self._deps: list[Step] = []         # the dependencies of the step being issued
        self._compiled: str | bool = False
        self._ends: list[Step] = []         # steps issued by send/recv/rcs, matched at compile

    @property
    def ngpus(self) -> int:
        return self.algo.ngpus

    # ---- chunks -------------------------------------------------------------------------
    def chunk(self, rank: int, buffer: Buffer | str, index: int, size: int = 1) -> Chunk:
        """The chunk range ``buffer[index:index+size]`` of ``rank``.

        In an in-place program the input and output are one buffer (runtime §7): the reference
        is translated to the buffer the file uses, so algorithms are written once.
        """
        if type(buffer) is not Buffer:
            buffer = buffer_named(buffer)
        return self._chunk(rank, buffer, index, size)

    def input(self, rank: int, index: int, size: int = 1) -> Chunk:
        return self._chunk(rank, INPUT, index, size)

    def output(self, rank: int, index: int, size: int = 1) -> Chunk:
        return self._chunk(rank, OUTPUT, index, size)

    def scratch(self, rank: int, index: int, size: int = 1) -> Chunk:
        return self._chunk(rank, SCRATCH, index, size)

    def _chunk(self, rank: int, buffer: Buffer, index: int, size: int) -> Chunk:
        """:meth:`chunk` once ``buffer`` is a Buffer (compiled: a C call from input/output/scratch)."""
        if not 0 <= rank < self._ngpus:
            raise ChunkError(f"rank {rank} out of range 0..{self._ngpus - 1}")
        if size < 1:
            raise ChunkError(f"chunk size must be >= 1, got {size}")
        if buffer is SCRATCH:
            if index < 0:
                raise ChunkError(f"scratch index {index} < 0")
            if index + size > SCRATCH_LIMIT:
                raise ChunkError(f"scratch[{index}:+{size}] is beyond the {SCRATCH_LIMIT} scratch "
                                 f"chunks a program may use")
            return _new_chunk(self, rank, buffer, index, size)
        limit = (self._in_sizes if buffer is INPUT else self._out_sizes)[rank]
        if index < 0 or index + size > limit:
            raise ChunkError(f"{buffer.name.lower()}[{index}:+{size}] out of range on rank {rank} "
                             f"({limit} chunks)")
        if buffer is self._aliased:
            buffer, index = self._alias, index + self._alias_shift[rank]
        return _new_chunk(self, rank, buffer, index, size)

    # ---- one end of a message (send / recv / rcs) ----------------------------------------
    def _check_peer(self, rank: int, peer: int, what: str) -> None:
        if not isinstance(peer, int) or not 0 <= peer < self._ngpus:
            raise ChunkError(f"rank {rank} cannot {what} rank {peer!r}: ranks are 0..{self._ngpus - 1}")
        if peer == rank:
            raise ChunkError(f"rank {rank} cannot {what} itself")

    def _issue_end(self, type: StepType, gpu: int, src, dst, cnt: int, send_peer: int,
                   recv_peer: int, chan: int) -> Step:
        """Issue one end of a message; :meth:`_match_ends` pairs it at compile time."""
        step = self._issue(type, gpu, src, dst, cnt, send_peer, recv_peer, chan)
        self._ends.append(step)
        return step

    def _match_ends(self) -> None:
        """Pair the ends issued by send/recv/rcs that are not matched yet: on each (sender,
        receiver, channel), the k-th send with the k-th receive in issue order. A count mismatch
        or an end without a partner raises LinkError naming both ranks."""
        sends: dict[tuple[int, int, int], list[Step]] = {}
        recvs: dict[tuple[int, int, int], list[Step]] = {}
        for st in self._ends:
            if st.type.sends and st.send_to is None:
                sends.setdefault((st.gpu, st.send_peer, st.chan), []).append(st)
            if st.type.receives and st.recv_from is None:
                recvs.setdefault((st.recv_peer, st.gpu, st.chan), []).append(st)
        for key in sorted(set(sends) | set(recvs)):
            src, dst, chan = key
            out, got = sends.get(key, []), recvs.get(key, [])
            for s, r in zip(out, got):
                if s.cnt != r.cnt:
                    raise LinkError(f"rank {src} sends {s.cnt} chunk(s) to rank {dst} on channel "
                                    f"{chan} where rank {dst} receives {r.cnt} (message "
                                    f"{out.index(s) + 1} of that link)")
                s.send_to, r.recv_from = r, s
            if len(out) > len(got):
                raise LinkError(f"rank {src} sends {len(out)} message(s) to rank {dst} on channel "
                                f"{chan}, but rank {dst} receives only {len(got)} from rank "
                                f"{src} there: add the missing recv on rank {dst}")
            if len(got) > len(out):
                raise LinkError(f"rank {dst} receives {len(got)} message(s) from rank {src} on "
                                f"channel {chan}, but rank {src} sends only {len(out)} to rank "
                                f"{dst} there: add the missing send on rank {src}")
        self._ends = []

    # ---- step issue (phase one of the dependency build) ----------------------------------
    def _issue(self, type: StepType, gpu: int, src=None, dst=None, cnt: int = 1,
               send_peer: int = -1, recv_peer: int = -1, chan: int = 0, lane: int = -1) -> Step:
        if self._compiled:
            raise ChunkError("the program is already compiled; build a new Program to add steps")
        if chan < 0:
            raise ChunkError(f"channel must be >= 0, got {chan}")
        if chan > _INT32_MAX:               # a step's integer fields are 32-bit when compiled
            raise ChunkError(f"channel {chan} is out of range (no runtime has more than 128)")
        access = _ACCESS[type]
        # the table keys first: a bad operand is refused before anything is recorded
        src_key = self._key(gpu, src, cnt) if src is not None and access & _READS_SRC else -1
        dst_key = self._key(gpu, dst, cnt) if dst is not None and access & _ACCESS_DST else -1
        if lane >= 0:                       # the threadblocks pass picks the lane group's channel
            chan = -1 - lane
        step = new_step(type, gpu, src, dst, cnt, send_peer, recv_peer, chan, self._seq)
        self._seq += 1
        if src_key >= 0:
            if cnt == 1:
                self._read_one(step, src_key, gpu)
            else:
                self._read(step, src_key, cnt, gpu)
        if dst_key >= 0 and access & _READS_DST:
            self._read(step, dst_key, cnt, gpu)
        if dst_key >= 0 and access & _WRITES_DST:
            if cnt == 1:
                self._write_one(step, dst[1], dst_key, gpu)
            else:
                self._write(step, dst[1], dst_key, cnt, gpu)
        deps = self._deps
        if deps:
            step._dep_pack = pack_deps(deps)
            del deps[:]
        self._pending[gpu].append(step)
        if not self._issued_on[gpu]:
            self._issued_on[gpu] = 1
            self._issued_ranks.append(gpu)
        return step

    def _key(self, gpu: int, side: tuple[Buffer, int], cnt: int) -> int:
        """The access-table key of chunk ``side`` on ``gpu`` (index · 3 + buffer code); the
        tables of ``gpu`` are grown to hold ``cnt`` chunks from there."""
        index = side[1]
        if index < 0:
            raise ChunkError(f"{side[0].name.lower()}[{index}:+{cnt}] is out of range")
        key = index * 3 + _buffer_code(side[0])
        end = key + 3 * cnt
        if end > len(self._writer[gpu]):         # only scratch grows (or a Chunk made directly)
            if index + cnt > SCRATCH_LIMIT:
                raise ChunkError(f"{side[0].name.lower()}[{index}:+{cnt}] is out of range "
                                 f"(chunk indices run from 0 to {SCRATCH_LIMIT - 1})")
            grow = [None] * (end - len(self._writer[gpu]))
            self._writer[gpu].extend(grow)
            self._readers[gpu].extend(grow)
        return key

    def _read_one(self, step: Step, key: int, gpu: int) -> None:
        """:meth:`_read` of one chunk (the common case)."""
        w = self._writer[gpu][key]
        if w is not None:
            self._deps.append(w)            # the step's first read: no dependency yet
            if w.type is RECV_REDUCE_COPY:
                w.readers_after = _gather(w.readers_after, step)
        readers = self._readers[gpu]
        readers[key] = _gather(readers[key], step)

    def _read(self, step: Step, lo: int, cnt: int, gpu: int) -> None:
        """``step`` reads ``cnt`` chunks from key ``lo``: it depends on their last writer."""
        writer, readers, deps = self._writer[gpu], self._readers[gpu], self._deps
        for key in range(lo, lo + 3 * cnt, 3):
            w = writer[key]
            if w is not None:
                if w not in deps:
                    deps.append(w)
                if w.type is RECV_REDUCE_COPY:
                    w.readers_after = _gather(w.readers_after, step)
            readers[key] = _gather(readers[key], step)

    def _write(self, step: Step, index: int, lo: int, cnt: int, gpu: int) -> None:
        """``step`` writes ``cnt`` chunks from ``index`` (key ``lo``): it depends on the last
        writer and on the readers since (which it must not overtake)."""
        for i in range(cnt):
            self._write_one(step, index + i, lo + 3 * i, gpu)

    def _write_one(self, step: Step, i: int, key: int, gpu: int) -> None:
        """:meth:`_write` of chunk ``i`` (access-table key ``key``)."""
        writer, readers, deps = self._writer[gpu], self._readers[gpu], self._deps
        w = writer[key]
        if w is not None:
            if w not in deps:
                deps.append(w)
            if w.type is RECV_REDUCE_COPY:
                w.overwritten_by = _gather(w.overwritten_by, (i, step))
        rs = readers[key]
        if rs is not None:
            readers[key] = None
            if type(rs) is list:
                for reader in rs:
                    if reader is not step and reader not in deps:
                        deps.append(reader)
            elif rs is not step and rs not in deps:
                deps.append(rs)
        writer[key] = step

    # ---- algorithm steps ------------------------------------------------------------------
    def lane_group(self, instances: int, instance: int, phase: int, pairs) -> int:
        """A new lane group: the (sender, receiver) ``pairs`` of one step of a stream of transfers
        (lane phase ``phase`` of instance ``instance`` of ``instances``). Transfers issued with
        ``lane=`` the returned number get their channel from the threadblocks pass, which keeps
        independent streams out of each other's thread blocks
        (:func:`ccxml.passes.threadblocks.plan_lanes`)."""
        groups = self.algo.lane_groups
        groups.append((instances, instance, phase, tuple(pairs)))
        return len(groups) - 1

    def next_round(self, receives: bool = True) -> None:
        """End one algorithm step on every rank, as HCCL runs a rank's steps on one stream.

        On each rank, the first send (and, with ``receives``, the first receive) of each
        connection — (channel, peer, direction) — in the round just ended waits for the last
        step of every connection the rank used in its previous round that had any. Data
        dependencies need no rounds; this orders independent transfers that the algorithm runs
        one after another. Call it after issuing each step's transfers.
        """
        marks, gpus = self._round_mark, self.algo.gpus
        ranks, self._issued_ranks = self._issued_ranks, []
        for r in ranks:                     # only ranks with steps issued since the last round
            self._issued_on[r] = 0
            gpu = gpus[r]
            pending = gpu.pending
            fresh = pending[marks[r]:]
            marks[r] = len(pending)
            first: dict[tuple[int, int, int], Step] = {}
            last: dict[tuple[int, int, int], Step] = {}
            for st in fresh:
                if st.send_peer >= 0:
                    key = (st.chan, st.send_peer, 0)
                    first.setdefault(key, st)
                    last[key] = st
                if st.recv_peer >= 0:
                    key = (st.chan, st.recv_peer, 1)
                    if receives:
                        first.setdefault(key, st)
                    last[key] = st
            if not last:
                continue
            previous = self._round_last[gpu.id]
            for st in first.values():
                for before in previous:
                    st.add_dep(before)
            self._round_last[gpu.id] = list(last.values())

    # ---- message length -------------------------------------------------------------------
    def split_directions(self) -> None:
        """Make every thread block one-way (it sends to one peer or receives from one, never
        both: ``Algo.one_way``, :mod:`ccxml.passes.threadblocks`) and lift the message cap to the
        runtime's ``cnt`` limit. A TB then keeps its steps in issue order and a send that fills a
        bounded link blocks only its own TB, never a receive that would drain the peer: an
        exchange (two ranks sending to each other) completes with links that buffer nothing,
        however long its messages. Call it before issuing steps."""
        self.algo.one_way = True
        self.message_cap = MAX_CNT

    def _note_cut(self, size: int) -> None:
        """Record that a message of ``size`` chunks goes as several (the generate summary)."""
        algo = self.algo
        algo.cut_messages += 1
        algo.cut_to = self.message_cap

    # ---- compilation --------------------------------------------------------------------
    def compile(self, target: Profile | str = "exec", *, merge_rcs: bool = True,
                sort: bool = True, hook=None, passes=None, consume: bool = False) -> Algo:
        """The program compiled for ``target`` (a :class:`~ccxml.vocab.wire.Profile` or its
        name) by the target's default pipeline (``merge_rcs``, ``sort``) or by ``passes`` (a
        :class:`ccxml.passes.Pipeline`); ``hook(pass, algo)`` is called after each pass
        (:meth:`ccxml.passes.Pipeline.run`).

        The passes run on a copy of the recorded :attr:`algo` (:func:`ccxml.ir.clone.clone_algo`),
        so one program compiles for several targets and each gives the files a fresh build would
        (a compile that fails leaves the program usable). The same target and pipeline again
        returns the same Algo. ``consume=True`` compiles the recorded Algo itself, with no copy
        (for a caller that compiles once, as ``ccxml generate`` does: the copy would double the
        memory of a large program); the program cannot compile for anything else after that."""
        return compile_recorded(self, target, merge_rcs=merge_rcs, sort=sort, hook=hook, passes=passes,
                                consume=consume)

    def to_xml(self, target: Profile | str = "exec", **options) -> str:
        prof = target if isinstance(target, Profile) else profile(target)
        return to_xml(self.compile(prof, **options), target=prof.name)


__all__ = ["Chunk", "ChunkError", "IRError", "Program", "buffer_named"]
