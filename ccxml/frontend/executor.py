"""The executor: a phase (a table of moves and the places of its blocks, :mod:`ccxml.tables.plan`)
becomes Chunk API calls.

:func:`run` issues a phase on a :class:`~ccxml.frontend.chunk.Program` for one or more of the K
parallel instances of an algorithm (``--channels K``). What differs between algorithms is said by
its parameters, never by a second engine:

* ``order`` — the order of the issue loops: ``"steps"`` (step, then instance, then move: every
  instance runs step k before any runs step k+1), ``"channels"`` (instance, then step, then
  move: one whole copy of the algorithm after the other) or ``"moves"`` (step, then move, then
  instance).
* ``send`` — how the messages of one step go out: ``"sequential"`` (move after move; the Chunk
  API cuts a long range into messages), ``"interleave"`` (message i of every move before message
  i+1 of any: the transfers of a step are concurrent, and interleaving gives every thread block
  an alternating send/receive order, which bounded links need) or ``"exchange"`` (two members
  sending to each other: their messages alternate, instance by instance, and when a direction
  needs several the k-th messages of both directions form one sub-round — ``next_round`` —, so
  each side sends its (k+1)-th message only after it has received the k-th: the exchange
  completes even when a link buffers only LINK_CALLS calls; in a one-way program,
  :meth:`~ccxml.frontend.chunk.Program.split_directions`, the two directions have thread blocks
  of their own and need no sub-rounds). The last two cut messages at the
  program's :attr:`~ccxml.frontend.chunk.Program.message_cap` themselves, so that the Chunk API
  never cuts again.
* ``merge`` — whether blocks that touch go as one message (the merge rule of
  :mod:`ccxml.tables.plan`) or each block on its own; ``even`` — whether the two directions of
  an exchange are cut at the same block counts (NHR, NB).
* ``rounds`` — end every step with :meth:`~ccxml.frontend.chunk.Program.next_round`, as HCCL runs
  a rank's steps one after another on one stream.
* ``stage`` — a :class:`Stage`: a move whose blocks would go as several messages (they are not
  adjacent on the sender, or on the receiver) goes as ONE message through scratch instead: the
  sender packs its pieces into a contiguous range (local copies), the receiver lands the message
  in a range of its own and unpacks it (copies) or reduces it block by block (local reduces).
  One α per move, as HCCL's one transfer per step, for two local passes over the data (the
  simulator charges copies at the rank's memory bandwidth).
* the channel of a move: ``channel(sender, receiver, instance)`` (default: the instance), or
  lanes (``lanes``, :mod:`ccxml.frontend.lanes`) for the phases of the hierarchical algorithms:
  each step's transfers are then recorded as lane groups and the threadblocks pass picks their
  channels.

Positions in the table are ranks unless ``members`` maps them (a phase inside a server).

These parameters name one of four strategies, small objects that take only what they use
(issue 26.2): :class:`Streamed` (instance after instance, move by move), :class:`Stepwise` (each
step whole, in ``order``, sent as ``send`` says), :class:`Laned` (stepwise, one instance, on lane
groups) and :class:`Staged` (stepwise, through ``stage``). ``run(prog, phase, how=Streamed())``
names one directly; without ``how`` the keywords pick it (:func:`strategy`), and a combination
none of them issues is refused where it is written.
"""
from __future__ import annotations

import gc
from typing import Callable, Iterable, Sequence

from ccxml.frontend.chunk import Program, piece
from ccxml.frontend.lanes import Directions, Lanes
from ccxml.tables.plan import Message, Phase, Piece, Reduce, Steps, landings, messages, tail
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Buffer

ORDERS = ("steps", "channels", "moves")
SENDS = ("sequential", "interleave", "exchange")


class Stage:
    """Scratch for staged moves (module docstring): every rank takes fresh ranges of its scratch
    from chunk ``base`` on, never reused, so a staged message waits for nothing but its data."""

    def __init__(self, base: int):
        self.base = base
        self._next: dict[int, int] = {}

    def take(self, rank: int, n: int) -> Piece:
        """``n`` unused scratch chunks of ``rank``."""
        at = self._next.get(rank, self.base)
        self._next[rank] = at + n
        return (Buffer.SCRATCH, at, n)


def _same(s: int, d: int, c: int) -> int:
    return c


# ---- how a phase is issued: four small strategies ---------------------------------------------
# Each names one way of issuing a phase and takes only the parameters that way uses, so that a
# combination the executor cannot issue (staged moves on lanes, a lane plan over several
# instances...) is refused where the strategy is made, in one line (issue 26.2). ``run`` keeps its
# keyword form and picks the strategy (:func:`strategy`).

