"""The IR: ``Algo → GPU → TB → Step``, mirroring the MSCCL XML hierarchy.

The dataclasses mirror the wire format (``ccxml.vocab.wire`` enums carry the strings) but hold object
references where the XML holds numbers: a step's dependencies are :class:`Step` references and its
link partner is the matching :class:`Step` on the peer GPU. ``s``, ``depid``, ``deps`` and
``hasdep`` are derived from those references when the schedule is exported
(:func:`ccxml.passes.numbering.number_steps`), so no pass can leave a stale index behind.

Steps are created by the Chunk API (:mod:`ccxml.frontend.chunk`) and placed into thread blocks by the
passes (:mod:`ccxml.passes`). The IR is plain data: it imports nothing but the vocabulary, knows no
XML attribute names and runs no pass (CI's import contracts hold it to that).
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from ccxml.vocab.errors import IRError
from ccxml.vocab.wire import (
    INPUT,
    NOP,
    OUTPUT,
    RECV,
    RECV_REDUCE_SEND,
    REDUCE,
    SEND,
    Buffer,
    Coll,
    Proto,
    StepType,
)


class Step:
    """One ``<step>``.

    ``src``/``dst`` are the *local* operands (buffer, chunk offset) the kernel reads and writes;
    ``None`` where the type does not use that side. ``recv_from`` is the sending step this step's
    receive is matched with, ``send_to`` the receiving step its send is matched with. ``chan`` is
    the channel, or ``-1 - g`` for a step on lane group g (``Algo.lane_groups``) until the
    threadblocks pass gives it the group's channel.
    """

    __slots__ = ("type", "gpu", "src", "dst", "cnt", "send_peer", "recv_peer", "chan", "tb",
                 "recv_from", "send_to", "_dep_pack", "original_index", "send_index", "recv_index",
                 "dep", "merged_into", "publish", "readers_after", "overwritten_by", "_s")
    # the fields' types, for the type checker (set by _fill; the .pxd types them when compiled)
    type: StepType
    gpu: int
    src: tuple[Buffer, int] | None
    dst: tuple[Buffer, int] | None
    cnt: int
    send_peer: int
    recv_peer: int
    chan: int
    tb: TB | None
    recv_from: Step | None
    send_to: Step | None
    _dep_pack: Step | tuple[Step, ...] | None
    original_index: int
    send_index: int
    recv_index: int
    dep: Step | None
    merged_into: Step | None
    publish: bool
    readers_after: Any          # None, one reader, or a list (see _fill)
    overwritten_by: Any
    _s: int

    def __init__(self, type: StepType, gpu: int, src: tuple[Buffer, int] | None = None,
                 dst: tuple[Buffer, int] | None = None, cnt: int = 1, send_peer: int = -1,
                 recv_peer: int = -1, chan: int = 0, original_index: int = 0):
        _fill(self, type, gpu, src, dst, cnt, send_peer, recv_peer, chan, original_index)

    # ---- seed-design names --------------------------------------------------------------
    @property
    def peer_step(self) -> "Step | None":
        """The matching step on the peer GPU (send side first)."""
        return self.send_to or self.recv_from

    @peer_step.setter
    def peer_step(self, other: "Step") -> None:
        link_steps(self, other)

    @property
    def srcbuf(self) -> str:
        """The ``srcbuf`` the file names for this step (see :func:`wire_operands`)."""
        return wire_operands(self)[0][0]._value_

    @property
    def srcoff(self) -> int:
        return wire_operands(self)[0][1]

    @property
    def dstbuf(self) -> str:
        return wire_operands(self)[1][0]._value_

    @property
    def dstoff(self) -> int:
        return wire_operands(self)[1][1]

    @property
    def s(self) -> int:
        """Position in the TB, assigned at export time."""
        return self._s

    @property
    def dep_list(self) -> tuple["Step", ...]:
        """The same-GPU steps this one waits for, collected while the API is called. Stored
        packed (most of millions of steps have exactly one, and a tuple of one is a separate
        48-byte object that every pass would fetch): see :func:`step_deps`."""
        return step_deps(self)

    @dep_list.setter
    def dep_list(self, deps: Sequence[Step]) -> None:
        self._dep_pack = pack_deps(deps)

    @property
    def depid(self) -> int:
        return self.dep.tb.id if self.dep is not None else -1    # type: ignore[union-attr]  # placed

    @property
    def deps(self) -> int:
        return self.dep.s if self.dep is not None else -1

    @property
    def hasdep(self) -> int:
        return 1 if self.publish else 0

    def add_dep(self, other: "Step") -> None:
        """Record that this step must run after ``other`` (same GPU only)."""
        if other.gpu != self.gpu:
            raise IRError(f"dependency across GPUs: step {self.describe()} cannot depend on "
                          f"{other.describe()}; cross-GPU order comes only from send/recv")
        if other is not self and other not in self.dep_list:
            self.dep_list += (other,)

    def resolved(self) -> "Step":
        """The step that stands for this one after fusion."""
        step = self
        while step.merged_into is not None:
            step = step.merged_into
        return step

    def remove_dep(self, other: "Step") -> None:
        if other in self.dep_list:
            self.dep_list = tuple(d for d in self.dep_list if d is not other)

    def reads_chunk(self, buf: Buffer, c: int) -> bool:
        """Whether the step reads chunk ``c`` of local buffer ``buf`` (its src, and for ``re``
        also its dst)."""
        return step_reads_chunk(self, buf, c)

    def describe(self) -> str:
        where = f"gpu {self.gpu}"
        if self.tb is not None:
            where += f" tb(send={self.tb.send},recv={self.tb.recv},chan={self.tb.chan})"
        return f"#{self.original_index} {self.type.value} on {where}"

    def __repr__(self) -> str:
        return f"<Step {self.describe()} src={self.src} dst={self.dst} cnt={self.cnt}>"


def new_step(type: StepType, gpu: int, src: tuple[Buffer, int] | None, dst: tuple[Buffer, int] | None,
             cnt: int, send_peer: int, recv_peer: int, chan: int, original_index: int) -> Step:
    """``Step(type, gpu, src, dst, cnt, send_peer, recv_peer, chan, original_index)`` without the
    argument handling of a call to the class: the Chunk API makes millions of steps."""
    st = Step.__new__(Step)
    _fill(st, type, gpu, src, dst, cnt, send_peer, recv_peer, chan, original_index)
    return st


def _fill(st: Step, type: StepType, gpu: int, src: tuple[Buffer, int] | None,
          dst: tuple[Buffer, int] | None, cnt: int, send_peer: int, recv_peer: int,
          chan: int, original_index: int) -> None:
    """Set every field of a new step (:class:`Step`'s constructor and :func:`new_step`)."""
    st.type = type
    st.gpu = gpu
    st.src = src
    st.dst = dst
    st.cnt = cnt
    st.send_peer = send_peer
    st.recv_peer = recv_peer
    st.chan = chan
    st.original_index = original_index
    st.tb = None                # its TB, once the threadblocks pass has placed it
    st.recv_from = None         # the matched sending step (see the class docstring)
    st.send_to = None           # the matched receiving step
    # the same-GPU steps this one waits for, collected while the API is called (see
    # dep_list): None, the one step, or a tuple of two or more
    st._dep_pack = None
    st.send_index = -1
    st.recv_index = -1
    st.dep = None               # the one direct dependency after the build
    st.merged_into = None       # set when fusion folds this step into another
    st.publish = False          # hasdep: some step waits on it (or it must publish)
    # recorded by the Chunk API for ``rrc`` steps, the only ones fusion asks whether their
    # store is dead (None until there is one, a list from the second on; most have one):
    # who read what this step wrote, and who overwrote it: (chunk index in the destination
    # buffer, overwriting step)
    st.readers_after = None
    st.overwritten_by = None
    st._s = -1


#: the operands a ``nop`` names in real files
_NOP_OPERANDS = ((INPUT, -1), (OUTPUT, -1))


def wire_operands(step: Step) -> tuple[tuple[Buffer, int], tuple[Buffer, int]]:
    """The (buffer, offset) pair the file names as ``src`` and as ``dst`` for ``step``: its local
    operands, where a send names the receiver's destination and a receive the sender's source
    (runtime §1.6: those fields are informational), and a side the type does not use repeats the
    other. The writer's rule; it lives here so that the IR can answer ``srcbuf``/``dstoff``."""
    t = step.type
    if t is NOP:
        return _NOP_OPERANDS
    src, dst = step.src, step.dst
    if t is SEND or (t is RECV_REDUCE_SEND and dst is None):
        peer = step.send_to
        dst = (None if peer is None else peer.dst) or src
    elif t is RECV:
        peer = step.recv_from
        src = (None if peer is None else peer.src or peer.dst) or dst
    # a step other than a nop has at least one local operand
    return src or dst, dst or src           # type: ignore[return-value]


def link_steps(a: Step, b: Step) -> None:
    """Match ``a`` and ``b`` as the two ends of one message (either order): the one that sends
    to the other's GPU is the sender. A step matched before is unmatched from its old partner.
    Raises IRError naming both steps when they cannot be the two ends of one link."""
    if a.type.sends and b.type.receives and a.send_peer == b.gpu and b.recv_peer == a.gpu:
        send, recv = a, b
    elif b.type.sends and a.type.receives and b.send_peer == a.gpu and a.recv_peer == b.gpu:
        send, recv = b, a
    else:
        raise IRError(f"{a.describe()} (send peer {a.send_peer}, recv peer {a.recv_peer}) and "
                      f"{b.describe()} (send peer {b.send_peer}, recv peer {b.recv_peer}) are not "
                      f"the two ends of one message between gpu {a.gpu} and gpu {b.gpu}")
    if send.send_to is not None and send.send_to is not recv:
        send.send_to.recv_from = None
    if recv.recv_from is not None and recv.recv_from is not send:
        recv.recv_from.send_to = None
    send.send_to, recv.recv_from = recv, send


def step_deps(step: Step) -> tuple[Step, ...]:
    """``step.dep_list`` (a function, so that compiled passes call it directly): a one-step
    tuple is made afresh, which costs less than fetching a stored one from memory."""
    d = step._dep_pack
    if d is None:
        return ()
    if type(d) is tuple:
        return d
    return (d,)                             # type: ignore[return-value]  # d is one Step


def dep_count(step: Step) -> int:
    """``len(step.dep_list)`` without making the tuple."""
    d = step._dep_pack
    if d is None:
        return 0
    if type(d) is tuple:
        return len(d)
    return 1


def pack_deps(deps: Sequence[Step]) -> Step | tuple[Step, ...] | None:
    """What a step stores for the dependencies ``deps`` (a sequence of steps)."""
    n = len(deps)
    if n == 0:
        return None
    if n == 1:
        return deps[0]
    return tuple(deps)


def step_reads_chunk(step: Step, buf: Buffer, c: int) -> bool:
    """:meth:`Step.reads_chunk` (a function, so that compiled passes call it directly)."""
    src, dst, t, n = step.src, step.dst, step.type, step.cnt
    if src is not None and t.reads_src and src[0] is buf and src[1] <= c < src[1] + n:
        return True
    return t is REDUCE and dst is not None and dst[0] is buf and dst[1] <= c < dst[1] + n


class TB:
    """One ``<tb>``: a thread block with at most one send peer and one recv peer on one channel."""

    __slots__ = ("id", "send", "recv", "chan", "steps", "send_count", "recv_count", "gpu",
                 "origin", "segment")

    def __init__(self, send: int, recv: int, chan: int, gpu: int = -1):
        self.id = -1
        self.send = send
        self.recv = recv
        self.chan = chan
        self.steps: list[Step] = []
        self.send_count = 0
        self.recv_count = 0
        self.gpu = gpu
        self.origin: TB = self      # the TB this one was split from (itself if not split)
        self.segment = 0            # which piece of ``origin`` it is

    @property
    def key(self) -> tuple[int, int, int]:
        return self.send, self.recv, self.chan

    @property
    def send_index(self) -> int:
        """The design's name for ``send_count``: the index the TB's next send gets."""
        return self.send_count

    @property
    def recv_index(self) -> int:
        """The design's name for ``recv_count``: the index the TB's next receive gets."""
        return self.recv_count

    def add_step(self, step: Step) -> None:
        """Append ``step``; number its send and receive within this TB's link sequences."""
        if step.type.sends:
            if step.send_peer != self.send:
                raise IRError(f"{step.describe()} sends to {step.send_peer}, TB sends to {self.send}")
            step.send_index = self.send_count
            self.send_count += 1
        if step.type.receives:
            if step.recv_peer != self.recv:
                raise IRError(f"{step.describe()} receives from {step.recv_peer}, TB from {self.recv}")
            step.recv_index = self.recv_count
            self.recv_count += 1
        step.tb = self
        self.steps.append(step)

    def number_links(self) -> None:
        """Number the TB's sends and receives in step order (``send_index`` / ``recv_index``, -1
        where a step has none) and count them; for passes that rebuild ``steps`` wholesale."""
        ns = nr = 0
        last = None
        sends = receives = False
        for st in self.steps:
            t = st.type
            if t is not last:           # the flags are read again only when the type changes
                last, sends, receives = t, t.sends, t.receives
            if sends:
                st.send_index, ns = ns, ns + 1
            else:
                st.send_index = -1
            if receives:
                st.recv_index, nr = nr, nr + 1
            else:
                st.recv_index = -1
        self.send_count, self.recv_count = ns, nr

    def nop(self, target: Step) -> Step:
        """A new ``nop`` of this TB that waits on ``target`` (not inserted yet)."""
        nop = Step(NOP, self.gpu, cnt=0, chan=self.chan)
        nop.tb = self
        nop.dep = target
        target.publish = True
        return nop

    def insert_nop_step(self, position: int, dep_steps: list[Step]) -> list[Step]:
        """Insert one ``nop`` per step of ``dep_steps`` before ``position``; return them."""
        nops = [self.nop(target) for target in dep_steps]
        self.steps[position:position] = nops
        return nops

    def __repr__(self) -> str:
        return f"<TB id={self.id} send={self.send} recv={self.recv} chan={self.chan} steps={len(self.steps)}>"


class GPU:
    """One ``<gpu>``: its thread blocks and which (channel, peer) connections they use."""

    __slots__ = ("id", "tbs", "_usage", "pending", "input_chunks", "output_chunks",
                 "scratch_chunks", "_index")

    def __init__(self, id: int, input_chunks: int = 0, output_chunks: int = 0):
        self.id = id
        self.tbs: list[TB] = []
        # channel -> (send peers, recv peers) of its TBs, for the one-TB-per-connection rule
        self._usage: dict[int, tuple[set[int], set[int]]] = {}
        self.pending: list[Step] = []     # steps the Chunk API issued, before TB assignment
        self.input_chunks = input_chunks
        self.output_chunks = output_chunks
        self.scratch_chunks = 0
        self._index: dict[tuple[int, int, int], TB] = {}

    def add_tb(self, tb: TB) -> TB:
        """Add ``tb``; reject a second TB on the same (channel, send peer) or (channel, recv peer)."""
        send, recv, chan = tb.send, tb.recv, tb.chan
        usage = self._usage.get(chan)
        if usage is None:
            usage = self._usage[chan] = (set(), set())
        sends, recvs = usage
        # the sets hold peers >= 0 only, so a TB without a send (recv) peer never matches
        if send in sends or recv in recvs or send == self.id or recv == self.id:
            self._reject(tb)
        if send >= 0:
            sends.add(send)
        if recv >= 0:
            recvs.add(recv)
        tb.gpu = self.id
        self.tbs.append(tb)
        self._index[send, recv, chan] = tb
        return tb

    def _reject(self, tb: TB) -> None:
        """Raise the IRError that keeps ``tb`` out (add_tb found one)."""
        sends, recvs = self._usage[tb.chan]
        if tb.send in sends:
            raise IRError(f"channel conflict on gpu {self.id}: two TBs send to {tb.send} on channel {tb.chan}")
        if tb.recv in recvs:
            raise IRError(f"channel conflict on gpu {self.id}: two TBs receive from {tb.recv} on channel {tb.chan}")
        raise IRError(f"gpu {self.id}: a TB cannot send to or receive from its own GPU")

    def remove_tbs(self) -> list[TB]:
        """Take every TB off this GPU (their connections become free); return them."""
        old = self.tbs
        self.tbs, self._usage, self._index = [], {}, {}
        return old

    @property
    def channel_usage(self) -> dict[int, dict[str, list[int]]]:
        """Per channel, the peers its TBs send to and receive from, in TB order: the design's
        ``{chan: {'send': [...], 'recv': [...]}}`` (a fresh view of ``tbs``)."""
        out: dict[int, dict[str, list[int]]] = {}
        for tb in self.tbs:
            use = out.get(tb.chan)
            if use is None:
                use = out[tb.chan] = {"send": [], "recv": []}
            if tb.send >= 0:
                use["send"].append(tb.send)
            if tb.recv >= 0:
                use["recv"].append(tb.recv)
        return out

    def find_tb(self, send: int | None = None, recv: int | None = None,
                chan: int | None = None) -> TB | None:
        """The TB with these peers and channel; a field left None matches any (the first such
        TB in ``tbs`` order)."""
        if send is not None and recv is not None and chan is not None:
            return self._index.get((send, recv, chan))
        for tb in self.tbs:
            if ((send is None or tb.send == send) and (recv is None or tb.recv == recv)
                    and (chan is None or tb.chan == chan)):
                return tb
        return None

    def steps(self) -> Iterator[Step]:
        for tb in self.tbs:
            yield from tb.steps


class Algo:
    """One ``<algo>``: the whole schedule. ``coll`` is a :class:`~ccxml.vocab.wire.Coll`, or
    :data:`~ccxml.vocab.wire.CUSTOM_COLL` for a collective ccxml does not define."""

    def __init__(self, name: str, coll: Coll | str, ngpus: int, nchunksperloop: int, *,
                 proto: Proto = Proto.SIMPLE, inplace: bool = False, min_bytes: int = 0,
                 max_bytes: int = 0, root: int | None = None, nchannels: int = 1,
                 extra_attrs: dict[str, str] | None = None):
        self.name = name
        self.coll = coll
        self.ngpus = ngpus
        self.nchunksperloop = nchunksperloop
        self.proto = proto
        self.inplace = 1 if inplace else 0
        self.outofplace = 0 if inplace else 1
        self.minBytes = min_bytes
        self.maxBytes = max_bytes
        self.root = root
        self.nchannels = nchannels
        self.extra_attrs = dict(extra_attrs or {})
        self.gpus = [GPU(i) for i in range(ngpus)]
        #: lane groups: per group (instances K, instance c, lane phase, (sender, receiver) pairs).
        #: A step on lane group g holds ``chan = -1 - g`` until the threadblocks pass gives it the
        #: group's channel
        self.lane_groups: list[tuple[int, int, int, tuple[tuple[int, int], ...]]] = []
        #: every thread block carries one direction only: sends to one peer or receives from
        #: one (``Program.split_directions``)
        self.one_way = False
        #: messages the Chunk API cut (count), and the length in chunks they were cut to
        self.cut_messages = 0
        self.cut_to = 0

    def steps(self) -> Iterator[Step]:
        for gpu in self.gpus:
            yield from gpu.steps()
