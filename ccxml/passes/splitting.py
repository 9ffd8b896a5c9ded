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

from collections import deque

from ccxml.ir import GPU, TB, Algo, Step
from ccxml.wire import (RECV, RECV_COPY_SEND, RECV_REDUCE_COPY, RECV_REDUCE_COPY_SEND,
                        RECV_REDUCE_SEND, SEND, Profile)


class LimitError(ValueError):
    """The schedule breaks a limit of the target runtime and cannot be fixed by construction."""


def nop_cost(step: Step) -> int:
    """``nop``s the dependency build will put in front of ``step`` (an upper bound)."""
    if len(step.dep_list) < 2:
        return 0
    own = step.tb.origin if step.tb is not None else None
    targets = set()
    for d in step.dep_list:
        while d.merged_into is not None:
            d = d.merged_into
        if d.tb is not None and d.tb.origin is not own:
            targets.add(d.tb.origin)
    return max(0, len(targets) - 1)


def split_long_threadblocks(algo: Algo, profile: Profile) -> None:
    limit = profile.max_steps_per_tb
    tbs = [tb for gpu in algo.gpus for tb in gpu.tbs]
    if all(len(tb.steps) + sum(nop_cost(st) for st in tb.steps if len(st.dep_list) > 1) <= limit
           for tb in tbs):
        return
    # dense numbering: a step's gid (kept in ``_s`` while this pass runs; numbered later),
    # the TB number of each gid and the first gid of each TB, and each step's cost (itself
    # plus the nops its dependencies will need)
    steps = [st for tb in tbs for st in tb.steps]
    n = len(steps)
    cost = [1] * n
    for g, st in enumerate(steps):
        st._s = g
        if len(st.dep_list) > 1:
            cost[g] += nop_cost(st)
    tb_of: list[int] = []
    base: list[int] = []
    for t, tb in enumerate(tbs):
        base.append(len(tb_of))
        tb_of += [t] * len(tb.steps)
    # A segment per event: the receive and the send half of a fused step may end up in two
    # consecutive pieces (the step is then unfused at the cut), which is what lets a ring of
    # rcs steps be cut at all: every link cuts at the same message.
    rseg, sseg = [0] * n, [0] * n
    plans = [_plan(tb, cost) for tb in tbs]
    # Segments only grow and every walk is monotone in them, so any order of walks reaches the
    # same (least) fixed point. Walking piece by piece (round k assigns the halves of piece k
    # on every TB before any TB goes on to piece k + 1) settles each cut while only the few
    # steps around it are re-walked; walking every TB to its end would re-walk the rest of
    # the TB once per cut that travels around a ring.
    ntb = len(tbs)
    saved = [_fresh_state(len(plan)) for plan in plans]
    dirty = [0] * ntb                           # first position whose halves may change
    last = [-1] * ntb                           # last position pushed since it was walked
    reached = [0] * ntb                         # furthest position any walk stopped at
    waiting: dict[int, list[int]] = {0: list(range(ntb))}   # round -> TBs to look at then
    queued = [False] * ntb
    while waiting:
        k = min(waiting)
        if k > 2 * n:  # pragma: no cover - segments are bounded by the step count
            raise LimitError("could not split thread blocks across channels (no fixed point)")
        pending: deque[int] = deque()
        for t in waiting.pop(k):
            d = dirty[t]
            if not queued[t] and d < len(plans[t]) and saved[t][0][d] <= k:
                queued[t] = True
                pending.append(t)
        while pending:
            t = pending.popleft()
            queued[t] = False
            plan, curs = plans[t], saved[t][0]
            touched, pos, matched = _walk(plan, dirty[t], last[t], saved[t], rseg, sseg, limit, k)
            if matched:                         # from ``pos`` on the previous walks still hold
                last[t], pos = -1, reached[t]
            elif last[t] < pos:
                last[t] = -1
            if pos < len(plan) and last[t] < pos:
                last[t] = pos                   # the state saved at ``pos`` is where to resume
            if pos > reached[t]:
                reached[t] = pos
            dirty[t] = pos
            if pos < len(plan):
                if curs[pos] <= k:
                    queued[t] = True
                    pending.append(t)
                else:
                    waiting.setdefault(curs[pos], []).append(t)
            for g in touched:
                pt = tb_of[g]
                pi = g - base[pt]
                if pi > last[pt]:
                    last[pt] = pi
                if pi < dirty[pt]:
                    dirty[pt] = pi
                    if not queued[pt]:
                        key = saved[pt][0][pi]
                        if key <= k:
                            queued[pt] = True
                            pending.append(pt)
                        else:
                            waiting.setdefault(key, []).append(pt)

    width = max(tb.chan for tb in tbs) + 1
    top = max(max(rseg), max(sseg))
    if top * width + width - 1 > profile.max_chan:
        longest = max(tbs, key=lambda t: len(t.steps))
        raise LimitError(
            f"a thread block on gpu {longest.gpu} has {len(longest.steps)} steps; the {profile.name} "
            f"limit is {profile.max_steps_per_tb} per TB, and splitting it needs channel "
            f"{top * width + width - 1} > {profile.max_chan}: use --target legacy "
            f"(256 steps per TB) or fewer --channels")
    seg = _unfuse_cut_steps(tbs, rseg, sseg)
    for gpu in algo.gpus:
        _rebuild_gpu(gpu, seg, width)