class Streamed:
    """Instance after instance (``order="channels"``), step after step, each move issued as soon as
    it is planned, its messages in order (``send="sequential"``): nothing needs a whole step at
    once. ``channel(sender, receiver, instance)`` picks the channel (default: the instance);
    ``rounds`` ends every step with :meth:`~ccxml.frontend.chunk.Program.next_round`."""

    __slots__ = ("channel", "merge", "rounds")

    def __init__(self, *, channel: Callable[[int, int, int], int] | None = None, merge: bool = True,
                 rounds: bool = False):
        self.channel = channel or _same
        self.merge = merge
        self.rounds = rounds

    def issue(self, prog: Program, phase: Phase, inst: list, members, n: int) -> None:
        for c in inst:
            steps = messages(phase, c, members, n, self.merge, False)
            for si, moves in enumerate(phase.table):
                _stream(prog, steps, si, moves, c, self.channel)
                if self.rounds:
                    prog.next_round()
        _tail(prog, phase, inst, members, self.channel, False)


class Stepwise:
    """Each step whole: its moves planned for every instance (``order`` "steps" or "moves"), or
    for one instance after the other ("channels"), then issued as ``send`` says ("sequential",
    "interleave" or "exchange", module docstring); ``merge``, ``even``, ``channel`` and ``rounds``
    as in the module docstring. A staged reduce (``Reduce.land``) is issued this way."""

    __slots__ = ("order", "send", "channel", "merge", "even", "rounds")

    def __init__(self, *, order: str = "steps", send: str = "sequential",
                 channel: Callable[[int, int, int], int] | None = None, merge: bool = True,
                 even: bool = False, rounds: bool = False):
        if order not in ORDERS or send not in SENDS:
            raise AlgorithmError(f"internal: order {order!r}, send {send!r}")
        self.order, self.send = order, send
        self.channel = channel or _same
        self.merge, self.even, self.rounds = merge, even, rounds

    def issue(self, prog: Program, phase: Phase, inst: list, members, n: int) -> None:
        _stepwise(prog, phase, inst, members, n, self.channel, None, self.order, self.send,
                  self.merge, self.even, self.rounds)


class Laned:
    """:class:`Stepwise` for one instance whose transfers are recorded as lane groups
    (:mod:`ccxml.frontend.lanes`): the threadblocks pass picks their channels."""

    __slots__ = ("placer", "order", "send", "merge", "even", "rounds")

    def __init__(self, lanes: Lanes | Directions, *, order: str = "steps", send: str = "sequential",
                 merge: bool = True, even: bool = False, rounds: bool = False):
        if order not in ORDERS or send not in SENDS:
            raise AlgorithmError(f"internal: order {order!r}, send {send!r}")
        self.placer = Directions(lanes) if isinstance(lanes, Lanes) else lanes
        self.order, self.send = order, send
        self.merge, self.even, self.rounds = merge, even, rounds

    def issue(self, prog: Program, phase: Phase, inst: list, members, n: int) -> None:
        if len(inst) != 1:
            raise AlgorithmError("internal: a lane plan serves one instance")
        _stepwise(prog, phase, inst, members, n, _same, self.placer, self.order, self.send,
                  self.merge, self.even, self.rounds)


class Staged:
    """Step after step (``order`` "steps" or "moves"), one message per move: a move whose blocks
    are not adjacent goes through scratch taken from ``stage`` (:class:`Stage`, module
    docstring)."""

    __slots__ = ("stage", "order", "channel", "rounds")

    def __init__(self, stage: Stage, *, order: str = "steps",
                 channel: Callable[[int, int, int], int] | None = None, rounds: bool = False):
        if order not in ("steps", "moves"):
            raise AlgorithmError("internal: staged moves are issued step by step, sequentially")
        self.stage, self.order = stage, order
        self.channel = channel or _same
        self.rounds = rounds

    def issue(self, prog: Program, phase: Phase, inst: list, members, n: int) -> None:
        if isinstance(phase, Reduce) and phase.land is not None:
            raise AlgorithmError("internal: staged moves are issued step by step, sequentially")
        planners = [messages(phase, c, members, n, False, False) for c in inst]
        for si, step in enumerate(phase.table):     # one block per message: the planners see each
            per_c = [(c, plan.step(si)) for c, plan in zip(inst, planners)]
            _packed(prog, step, si, per_c, planners, self.channel, self.stage, self.order)
            if self.rounds:
                prog.next_round()
        _tail(prog, phase, inst, members, self.channel, False)


