"""The MSCCLang program API: ``MSCCLProgram``, ``chunk``, ``Ref.copy``/``reduce``, ``XML``, ``Check``.

A program is written as msccl-tools' MSCCLang (``msccl.language``) reads it::

    with MSCCLProgram("ring", fully_connected(4), AllReduce(4, 4, True), instances=1):
        c = chunk(0, Buffer.input, 0)
        c = chunk(1, Buffer.input, 0).reduce(c)
        ...
        XML()
        Check()

Every call does what MSCCLang's does to the symbolic buffers (:mod:`ccxml.mscclang.chunks`) and
records one operation; ``XML()`` and ``Check()`` lower the recorded program through ccxml's Chunk
API and passes (:mod:`ccxml.mscclang.lower`): the XML meets the target runtime's rules, and
``Check()`` proves it with ccxml's interpreter.

The ``with`` block makes the program current for ``chunk()``, ``XML()`` and ``Check()``, as
MSCCLang does; here the current program is a context variable (one per thread), set on entry and
reset on exit, also when the block raises. What a run asks of ``XML()`` — the target, the size
window, where the text goes — is a :class:`Session`, set the same way by ``ccxml mscclang``;
without one ``XML()`` prints the text for msccl-executor-nccl, as msccl-tools prints its own.

Both call forms of msccl-tools are accepted: ``Ref.reduce(other)`` (since 2022-05) and
``Ref.reduce(rank, buffer, index)`` / ``Ref.send(...)`` (= ``copy``) (before), which three of
its examples still use.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from ccxml.mscclang.chunks import Buffer, BufferSlice, ThreadblockPolicy
from ccxml.mscclang.record import COPY, REDUCE, Output, Session
from ccxml.vocab.errors import MSCCLangError

#: the program of the innermost ``with MSCCLProgram(...)`` block (per thread / context)
_CURRENT: ContextVar["MSCCLProgram | None"] = ContextVar("ccxml_mscclang_program", default=None)
#: the run's settings (``ccxml mscclang``); None: each program keeps its own defaults
_SESSION: ContextVar["Session | None"] = ContextVar("ccxml_mscclang_session", default=None)

PROTOCOLS = ("Simple", "LL", "LL128")


@contextmanager
def session(s: Session):
    """Make ``s`` the run's session for the ``with`` block."""
    token = _SESSION.set(s)
    try:
        yield s
    finally:
        _SESSION.reset(token)


def _curr() -> "MSCCLProgram":
    prog = _CURRENT.get()
    if prog is None:
        raise MSCCLangError("No Program in context: chunk(), XML() and Check() run inside "
                            "`with MSCCLProgram(...):`")
    return prog