def _plan(tb: TB, cost: list[int]) -> list[tuple]:
    """Per step: (gid, receives?, sends?, cost, recv partner gid, send partner gid) (-1: none)."""
    plan = []
    for st in tb.steps:
        rp, sp, t, g = st.recv_from, st.send_to, st.type, st._s
        plan.append((g, t.receives or not t.sends, t.sends, cost[g],
                     rp._s if rp is not None else -1, sp._s if sp is not None else -1))
    return plan


def _fresh_state(npos: int) -> tuple[list[int], list[int]]:
    """Walk states (piece, steps used in it) before each position of a TB with ``npos`` steps:
    (0, 0) before the first one, none yet (-1) elsewhere."""
    curs, useds = [-1] * (npos + 1), [-1] * (npos + 1)
    curs[0] = useds[0] = 0
    return curs, useds


def _walk(plan, start, stop, saved, rseg, sseg, limit, k):
    """Assign pieces to one TB's step halves from position ``start`` on (each half no earlier
    than its partner's piece), up to the first position that would start in a piece after
    ``k``; push partners that must move later. Return (gids of the pushed partners, position
    reached, whether the walk ended because it met the previous walks' state).

    ``saved`` keeps the walk's state before every position walked so far; past ``stop`` (the
    last position pushed since it was walked) nothing changed, so reaching the state a previous
    walk had there means that walk's results still hold up to where it stopped."""
    touched = []
    curs, useds = saved
    cur, used = curs[start], useds[start]
    for i in range(start, len(plan)):
        if cur > k:                             # piece k is done on this TB for now
            curs[i], useds[i] = cur, used
            return touched, i, False
        if i > stop and cur == curs[i] and used == useds[i]:
            return touched, i, True
        curs[i], useds[i] = cur, used
        sid, has_r, has_s, cost, rp, sp = plan[i]
        unit = -1
        if has_r:
            k_ = rseg[sid]
            if k_ > cur:
                cur, used = k_, 0
            c = cost + (1 if cur and not used else 0)
            if used and used + c > limit:
                cur, used, c = cur + 1, 0, cost + 1
            used += c
            unit = cur
            rseg[sid] = cur
            if rp >= 0 and sseg[rp] < cur:
                sseg[rp] = cur
                touched.append(rp)
        if has_s:
            k_ = sseg[sid]
            if k_ > cur:
                cur, used = k_, 0
            if unit != cur:                    # the send half starts a new unit of work
                c = cost + (1 if cur and not used else 0)
                if used and used + c > limit:
                    cur, used, c = cur + 1, 0, cost + 1
                used += c
            sseg[sid] = cur
            if sp >= 0 and rseg[sp] < cur:
                rseg[sp] = cur
                touched.append(sp)
    curs[len(plan)], useds[len(plan)] = cur, used
    return touched, len(plan), False


_UNFUSED = {RECV_COPY_SEND: RECV,
            RECV_REDUCE_COPY_SEND: RECV_REDUCE_COPY,
            RECV_REDUCE_SEND: RECV_REDUCE_COPY}


def _unfuse_cut_steps(tbs: list[TB], rseg: list[int], sseg: list[int]) -> dict[Step, int]:
    """Split fused steps whose halves fell into two pieces; return step -> piece."""
    seg: dict[Step, int] = {}
    moved: dict[Step, Step] = {}
    for tb in tbs:
        out: list[Step] = []
        for st in tb.steps:
            g = st._s
            t = st.type
            r = rseg[g] if t.receives or not t.sends else None
            s = sseg[g] if t.sends else None
            if r is not None and s is not None and r != s:
                send = Step(SEND, st.gpu, src=st.dst, cnt=st.cnt, send_peer=st.send_peer,
                            chan=st.chan, original_index=st.original_index)
                send.tb = tb
                send.send_to = st.send_to
                st.send_to.recv_from = send
                st.type = _UNFUSED[t]
                st.send_to, st.send_peer = None, -1
                seg[st], seg[send] = r, s
                moved[st] = send
                out += [st, send]
            else:
                seg[st] = r if r is not None else (s if s is not None else 0)
                out.append(st)
        tb.steps = out
    if moved:
        # steps of other TBs that waited on a now-unfused step also wait for its send half
        for tb in tbs:
            for st in tb.steps:
                for i, d in enumerate(st.dep_list):
                    d = d.resolved()
                    send = moved.get(d)
                    if send is not None and d.tb is not st.tb:
                        st.dep_list[i] = send
    return seg


def _rebuild_gpu(gpu: GPU, seg: dict[Step, int], width: int) -> None:
    old = gpu.tbs
    gpu.tbs, gpu.channel_usage, gpu._index = [], {}, {}
    for tb in old:
        pieces: dict[int, list[Step]] = {}
        for st in tb.steps:
            k = seg[st]
            group = pieces.get(k)
            if group is None:
                pieces[k] = [st]
            else:
                group.append(st)
        prev_last: Step | None = None
        for k in sorted(pieces):
            steps = pieces[k]
            send = tb.send if any(st.type.sends for st in steps) else -1
            recv = tb.recv if any(st.type.receives for st in steps) else -1
            piece = TB(send, recv, tb.chan + k * width)
            piece.origin, piece.segment = tb, k
            gpu.add_tb(piece)
            for st in steps:
                piece.add_step(st)
            if prev_last is not None:
                steps[0].add_dep(prev_last)
            prev_last = steps[-1]
        tb.steps = []