def strategy(*, channel: Callable[[int, int, int], int] | None = None,
             lanes: Lanes | Directions | None = None, order: str = "steps",
             send: str = "sequential", merge: bool = True, even: bool = False,
             rounds: bool = False, stage: Stage | None = None):
    """The strategy :func:`run`'s keyword parameters name (see the module docstring); raises
    AlgorithmError for a combination no strategy issues."""
    if order not in ORDERS or send not in SENDS:
        raise AlgorithmError(f"internal: order {order!r}, send {send!r}")
    if stage is not None:
        if send != "sequential" or lanes is not None or order == "channels":
            raise AlgorithmError("internal: staged moves are issued step by step, sequentially")
        return Staged(stage, order=order, channel=channel, rounds=rounds)
    if lanes is not None:
        if channel is not None:
            raise AlgorithmError("internal: a lane plan picks the channels; channel= does not apply")
        return Laned(lanes, order=order, send=send, merge=merge, even=even, rounds=rounds)
    if order == "channels" and send == "sequential" and not even:
        return Streamed(channel=channel, merge=merge, rounds=rounds)
    return Stepwise(order=order, send=send, channel=channel, merge=merge, even=even, rounds=rounds)


def run(prog: Program, phase: Phase, *, instances: int | Iterable[int] = 1,
        members: Sequence[int] | None = None, channel: Callable[[int, int, int], int] | None = None,
        lanes: Lanes | Directions | None = None, order: str = "steps", send: str = "sequential",
        merge: bool = True, even: bool = False, rounds: bool = False, stage: Stage | None = None,
        how=None) -> None:
    """Issue ``phase`` on ``prog`` for ``instances`` (a count, or the instance numbers) over
    ``members`` (default: the ranks), the way ``how`` says (:class:`Streamed`, :class:`Stepwise`,
    :class:`Laned` or :class:`Staged`), or, without ``how``, the way the keyword parameters say
    (:func:`strategy`; see the module docstring).

    The cyclic garbage collector is paused meanwhile, as for the passes: a phase makes millions
    of short-lived tuples and no cycle, and the collector's scans of the growing program would
    only cost time."""
    if how is None:
        how = strategy(channel=channel, lanes=lanes, order=order, send=send, merge=merge,
                       even=even, rounds=rounds, stage=stage)
    inst = list(range(instances)) if isinstance(instances, int) else list(instances)
    n = len(members) if members is not None else prog.ngpus
    paused = gc.isenabled()
    gc.disable()
    try:
        how.issue(prog, phase, inst, members, n)
    finally:
        if paused:
            gc.enable()


def _stepwise(prog, phase, inst, members, n, chan, placer, order, send, merge, even, rounds) -> None:
    """:class:`Stepwise` and :class:`Laned` (``placer``: the lane plan, or None)."""
    staged = isinstance(phase, Reduce) and phase.land is not None
    if order == "channels":
        for c in inst:
            for found in messages(phase, c, members, n, merge, even):
                _step(prog, [(c, found)], chan, placer, send, "steps")
                if rounds:
                    prog.next_round()
    else:
        plans = zip(*(messages(phase, c, members, n, merge, even) for c in inst))
        for si, per_c in enumerate(plans):
            per_c = list(zip(inst, per_c))
            if staged:
                _staged(prog, phase, si, per_c, members, chan, n)
            else:
                _step(prog, per_c, chan, placer, send, order)
            if rounds:
                prog.next_round()
    _tail(prog, phase, inst, members, chan, placer is not None)


def _tail(prog, phase, inst, members, chan, laned: bool) -> None:
    """A reduce phase's last local step on each block's owner: its own contribution into the
    final place (none after a staged reduce, whose sums land there)."""
    if not isinstance(phase, Reduce) or phase.land is not None:
        return
    final = phase.final or phase.acc
    for c in inst:
        for b, j in tail(phase):
            r = b if members is None else members[b]
            ch = c if laned else chan(r, r, c)
            _issue(prog, r, r, (phase.own(r, j, c), None, final(r, j, c)), ch, -1)


def _stream(prog: Program, steps: Steps, si: int, moves: list, c: int, chan) -> None:
    """Issue step ``si`` of one instance move by move, each as soon as it is planned."""
    ti = 0
    same = chan is _same
    for a, b, blocks in moves:
        s, d, msgs = steps.move(si, ti, a, b, blocks)
        ch = c if same else chan(s, d, c)
        for m in msgs:
            _issue(prog, s, d, m, ch, -1)
        ti += 1


