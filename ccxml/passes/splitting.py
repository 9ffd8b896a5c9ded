"""Pass: split thread blocks that are longer than the target allows across extra channels.

A TB whose steps (plus the ``nop``s its dependencies will need) exceed the profile's
``max_steps_per_tb`` is cut into consecutive pieces; piece k runs on channel
``chan + k·nchannels`` and its first step waits on the last step of piece k−1.

Guarantees:

* every piece fits the step limit (counting the nops its dependencies will need);
* a send and the receive it is matched with land in pieces with the same k, so they are on the
  same channel and every link is still declared at both ends with equal ``cnt`` sequences;
* a piece declares only the peers it talks to; new channels never collide with existing ones;
* program order inside the original TB is kept (the chain dependency between pieces).

Raises :class:`LimitError` when the pieces would need a channel above the profile's limit.
"""
from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from itertools import compress
from operator import ne
from typing import ClassVar

from ccxml._native import is_compiled
from ccxml.ir.nodes import GPU, TB, Algo, Step, dep_count, pack_deps, step_deps
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.errors import LimitError
from ccxml.vocab.wire import (
    RECV,
    RECV_COPY_SEND,
    RECV_REDUCE_COPY,
    RECV_REDUCE_COPY_SEND,
    RECV_REDUCE_SEND,
    SEND,
    Profile,
    StepType,
)


def nop_cost(step: Step) -> int:
    """``nop``s the dependency build will put in front of ``step`` (an upper bound)."""
    if dep_count(step) < 2:
        return 0
    tb = step.tb
    own = tb.origin if tb is not None else None
    others: list[TB] | None = None              # origins of the other TBs waited on (few)
    for d in step_deps(step):
        while d.merged_into is not None:
            d = d.merged_into
        dtb = d.tb
        if dtb is not tb and dtb is not None:
            origin = dtb.origin
            if origin is not own:
                if others is None:
                    others = [origin]
                elif origin not in others:
                    others.append(origin)
    return len(others) - 1 if others else 0


# The per-gid tables: C arrays where this module runs compiled (splitting.pxd types them as
# memoryviews), plain lists where it runs as Python (quicker to index there).
_C_TABLES = is_compiled(__file__)


def _table(value: int, n: int) -> list[int]:
    """A table of ``n`` times ``value`` (an ``array('q')`` when compiled, else a list)."""
    return array("q", [value]) * n if _C_TABLES else [value] * n


# what the walk does with a step: assign a receive half (also steps without link traffic),
# a send half, or both
_HALVES = {t: (1 if t.receives or not t.sends else 0) | (2 if t.sends else 0) for t in StepType}


def split_long_threadblocks(algo: Algo, profile: Profile) -> None:
    """Cut every TB longer than ``profile.max_steps_per_tb`` into pieces on extra channels
    (see the module docstring for the guarantees); leave the schedule alone when all fit."""
    limit = profile.max_steps_per_tb
    tbs = [tb for gpu in algo.gpus for tb in gpu.tbs]
    if _all_fit(algo.gpus, tbs, limit):
        return
    # dense numbering: a step's gid (kept in ``_s`` while this pass runs; numbered later) runs
    # through the TBs in order, so TB t holds gids base[t] .. base[t] + len - 1. Per gid (in
    # tables): what the walk assigns (_HALVES), the cost (the step plus the nops its
    # dependencies will need), the gids of the link partners (-1: none) and the TB.
    ntb = len(tbs)
    n = sum([len(tb.steps) for tb in tbs])
    halves = bytearray(n)
    spart, rpart = _table(-1, n), _table(-1, n)
    tb_of, base = _table(0, n), _table(0, ntb + 1)
    cost = _table(1, n)
    # nops come only from dependencies on other TBs of the same GPU: none where it has one TB
    shared = bytearray([len(gpu.tbs) > 1 for gpu in algo.gpus for _ in gpu.tbs])
    _index_steps(tbs, shared, halves, spart, rpart, tb_of, base, cost)
    # A segment per event: the receive and the send half of a fused step may end up in two
    # consecutive pieces (the step is then unfused at the cut), which is what lets a ring of
    # rcs steps be cut at all: every link cuts at the same message. A send-only step's rseg
    # is its piece too, so rseg holds every step's (first) piece.
    rseg, sseg = _table(0, n), _table(0, n)
    _settle(ntb, n, base, tb_of, halves, cost, rpart, spart, rseg, sseg, limit)

    width = max(tb.chan for tb in tbs) + 1
    top = max(max(rseg), max(sseg))
    if top * width + width - 1 > profile.max_chan:
        longest = max(tbs, key=lambda t: len(t.steps))
        raise LimitError(
            f"a thread block on gpu {longest.gpu} has {len(longest.steps)} steps; the {profile.name} "
            f"limit is {profile.max_steps_per_tb} per TB, and splitting it needs channel "
            f"{top * width + width - 1} > {profile.max_chan}: use --target legacy "
            f"(256 steps per TB) or fewer --channels")
    # the fused steps whose halves fell into two pieces (rseg and sseg differ on other steps too)
    cut = [g for g in compress(range(n), map(ne, rseg, sseg)) if halves[g] == 3]
    send_half = _unfuse_cut_steps(algo, [tbs[tb_of[g]].steps[g - base[tb_of[g]]] for g in cut])
    for gpu in algo.gpus:
        _rebuild_gpu(gpu, rseg, sseg, send_half, width)


