"""Ring AllReduce lowered in bulk: one lane per instance, the passes run once, text per rank.

The object path builds ring AllReduce (:mod:`ccxml.algorithms.ring`: the tables
``ring.reduce_scatter`` then ``ring.all_gather`` of :mod:`ccxml.tables.ring`, one instance per
channel) step object by step object, then runs threadblocks, ordering, fusion, splitting,
dependencies and numbering on every rank. Every rank's schedule is the same up to a rotation of
the ranks, so here each pass is worked out once, on a *lane* of columns:

* **build, threadblocks, ordering, fusion** (closed form). Rank r, instance c has one thread
  block sending to r+1 and receiving from r−1; its step i (0 ≤ i ≤ 2p−2) touches block
  (r−1−i) mod p, i.e. chunk ((r−1−i) mod p)·K + c of the input or output buffer
  (``by_block``; in place, the output is the input). In the tables' order the fused steps are
  ``s`` (the first ReduceScatter send), ``rrs`` × (p−2), ``rrcs`` (the rank's own block
  completes and goes on), ``rcs`` × (p−2), ``r``.
  Step i's send half is received by step i+1 of rank r+1.
* **splitting**: the fixed point of :func:`ccxml.passes.splitting.settle_segments`, the pass's
  own walk, on the lane alone, its link partners taken within the lane (step i's send ↔ step
  i+1's receive). The pass's system of constraints is monotone and invariant under the rotation
  of the ranks, so its least fixed point is the same on every rank, and it is the least fixed
  point of the lane's system: the cuts are the pass's, whatever p. A fused step cut between two
  pieces is unfused as the pass does (its receive stays, an ``s`` opens the next piece).
* **dependencies, numbering**: piece m waits on the last step of piece m−1 (the only dependency
  that remains: every other one is on an earlier step of the same chain); pieces depended on
  come first, each group in (send, recv, chan) order.
* **checks**: the target's limits are counted here; a schedule that breaks one is left to the
  object path, which names the limit (:func:`lower` returns None).
* **writer**: each rank's text is the lane's, the offsets and peers rotated; the constant pieces
  are made once and each rank's lines are joined in C (``zip``/``itemgetter``), not per step.

The object path is the exact twin: ``tests/bulk/test_ring.py`` compares the files byte for byte
over ranks, channels, targets, protocols and size windows, and the 813 output hashes
(``benchmarks/output_hashes.py``) are unchanged.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter

from ccxml.passes.splitting import _HALVES, _UNFUSED, settle_segments
from ccxml.vocab.errors import LimitError
from ccxml.vocab.wire import (
    RECV,
    RECV_COPY_SEND,
    RECV_REDUCE_COPY_SEND,
    RECV_REDUCE_SEND,
    SEND,
    Buffer,
    Coll,
    Profile,
    Proto,
    StepType,
)

I, O = Buffer.INPUT, Buffer.OUTPUT

#: the pipeline the bulk lowering stands for (the default one of every target it serves)
PIPELINE = "threadblocks,ordering,fusion,splitting,dependencies,numbering,checks"


@dataclass
class Lane:
    """One thread block's steps as columns (the same on every rank, up to the rotation).

    Step j has type ``types[j]``, reads ``srcbuf[j]`` and writes (on the wire) ``dstbuf[j]`` at
    block (r + ``shift[j]``) mod p of rank r; ``sends``/``recvs``: whether it has a send /
    receive half."""

    types: list[StepType] = field(default_factory=list)
    srcbuf: list[Buffer] = field(default_factory=list)
    dstbuf: list[Buffer] = field(default_factory=list)
    shift: list[int] = field(default_factory=list)

    def add(self, t: StepType, src: Buffer, dst: Buffer, shift: int) -> None:
        self.types.append(t)
        self.srcbuf.append(src)
        self.dstbuf.append(dst)
        self.shift.append(shift)

    def __len__(self) -> int:
        return len(self.types)


@dataclass
class Piece:
    """A thread block of the written file: a run of a lane's steps on channel ``chan``, with a
    send / receive peer or not, waiting (its first step) on the last step of ``after``."""

    lane: Lane
    chan: int
    sends: bool
    recvs: bool
    after: "Piece | None" = None
    waited: bool = False            # a later piece waits on its last step
    id: int = -1


@dataclass
class _Header:
    """What :func:`ccxml.writer.msccl.algo_attrs` reads of an ``Algo``."""

    name: str
    coll: Coll
    ngpus: int
    nchunksperloop: int
    proto: Proto
    inplace: int
    outofplace: int
    minBytes: int
    maxBytes: int
    nchannels: int
    root: int | None = None
    extra_attrs: dict = field(default_factory=dict)


@dataclass
class BulkSchedule:
    """A schedule lowered in bulk: the pieces of one rank, stamped out for every rank."""

    header: _Header
    p: int
    k: int
    pieces: list[Piece]             # in TB id order
    cut_messages: int = 0
    cut_to: int = 0

    @property
    def ntbs(self) -> int:
        return self.p * len(self.pieces)

    @property
    def nsteps(self) -> int:
        return self.p * sum(len(pc.lane) for pc in self.pieces)

    @property
    def nchannels(self) -> int:
        return self.header.nchannels

    @property
    def minBytes(self) -> int:
        return self.header.minBytes

    @property
    def maxBytes(self) -> int:
        return self.header.maxBytes

    def xml_parts(self, target: str) -> Iterator[str]:
        """The file's text in parts, one per GPU between the ``<algo>`` lines (as
        :func:`ccxml.writer.msccl.xml_parts`)."""
        from ccxml.writer.msccl import _open_tag, algo_attrs
        head = _open_tag("algo", algo_attrs(self.header, target), "", ">\n")   # type: ignore[arg-type]
        return self._parts(head)

    def _parts(self, head: str) -> Iterator[str]:
        yield head
        p, k = self.p, self.k
        chunks = p * k
        outputs = 0 if self.header.inplace else chunks      # in place: no output buffer
        # per piece: the constant text before, between and after the two offsets of each step,
        # and which entry of the rank's rotated offsets each step takes
        stamps = []
        for pc in self.pieces:
            lane = pc.lane
            n = len(lane)
            before = [f'      <step s="{s}" type="{t._value_}" srcbuf="{b._value_}" srcoff="'
                      for s, (t, b) in enumerate(zip(lane.types, lane.srcbuf))]
            between = [f'" dstbuf="{b._value_}" dstoff="' for b in lane.dstbuf]
            none = '-1" deps="-1'
            dep = none if pc.after is None else f'{pc.after.id}" deps="{len(pc.after.lane) - 1}'
            after = [f'" cnt="1" depid="{dep if s == 0 else none}" '
                     f'hasdep="{1 if pc.waited and s == n - 1 else 0}"/>\n' for s in range(n)]
            # rank r's offset of step j: block (r + shift[j]) mod p, entry 2p + shift[j] (shift
            # runs from -(2p-1) to -1) of the rank's rotated offsets below
            pick = itemgetter(*[2 * p + sh for sh in lane.shift]) if n > 1 else None
            stamps.append((pc, before, between, after, pick, lane.shift[0] if n else 0))
        # offs[c][q]: the chunk of block q mod p of instance c, as text, q in 0 .. 3p-1
        offs = [[str((q % p) * k + c) for q in range(3 * p)] for c in range(k)]
        for r in range(p):
            out = [f'  <gpu id="{r}" i_chunks="{chunks}" o_chunks="{outputs}" s_chunks="0">\n']
            send, recv = (r + 1) % p, (r - 1) % p
            for pc, before, between, after, pick, first in stamps:
                out.append(f'    <tb id="{pc.id}" send="{send if pc.sends else -1}" '
                           f'recv="{recv if pc.recvs else -1}" chan="{pc.chan}">\n')
                # entry m of ``rotated`` is block (r + m) mod p
                rotated = offs[pc.chan % k][r:r + 2 * p]
                at = pick(rotated) if pick is not None else (rotated[2 * p + first],)
                out.append("".join(chain.from_iterable(zip(before, at, between, at, after))))
                out.append("    </tb>\n")
            out.append("  </gpu>\n")
            yield "".join(out)
        yield "</algo>\n"


def ring_allreduce_lane(p: int, inplace: bool = False) -> Lane:
    """The fused steps of one rank's thread block (threadblocks, ordering and fusion done): see
    the module docstring. In place, the output is the input buffer."""
    out = I if inplace else O
    lane = Lane()
    lane.add(SEND, I, out, -1)
    for i in range(1, p - 1):
        lane.add(RECV_REDUCE_SEND, I, out, -1 - i)
    lane.add(RECV_REDUCE_COPY_SEND, I, out, -p)
    for i in range(p, 2 * p - 2):
        lane.add(RECV_COPY_SEND, out, out, -1 - i)
    lane.add(RECV, _sent_from(lane, None, 2 * p - 3), out, -1 - (2 * p - 2))
    return lane


def split(lane: Lane, limit: int) -> tuple[list[tuple[Lane, bool, bool]], int]:
    """The splitting pass on a lane whose step i sends to step i+1 of the next rank: its pieces
    in order, each (steps, sends, receives), and the last piece's number (the pass's ``top``)."""
    n = len(lane)
    halves = bytes(_HALVES[t] for t in lane.types)
    spart = [i + 1 if halves[i] & 2 else -1 for i in range(n)]
    rpart = [i - 1 if halves[i] & 1 and i > 0 and halves[i - 1] & 2 else -1 for i in range(n)]
    rseg, sseg = settle_segments(1, [0, n], halves, [1] * n, rpart, spart, limit)
    # the pass's _rebuild_gpu on the lane: a fused step whose halves fell in two pieces keeps its
    # receive in the first; its send half opens the run of the next
    runs: dict[int, Lane] = {}
    order: list[int] = []

    def run(m: int) -> Lane:
        if m not in runs:
            runs[m] = Lane()
            order.append(m)
        return runs[m]

    cut = [halves[i] == 3 and rseg[i] != sseg[i] for i in range(n)]
    for i in range(n):
        t, src, dst, sh = lane.types[i], lane.srcbuf[i], lane.dstbuf[i], lane.shift[i]
        if cut[i]:
            t = _UNFUSED[t]
            if t is RECV:
                src = _sent_from(lane, cut, i - 1)
            run(rseg[i]).add(t, src, dst, sh)
            run(sseg[i]).add(SEND, dst, dst, sh)
        else:
            if t is RECV:
                src = _sent_from(lane, cut, i - 1)
            run(rseg[i]).add(t, src, dst, sh)
    if order != sorted(order):              # (never for a ring: its pieces follow the steps)
        raise ValueError("internal: a lane's pieces are out of order")
    return [(runs[m], any(t.sends for t in runs[m].types),
             any(t.receives or not t.sends for t in runs[m].types)) for m in order], max(order)


def _sent_from(lane: Lane, cut: list[bool] | None, i: int) -> Buffer:
    """The buffer step i's send half reads: a plain receive names it on the wire (the writer's
    rule: "the receiver names the sender's source"). A cut step's send half reads what the
    step wrote."""
    return lane.dstbuf[i] if cut is not None and cut[i] else lane.srcbuf[i]


def lower(algorithm: str, coll: str, ranks: int | None, *, profile: Profile, channels: int = 1,
          proto: str = "Simple", inplace: bool = False, min_bytes: int = 0, max_bytes: int = 0,
          merge_rcs: bool = True) -> BulkSchedule | None:
    """The bulk schedule of ``generate ALGORITHM`` with these options, or None where the object
    path must run: anything but ring AllReduce on ≥ 2 ranks, a target whose
    pipeline is not :data:`PIPELINE` or that does not execute fused steps, ``merge_rcs=False``,
    options the builder refuses (the object path says why), or a schedule that breaks one of the
    target's limits after splitting (the object path names it). Raises the splitting pass's
    LimitError, word for word, where the pieces would need a channel the target does not have
    (the object path would build every step to say so: minutes at 4096 ranks). The caller leaves
    to the object path whatever else changes the schedule (a topology, ``--opt``, ``--passes``,
    ``--dump-after``...)."""
    if (algorithm != "ring" or coll != "allreduce" or not merge_rcs
            or type(ranks) is not int or ranks < 2 or type(channels) is not int or channels < 1
            or min_bytes < 0 or max_bytes < 0 or (max_bytes and max_bytes < min_bytes)
            or not profile.fused_types_allowed):
        return None
    from ccxml.passes.registry import pipeline
    if str(pipeline(profile, merge_rcs=True)) != PIPELINE:
        return None
    p, k = ranks, channels
    lane = ring_allreduce_lane(p, inplace)
    if len(lane) > profile.max_steps_per_tb:
        parts, top = split(lane, profile.max_steps_per_tb)
        if top * k + k - 1 > profile.max_chan:      # the splitting pass's refusal, word for word
            raise LimitError(
                f"a thread block on gpu 0 has {len(lane)} steps; the {profile.name} limit is "
                f"{profile.max_steps_per_tb} per TB, and splitting it needs channel {top * k + k - 1} "
                f"> {profile.max_chan}: use --target legacy (256 steps per TB) or fewer --channels")
    else:
        parts = [(lane, True, True)]
    # each instance c has the pieces on channels c, c + k, c + 2k, ...; piece m waits on m−1
    pieces: list[Piece] = []
    for c in range(k):
        prev = None
        for m, (steps, sends, recvs) in enumerate(parts):
            pc = Piece(steps, c + m * k, sends, recvs, after=prev)
            if prev is not None:
                prev.waited = True
            pieces.append(pc)
            prev = pc
    # numbering: the pieces waited on first, each group by (send, recv, chan); a missing peer
    # (-1) sorts before the rank's peer, which is the same for every piece
    pieces = (sorted([pc for pc in pieces if pc.waited], key=_tb_order)
              + sorted([pc for pc in pieces if not pc.waited], key=_tb_order))
    for i, pc in enumerate(pieces):
        pc.id = i
    nchannels = max(pc.chan for pc in pieces) + 1
    nsteps = sum(len(pc.lane) for pc in pieces)
    if (nchannels - 1 > profile.max_chan or len(pieces) > profile.max_tbs
            or any(pc.after is not None and pc.after.id > profile.max_dep_tb for pc in pieces)
            or profile.max_cnt < 1 or 1 + p + len(pieces) + nsteps > profile.max_nodes
            or any(t not in profile.step_types for pc in pieces for t in pc.lane.types)):
        return None
    header = _Header(f"ring_{coll}", Coll(coll), p, p * k, Proto(proto), 1 if inplace else 0,
                     0 if inplace else 1, min_bytes, max_bytes, nchannels)
    return BulkSchedule(header, p, k, pieces)


def _tb_order(pc: Piece) -> tuple[int, int, int]:
    return (1 if pc.sends else 0, 1 if pc.recvs else 0, pc.chan)