def _step(prog: Program, per_c: list, chan, placer, send: str, order: str) -> None:
    """Issue one step: ``per_c`` holds (instance, its moves' messages) for each instance."""
    if send == "exchange":
        _exchange(prog, per_c, chan)
        return
    if placer is not None:   # on lanes the threadblocks pass picks the channel: c is a placeholder
        lanes = placer.place(prog, [(s, d) if msgs else None for s, d, msgs in per_c[0][1]])
        on = _same
    else:
        lanes, on = None, chan
    if send == "interleave":
        for c, found in per_c:
            plans = [_cut(prog, s, d, msgs) for s, d, msgs in found]
            for i in range(max(map(len, plans), default=0)):
                for t, (s, d, _) in enumerate(found):
                    if i < len(plans[t]):
                        _issue(prog, s, d, plans[t][i], on(s, d, c), lanes[t] if lanes else -1)
    elif order == "moves":
        for t in range(len(per_c[0][1])):
            for c, found in per_c:
                s, d, msgs = found[t]
                ch, lane = on(s, d, c), lanes[t] if lanes else -1
                for m in msgs:
                    _issue(prog, s, d, m, ch, lane)
    else:
        for c, found in per_c:
            for t, (s, d, msgs) in enumerate(found):
                ch, lane = on(s, d, c), lanes[t] if lanes else -1
                for m in msgs:
                    _issue(prog, s, d, m, ch, lane)


def _packed(prog: Program, step: list, si: int, per_c: list, planners: list, chan, stage: Stage,
            order: str) -> None:
    """Step ``si`` (``step``, its moves) with one message per move, through ``stage`` where the
    move's blocks are not adjacent (module docstring). ``per_c`` holds (instance, the moves'
    messages, one per block), ``planners`` the instances' :class:`Steps`: a staged reduce leaves
    its sums where they landed and tells the planner so (``held``), but the owner's last receive
    of a block, which goes on to the block's final place."""
    if order == "moves":
        todo = [(i, t) for t in range(len(step)) for i in range(len(per_c))]
    else:
        todo = [(i, t) for i in range(len(per_c)) for t in range(len(step))]
    for i, t in todo:
        c, found = per_c[i]
        s, d, msgs = found[t]
        blocks = step[t][2]
        ch = chan(s, d, c)
        if len(msgs) != len(blocks):
            raise AlgorithmError("internal: a staged move's blocks must be one piece each")
        if len(msgs) <= 1:
            for m in msgs:
                _issue(prog, s, d, m, ch, -1)
            continue
        moved = sorted(zip(msgs, blocks), key=_by_source)
        msgs = [m for m, _ in moved]
        size = sum(m[0][2] for m in msgs)
        src = _run_of([m[0] for m in msgs], size)
        if src is None:                         # the sender packs its pieces
            src = _pack(prog, s, [m[0] for m in msgs], stage.take(s, size), ch)
        into = _run_of([m[2] for m in msgs], size)
        if msgs[0][1] is None:                  # a copy: land, then unpack
            if into is not None:
                _issue(prog, s, d, (src, None, into), ch, -1)
                continue
            land = stage.take(d, size)
            _issue(prog, s, d, (src, None, land), ch, -1)
            for m, part in zip(msgs, _parts(land, msgs)):
                _issue(prog, d, d, (part, None, m[2]), ch, -1)
            continue
        opnd = _run_of([m[1] for m in msgs], size)
        if opnd is not None and into is not None:
            _issue(prog, s, d, (src, opnd, into), ch, -1)
            continue
        here = stage.take(d, size)              # the receiver's operands, packed; the sums
        if opnd is None:
            opnd = _pack(prog, d, [m[1] for m in msgs], here, ch)
        _issue(prog, s, d, (src, opnd, here), ch, -1)
        plan, b, done = planners[i], step[t][1], (si << 32) + t
        for (m, j), part in zip(moved, _parts(here, msgs)):
            if plan.last[j] == done:
                _issue(prog, d, d, (part, None, m[2]), ch, -1)
            else:
                plan.held[b][j] = _Here(part)


class _Here:
    """A place that is one piece on one rank (a sum a staged reduce left where it landed)."""

    __slots__ = ("piece",)

    def __init__(self, piece: Piece):
        self.piece = piece

    def __call__(self, r: int, j: int, c: int) -> Piece:
        return self.piece


def _by_source(moved: tuple) -> tuple:
    """Sort key of a (message, block): its source, then operand, then destination."""
    (s, o, d), _ = moved
    return (s[0], s[1]) if o is None else (s[0], s[1], o[0], o[1], d[0], d[1])