def _all_fit(gpus: list[GPU], tbs: list[TB], limit: int) -> bool:
    """Whether every TB fits ``limit`` with the nops its dependencies will need (nops come only
    from dependencies on other TBs of the same GPU: none where it has one TB)."""
    for tb in tbs:
        if len(tb.steps) > limit:
            return False
    for gpu in gpus:
        if len(gpu.tbs) > 1:
            for tb in gpu.tbs:
                used = len(tb.steps)
                for st in tb.steps:
                    if dep_count(st) > 1:
                        used += nop_cost(st)
                if used > limit:
                    return False
    return True


def settle_segments(ntb: int, base: list[int], halves: bytes, cost: list[int], rpart: list[int],
                    spart: list[int], limit: int) -> tuple[list[int], list[int]]:
    """The pieces (rseg, sseg: per gid, of its receive and its send half) that this pass gives
    steps described by plain tables (TB t holds gids base[t] .. base[t+1]-1; ``halves``, ``cost``,
    ``rpart``, ``spart`` as :func:`split_long_threadblocks` fills them): the same fixed point, for
    a caller that lowers schedules in bulk without step objects (:mod:`ccxml.bulk`)."""
    n = base[ntb]
    tb_of = _table(0, n)
    for t in range(ntb):
        for g in range(base[t], base[t + 1]):
            tb_of[g] = t
    tables = [_table(0, len(xs)) for xs in (base, cost, rpart, spart)]
    for table, xs in zip(tables, (base, cost, rpart, spart)):
        for i, x in enumerate(xs):
            table[i] = x
    rseg, sseg = _table(0, n), _table(0, n)
    _settle(ntb, n, tables[0], tb_of, bytearray(halves), tables[1], tables[2], tables[3], rseg, sseg,
            limit)
    return list(rseg), list(sseg)


def _index_steps(tbs: list[TB], shared, halves, spart, rpart, tb_of, base, cost) -> None:
    """Give every step its gid (in ``_s``) and fill the per-gid tables: ``halves``, the link
    partners both ways (``spart`` from the senders, ``rpart`` from the receivers), ``tb_of``,
    each TB's first gid ``base``, and add to ``cost`` the nops a step's dependencies will need
    where its TB's GPU has other TBs (``shared[t]``)."""
    halves_of = _HALVES
    g = 0
    for t, tb in enumerate(tbs):
        base[t] = g
        for st in tb.steps:
            st._s = g
            halves[g] = halves_of[st.type]
            tb_of[g] = t
            g += 1
    base[len(tbs)] = g
    g = 0                                       # links are matched both ways: from the senders
    for t, tb in enumerate(tbs):
        many = shared[t]
        for st in tb.steps:
            to = st.send_to
            if to is not None:
                p = to._s
                spart[g] = p
                rpart[p] = g
            if many and dep_count(st) > 1:
                c = nop_cost(st)
                if c:
                    cost[g] += c
            g += 1


