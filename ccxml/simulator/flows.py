"""Flow-level bandwidth sharing: transfers in flight share every link they cross, max-min fairly.

:class:`FlowNetwork` holds the transfers ("flows") in flight on a set of links with capacities
(bytes/s). A flow is added with the time its data start to move, the links it crosses and its
size; at any moment every flow has a rate, the **max-min fair** allocation: no flow's rate can
grow without lowering that of a flow with a rate no larger (the allocation progressive filling
computes — raise all rates together, freeze the flows of a link when it fills, go on with the
rest; the flow-level model of established network simulators). Rates are recomputed whenever a flow
starts or ends, so between two such events every flow moves at a constant rate and its end time is
known; :meth:`FlowNetwork.next_time` and :meth:`FlowNetwork.advance` drive it from an event loop.

Two implementations of the same allocation, which must agree (tests/simulator/test_flows.py):

* the **fast path** (default): an event starts or ends flows on a few links; only the flows
  connected to those links through shared links (their *component*) can change rate, so only that
  component is refilled — by progressive filling with a heap of link fair shares (a share only
  grows as flows freeze, so stale heap entries are re-pushed when popped);
* the **exact twin** (``exact_twin=True``): at every event, :func:`maxmin_rates` over every flow in
  flight — a plain loop that scans every link for the smallest fair share.

A component's allocation depends only on its own flows and links, so refilling one component
gives the rates the global computation would; the two differ only by rounding.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

INF = math.inf


def maxmin_rates(flows: dict[int, tuple[int, ...]], capacity) -> dict[int, float]:
    """Max-min fair rates of ``flows`` (id -> links crossed) on links of ``capacity``: the
    simple reference. Repeatedly find the link whose remaining capacity, split evenly among its
    unfrozen flows, is smallest (ties: lowest link id), give its unfrozen flows that share and
    take it from every other link they cross."""
    left = {}
    users: dict[int, list[int]] = {}
    for fid in sorted(flows):
        for ln in flows[fid]:
            users.setdefault(ln, []).append(fid)
            left[ln] = capacity[ln]
    rates: dict[int, float] = {}
    while len(rates) < len(flows):
        best = None
        for ln in sorted(users):
            n = sum(1 for f in users[ln] if f not in rates)
            if n:
                share = max(left[ln], 0.0) / n
                if best is None or share < best[0]:
                    best = (share, ln)
        if best is None:                      # flows that cross no link
            for fid in flows:
                rates.setdefault(fid, INF)
            break
        share, ln = best
        for fid in users[ln]:
            if fid in rates:
                continue
            rates[fid] = share
            for other in flows[fid]:
                left[other] -= share
    return rates


class _Flow:
    __slots__ = ("id", "links", "left", "rate", "t", "ver", "token", "alone_rate")

    def __init__(self, fid, links, size, token, alone_rate):
        self.id, self.links, self.left, self.token = fid, links, size, token
        self.alone_rate = alone_rate            # its rate when no other flow shares its links
        self.rate = 0.0
        self.t = 0.0
        self.ver = 0


class FlowNetwork:
    """Flows in flight on links of the given capacities (see the module docstring).

    ``record=True`` keeps, per link, the times its utilisation (sum of its flows' rates / its
    capacity) changes: :attr:`changes` maps link -> [(time, utilisation), ...].
    """

    def __init__(self, capacity: list[float], *, exact_twin: bool = False, record: bool = False):
        self.cap = capacity
        self.exact_twin = exact_twin
        n = len(capacity)
        self.users: list[dict[int, None]] = [{} for _ in range(n)]   # link -> its flows (ordered set)
        self.active: dict[int, _Flow] = {}
        self.pending: dict[int, _Flow] = {}
        self.starts: list[tuple[float, int]] = []       # (time the data start, flow id)
        self.ends: list[tuple[float, int, int]] = []     # (predicted end, version, flow id)
        self.seq = 0
        # per link: the time it has carried at least one flow
        self.busy = [0.0] * n
        self._since = [0.0] * n
        self.changes: dict[int, list[tuple[float, float]]] | None = {} if record else None

    # -- driving -----------------------------------------------------------------------------
    def add(self, t: float, links: tuple[int, ...], size: float, token, bottleneck: float | None = None) -> int:
        """A flow of ``size`` bytes whose data start to move at ``t`` across ``links``; ``token``
        comes back from :meth:`advance` when it has arrived. ``bottleneck``: the smallest capacity
        of ``links``, if the caller knows it."""
        fid = self.seq
        self.seq += 1
        if bottleneck is None:
            cap = self.cap
            bottleneck = min([cap[ln] for ln in links]) if links else INF
        self.pending[fid] = _Flow(fid, links, size, token, bottleneck)
        heapq.heappush(self.starts, (t, fid))
        return fid

    def next_time(self) -> float:
        """When the next flow starts or ends (inf when nothing is in flight or waiting)."""
        ends, active = self.ends, self.active
        while ends:
            f = active.get(ends[0][2])
            if f is not None and f.ver == ends[0][1]:
                break
            heapq.heappop(ends)
        t = ends[0][0] if ends else INF
        if self.starts and self.starts[0][0] < t:
            t = self.starts[0][0]
        return t

    def advance(self, t: float) -> list:
        """Start and end every flow due at ``t`` (``t`` = :meth:`next_time`), recompute the rates
        they affect; returns the tokens of the flows that arrived, in the order they were added."""
        done: list[_Flow] = []
        touched: list[int] = []
        ends, active = self.ends, self.active
        while ends and ends[0][0] <= t:
            _, ver, fid = heapq.heappop(ends)
            f = active.get(fid)
            if f is None or f.ver != ver:
                continue
            self._remove(f, t, touched)
            done.append(f)
        starts = self.starts
        while starts and starts[0][0] <= t:
            _, fid = heapq.heappop(starts)
            f = self.pending.pop(fid)
            if f.left <= 0 or not f.links:
                done.append(f)
                continue
            self._insert(f, t, touched)
        if touched:
            self._reshare(t, touched)
        if len(done) > 1:
            done.sort(key=lambda f: f.id)
        return [f.token for f in done]

    def _insert(self, f: _Flow, t: float, touched: list[int]) -> None:
        f.t = t
        fid = f.id
        self.active[fid] = f
        users, since = self.users, self._since
        for ln in f.links:
            u = users[ln]
            if not u:
                since[ln] = t
            u[fid] = None
            touched.append(ln)

    def _remove(self, f: _Flow, t: float, touched: list[int]) -> None:
        fid = f.id
        del self.active[fid]
        users = self.users
        for ln in f.links:
            u = users[ln]
            del u[fid]
            if not u:
                self.busy[ln] += t - self._since[ln]
                if self.changes is not None:
                    self._record(t, (ln,))
            else:
                touched.append(ln)

    # -- sharing -----------------------------------------------------------------------------
    def _component(self, seeds: list[int]) -> tuple[list[_Flow], list[int]]:
        """The flows and links connected to ``seeds`` through shared links."""
        users, active = self.users, self.active
        seen_l = set()
        seen_f = set()
        flows, links = [], []
        q: deque[int] = deque()
        for ln in seeds:
            if ln not in seen_l and users[ln]:
                seen_l.add(ln)
                q.append(ln)
        while q:
            ln = q.popleft()
            links.append(ln)
            for fid in users[ln]:
                if fid in seen_f:
                    continue
                seen_f.add(fid)
                f = active[fid]
                flows.append(f)
                for l2 in f.links:
                    if l2 not in seen_l:
                        seen_l.add(l2)
                        q.append(l2)
        return flows, links

    def _set_rates(self, t: float, flows: list, rates: dict[int, float]) -> None:
        """At time ``t``, charge each flow of ``flows`` for what it moved at its old rate and give
        it its new rate from ``rates`` (a changed rate re-queues its end)."""
        ends = self.ends
        for f in flows:
            r = rates[f.id]
            if f.rate:
                f.left -= f.rate * (t - f.t)
                if f.left < 0.0:
                    f.left = 0.0
            f.t = t
            if r != f.rate:
                f.rate = r
                f.ver += 1
                heapq.heappush(ends, (t + f.left / r, f.ver, f.id))

    def _reshare(self, t: float, touched: list[int]) -> None:
        if self.exact_twin:
            flows = [self.active[fid] for fid in sorted(self.active)]
            links = sorted({ln for f in flows for ln in f.links})
            rates = maxmin_rates({f.id: f.links for f in flows}, self.cap)
        else:
            flows, links, rates = self._alone(touched)
            if links:
                more, links = self._component(links)
                flows.extend(more)
                rates.update(self._fill(more, links))
        self._set_rates(t, flows, rates)
        if self.changes is not None:
            self._record(t, sorted({ln for f in flows for ln in f.links}))

    def _record(self, t: float, links) -> None:
        users, active, cap, ch = self.users, self.active, self.cap, self.changes
        if ch is None:                  # (called only when recording)
            return
        for ln in links:
            u = sum(active[fid].rate for fid in users[ln]) / cap[ln]
            pts = ch.setdefault(ln, [])
            if pts and pts[-1][0] == t:             # several events at one time: the last counts
                pts.pop()
            if not pts or pts[-1][1] != u:
                pts.append((t, u))

    def _alone(self, touched: list[int]) -> tuple[list[_Flow], list[int], dict[int, float]]:
        """The flows on ``touched`` links that share none of their links (each a component of
        its own: its rate is its bottleneck), and the links of the others (to refill)."""
        users, active = self.users, self.active
        flows: list[_Flow] = []
        rates: dict[int, float] = {}
        rest: list[int] = []
        for ln in touched:
            u = users[ln]
            if len(u) != 1:
                if u:
                    rest.append(ln)
                continue
            for fid in u:
                if fid in rates:
                    break
                f = active[fid]
                for l2 in f.links:
                    if len(users[l2]) != 1:
                        rest.append(ln)
                        break
                else:
                    rates[fid] = f.alone_rate
                    flows.append(f)
        return flows, rest, rates

    def _fill(self, flows: list[_Flow], links: list[int]) -> dict[int, float]:
        """Progressive filling of one component with a heap of link fair shares."""
        cap, users = self.cap, self.users
        left = {ln: cap[ln] for ln in links}
        n = {ln: len(users[ln]) for ln in links}
        heap = [(left[ln] / n[ln], ln) for ln in links]
        heapq.heapify(heap)
        rates: dict[int, float] = {}
        active = self.active
        while heap:
            share, ln = heapq.heappop(heap)
            k = n[ln]
            if k == 0:
                continue
            cur = (left[ln] if left[ln] > 0.0 else 0.0) / k
            if cur != share:                            # grew since pushed: try again later
                heapq.heappush(heap, (cur, ln))
                continue
            for fid in users[ln]:
                if fid in rates:
                    continue
                rates[fid] = share
                for l2 in active[fid].links:
                    if l2 != ln:
                        left[l2] -= share
                        n[l2] -= 1
            n[ln] = 0
        return rates

    def close(self, t: float) -> None:
        """Account the busy time of links still in use at ``t`` (the end of the simulation)."""
        for ln, u in enumerate(self.users):
            if u:
                self.busy[ln] += t - self._since[ln]
                self._since[ln] = t


class _ClassFlow(_Flow):
    __slots__ = ("weights",)
    weights: tuple[float, ...]


class ClassFlowNetwork(FlowNetwork):
    """Flow *classes* on link *orbits* (:mod:`ccxml.simulator.symmetry`): a flow added here
    stands for |G| flows in lockstep, and crosses link (orbit representative) ``links[i]`` with
    weight ``weights[i]`` — how many of its members cross each link of that orbit. The max-min
    fair rate of the class (that of each member) is what progressive filling gives when a link
    fills at ``capacity = Σ weight × rate`` of its unfrozen classes: the share of a link is its
    remaining capacity over the sum of its unfrozen classes' weights, and freezing a class at
    share r takes ``weight × r`` from each of its other links.

    With every weight 1 this is :class:`FlowNetwork`'s allocation, computed the same way (the
    component refilled with a heap of shares); its exact twin is the per-step engine itself
    (tests/simulator/test_classes.py)."""

    def add(self, t: float, links: tuple[int, ...], size: float, token, bottleneck: float | None = None,
            weights: tuple[float, ...] = ()) -> int:
        fid = self.seq
        self.seq += 1
        f = _ClassFlow(fid, links, size, token, 0.0)
        f.weights = weights or (1.0,) * len(links)
        self.pending[fid] = f
        heapq.heappush(self.starts, (t, fid))
        return fid

    def _reshare(self, t: float, touched: list[int]) -> None:
        flows, links = self._component(touched)
        rates = self._fill_weighted(flows, links)
        self._set_rates(t, flows, rates)

    def _fill_weighted(self, flows: list, links: list[int]) -> dict[int, float]:
        cap, users, active = self.cap, self.users, self.active
        left = {ln: cap[ln] for ln in links}
        n = {ln: 0.0 for ln in links}
        for f in flows:
            for ln, w in zip(f.links, f.weights):
                n[ln] += w
        heap = [(left[ln] / n[ln], ln) for ln in links]
        heapq.heapify(heap)
        rates: dict[int, float] = {}
        while heap:
            share, ln = heapq.heappop(heap)
            k = n[ln]
            if k <= 0.0:
                continue
            cur = (left[ln] if left[ln] > 0.0 else 0.0) / k
            if cur != share:
                heapq.heappush(heap, (cur, ln))
                continue
            for fid in users[ln]:
                if fid in rates:
                    continue
                rates[fid] = share
                f = active[fid]
                for l2, w in zip(f.links, f.weights):     # type: ignore[attr-defined]  # a class flow
                    if l2 != ln:
                        left[l2] -= share if w == 1.0 else w * share
                        n[l2] -= w
            n[ln] = 0.0
        return rates


__all__ = ["ClassFlowNetwork", "FlowNetwork", "maxmin_rates"]
