"""Pass: place each rank's issued steps into thread blocks.

Guarantees, per GPU and channel:

* every TB has at most one send peer and one recv peer, and no two TBs share a (channel, send
  peer) or a (channel, recv peer) connection (``GPU.add_tb`` enforces it);
* a rank that on a channel sends to one peer and receives from one peer gets a single TB for
  both (a ring or chain link), and a peer it both sends to and receives from gets a full-duplex
  TB (send == recv), so that receive+send pairs can later fuse into ``rcs``/``rrs``/``rrcs``;
* except in a one-way program (``Algo.one_way``): there every TB sends to one peer or receives
  from one, never both, so a TB's steps keep their issue order (the ordering pass has no send to
  hold back) and a send that fills a bounded link never blocks a receive of its rank: the
  schedule completes with links that buffer nothing, whatever the message lengths;
* local steps (``cpy``, ``re``) join the TB of their latest dependency (in a one-way program:
  of the step that wrote their source, so that a copy out of a received range runs where it
  was received), else the TB that next consumes their destination, else the channel's first
  TB, else a TB of their own;
* each TB's steps are in issue order, which is a topological order of every dependency and
  matched send/receive pair (so the untouched schedule cannot deadlock);
* a step issued on a lane (``chan = -1 - g`` for group g of ``Algo.lane_groups``) first gets its
  channel from the lane plan (:func:`plan_lanes`), so that no thread block mixes two independent
  streams of transfers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from ccxml.ir.nodes import GPU, TB, Algo, Step, dep_count, step_deps
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.wire import Profile


def assign_threadblocks(algo: Algo) -> None:
    if algo.lane_groups:
        plan_lanes(algo)
    for gpu in algo.gpus:
        _assign_gpu(gpu, algo.one_way)


def plan_lanes(algo: Algo) -> None:
    """Give every step on a lane the channel of its lane group: the groups are placed in the
    order the front end made them, each instance of the algorithm with its own plan
    (:class:`_LanePlan`), each lane phase's steps as its own streams (:class:`_LanePhase`)."""
    plans: dict[tuple[int, int], _LanePlan] = {}
    phases: dict[tuple[int, int, int], _LanePhase] = {}
    chans = []
    for k, c, phase, pairs in algo.lane_groups:
        plan = plans.get((k, c))
        if plan is None:
            plan = plans[(k, c)] = _LanePlan(k, c)
        placer = phases.get((k, c, phase))
        if placer is None:
            placer = phases[(k, c, phase)] = _LanePhase(plan)
        chans.append(placer.place(pairs))
    for gpu in algo.gpus:
        for st in gpu.pending:
            if st.chan < 0:
                st.chan = chans[-1 - st.chan]


def _assign_gpu(gpu: GPU, one_way: bool = False) -> None:
    steps = gpu.pending
    # one walk over the steps (they are scattered in memory): each channel's send and recv peers
    peers: dict[int, tuple[set[int], set[int]]] = {}
    chan = -1
    sends = recvs = None
    for st in steps:
        if st.chan != chan or sends is None:
            chan = st.chan
            entry = peers.get(chan)
            if entry is None:
                entry = peers[chan] = (set(), set())
            sends, recvs = entry
        if st.send_peer >= 0:
            sends.add(st.send_peer)
        if st.recv_peer >= 0:
            recvs.add(st.recv_peer)
    chans = sorted(peers)
    if len(chans) == 1:
        groups = {chans[0]: steps}
    else:
        groups = {chan: [] for chan in chans}
        for st in steps:
            groups[st.chan].append(st)

    # communicating steps go to the TB of their connection, appended in issue order; each TB
    # lives on one channel, so the issue order within a channel's group is the TB's order
    local_steps = False
    for chan, group in groups.items():
        send_tb, recv_tb = _channel_tbs(gpu, chan, *peers[chan], one_way)
        for st in group:
            peer = st.send_peer
            if peer >= 0:
                tb = send_tb[peer]
            else:
                peer = st.recv_peer
                if peer < 0:
                    local_steps = True
                    continue
                tb = recv_tb[peer]
            st.tb = tb
            _append(tb, st)
    if local_steps:
        _place_local_steps(gpu, steps, one_way)
    gpu.pending = []


def _append(tb: TB, st: Step) -> None:
    """TB.add_step without its peer checks: the peers match by construction."""
    t = st.type
    if t.sends:
        st.send_index = tb.send_count
        tb.send_count += 1
    if t.receives:
        st.recv_index = tb.recv_count
        tb.recv_count += 1
    tb.steps.append(st)