def _pack(prog: Program, rank: int, pieces: list[Piece], into: Piece, ch: int) -> Piece:
    """Copy ``pieces`` of ``rank`` one after the other into ``into``; return ``into``."""
    at = into[1]
    for p in pieces:
        _issue(prog, rank, rank, (p, None, (into[0], at, p[2])), ch, -1)
        at += p[2]
    return into


def _parts(whole: Piece, msgs: list[Message]) -> list[Piece]:
    """``whole`` cut as ``msgs`` are, in order."""
    out, at = [], whole[1]
    for m in msgs:
        out.append((whole[0], at, m[0][2]))
        at += m[0][2]
    return out


def _run_of(pieces: list[Piece], size: int) -> Piece | None:
    """The one range ``pieces`` make, in order, or None if they are not adjacent."""
    buf, lo = pieces[0][0], pieces[0][1]
    at = lo
    for p in pieces:
        if p[0] is not buf or p[1] != at:
            return None
        at += p[2]
    return (buf, lo, size)


def _exchange(prog: Program, per_c: list, chan) -> None:
    """Pairs of opposite moves, in the order their first move comes: their messages alternate
    over the instances and the two directions, a sub-round per message (module docstring)."""
    first = per_c[0][1]
    index = {(s, d): t for t, (s, d, _) in enumerate(first)}
    done: set[int] = set()
    for t, (s, d, _) in enumerate(first):
        if t in done:
            continue
        pair = [t]
        k = index.get((d, s))
        if k is not None and k not in done:
            pair.append(k)
        done.update(pair)
        lanes = [(c, found[u][0], found[u][1], _cut(prog, *found[u])) for c, found in per_c for u in pair]
        depth = max(len(msgs) for *_, msgs in lanes)
        sub_rounds = depth > 1 and not prog.algo.one_way
        for i in range(depth):
            for c, a, b, msgs in lanes:
                if i < len(msgs):
                    _issue(prog, a, b, msgs[i], chan(a, b, c), -1)
            if sub_rounds:
                prog.next_round()


def _staged(prog: Program, phase: Reduce, si: int, per_c: list, members, chan, n: int) -> None:
    """A staged reduce step: every move lands its copy in a slot of its own (``phase.land``),
    then each receiver sums its slots into ``final``, nearest sender first, the running sum
    moving through the slots so that each sum runs on the thread block that received the slot."""
    final = phase.final or phase.acc
    rank = members.__getitem__ if members is not None else int
    step = phase.table[si]
    for c, found in per_c:
        for (s, d, msgs), (_, _, blocks) in zip(found, step):
            for (src, _, _), j in zip(msgs, blocks):
                _issue(prog, s, d, (src, None, phase.land(d, s, j, c)), chan(s, d, c), -1)
    landed = landings(step)
    for c, _ in per_c:
        for b, j in sorted(landed):
            rd = rank(b)
            senders = [rank(a) for a in sorted(landed[(b, j)], key=lambda a: (a - b) % n)]
            acc = _chunk(prog, rd, phase.own(rd, j, c))
            for rs in senders[:-1]:
                acc = acc.reduce(_chunk(prog, rd, phase.land(rd, rs, j, c)), chan=chan(rs, rd, c))
            rs = senders[-1]
            _chunk(prog, rd, phase.land(rd, rs, j, c)).reduce(acc, chan=chan(rs, rd, c),
                                                              out=_chunk(prog, rd, final(rd, j, c)))


def _chunk(prog: Program, rank: int, at):
    return piece(prog, rank, at[0], at[1], at[2])


def _cut(prog: Program, s: int, d: int, msgs: list[Message]) -> list[Message]:
    """``msgs`` cut to at most the program's message cap when they cross ranks."""
    if s == d:
        return msgs
    cap = prog.message_cap
    out = []
    for m in msgs:
        size = m[0][2]
        if size <= cap:
            out.append(m)
            continue
        prog._note_cut(size)
        for lo in range(0, size, cap):
            n = min(cap, size - lo)
            out.append(tuple(None if p is None else (p[0], p[1] + lo, n) for p in m))
    return out


def _issue(prog: Program, s: int, d: int, msg: Message, chan: int, lane: int) -> None:
    """One message: a copy, or a reduce where it names a local operand; on ``lane`` if >= 0.
    On one rank (s == d) a local copy, or a local reduce into the destination."""
    src, opnd, into = msg
    if src[2] == 0:
        return
    a = piece(prog, s, src[0], src[1], src[2])
    b = piece(prog, d, into[0], into[1], into[2])
    if opnd is None:
        a.copy(b, chan, lane)
    else:
        a.reduce(piece(prog, d, opnd[0], opnd[1], opnd[2]), chan, b, lane)