class MSCCLProgram:
    """An MSCCLang program over ``topo`` implementing ``collective``, replicated ``instances``
    times (``interleaved_replication``: chunk i of instance k at i·instances + k, else the
    whole buffer repeated)."""

    def __init__(self, name, topo, collective, instances, protocol="Simple",
                 threadblock_policy=ThreadblockPolicy.auto, interleaved_replication=True,
                 instr_fusion=True, check_xml=True, dependence_nop=False):
        if protocol not in PROTOCOLS:
            raise MSCCLangError(f"Given protocol: {protocol}. Must be either Simple, LL, LL128")
        if not isinstance(instances, int) or isinstance(instances, bool) or instances < 1:
            raise MSCCLangError(f"instances must be an integer >= 1, got {instances!r}")
        if not hasattr(topo, "num_nodes") or not hasattr(topo, "link"):
            raise MSCCLangError(f"{topo!r} is not a topology (msccl.topologies: fully_connected(n), ...)")
        for attr in ("init_buffers", "get_buffer_index", "check", "name", "num_ranks", "inplace"):
            if not hasattr(collective, attr):
                raise MSCCLangError(f"{collective!r} is not an MSCCLang collective (no {attr})")
        self.name = name
        self.topo = topo
        self.collective = collective
        self.num_ranks = topo.num_nodes()
        self.instances = instances
        self.protocol = protocol
        self.threadblock_policy = threadblock_policy
        self.interleaved_replication = interleaved_replication
        self.instr_fusion = instr_fusion
        self.check_xml = check_xml
        self.dependence_nop = dependence_nop
        if collective.num_ranks != self.num_ranks:
            raise MSCCLangError(f"the collective is for {collective.num_ranks} ranks, the topology "
                                f"{getattr(topo, 'name', topo)} has {self.num_ranks}")
        self.buffers = collective.init_buffers()
        _check_buffers(self.buffers, self.num_ranks, collective)
        self.ops: list[tuple] = []          # (kind, src Ref, dst Ref, sendtb, recvtb, ch)
        self._session = _SESSION.get() or Session(print_xml=True)
        self._lowered: dict = {}            # target -> (ops recorded, Lowered)
        self._token = None

    # ---- the current program -------------------------------------------------------------
    def __enter__(self):
        if _CURRENT.get() is not None:
            raise MSCCLangError("There is already a MSCCL Program in context")
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, exc_type, exc_value, exc_traceback):
        token, self._token = self._token, None
        if token is not None:
            _CURRENT.reset(token)
        return False

    # ---- symbolic execution (what msccl-tools tracks for Check and chunk()) -------------
    def _rank_buffers(self, rank) -> dict:
        if not isinstance(rank, int) or not 0 <= rank < self.num_ranks:
            raise MSCCLangError(f"rank {rank!r} is out of range 0..{self.num_ranks - 1}")
        return self.buffers[rank]

    def _buffer(self, rank: int, buffer):
        bufs = self._rank_buffers(rank)
        try:
            return bufs[buffer]
        except (KeyError, TypeError):
            raise MSCCLangError(f"rank {rank} has no buffer {_name(buffer)} (a scratch buffer "
                                f"exists once something is copied into it)") from None

    def _slots(self, rank: int, buffer, index: int, size: int, what: str, reads: bool):
        """The buffer holding [index, index+size) on ``rank``, range-checked (a scratch buffer
        grows when written, so only a read must stay inside it)."""
        buf = self.buffers[rank].get(buffer) if type(rank) is int and 0 <= rank < self.num_ranks else None
        if buf is None:
            buf = self._buffer(rank, buffer)
        if type(index) is not int or index < 0 or (
                (reads or type(buf) is not BufferSlice) and index + size > len(buf)):
            raise MSCCLangError(
                f"{what} rank {rank} {_name(buffer)}[{index}:+{size}]: that buffer holds "
                f"{len(buf)} chunk(s) for {self.collective.name} of {self.num_ranks} ranks")
        return buf

    def _operands(self, src, src_buffer, src_index, dst, dst_buffer, dst_index, size, verb: str):
        """(source slots, buffer, index, destination slots, buffer, index) of a copy or reduce,
        after the collective's aliasing, range-checked."""
        where = self.collective.get_buffer_index
        src_buffer, src_index = where(src, src_buffer, src_index)
        dst_buffer, dst_index = where(dst, dst_buffer, dst_index)
        return (self._slots(src, src_buffer, src_index, size, f"{verb} from", True), src_buffer,
                src_index, self._slots(dst, dst_buffer, dst_index, size,
                                       f"{verb} {'to' if verb == 'copy' else 'into'}", verb != "copy"),
                dst_buffer, dst_index)

    def apply_send(self, src, src_buffer, src_index, dst, dst_buffer, dst_index, size):
        sb, _, src_index, db, _, dst_index = self._operands(src, src_buffer, src_index, dst,
                                                            dst_buffer, dst_index, size, "copy")
        if size == 1:
            db[dst_index] = sb[src_index]
        else:
            for i in range(size):
                db[dst_index + i] = sb[src_index + i]

    def apply_reduce(self, src, src_buffer, src_index, dst, dst_buffer, dst_index, size):
        sb, src_buffer, src_index, db, dst_buffer, dst_index = self._operands(
            src, src_buffer, src_index, dst, dst_buffer, dst_index, size, "reduce")
        for i in range(size):
            into, sent = db[dst_index + i], sb[src_index + i]
            if into is None:
                raise MSCCLangError(f"reduce into rank {dst} {_name(dst_buffer)}[{dst_index + i}], "
                                    f"which holds no data yet")
            if sent is None:
                raise MSCCLangError(f"reduce from rank {src} {_name(src_buffer)}[{src_index + i}], "
                                    f"which holds no data yet")
            db[dst_index + i] = into.reduce(dst, sent)

    def get_ref(self, rank, buffer, index, size) -> "Ref":
        buffer, index = self.collective.get_buffer_index(rank, buffer, index)
        return Ref(rank, buffer, index, size, self)

    def get_chunks(self, rank, buffer, index, size=1) -> list:
        buf = self.buffers[rank].get(buffer)
        return [buf[index + i] if buf and index + i < len(buf) else None for i in range(size)]

    def check_buffer_exists(self, rank, name) -> None:
        bufs = self._rank_buffers(rank)
        if name is not None and name not in bufs:
            try:
                bufs[name] = BufferSlice(Buffer.scratch, name)
            except TypeError:
                raise MSCCLangError(f"a scratch buffer is named by a hashable value, not {name!r}") from None

    def _record(self, kind: str, src: "Ref", dst: "Ref", sendtb, recvtb, ch) -> None:
        if not (type(sendtb) is int and type(recvtb) is int and type(ch) is int
                and sendtb >= -1 and recvtb >= -1 and ch >= -1):
            for hint, what in ((sendtb, "sendtb"), (recvtb, "recvtb"), (ch, "ch")):
                if type(hint) is not int or hint < -1:
                    raise MSCCLangError(f"{what}={hint!r}: a thread block or channel is an integer "
                                        f">= 0 (-1: let the compiler choose)")
        self.ops.append((kind, src, dst, sendtb, recvtb, ch))

    def _check_link(self, src: int, dst: int) -> None:
        if src != dst and not self.topo.link(src, dst):
            raise MSCCLangError(f"No link from {src} to {dst} in topology "
                                f"{getattr(self.topo, 'name', self.topo)}")

    # ---- results ---------------------------------------------------------------------------
    def lower(self, target: str | None = None):
        """The program compiled for ``target`` (default: the run's): a
        :class:`ccxml.mscclang.lower.Lowered`, made once per target and program state."""
        from ccxml.mscclang.lower import lower_program
        target = target or self._session.target
        have = self._lowered.get(target)
        if have is None or have[0] != len(self.ops):
            have = self._lowered[target] = (len(self.ops), lower_program(self, target, self._session))
        return have[1]

    def generate_xml(self) -> str:
        return self.lower().text

    def check(self) -> bool:
        """The collective's postcondition, proven by ccxml's interpreter on the compiled XML (a
        custom collective: the interpreter proves the schedule runs — no deadlock, no race — and
        the collective's own ``check`` judges the data)."""
        from ccxml.mscclang.lower import check_program
        ok, reason = check_program(self)
        if not ok:
            self._session.failures.append((self.name, reason))
            if self._session.print_xml:
                print(f"Check() failed: {reason}")
        return ok

    def print_chunk_dag(self):
        raise MSCCLangError("Print() (msccl-tools' chunk-DAG viewer) is not supported")


