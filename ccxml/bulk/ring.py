"""Ring AllReduce, AllGather and ReduceScatter lowered in bulk: one lane per instance, the passes
run once, text per rank.

The object path builds a ring collective (:mod:`ccxml.algorithms.ring`: the tables
``ring.reduce_scatter`` and/or ``ring.all_gather`` of :mod:`ccxml.tables.ring`, one instance per
channel) step object by step object, then runs threadblocks, ordering, fusion, splitting,
dependencies and numbering on every rank. Every rank's schedule is the same up to a rotation of
the ranks, so here each pass is worked out once, on a *lane* of columns per instance c (step
type, its own source and destination operands, count). An operand is ``(buffer, shift, add)``:
chunk ((r + shift) mod p)·K + add on rank r (``by_block``), or a fixed chunk ``add``
(``fixed``).

* **build, threadblocks, ordering, fusion** (closed form). Rank r, instance c has one thread
  block sending to r+1 and receiving from r−1. AllReduce: step i (0 ≤ i ≤ 2p−2) touches block
  (r−1−i) mod p of the input or output (in place, the output is the input); in the tables'
  order the fused steps are ``s`` (the first ReduceScatter send), ``rrs`` × (p−2), ``rrcs`` (the
  rank's own block completes and goes on), ``rcs`` × (p−2), ``r``. AllGather: ``s`` from the
  input, (instance 0) ``cpy`` of the rank's K input chunks to its output block, ``rcs`` × (p−2),
  ``r``. ReduceScatter: ``s``, ``rrs`` × (p−2) summing in scratch, ``rrc`` into output chunk c.
  On the ring link r → r+1 the k-th send of rank r is the k-th receive of rank r+1: within the
  lane, the k-th send half is partnered with the k-th receive half.
* **splitting**: the fixed point of :func:`ccxml.passes.splitting.settle_segments`, the pass's
  own walk, on the lane alone, its link partners taken within the lane. The pass's system of
  constraints is monotone and invariant under the rotation of the ranks, so its least fixed
  point is the same on every rank, and it is the least fixed point of the lane's system: the
  cuts are the pass's, whatever p. A fused step cut between two pieces is unfused as the pass
  does (its receive stays, an ``s`` opens the next piece).
* **dependencies, numbering**: piece m waits on the last step of piece m−1 (the only dependency
  that remains: every other one is on an earlier step of the same chain); pieces depended on
  come first, each group in (send, recv, chan) order.
* **checks**: the target's limits are counted here; a schedule that breaks one is left to the
  object path, which names the limit (:func:`lower` returns None), except a channel the target
  lacks, refused in the splitting pass's words.
* **writer**: the operands the file names follow the writer's rules (a send names its
  receiver's destination, a receive its sender's source: the partner's operand moved by one
  rank); each rank's text is the lane's with the offsets and peers rotated: the constant pieces
  are made once and each rank's lines are joined in C (``zip``/``itemgetter``), not per step;
  ``s_chunks`` per rank from the scratch operands' shifts.

The object path is the exact twin: ``tests/bulk/test_ring.py`` compares the files byte for byte
over ranks, channels, targets, protocols and size windows, and ``benchmarks/output_hashes.py``
hashes the bulk text where ``generate`` uses it (every hash of main's unchanged).
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter

from ccxml.passes.splitting import _HALVES, _UNFUSED, settle_segments
from ccxml.vocab.errors import LimitError
from ccxml.vocab.wire import (
    RECV,
    RECV_COPY_SEND,
    RECV_REDUCE_COPY,
    RECV_REDUCE_COPY_SEND,
    RECV_REDUCE_SEND,
    SEND,
    Buffer,
    Coll,
    Profile,
    Proto,
    StepType,
)

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH

#: the pipeline the bulk lowering stands for (the default one of every target it serves)
PIPELINE = "threadblocks,ordering,fusion,splitting,dependencies,numbering,checks"


Opnd = tuple[Buffer, "int | None", int]
"""An operand of rank r: ``(buffer, shift, add)`` is chunk ((r + shift) mod p)·K + add of the
buffer, or chunk ``add`` on every rank where shift is None."""


def _moved(x: "Opnd | None", by: int) -> "Opnd | None":
    """``x`` as the neighbour ``by`` ranks on names it (rank r+by's operand seen from rank r)."""
    if x is None or x[1] is None:
        return x
    return (x[0], x[1] + by, x[2])


@dataclass
class Lane:
    """One thread block's steps as columns (the same on every rank, up to the rotation): step j
    has type ``types[j]``, its own source and destination operands (None: none) and ``cnt[j]``
    chunks; ``wsrc``/``wdst`` are the operands the file names (the writer's rules: a send names
    its receiver's destination, a receive its sender's source), set once the lane is split."""

    types: list[StepType] = field(default_factory=list)
    src: list["Opnd | None"] = field(default_factory=list)
    dst: list["Opnd | None"] = field(default_factory=list)
    cnt: list[int] = field(default_factory=list)
    wsrc: list[Opnd] = field(default_factory=list)
    wdst: list[Opnd] = field(default_factory=list)

    def add(self, t: StepType, src: "Opnd | None", dst: "Opnd | None", cnt: int = 1) -> None:
        self.types.append(t)
        self.src.append(src)
        self.dst.append(dst)
        self.cnt.append(cnt)

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
    chunks: tuple[int, int]         # (input, output) chunks of a rank
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
        # every rank's offsets as text, in one list per rank: for each ``add`` of a rotated
        # operand, p entries (entry m: block (r + m) mod p), then the fixed offsets
        adds = sorted({x[2] for pc in self.pieces for x in chain(pc.lane.wsrc, pc.lane.wdst)
                       if x[1] is not None})
        fixed = sorted({x[2] for pc in self.pieces for x in chain(pc.lane.wsrc, pc.lane.wdst)
                        if x[1] is None})
        where = {a: i * p for i, a in enumerate(adds)}
        there = {a: len(adds) * p + i for i, a in enumerate(fixed)}
        tail = [str(a) for a in fixed]
        offs = [[str((q % p) * k + a) for q in range(2 * p)] for a in adds]

        def index(x: Opnd) -> int:
            return there[x[2]] if x[1] is None else where[x[2]] + x[1] % p

        # per piece: the constant text before, between and after the two offsets of each step,
        # and which entries of the rank's offsets its steps take
        stamps = []
        for pc in self.pieces:
            lane = pc.lane
            n = len(lane)
            before = [f'      <step s="{s}" type="{t._value_}" srcbuf="{x[0]._value_}" srcoff="'
                      for s, (t, x) in enumerate(zip(lane.types, lane.wsrc))]
            between = [f'" dstbuf="{x[0]._value_}" dstoff="' for x in lane.wdst]
            none = '-1" deps="-1'
            dep = none if pc.after is None else f'{pc.after.id}" deps="{len(pc.after.lane) - 1}'
            after = [f'" cnt="{c}" depid="{dep if s == 0 else none}" '
                     f'hasdep="{1 if pc.waited and s == n - 1 else 0}"/>\n'
                     for s, c in enumerate(lane.cnt)]
            stamps.append((pc, before, between, after, _getter([index(x) for x in lane.wsrc]),
                           _getter([index(x) for x in lane.wdst])))
        i_chunks, o_chunks = self.chunks
        scratch = self.scratch_top()
        for r in range(p):
            out = [f'  <gpu id="{r}" i_chunks="{i_chunks}" o_chunks="{o_chunks}" '
                   f's_chunks="{scratch(r)}">\n']
            send, recv = (r + 1) % p, (r - 1) % p
            texts = [x for o in offs for x in o[r:r + p]] + tail
            for pc, before, between, after, src, dst in stamps:
                out.append(f'    <tb id="{pc.id}" send="{send if pc.sends else -1}" '
                           f'recv="{recv if pc.recvs else -1}" chan="{pc.chan}">\n')
                out.append("".join(chain.from_iterable(zip(before, src(texts), between, dst(texts),
                                                           after))))
                out.append("    </tb>\n")
            out.append("  </gpu>\n")
            yield "".join(out)
        yield "</algo>\n"

    def scratch_top(self):
        """rank -> s_chunks: the end of the furthest scratch chunk its steps name (their own
        operands, as the writer counts them)."""
        p, k = self.p, self.k
        top = 0
        rotated: dict[int, set[int]] = {}          # add + cnt -> shifts mod p
        for pc in self.pieces:
            lane = pc.lane
            for c, xs in zip(lane.cnt, zip(lane.src, lane.dst)):
                for x in xs:
                    if x is not None and x[0] is S:
                        if x[1] is None:
                            top = max(top, x[2] + c)
                        else:
                            rotated.setdefault(x[2] + c, set()).add(x[1] % p)
        groups = [(end, sorted(shifts)) for end, shifts in rotated.items()]

        def at(r: int) -> int:
            best = top
            for end, shifts in groups:
                # the largest (x + r) mod p: the largest x below p − r, else the largest x
                i = bisect_left(shifts, p - r)
                block = shifts[i - 1] + r if i else shifts[-1] + r - p
                best = max(best, block * k + end)
            return best
        return at


def _getter(indices: list[int]):
    """A function of a list giving its entries at ``indices`` as a tuple (itemgetter, in C)."""
    if len(indices) == 1:
        i = indices[0]
        return lambda xs: (xs[i],)
    return itemgetter(*indices)


def ring_allreduce_lane(p: int, inplace: bool = False, c: int = 0) -> Lane:
    """The fused steps of instance c's thread block on a rank (threadblocks, ordering and fusion
    done): see the module docstring. In place, the output is the input buffer."""
    out = I if inplace else O
    lane = Lane()
    lane.add(SEND, (I, -1, c), None)
    for i in range(1, p - 1):
        lane.add(RECV_REDUCE_SEND, (I, -1 - i, c), (out, -1 - i, c))
    lane.add(RECV_REDUCE_COPY_SEND, (I, -p, c), (out, -p, c))
    for i in range(p, 2 * p - 2):
        lane.add(RECV_COPY_SEND, (out, -1 - i, c), (out, -1 - i, c))
    lane.add(RECV, None, (out, -1 - (2 * p - 2), c))
    return lane


def ring_allgather_lane(p: int, k: int, c: int) -> Lane:
    """Ring AllGather (``ring.all_gather``, ``first=fixed(I)``): the rank's own chunk c goes from
    the input, every other block is received into the output and forwarded; instance 0 also
    copies the rank's input to its block of the output (``cpy``, K chunks)."""
    lane = Lane()
    lane.add(SEND, (I, None, c), None)
    if c == 0:
        lane.add(StepType.COPY, (I, None, 0), (O, 0, 0), k)
    for i in range(1, p - 1):
        lane.add(RECV_COPY_SEND, (O, -i, c), (O, -i, c))
    lane.add(RECV, None, (O, 1 - p, c))
    return lane


def ring_reducescatter_lane(p: int, c: int) -> Lane:
    """Ring ReduceScatter (``ring.reduce_scatter``: own = input, running sums in scratch, the
    rank's own block completed into its output chunk c)."""
    lane = Lane()
    lane.add(SEND, (I, -1, c), None)
    for i in range(1, p - 1):
        lane.add(RECV_REDUCE_SEND, (I, -1 - i, c), (S, -1 - i, c))
    lane.add(RECV_REDUCE_COPY, (I, -p, c), (O, None, c))
    return lane


def split(lane: Lane, limit: int) -> tuple[list[tuple[Lane, bool, bool]], int]:
    """The splitting pass on a lane whose k-th send is received by the k-th receive of the next
    rank: its pieces in order, each (steps, sends, receives), with the operands the file names,
    and the last piece's number (the pass's ``top``; 0: one piece)."""
    n = len(lane)
    sends = [i for i, t in enumerate(lane.types) if t.sends]
    recvs = [i for i, t in enumerate(lane.types) if t.receives]
    if len(sends) != len(recvs):
        raise ValueError("internal: a lane sends and receives different counts")
    halves = bytes(_HALVES[t] for t in lane.types)
    spart, rpart = [-1] * n, [-1] * n
    for a, b in zip(sends, recvs):
        spart[a], rpart[b] = b, a
    if n > limit:
        rseg, sseg = settle_segments(1, [0, n], halves, [1] * n, rpart, spart, limit)
    else:
        rseg = sseg = [0] * n
    cut = [halves[i] == 3 and rseg[i] != sseg[i] for i in range(n)]

    def read(i: int) -> "Opnd | None":
        """What step i's send half reads (a cut step's send half reads what the step wrote)."""
        return lane.dst[i] if cut[i] else lane.src[i] or lane.dst[i]

    # the pass's _rebuild_gpu on the lane: a fused step whose halves fell in two pieces keeps its
    # receive in the first; its send half opens the run of the next
    runs: dict[int, Lane] = {}
    order: list[int] = []

    def put(m: int, t: StepType, src, dst, cnt: int, wsrc, wdst) -> None:
        if m not in runs:
            runs[m] = Lane()
            order.append(m)
        piece = runs[m]
        piece.add(t, src, dst, cnt)
        wsrc, wdst = wsrc or wdst, wdst or wsrc
        piece.wsrc.append(wsrc)
        piece.wdst.append(wdst)

    for i in range(n):
        t, src, dst, cnt = lane.types[i], lane.src[i], lane.dst[i], lane.cnt[i]
        # the receiver's destination, as this rank names it
        to = _moved(lane.dst[spart[i]], 1) if spart[i] >= 0 else None
        if cut[i]:
            t = _UNFUSED[t]
            wsrc = _moved(read(rpart[i]), -1) if t is RECV else src
            put(rseg[i], t, src, dst, cnt, wsrc, dst)
            put(sseg[i], SEND, dst, None, cnt, dst, to or dst)
        elif t is SEND or (t is RECV_REDUCE_SEND and dst is None):
            put(rseg[i], t, src, dst, cnt, src, to or src)
        elif t is RECV:
            put(rseg[i], t, src, dst, cnt, _moved(read(rpart[i]), -1) or dst, dst)
        else:
            put(rseg[i], t, src, dst, cnt, src, dst)
    if order != sorted(order):              # (never for a ring: its pieces follow the steps)
        raise ValueError("internal: a lane's pieces are out of order")
    return [(runs[m], any(t.sends for t in runs[m].types),
             any(t.receives or not t.sends for t in runs[m].types)) for m in order], max(order)


#: the collectives lowered in bulk: (input chunks, output chunks) of a rank given p, K, in place
CHUNKS = {"allreduce": lambda p, k, inplace: (p * k, 0 if inplace else p * k),
          "allgather": lambda p, k, inplace: (k, p * k),
          "reducescatter": lambda p, k, inplace: (p * k, k)}


def lanes(coll: str, p: int, k: int, inplace: bool) -> list[Lane] | None:
    """The lane of each instance (None: not lowered in bulk)."""
    if coll == "allreduce":
        return [ring_allreduce_lane(p, inplace, c) for c in range(k)]
    if inplace:
        return None
    if coll == "allgather":
        return [ring_allgather_lane(p, k, c) for c in range(k)]
    if coll == "reducescatter":
        return [ring_reducescatter_lane(p, c) for c in range(k)]
    return None


def lower(algorithm: str, coll: str, ranks: int | None, *, profile: Profile, channels: int = 1,
          proto: str = "Simple", inplace: bool = False, min_bytes: int = 0, max_bytes: int = 0,
          merge_rcs: bool = True) -> BulkSchedule | None:
    """The bulk schedule of ``generate ALGORITHM`` with these options, or None where the object
    path must run: anything but ring AllReduce (in or out of place), AllGather or ReduceScatter
    (out of place) on ≥ 2 ranks, a target whose pipeline is not :data:`PIPELINE` or that does not
    execute fused steps, ``merge_rcs=False``, options the builder refuses (the object path says
    why), or a schedule that breaks one of the target's limits after splitting (the object path
    names it). Raises the splitting pass's LimitError, word for word, where the pieces would need
    a channel the target does not have (the object path would build every step to say so:
    minutes at 4096 ranks). The caller leaves to the object path whatever else changes the
    schedule (a topology, ``--opt``, ``--passes``, ``--dump-after``...)."""
    if (algorithm != "ring" or coll not in CHUNKS or not merge_rcs
            or type(ranks) is not int or ranks < 2 or type(channels) is not int or channels < 1
            or min_bytes < 0 or max_bytes < 0 or (max_bytes and max_bytes < min_bytes)
            or not profile.fused_types_allowed):
        return None
    from ccxml.passes.registry import pipeline
    if str(pipeline(profile, merge_rcs=True)) != PIPELINE:
        return None
    p, k = ranks, channels
    per = lanes(coll, p, k, inplace)
    if per is None:
        return None
    limit = profile.max_steps_per_tb
    split_lanes = [split(lane, limit) for lane in per]
    top = max(t for _, t in split_lanes)
    if any(len(lane) > limit for lane in per) and top * k + k - 1 > profile.max_chan:
        # the splitting pass's refusal, word for word (it splits only where a TB is too long)
        longest = max(len(lane) for lane in per)
        raise LimitError(
            f"a thread block on gpu 0 has {longest} steps; the {profile.name} limit is "
            f"{limit} per TB, and splitting it needs channel {top * k + k - 1} "
            f"> {profile.max_chan}: use --target legacy (256 steps per TB) or fewer --channels")
    # each instance c has its pieces on channels c, c + k, c + 2k, ...; piece m waits on m−1
    pieces: list[Piece] = []
    for c, (parts, _) in enumerate(split_lanes):
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
            or max(c for pc in pieces for c in pc.lane.cnt) > profile.max_cnt
            or 1 + p + len(pieces) + nsteps > profile.max_nodes
            or any(t not in profile.step_types for pc in pieces for t in pc.lane.types)):
        return None
    header = _Header(f"ring_{coll}", Coll(coll), p, p * k, Proto(proto), 1 if inplace else 0,
                     0 if inplace else 1, min_bytes, max_bytes, nchannels)
    return BulkSchedule(header, p, k, pieces, CHUNKS[coll](p, k, inplace))


def _tb_order(pc: Piece) -> tuple[int, int, int]:
    return (1 if pc.sends else 0, 1 if pc.recvs else 0, pc.chan)