def _channel_tbs(gpu: GPU, chan: int, sends: set[int], recvs: set[int], one_way: bool = False
                 ) -> tuple[dict[int, TB], dict[int, TB]]:
    """Create the TBs of one channel, whose steps send to ``sends`` and receive from ``recvs``
    (one direction per TB if ``one_way``); return {send peer: TB} and {recv peer: TB}."""
    send_tb: dict[int, TB] = {}
    recv_tb: dict[int, TB] = {}
    if one_way:
        for peer in sorted(sends):
            send_tb[peer] = gpu.add_tb(TB(peer, -1, chan))
        for peer in sorted(recvs):
            recv_tb[peer] = gpu.add_tb(TB(-1, peer, chan))
        return send_tb, recv_tb
    if len(sends) <= 1 and len(recvs) <= 1:
        if sends or recvs:
            s = next(iter(sends), -1)
            r = next(iter(recvs), -1)
            tb = gpu.add_tb(TB(s, r, chan))
            if s >= 0:
                send_tb[s] = tb
            if r >= 0:
                recv_tb[r] = tb
        return send_tb, recv_tb
    for peer in sorted(sends & recvs):
        send_tb[peer] = recv_tb[peer] = gpu.add_tb(TB(peer, peer, chan))
    for peer in sorted(sends - recvs):
        send_tb[peer] = gpu.add_tb(TB(peer, -1, chan))
    for peer in sorted(recvs - sends):
        recv_tb[peer] = gpu.add_tb(TB(-1, peer, chan))
    return send_tb, recv_tb


def _place_local_steps(gpu: GPU, steps: list[Step], one_way: bool = False) -> None:
    """Give each local step (the steps without a TB yet) a TB: its latest dependency's (in a
    one-way program the source's writer's, if it has one), else the next consumer of its output,
    else the channel's first TB, else a TB of its own; then restore issue order in the TBs that
    received one."""
    local_steps = [st for st in steps if st.tb is None]     # in issue order: producers first
    consumer = _first_consumers(steps)
    first_tb: dict[int, TB] | None = None
    local_tb: dict[int, TB] = {}
    for st in local_steps:
        tb = _source_writer_tb(st) if one_way else None
        if tb is None:
            for dep in reversed(step_deps(st)):    # the latest producer first
                tb = dep.tb
                if tb is not None:
                    break
        if tb is None:
            tb = consumer.get(st)
        if tb is None:
            if first_tb is None:        # each channel's first TB (the earliest write wins)
                first_tb = {t.chan: t for t in reversed(gpu.tbs)}
            tb = first_tb.get(st.chan)
        if tb is None:
            tb = local_tb.get(st.chan)
            if tb is None:
                tb = local_tb[st.chan] = gpu.add_tb(TB(-1, -1, st.chan))
        st.tb = tb
    changed = {st.tb for st in local_steps}     # membership only: never iterated into output
    for tb in changed:
        tb.steps = []
        tb.send_count = tb.recv_count = 0
    for st in [st for st in steps if st.tb in changed]:
        _append(st.tb, st)


def _source_writer_tb(st: Step) -> TB | None:
    """The TB of the latest dependency of ``st`` that wrote a chunk of its source, if placed."""
    src = st.src
    if src is None:
        return None
    buf, lo, hi = src[0], src[1], src[1] + st.cnt
    for dep in reversed(step_deps(st)):
        dst = dep.dst
        if (dep.tb is not None and dep.type.writes_dst and dst is not None and dst[0] is buf
                and dst[1] < hi and lo < dst[1] + dep.cnt):
            return dep.tb
    return None


def _first_consumers(steps: list[Step]) -> dict[Step, TB]:
    """For each local step (no TB yet), the TB of the first communicating step depending on it."""
    out: dict[Step, TB] = {}
    for st in filter(dep_count, steps):                    # the steps with dependencies
        tb = st.tb
        if tb is None:
            continue
        for dep in step_deps(st):
            if dep.tb is None and dep not in out:
                out[dep] = tb
    return out


# ---- the lane plan ----------------------------------------------------------------------------