def _settle(ntb: int, n: int, base, tb_of, halves, cost, rpart, spart, rseg, sseg,
            limit: int) -> None:
    """Walk the TBs until the segments reach their fixed point (see ``_walk``).

    Segments only grow and every walk is monotone in them, so any order of walks reaches the
    same (least) fixed point. Walking piece by piece (round k assigns the halves of piece k
    on every TB before any TB goes on to piece k + 1) settles each cut while only the few
    steps around it are re-walked; walking every TB to its end would re-walk the rest of
    the TB once per cut that travels around a ring."""
    # the walk states (piece, steps used in it) before each position of TB t, at
    # base[t] + t + position (a TB with m steps has m + 1 positions): (0, 0) before the
    # first step, none yet (-1) elsewhere
    curs, useds = _table(-1, n + ntb), _table(-1, n + ntb)
    for t in range(ntb):
        curs[base[t] + t] = useds[base[t] + t] = 0
    dirty = _table(0, ntb)                      # first position whose halves may change
    last = _table(-1, ntb)                      # last position pushed since it was walked
    reached = _table(0, ntb)                    # furthest position any walk stopped at
    queued = bytearray(ntb)
    waiting: dict[int, list[int]] = {0: list(range(ntb))}   # round -> TBs to look at then
    while waiting:
        k = min(waiting)
        if k > 2 * n:  # pragma: no cover - segments are bounded by the step count
            raise LimitError("could not split thread blocks across channels (no fixed point)")
        pending: deque[int] = deque()
        for t in waiting.pop(k):
            d = dirty[t]
            if not queued[t] and d < base[t + 1] - base[t] and curs[base[t] + t + d] <= k:
                queued[t] = 1
                pending.append(t)
        while pending:
            t = pending.popleft()
            queued[t] = 0
            size, o = base[t + 1] - base[t], base[t] + t
            touched: list[int] = []
            pos, matched = _walk(halves, cost, rpart, spart, rseg, sseg, limit, base[t], size,
                                 dirty[t], last[t], curs, useds, o, k, touched)
            if matched:                         # from ``pos`` on the previous walks still hold
                last[t], pos = -1, reached[t]
            elif last[t] < pos:
                last[t] = -1
            if pos < size and last[t] < pos:
                last[t] = pos                   # the state saved at ``pos`` is where to resume
            if pos > reached[t]:
                reached[t] = pos
            dirty[t] = pos
            if pos < size:
                if curs[o + pos] <= k:
                    queued[t] = 1
                    pending.append(t)
                else:
                    waiting.setdefault(curs[o + pos], []).append(t)
            for g in touched:
                pt = tb_of[g]
                pi = g - base[pt]
                if pi > last[pt]:
                    last[pt] = pi
                if pi < dirty[pt]:
                    dirty[pt] = pi
                    if not queued[pt]:
                        key = curs[base[pt] + pt + pi]
                        if key <= k:
                            queued[pt] = 1
                            pending.append(pt)
                        else:
                            waiting.setdefault(key, []).append(pt)


def _walk(halves, costs, rpart, spart, rseg, sseg, limit, b, size, start, stop, curs, useds, o,
          k, touched):
    """Assign pieces to the step halves of the TB whose gids start at ``b`` from position
    ``start`` on (each half no earlier than its partner's piece), up to the first position
    that would start in a piece after ``k``; push partners that must move later (their gids
    go to ``touched``). Return (position reached, whether the walk ended because it met the
    previous walks' state).

    ``curs``/``useds`` from ``o`` on keep the walk's state before every position walked so
    far; past ``stop`` (the last position pushed since it was walked) nothing changed, so
    reaching the state a previous walk had there means that walk's results still hold up to
    where it stopped."""
    cur, used = curs[o + start], useds[o + start]
    for i in range(start, size):
        oi = o + i
        if cur > k:                             # piece k is done on this TB for now
            curs[oi], useds[oi] = cur, used
            return i, False
        if i > stop and cur == curs[oi] and used == useds[oi]:
            return i, True
        curs[oi], useds[oi] = cur, used
        sid = b + i
        h = halves[sid]
        unit = -1
        if h & 1:
            m = rseg[sid]
            if m > cur:
                cur, used = m, 0
            cost = costs[sid]
            c = cost + (1 if cur and not used else 0)
            if used and used + c > limit:
                cur, used, c = cur + 1, 0, cost + 1
            used += c
            unit = cur
            rseg[sid] = cur
            p = rpart[sid]
            if p >= 0 and sseg[p] < cur:
                sseg[p] = cur
                touched.append(p)
        if h & 2:
            m = sseg[sid]
            if m > cur:
                cur, used = m, 0
            if unit != cur:                     # the send half starts a new unit of work
                cost = costs[sid]
                c = cost + (1 if cur and not used else 0)
                if used and used + c > limit:
                    cur, used, c = cur + 1, 0, cost + 1
                used += c
            sseg[sid] = cur
            if unit < 0:                        # a send-only step: rseg holds its piece too
                rseg[sid] = cur
            p = spart[sid]
            if p >= 0 and rseg[p] < cur:
                rseg[p] = cur
                touched.append(p)
    curs[o + size], useds[o + size] = cur, used
    return size, False