def _check_buffers(buffers, n: int, collective) -> None:
    if not isinstance(buffers, list) or len(buffers) != n:
        raise MSCCLangError(f"{type(collective).__name__}.init_buffers() must return one dict of "
                            f"buffers per rank ({n}), got {type(buffers).__name__}")
    for r, bufs in enumerate(buffers):
        if not isinstance(bufs, dict) or Buffer.input not in bufs:
            raise MSCCLangError(f"{type(collective).__name__}.init_buffers(): rank {r} needs a dict "
                                f"with at least Buffer.input")


def _name(buffer) -> str:
    return buffer.name if isinstance(buffer, Buffer) else repr(buffer)


class Ref:
    """``size`` consecutive chunks at ``index`` of ``buffer`` on ``rank`` of program ``prog``
    (MSCCLang's ``Ref``; ``buffer`` is ``Buffer.input``/``output`` or a scratch buffer's name)."""

    __slots__ = ("rank", "buffer", "index", "size", "prog")

    def __init__(self, rank, buffer, index, size, prog):
        self.rank = rank
        self.buffer = buffer
        self.index = index
        self.size = size
        self.prog = prog

    def __eq__(self, other) -> bool:
        return (type(other) is Ref and other.prog is self.prog
                and (self.rank, self.buffer, self.index, self.size)
                == (other.rank, other.buffer, other.index, other.size))

    def __hash__(self) -> int:
        return hash((self.rank, self.buffer, self.index, self.size))

    def __repr__(self) -> str:
        return f"Ref(Buffer:{self.buffer}, Index:{self.index}, Size:{self.size}, Rank:{self.rank})"

    def _end(self) -> int:
        return self.index + self.size

    def _get_chunk(self, index):
        buf = self.prog._buffer(self.rank, self.buffer)
        chunk = buf[index] if 0 <= index < len(buf) else None
        if chunk is None:
            raise MSCCLangError(f"rank {self.rank} {_name(self.buffer)}[{index}] holds no data")
        return chunk

    def split(self, num) -> list["Ref"]:
        if not isinstance(num, int) or num < 1 or self.size % num:
            raise MSCCLangError(f"Trying to split a chunk of {self.size} elements into {num} parts")
        size = self.size // num
        return [self.prog.get_ref(self.rank, self.buffer, self.index + i * size, size)
                for i in range(num)]

    def group(self, other: "Ref") -> "Ref":
        if other.rank != self.rank:
            raise MSCCLangError(f"Trying to concatenate chunks on ranks {self.rank} and {other.rank}")
        if other.buffer != self.buffer:
            raise MSCCLangError(f"Trying to concatenate chunks in {self.buffer} and {other.buffer}")
        first, second = (self, other) if self.index < other.index else (other, self)
        end = max(first._end(), second._end())
        return Ref(self.rank, self.buffer, first.index, end - first.index, self.prog)

    def copy(self, dst, buffer=None, index=-1, sendtb=-1, recvtb=-1, ch=-1):
        """Copy these chunks to rank ``dst`` at ``buffer[index]`` (default: the same buffer and
        index; a scratch buffer without an index: its end). Returns the destination's Ref, or
        None when it is these very chunks."""
        prog = self.prog
        if buffer is not None and buffer is not Buffer.input and buffer is not Buffer.output:
            prog.check_buffer_exists(dst, buffer)
        elif type(dst) is not int or not 0 <= dst < prog.num_ranks:
            prog._rank_buffers(dst)
        if index == -1 and buffer is None:
            index, buffer = self.index, self.buffer
        elif index == -1 and buffer is not Buffer.input and buffer is not Buffer.output:
            index = prog._buffer(dst, buffer).instance_size()
        # in-place collectives alias their buffers (MSCCLang resolves this with the source rank)
        buffer, index = prog.collective.get_buffer_index(self.rank, buffer, index)
        prog._check_link(self.rank, dst)
        dst_ref = prog.get_ref(dst, buffer, index, self.size)
        if dst_ref == self:
            return None
        prog.apply_send(self.rank, self.buffer, self.index, dst, buffer, index, self.size)
        prog._record(COPY, self, dst_ref, sendtb, recvtb, ch)
        return dst_ref

    def send(self, dst, buffer=None, index=-1, sendtb=-1, recvtb=-1, ch=-1):
        """msccl-tools' name for :meth:`copy` before 2022-05."""
        return self.copy(dst, buffer, index, sendtb, recvtb, ch)

    def reduce(self, *args, **kwargs):
        """``self.reduce(other, sendtb=-1, recvtb=-1, ch=-1)``: these chunks ⊕= ``other``'s, and
        returns self. The form before 2022-05, ``self.reduce(rank, buffer, index=-1, sendtb=-1,
        recvtb=-1, ch=0)``, reduces these chunks into ``rank``'s ``buffer[index]`` and returns
        that Ref."""
        first = args[0] if args else kwargs.get("other_chunkref", kwargs.get("dst"))
        if isinstance(first, int) and not isinstance(first, bool):
            return self._reduce_into(*args, **kwargs)
        return self._reduce(*args, **kwargs)

    def _reduce(self, other_chunkref, sendtb=-1, recvtb=-1, ch=-1):
        if not isinstance(other_chunkref, Ref):
            raise MSCCLangError(f"reduce takes the chunks to reduce in (a Ref), not {other_chunkref!r}")
        if other_chunkref.prog is not self.prog:
            raise MSCCLangError("reduce: the two chunks belong to different programs")
        if other_chunkref.size != self.size:
            raise MSCCLangError(f"reduce: {self} and {other_chunkref} differ in size")
        prog = self.prog
        src, dst = other_chunkref.rank, self.rank
        prog._check_link(src, dst)
        prog.apply_reduce(src, other_chunkref.buffer, other_chunkref.index, dst, self.buffer,
                          self.index, self.size)
        prog._record(REDUCE, other_chunkref, self, sendtb, recvtb, ch)
        return self

    def _reduce_into(self, dst, buffer=None, index=-1, sendtb=-1, recvtb=-1, ch=0):
        prog = self.prog
        prog._rank_buffers(dst)
        prog.check_buffer_exists(dst, buffer)
        buffer, index = prog.collective.get_buffer_index(self.rank, buffer, index)
        return prog.get_ref(dst, buffer, index, self.size)._reduce(self, sendtb, recvtb, ch)

    def get_origin_index(self, index=0):
        return self._get_chunk(index + self.index).origin_index

    def get_origin_rank(self, index=0):
        return self._get_chunk(index + self.index).origin_rank

    def get_dst_index(self, index=0):
        return self._get_chunk(index + self.index).dst_index

    def get_dst_rank(self, index=0):
        return self._get_chunk(index + self.index).dst_rank

    def print_chunk_info(self, index=0):
        print(self._get_chunk(index + self.index))


