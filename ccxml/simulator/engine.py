"""Event-driven simulation of a loaded MSCCL schedule, on dedicated links or on a shared network.

Two link models; everything else (steps, matching, dependencies, bytes) is common:

* **Dedicated links** (a :class:`~ccxml.topology.model.Topology` given by α-β-γ levels, ``flat``):
  the "Hockney" model HCCL's documents use, applied step by step to the actual schedule — the
  model described point by point below. Its figures reproduce HCCL's cost formulas exactly.
* **Shared links** (a network topology: a preset, a ``[network]`` file, an NCCL topology XML):
  a transfer from rank a to rank b crosses the links of its route
  (:meth:`ccxml.topology.network.Network.route`) and shares each of them with the other transfers
  in flight there, max-min fairly, rates recomputed whenever a transfer starts or ends
  (:mod:`ccxml.simulator.flows`). A transfer requested at t first spends its route's per-message
  overhead in the port that has it (a NIC: the message occupies that port for ``overhead × its
  bandwidth`` bytes, shared with the other transfers there, so messages through one port queue up
  for it), then its data start to move after the route's latency and it arrives when its last byte
  does: alone on its route it takes exactly α + b/B (α = overhead + latency, B = the route's
  smallest bandwidth). A reduction of b bytes costs b·γ with the network's γ. Transfers never
  queue for a link otherwise (they share it), so "link" never appears as a reason on the critical
  path.

Model (dedicated links):

* **Links.** Every directed pair (sender, receiver) is one full-duplex link, independent of every
  other link; all channels between the same two ranks share it. A transfer of b bytes occupies
  the link for ``alpha + b·beta`` of the link's level (:meth:`ccxml.topology.model.Topology.link`) and
  its data arrive at the receiver when it ends. Transfers on one link are served one at a time in
  the order they are requested (ties: lowest (gpu, tb, step) first).
* **Send/receive matching.** The k-th send-side step (``s rcs rrs rrcs``) of (a → b, chan c)
  feeds the k-th receive-side step (``r rcs rrs rrc rrcs``) of (a → b, chan c), as the runtime's
  FIFO connection does (msccl-runtime.md §9.3). Sends never wait for the receiver: buffering is
  assumed unbounded (whether a schedule survives bounded FIFOs is the interpreter's question).
* **A step**, run by its TB after the TB's previous step:

  1. starts when its dependencies are released (``depid/deps`` plus those carried by the nops
     before it; released when the target TB has *finished* a ``hasdep=1`` step whose runtime step
     counter is ≥ ``deps``, msccl-runtime.md §8);
  2. if it receives, waits until its matching data have arrived;
  3. if it reduces (``rrc rrs rrcs re``), spends ``cnt·chunk·gamma`` (gamma of the receive link's
     level; ``re`` uses the intra level);
  4. if it sends (``s`` or the forwarding half of ``rcs rrs rrcs``), requests the link and is done
     when its transfer has arrived (store-and-forward: a received chunk is forwarded only after it
     has fully arrived and been reduced);
  5. ``cpy`` is free on dedicated links (the formulas' model); on a network topology whose GPUs
     have a ``memory_bandwidth`` M, a copy of b bytes reads and writes them: ``2·b / M``.
     ``nop`` is not a step (its dependency moves to the next real step).

  So a send occupies its TB for the whole transfer, and one pipeline hop of a reduce chain costs
  ``alpha + b·beta + b·gamma`` — which makes HCCL's per-step formulas come out exactly.
* **Bytes.** chunk bytes = n / (nchunksperloop · mult) with mult = ngpus for gather/scatter (where
  n, as nccl-tests define it, is the whole gathered/scattered buffer) and 1 otherwise (allreduce:
  the buffer; allgather: the output; reducescatter: the input; alltoall: the total send buffer —
  the runtime's ``count·sizeMultiplier``, msccl-runtime.md §6). A step moves ``cnt`` chunks. The
  runtime's slicing (the program replayed per slice) is not modelled: a step is one transfer.

The result carries the makespan, per-rank and per-link busy time, and the critical path: the chain
of steps, each released by the one before it (program order, a dependency, the arrival of its data,
or its link becoming free), that ends at the makespan. With ``record=True`` it also carries a
:class:`Timeline` (every step's span, the critical path as step references, each link's utilisation
over time) for a timeline view.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left

from ccxml.loader.model import Schedule
from ccxml.simulator.flows import FlowNetwork
from ccxml.simulator.results import (
    LinkStats,
    NetLinkStats,
    PathStep,
    RankStats,
    SimResult,
    StepSpan,
    Timeline,
    _union,
)
from ccxml.topology.model import INTER, INTRA, Topology
from ccxml.vocab.errors import SimulationError
from ccxml.vocab.sizes import chunk_bytes
from ccxml.vocab.wire import StepType

# ---- the engine ----------------------------------------------------------------------------

_SENDS = {t.value for t in StepType if t.sends}
_RECEIVES = {t.value for t in StepType if t.receives}
_REDUCES = {t.value for t in StepType if t.reduces}
_KNOWN = {t.value for t in StepType}
_NOP = StepType.NOP.value
_CPY = StepType.COPY.value
_INF = float("inf")

# why an op's time was what it was
_START, _PROGRAM, _DEP, _DATA, _LINK = "start", "program", "dependency", "data", "link"


class _Op:
    """One real step of one TB, with its simulated times."""
    __slots__ = ("gpu", "tb", "index", "type", "cnt", "deps", "hasdep", "counter", "sends",
                 "receives", "reduces", "start", "end", "pred", "why", "recv_key", "recv_slot",
                 "t_ready", "xfer_start", "reduce_s", "recv_level", "released_by", "sender")

    def __init__(self, gpu, tb, index, type_, cnt, deps, hasdep, counter):
        self.gpu, self.tb, self.index, self.type, self.cnt = gpu, tb, index, type_, cnt
        self.deps, self.hasdep, self.counter = deps, hasdep, counter
        self.sends = type_ in _SENDS
        self.receives = type_ in _RECEIVES
        self.reduces = type_ in _REDUCES
        self.start = self.end = self.t_ready = self.xfer_start = 0.0
        self.reduce_s = 0.0
        self.pred = None
        self.why = _START
        self.recv_key = None
        self.recv_slot = -1
        self.recv_level = INTRA
        self.released_by = ()       # recorded only: the ops that released ``deps``
        self.sender = None          # recorded only: the op whose data a receive took


class _TB:
    __slots__ = ("gpu", "id", "send", "recv", "chan", "ops", "pc", "phase", "t", "published",
                 "pub_counters", "last", "route", "rkey", "skey")

    def __init__(self, gpu, tb):
        self.gpu, self.id, self.send, self.recv, self.chan = gpu, tb.id, tb.send, tb.recv, tb.chan
        self.ops: list[_Op] = []
        self.pc = 0
        self.phase = 0
        self.t = 0.0
        self.published: list[tuple[float, _Op]] = []   # (time, op) of finished hasdep steps
        self.pub_counters: list[int] = []               # their step counters (non-decreasing)
        self.last: _Op | None = None
        self.route = None                               # shared links: the route to ``send``
        #: the connection its receives read, and the one its sends feed: (from, to, chan)
        #: (the class engine names both by a representative's connection)
        self.rkey = (tb.recv, gpu, tb.chan)
        self.skey = (gpu, tb.send, tb.chan)


def _compile_tb(gpu: int, tb) -> _TB:
    """The TB's real steps with nop-carried dependencies and the runtime's step counter."""
    out = _TB(gpu, tb)
    pending: list[tuple[int, int]] = []
    counter = 0
    for index, st in enumerate(tb.read_steps()):
        if st.type not in _KNOWN:
            raise SimulationError(f"gpu {gpu} tb {tb.id} step {index}: unknown step type {st.type!r}")
        if st.type == _NOP:
            if st.depid >= 0:
                pending.append((st.depid, st.deps))
            continue
        deps = pending + ([(st.depid, st.deps)] if st.depid >= 0 else [])
        pending = []
        value = counter + max(0, len(deps) - 1)
        op = _Op(gpu, tb.id, index, st.type, st.cnt, deps, st.hasdep == 1, value)
        if op.sends and tb.send < 0:
            raise SimulationError(f"gpu {gpu} tb {tb.id} step {index}: {st.type} sends but the TB "
                                  f"has send=-1")
        if op.receives and tb.recv < 0:
            raise SimulationError(f"gpu {gpu} tb {tb.id} step {index}: {st.type} receives but the "
                                  f"TB has recv=-1")
        if st.cnt < 0:
            raise SimulationError(f"gpu {gpu} tb {tb.id} step {index}: negative cnt {st.cnt}")
        out.ops.append(op)
        counter = value + 1
    return out


class _Engine:
    def __init__(self, schedule: Schedule, nbytes: float, topology: Topology, *, record: bool = False,
                 exact_twin: bool = False, only: set[int] | None = None):
        self.schedule = schedule
        self.record = record
        p = schedule.ngpus or len(schedule.gpus)
        self.p = p
        topology.check_ranks(p)
        self.topology = topology
        C = schedule.nchunksperloop
        if C <= 0:
            raise SimulationError(f"nchunksperloop must be > 0 to size chunks, got {C}")
        if nbytes < 0:
            raise SimulationError(f"message size must be >= 0 bytes, got {nbytes}")
        self.coll = schedule.coll
        self.nbytes = nbytes
        self.cb = chunk_bytes(self.coll, nbytes, C, p)
        self.tbs: dict[tuple[int, int], _TB] = {}
        for g in schedule.gpus:
            if not 0 <= g.id < p:
                raise SimulationError(f"gpu id {g.id} is outside 0..{p - 1}")
            for tb in g.tbs:
                if (g.id, tb.id) in self.tbs:
                    raise SimulationError(f"gpu {g.id} has two TBs with id {tb.id}")
                for peer, what in ((tb.send, "send"), (tb.recv, "recv")):
                    if peer >= p or peer == g.id or peer < -1:
                        raise SimulationError(f"gpu {g.id} tb {tb.id}: {what} peer {peer} is not "
                                              f"another rank in 0..{p - 1}")
                if only is None or g.id in only:
                    self.tbs[(g.id, tb.id)] = _compile_tb(g.id, tb)
        for (gid, tid), tb in self.tbs.items():
            for op in tb.ops:
                for d, _ in op.deps:
                    if (gid, d) not in self.tbs:
                        raise SimulationError(f"gpu {gid} tb {tid} step {op.index}: depid {d} is "
                                              f"not a TB of this GPU")
        self.levels: dict[tuple[int, int], str] = {}
        self.heap: list = []
        self.ready: list[_TB] = []
        self.link_free: dict[tuple[int, int], tuple[float, _Op | None]] = {}
        self.arrivals: dict[tuple[int, int, int], list[tuple[float, _Op]]] = {}
        self.recv_taken: dict[tuple[int, int, int], int] = {}
        self.fifo_waiters: dict[tuple[int, int, int, int], _TB] = {}
        self.dep_waiters: dict[tuple[int, int], list[_TB]] = {}
        self.xfers: list[tuple[int, int, float, float, float]] = []    # src, dst, start, end, bytes
        self.reductions: list[tuple[int, float, float]] = []          # gpu, start, end
        self.network = topology.graph() if topology.is_network else None
        #: a local copy reads and writes its bytes at the GPU's memory bandwidth (0: free)
        mem = self.network.memory_bandwidth if self.network is not None else 0.0
        self.copy_s_per_byte = 2.0 / mem if mem else 0.0
        self.flows = None
        if self.network is not None:
            self.flows = FlowNetwork(self.network.link_cap, exact_twin=exact_twin, record=record)

    def level(self, a: int, b: int) -> str:
        key = (a, b)
        lv = self.levels.get(key)
        if lv is None:
            lv = self.levels[key] = self.topology.level(a, b)
        return lv

    # -- driving ---------------------------------------------------------------------------
    def run(self) -> None:
        for key in sorted(self.tbs):
            self.ready.append(self.tbs[key])
        self._drain()
        if self.flows is None:
            while self.heap:
                t_req, gpu, tid, pc = heapq.heappop(self.heap)
                self._grant(self.tbs[(gpu, tid)], t_req)
                self._drain()
        else:
            self._run_shared()
        stuck = [tb for _, tb in sorted(self.tbs.items()) if tb.pc < len(tb.ops)]
        if stuck:
            raise SimulationError("deadlock: " + "; ".join(self._why_stuck(tb) for tb in stuck[:3])
                                  + (f"; ... ({len(stuck)} TBs stuck)" if len(stuck) > 3 else ""))

    def _drain(self) -> None:
        while self.ready:
            self._advance(self.ready.pop())

    def _why_stuck(self, tb: _TB) -> str:
        op = tb.ops[tb.pc]
        where = f"gpu {tb.gpu} tb {tb.id} step {op.index} ({op.type})"
        if tb.phase == 0:
            for d, v in op.deps:
                if self._published(self.tbs[(tb.gpu, d)], v) is None:
                    return f"{where} waits for tb {d} to reach step {v} with hasdep=1"
        return f"{where} waits for data from gpu {tb.recv} on chan {tb.chan} that never arrives"

    @staticmethod
    def _published(tb: _TB, value: int):
        """(time, op) of the first finished hasdep step of ``tb`` with counter >= value."""
        i = bisect_left(tb.pub_counters, value)
        return tb.published[i] if i < len(tb.published) else None

    def _advance(self, tb: _TB) -> None:
        """Run ``tb`` forward until it blocks (dependency, missing data, link request) or ends."""
        while tb.pc < len(tb.ops):
            op = tb.ops[tb.pc]
            if tb.phase == 0:                       # dependencies
                start, pred, why = tb.t, tb.last, (_PROGRAM if tb.last is not None else _START)
                for d, v in op.deps:
                    target = self.tbs[(tb.gpu, d)]
                    hit = self._published(target, v)
                    if hit is None:
                        self.dep_waiters.setdefault((tb.gpu, d), []).append(tb)
                        return
                    if hit[0] > start or (hit[0] == start and why != _DEP):
                        start, pred, why = hit[0], hit[1], _DEP
                op.start, op.pred, op.why = start, pred, why
                op.t_ready = start
                if self.record and op.deps:
                    op.released_by = tuple(self._published(self.tbs[(tb.gpu, d)], v)[1]
                                           for d, v in op.deps)
                tb.phase = 1
                if op.receives:
                    key = tb.rkey
                    slot = self.recv_taken.get(key, 0)
                    self.recv_taken[key] = slot + 1
                    op.recv_key, op.recv_slot = key, slot
                    op.recv_level = self.level(tb.recv, tb.gpu)
            if tb.phase == 1:                       # data arrival, then reduction
                t = op.t_ready
                if op.receives:
                    got = self.arrivals.get(op.recv_key)
                    if got is None or len(got) <= op.recv_slot or got[op.recv_slot] is None:
                        self.fifo_waiters[op.recv_key + (op.recv_slot,)] = tb
                        return
                    arrival, sender = got[op.recv_slot]
                    op.sender = sender
                    if arrival >= t:
                        t, op.pred, op.why = arrival, sender, _DATA
                if op.reduces:
                    if self.network is not None:
                        gamma = self.network.gamma
                    else:
                        gamma = self.topology.params(op.recv_level if op.receives else INTRA).gamma
                    dt = op.cnt * self.cb * gamma
                    if dt > 0:
                        self.reductions.append((tb.gpu, t, t + dt))
                    op.reduce_s = dt
                    t += dt
                elif op.type == _CPY and self.copy_s_per_byte:
                    dt = op.cnt * self.cb * self.copy_s_per_byte
                    self.reductions.append((tb.gpu, t, t + dt))
                    op.reduce_s = dt
                    t += dt
                op.t_ready = t
                tb.phase = 2
                if op.sends:
                    heapq.heappush(self.heap, (t, tb.gpu, tb.id, tb.pc))
                    return
            if tb.phase == 2 and op.sends:          # waiting for the link grant
                return
            self._finish(tb, op, op.t_ready)

    def _grant(self, tb: _TB, t_req: float) -> None:
        """Give the link to ``tb``'s current (sending) step, requested at ``t_req``."""
        op = tb.ops[tb.pc]
        dst = tb.send
        link = (tb.gpu, dst)
        free, last = self.link_free.get(link, (0.0, None))
        start = t_req
        if free > t_req:
            start, op.pred, op.why = free, last, _LINK
        nb = op.cnt * self.cb
        end = start + self.topology.params(self.level(tb.gpu, dst)).transfer(nb)
        self.link_free[link] = (end, op)
        op.xfer_start = start
        self.xfers.append((tb.gpu, dst, start, end, nb))
        key = (tb.gpu, dst, tb.chan)
        lst = self.arrivals.setdefault(key, [])
        lst.append((end, op))
        waiter = self.fifo_waiters.pop(key + (len(lst) - 1,), None)
        if waiter is not None:
            self.ready.append(waiter)
        self._finish(tb, op, end)
        self.ready.append(tb)

    # -- shared links ------------------------------------------------------------------------
    def _run_shared(self) -> None:
        """Requests (the heap) and the network's starts and ends, in time order; at equal times
        the network first, so that a transfer ending at t frees its share before one starts."""
        heap, flows, tbs = self.heap, self.flows, self.tbs
        while True:
            t_req = heap[0][0] if heap else _INF
            t_net = flows.next_time()
            if t_net == _INF and t_req == _INF:
                return
            if t_net <= t_req:
                for token in flows.advance(t_net):
                    self._arrive(token, t_net)
                self._drain()
            else:
                # requests before the network's next event; a request's transfer starts no
                # earlier than it, so the next event is at the latest that start
                while heap and heap[0][0] < t_net:
                    t_req, gpu, tid, _ = heapq.heappop(heap)
                    start = self._request(tbs[(gpu, tid)], t_req)
                    if start < t_net:
                        t_net = start

    def _request(self, tb: _TB, t: float) -> float:
        """Put ``tb``'s current (sending) step's transfer on the network at ``t``; returns when
        its data start to move."""
        op = tb.ops[tb.pc]
        route = tb.route
        if route is None:
            route = tb.route = self.network.route(tb.gpu, tb.send)
        nb = op.cnt * self.cb
        op.xfer_start = t
        key = tb.skey
        lst = self.arrivals.setdefault(key, [])
        slot = len(lst)
        lst.append(None)                        # the k-th send feeds the k-th receive
        token = (tb, op, key, slot)
        if route.setup:                         # the port's per-message work comes first
            cap = self.network.link_cap
            self.flows.add(t, route.setup, route.overhead * min(cap[x] for x in route.setup),
                           (token, route))
            return t
        start = t + route.latency + route.overhead
        self.flows.add(start, route.resources, nb, token, route.bottleneck)
        return start

    def _data(self, token, route, t: float) -> float:
        """The port has handled the message at ``t``: its data start after the latency."""
        start = t + route.latency
        self.flows.add(start, route.resources, token[1].cnt * self.cb, token, route.bottleneck)
        return start

    def _arrive(self, token, t: float) -> None:
        if len(token) == 2:                     # a message's setup in its port is done
            self._data(token[0], token[1], t)
            return
        tb, op, key, slot = token
        self.arrivals[key][slot] = (t, op)
        self.xfers.append((tb.gpu, tb.send, op.xfer_start, t, op.cnt * self.cb))
        waiter = self.fifo_waiters.pop(key + (slot,), None)
        if waiter is not None:
            self.ready.append(waiter)
        self._finish(tb, op, t)
        self.ready.append(tb)

    def _finish(self, tb: _TB, op: _Op, t: float) -> None:
        op.end = t
        tb.t = t
        tb.last = op
        tb.pc += 1
        tb.phase = 0
        if op.hasdep:
            if not tb.pub_counters or op.counter >= tb.pub_counters[-1]:
                tb.pub_counters.append(op.counter)
                tb.published.append((t, op))
            waiters = self.dep_waiters.pop((tb.gpu, tb.id), None)
            if waiters:
                self.ready.extend(waiters)

    # -- results ---------------------------------------------------------------------------
    def result(self) -> SimResult:
        ops = [op for _, tb in sorted(self.tbs.items()) for op in tb.ops]
        makespan = max((op.end for op in ops), default=0.0)
        path: list[PathStep] = []
        if ops:
            # the path ends at a step finishing at the makespan that no other such step waited
            # for (a zero-length receive finishing with its sender is the later link in the chain)
            enders = [o for o in ops if o.end == makespan]
            waited = {id(o.pred) for o in enders if o.pred is not None}
            last = next((o for o in enders if id(o) not in waited), enders[0])
            seen = set()
            op = last
            while op is not None and id(op) not in seen:
                seen.add(id(op))
                tb = self.tbs[(op.gpu, op.tb)]
                peer = tb.send if op.sends else tb.recv if op.receives else None
                path.append(PathStep(op.gpu, op.tb, op.index, op.type, peer, op.start, op.end,
                                     op.why))
                op = op.pred
            path.reverse()
        p = self.p
        shared = self.network is not None
        links: dict[tuple[int, int], list] = {}
        per_rank_iv: dict[int, list[tuple[float, float]]] = {r: [] for r in range(p)}
        pair_iv: dict[tuple[int, int], list[tuple[float, float]]] = {}
        send_s = [0.0] * p
        recv_s = [0.0] * p
        red_s = [0.0] * p
        for src, dst, s, e, nb in self.xfers:
            acc = links.setdefault((src, dst), [0, 0.0, 0.0])
            acc[0] += 1
            acc[1] += nb
            acc[2] += e - s
            send_s[src] += e - s
            recv_s[dst] += e - s
            per_rank_iv[src].append((s, e))
            per_rank_iv[dst].append((s, e))
            if shared or self.record:
                pair_iv.setdefault((src, dst), []).append((s, e))
        if shared:      # a pair's transfers may overlap (they share): busy = their union
            for key, iv in pair_iv.items():
                links[key][2] = _union(iv)
        for g, s, e in self.reductions:
            red_s[g] += e - s
            per_rank_iv[g].append((s, e))
        finish = [0.0] * p
        for op in ops:
            if 0 <= op.gpu < p:
                finish[op.gpu] = max(finish[op.gpu], op.end)
        ranks = [RankStats(r, finish[r], _union(per_rank_iv[r]), send_s[r], recv_s[r], red_s[r])
                 for r in range(p)]
        link_stats = [LinkStats(a, b, self.level(a, b), v[0], v[1], v[2])
                      for (a, b), v in sorted(links.items())]
        net_links = self._net_links(link_stats, makespan)
        warnings = []
        leftover = (sum(1 for v in self.arrivals.values() for x in v if x is not None)
                    - sum(self.recv_taken.values()))
        if leftover > 0:
            warnings.append(f"{leftover} transfer(s) are never received")
        timeline = None
        if self.record:
            def ref(o: _Op) -> tuple[int, int, int]:
                return o.gpu, o.tb, o.index
            timeline = Timeline([StepSpan(o.gpu, o.tb, o.index, o.type, o.start, o.end,
                                          tuple(map(ref, o.released_by)),
                                          None if o.sender is None else ref(o.sender)) for o in ops],
                                [(s.gpu, s.tb, s.step) for s in path], self._link_changes(pair_iv))
        return SimResult(self.coll, p, self.nbytes, self.cb, makespan, len(ops), len(self.xfers),
                         path, ranks, link_stats, warnings, "shared" if shared else "dedicated",
                         net_links, timeline)

    def _net_links(self, pairs: list[LinkStats], makespan: float) -> list[NetLinkStats]:
        if self.network is None:        # the pair links are the links
            out = []
            for ln in pairs:
                beta = self.topology.params(ln.level).beta
                out.append(NetLinkStats(f"r{ln.src}->r{ln.dst}", ln.level, 1 / beta if beta else _INF,
                                        ln.transfers, ln.bytes, ln.busy_s))
            return out
        net, fl = self.network, self.flows
        fl.close(makespan)
        count: dict[int, int] = {}
        nbytes: dict[int, float] = {}
        for ln in pairs:                # every transfer of a pair takes the pair's route
            for x in net.route(ln.src, ln.dst).resources:
                count[x] = count.get(x, 0) + ln.transfers
                nbytes[x] = nbytes.get(x, 0.0) + ln.bytes
        return [NetLinkStats(net.link_name(x), net.link_kind[x], net.link_cap[x], count[x], nbytes[x],
                             fl.busy[x]) for x in sorted(count)]

    def _link_changes(self, pair_iv) -> dict[str, list[tuple[float, float]]]:
        if self.network is not None:
            net = self.network
            return {net.link_name(x): pts for x, pts in sorted(self.flows.changes.items())}
        out = {}
        for (a, b), iv in sorted(pair_iv.items()):      # one transfer at a time: busy or idle
            pts: list[tuple[float, float]] = []
            for s, e in sorted(iv):
                if pts and pts[-1] == (s, 0.0):
                    pts.pop()
                else:
                    pts.append((s, 1.0))
                pts.append((e, 0.0))
            out[f"r{a}->r{b}"] = pts
        return out


__all__ = ["SimResult", "SimulationError", "PathStep", "LinkStats", "NetLinkStats", "RankStats",
           "StepSpan", "Timeline", "chunk_bytes", "INTER", "INTRA"]