_UNFUSED = {RECV_COPY_SEND: RECV,
            RECV_REDUCE_COPY_SEND: RECV_REDUCE_COPY,
            RECV_REDUCE_SEND: RECV_REDUCE_COPY}


def _unfuse_cut_steps(algo: Algo, cut: list[Step]) -> dict[Step, Step]:
    """Split each fused step of ``cut`` into its receive (the step itself) and a new send
    step; return step -> its new send half."""
    send_half: dict[Step, Step] = {}
    for st in cut:
        send = Step(SEND, st.gpu, src=st.dst, cnt=st.cnt, send_peer=st.send_peer,
                    chan=st.chan, original_index=st.original_index)
        send.tb = st.tb
        send.send_to = st.send_to
        st.send_to.recv_from = send
        st.type = _UNFUSED[st.type]
        st.send_to, st.send_peer = None, -1
        send_half[st] = send
    # steps of other TBs that waited on a now-unfused step also wait for its send half
    # (dependencies never cross GPUs, so only GPUs with a cut step and other TBs can have any)
    gpus = {st.gpu for st in cut}
    for gpu in algo.gpus:
        if gpu.id not in gpus or len(gpu.tbs) < 2:
            continue
        for tb in gpu.tbs:
            for st in tb.steps:
                deps = None
                for i, d in enumerate(step_deps(st)):
                    while d.merged_into is not None:
                        d = d.merged_into
                    send = send_half.get(d)
                    if send is not None and d.tb is not tb:
                        if deps is None:
                            deps = list(step_deps(st))
                        deps[i] = send
                if deps is not None:
                    st._dep_pack = pack_deps(deps)
    return send_half


def _rebuild_gpu(gpu: GPU, rseg: list[int], sseg: list[int], send_half: dict[Step, Step],
                 width: int) -> None:
    """Replace the GPU's TBs by their pieces (piece k of a TB on channel chan + k·width)."""
    for tb in gpu.remove_tbs():
        steps = tb.steps
        if not steps:
            continue
        # a TB's pieces are consecutive runs of its steps (a walk's piece never decreases);
        # the send half of a cut step opens the run of its piece
        b = steps[0]._s
        seg = rseg[b:b + len(steps)]
        pieces: list[tuple[int, list[Step]]] = []
        carry: tuple[int, Step] | None = None   # a cut step's send half and its piece
        i = 0
        while i < len(steps):
            k = seg[i]
            j = bisect_right(seg, k, i)
            run = steps[i:j]
            if carry is not None:
                if carry[0] == k:
                    run.insert(0, carry[1])
                else:
                    pieces.append((carry[0], [carry[1]]))
                carry = None
            pieces.append((k, run))
            send = send_half.get(steps[j - 1])  # only the last step of a run can be cut
            if send is not None:
                carry = (sseg[b + j - 1], send)
            i = j
        if carry is not None:
            pieces.append((carry[0], [carry[1]]))
        prev_last: Step | None = None
        for k, run in pieces:
            piece = TB(tb.send, tb.recv, tb.chan + k * width)
            piece.origin, piece.segment = tb, k
            piece.steps = run           # the steps passed TB.add_step's peer checks in ``tb``
            for st in run:
                st.tb = piece
            piece.number_links()
            if not piece.send_count:    # a piece declares only the peers it talks to
                piece.send = -1
            if not piece.recv_count:
                piece.recv = -1
            gpu.add_tb(piece)
            if prev_last is not None:
                run[0].add_dep(prev_last)
            prev_last = run[-1]
        tb.steps = []


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class SplitLongThreadblocks(Pass):
    """Every TB fits the target's step limit on a channel the target has (raises LimitError
    otherwise); each piece of a split TB waits on the end of the piece before it; a send and
    its receive stay on one channel at the same index of their link; a piece declares only the
    peers it talks to; the order of waits stays acyclic."""

    name: ClassVar[str] = "splitting"

    def run(self, algo: Algo, profile: Profile) -> None:
        split_long_threadblocks(algo, profile)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.pieces_fit_and_chain(algo, n, profile), *gt.links_and_order(algo, n))