#: MSCCLang's base class of Ref (code that tests ``isinstance(x, ChunkRef)``)
ChunkRef = Ref


def chunk(rank, buffer, index, size=1):
    """The Ref to ``size`` chunks at ``buffer[index]`` of ``rank``, or None if that slot holds
    no data."""
    prog = _CURRENT.get()
    if prog is None:
        prog = _curr()
    buf = prog.buffers[rank].get(buffer) if type(rank) is int and 0 <= rank < prog.num_ranks else None
    if buf is None:
        buf = prog._buffer(rank, buffer)
    if type(index) is not int or not 0 <= index < len(buf):
        raise MSCCLangError(f"chunk({rank}, {_name(buffer)}, {index!r}): that buffer holds "
                            f"{len(buf)} chunk(s) on rank {rank}")
    if buf[index] is None:
        return None
    return prog.get_ref(rank, buffer, index, size)


def XML():
    """Compile the current program: its XML goes to the run (``ccxml mscclang``: the output
    file), or is printed as msccl-tools prints it."""
    prog = _curr()
    lowered = prog.lower()
    prog._session.outputs.append(lowered.output)
    if prog._session.print_xml:
        print(lowered.text, end="")


def Check() -> bool:
    return _curr().check()


def Print():
    _curr().print_chunk_dag()


def create_scratch(rank, name):
    raise MSCCLangError("create_scratch() is not part of MSCCLang (a scratch buffer exists once "
                        "something is copied into it: c.copy(rank, 'name'))")


__all__ = ["COPY", "Check", "ChunkRef", "MSCCLProgram", "Output", "PROTOCOLS", "Print", "REDUCE",
           "Ref", "Session", "XML", "chunk", "create_scratch", "session"]