class _LanePlan:
    """Channel plan of one instance, so that no thread block mixes two independent streams.

    This pass puts all of a rank's steps on one channel into ONE thread block when the rank
    has at most one send and one receive peer there, else one TB per peer; the step-ordering
    pass then interleaves each TB's sends and receives by index. Two streams of steps that share
    a TB can so be reordered into a wait cycle (example: a chain reduce 1→2→…→0 followed by a
    chain broadcast 0→1→…: rank 1's broadcast receive moves in front of its reduce sends).

    A *stream* is a run of table steps in which every rank keeps the same role toward each peer
    (send only, receive only, or both): a whole ring, one distance of NHR, a mesh step. Streams
    on one channel (a *lane*) must touch disjoint peers of every rank, and a rank that already
    has a stream on the lane must end up with more than one send or receive peer there (so the
    TB pass gives each peer its own TB). Lane l of instance c of K is channel ``l·K + c``.
    """

    def __init__(self, instances: int = 1, instance: int = 0):
        self.k, self.c = instances, instance
        # lane -> rank -> stream id -> (send peers, recv peers)
        self._use: list[dict[int, dict[int, tuple[set, set]]]] = []
        self._streams: list[tuple[int, dict[tuple[int, int], frozenset]]] = []   # (lane, roles)

    def chan(self, lane: int) -> int:
        return lane * self.k + self.c

    @property
    def used(self) -> int:
        return len(self._use)

    def _fits(self, lane: int, sid: int | None, peers: dict[int, tuple[set, set]]) -> bool:
        use = self._use[lane]
        for r, (snew, rnew) in peers.items():
            mine_s, mine_r = set(snew), set(rnew)
            other_s: set = set()
            other_r: set = set()
            for other, (ss, rr) in use.get(r, {}).items():
                if other == sid:
                    mine_s |= ss
                    mine_r |= rr
                else:
                    other_s |= ss
                    other_r |= rr
            if not other_s and not other_r:
                continue
            if (mine_s | mine_r) & (other_s | other_r):
                return False
            if len(mine_s | other_s) <= 1 and len(mine_r | other_r) <= 1:
                return False
        return True

    def _add(self, lane: int, sid: int, peers: dict[int, tuple[set, set]]) -> None:
        use = self._use[lane]
        for r, (ss, rr) in peers.items():
            s0, r0 = use.setdefault(r, {}).setdefault(sid, (set(), set()))
            s0 |= ss
            r0 |= rr


class _LanePhase:
    """Places the steps of one lane phase on channels (see :class:`_LanePlan`)."""

    def __init__(self, lanes: _LanePlan):
        self.lanes = lanes
        self.sids: list[int] = []

    def place(self, transfers: Sequence[tuple[int, int]]) -> int:
        """The channel for one step whose transfers are ``(from_rank, to_rank)`` pairs."""
        roles: dict[tuple[int, int], set] = {}
        peers: dict[int, tuple[set, set]] = {}
        for a, b in transfers:
            roles.setdefault((a, b), set()).add("s")
            roles.setdefault((b, a), set()).add("r")
            peers.setdefault(a, (set(), set()))[0].add(b)
            peers.setdefault(b, (set(), set()))[1].add(a)
        want = {k: frozenset(v) for k, v in roles.items()}
        ln = self.lanes
        for sid in self.sids:
            lane, seen = ln._streams[sid]
            if all(seen.get(k, v) == v for k, v in want.items()) and ln._fits(lane, sid, peers):
                seen.update(want)
                ln._add(lane, sid, peers)
                return ln.chan(lane)
        sid = len(ln._streams)
        lane = 0
        while lane < len(ln._use) and not ln._fits(lane, None, peers):
            lane += 1
        if lane == len(ln._use):
            ln._use.append({})
        ln._streams.append((lane, dict(want)))
        ln._add(lane, sid, peers)
        self.sids.append(sid)
        return ln.chan(lane)


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class AssignThreadblocks(Pass):
    """Every issued step is in one TB of its GPU and channel whose peers are its own; no two TBs
    of a GPU share a (channel, send peer) or (channel, recv peer); on a channel with one send
    and one recv peer one TB holds both, otherwise a peer both sent to and received from gets a
    full-duplex TB (in a one-way program, ``Algo.one_way``, no TB both sends and receives); a
    local step joins its producer's TB (one-way: its source's writer's), else its next
    consumer's, else its channel's first TB, else a TB of its own; each TB is in issue order,
    which orders every wait (its links numbered 0, 1, ... in that order)."""

    name: ClassVar[str] = "threadblocks"

    def run(self, algo: Algo, profile: Profile) -> None:
        assign_threadblocks(algo)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.connections_unique(algo, n), gt.tbs_shared_per_link(algo, n),
                gt.issue_order(algo, n), gt.local_steps_placed(algo, n), *gt.links_and_order(algo, n))
