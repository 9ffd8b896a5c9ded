"""The class engine: the per-step engine run on one representative rank per orbit of the
schedule's verified symmetry group G (:mod:`ccxml.simulator.symmetry`), each transfer a flow
class of multiplicity |G| (:class:`ccxml.simulator.flows.ClassFlowNetwork`).

Its cost grows with the steps of the representatives (|G| times fewer than the schedule's) and
the distinct flows in flight, not with the schedule's steps. It answers the same
:class:`~ccxml.simulator.results.SimResult` as the per-step engine — its exact twin, which stays
the reference (``simulate_schedule(..., classes=False)``; tests/simulator/test_classes.py) —
with the per-rank and per-link figures of every rank and link expanded from the
representatives' (a rank's figures are those of its representative; a link's, of its orbit's).

How the representatives see the other ranks: a receive of representative r from rank q on
channel c reads connection (q, r, c). With q = g(ρ) (ρ the representative of q's orbit), that
connection is the image under g of (ρ, g⁻¹(r), c), a connection a representative sends on: the
k-th message arrives on both at the same time. So the class engine names every connection by
the one a representative sends on, and nothing else changes: dependencies stay on one GPU, and a
transfer of a representative, put on the network as a class, moves at the rate of each of its
images.
"""
from __future__ import annotations

from ccxml.simulator.engine import _DATA, _Engine
from ccxml.simulator.flows import ClassFlowNetwork
from ccxml.simulator.results import LinkStats, NetLinkStats, PathStep, RankStats, SimResult, _union
from ccxml.simulator.symmetry import Symmetry, find_symmetry


class _ClassRoute:
    """A route of a representative with its links as orbit representatives and weights."""
    __slots__ = ("resources", "weights", "setup", "setup_weights", "latency", "overhead",
                 "bottleneck", "setup_size")

    def __init__(self, route, sym: Symmetry, cap):
        G = sym.order

        def classes(links):
            acc: dict[int, int] = {}
            for x in links:
                rep, size = sym.link_orbit[x]
                acc[rep] = acc.get(rep, 0) + G // size
            reps = tuple(sorted(acc))
            return reps, tuple(float(acc[x]) for x in reps)
        self.resources, self.weights = classes(route.resources)
        self.setup, self.setup_weights = classes(route.setup)
        self.latency, self.overhead, self.bottleneck = route.latency, route.overhead, route.bottleneck
        self.setup_size = route.overhead * min(cap[x] for x in route.setup) if route.setup else 0.0


class _ClassEngine(_Engine):
    def __init__(self, schedule, nbytes, topology, sym: Symmetry):
        self.sym = sym
        super().__init__(schedule, nbytes, topology, only=set(sym.reps()))
        self.flows = ClassFlowNetwork(self.network.link_cap)
        net = self.network
        for tb in self.tbs.values():
            if tb.recv >= 0:
                rho, g = sym.split(tb.recv)
                dst = sym.apply(sym.inverse(g), tb.gpu)
                tb.rkey = (rho, dst, sym.image_channel(tb.recv, tb.gpu, tb.chan, rho, dst))
            if tb.send >= 0:
                tb.route = _ClassRoute(net.route(tb.gpu, tb.send), sym, net.link_cap)

    def _request(self, tb, t: float) -> float:
        op = tb.ops[tb.pc]
        route = tb.route
        nb = op.cnt * self.cb
        op.xfer_start = t
        key = tb.skey
        lst = self.arrivals.setdefault(key, [])
        slot = len(lst)
        lst.append(None)
        token = (tb, op, key, slot)
        if route.setup:
            self.flows.add(t, route.setup, route.setup_size, (token, route), None, route.setup_weights)
            return t
        start = t + route.latency + route.overhead
        self.flows.add(start, route.resources, nb, token, route.bottleneck, route.weights)
        return start

    def _data(self, token, route, t: float) -> float:
        start = t + route.latency
        self.flows.add(start, route.resources, token[1].cnt * self.cb, token, route.bottleneck,
                       route.weights)
        return start

    # -- results: the representatives' figures, expanded to every rank and link --------------
    def result(self) -> SimResult:
        sym, G, p = self.sym, self.sym.order, self.p
        ops = [op for _, tb in sorted(self.tbs.items()) for op in tb.ops]
        makespan = max((op.end for op in ops), default=0.0)
        path = self._path(ops, makespan)
        reps = sym.reps()
        iv: dict[int, list] = {r: [] for r in reps}
        send_s = dict.fromkeys(reps, 0.0)
        recv_s = dict.fromkeys(reps, 0.0)
        red_s = dict.fromkeys(reps, 0.0)
        pairs: dict[tuple[int, int], list] = {}
        pair_iv: dict[tuple[int, int], list] = {}
        for src, dst, s, e, nb in self.xfers:
            acc = pairs.setdefault((src, dst), [0, 0.0, 0.0])
            acc[0] += 1
            acc[1] += nb
            send_s[src] += e - s
            iv[src].append((s, e))
            rd = sym.split(dst)[0]          # the representative receives an image of it
            recv_s[rd] += e - s
            iv[rd].append((s, e))
            pair_iv.setdefault((src, dst), []).append((s, e))
        for key, ivs in pair_iv.items():
            pairs[key][2] = _union(ivs)
        for g, s, e in self.reductions:
            red_s[g] += e - s
            iv[g].append((s, e))
        finish = dict.fromkeys(reps, 0.0)
        for op in ops:
            finish[op.gpu] = max(finish[op.gpu], op.end)
        busy = {r: _union(iv[r]) for r in reps}
        ranks = []
        for r in range(p):
            rho = sym.split(r)[0]
            ranks.append(RankStats(r, finish[rho], busy[rho], send_s[rho], recv_s[rho], red_s[rho]))
        expanded = {}
        for g in sym.elements():
            for (a, b), v in pairs.items():
                expanded[(sym.apply(g, a), sym.apply(g, b))] = v
        link_stats = [LinkStats(a, b, self.level(a, b), v[0], v[1], v[2])
                      for (a, b), v in sorted(expanded.items())]
        net_links = self._class_net_links(link_stats, makespan)
        warnings = []
        leftover = G * (sum(1 for v in self.arrivals.values() for x in v if x is not None)
                        - sum(self.recv_taken.values()))
        if leftover > 0:
            warnings.append(f"{leftover} transfer(s) are never received")
        return SimResult(self.coll, p, self.nbytes, self.cb, makespan, G * len(ops), G * len(self.xfers),
                         path, ranks, link_stats, warnings, "shared", net_links, None)

    def _path(self, ops, makespan) -> list[PathStep]:
        """The per-step engine's critical path, followed through the representatives: the step
        of rank g(r) is the image of r's, and a step released by data was released by the
        sending step of the rank it received from."""
        if not ops:
            return []
        sym = self.sym
        enders = [o for o in ops if o.end == makespan]
        waited = {id(o.pred) for o in enders if o.pred is not None}
        op = next((o for o in enders if id(o) not in waited), enders[0])
        h = (0, 0)
        seen = set()
        path: list[PathStep] = []
        while op is not None and (id(op), h) not in seen:
            seen.add((id(op), h))
            tb = self.tbs[(op.gpu, op.tb)]
            peer = tb.send if op.sends else tb.recv if op.receives else None
            path.append(PathStep(sym.apply(h, op.gpu), sym.tb_image(h, op.gpu, op.tb), op.index, op.type,
                                 None if peer is None else sym.apply(h, peer), op.start, op.end,
                                 op.why))
            if op.why == _DATA and op.pred is not None:
                h = sym.split(sym.apply(h, tb.recv))[1]
            op = op.pred
        path.reverse()
        return path

    def _class_net_links(self, pairs: list[LinkStats], makespan: float) -> list[NetLinkStats]:
        net, fl, orbit = self.network, self.flows, self.sym.link_orbit
        fl.close(makespan)
        count: dict[int, int] = {}
        nbytes: dict[int, float] = {}
        for ln in pairs:
            for x in net.route(ln.src, ln.dst).resources:
                count[x] = count.get(x, 0) + ln.transfers
                nbytes[x] = nbytes.get(x, 0.0) + ln.bytes
        return [NetLinkStats(net.link_name(x), net.link_kind[x], net.link_cap[x], count[x], nbytes[x],
                             fl.busy[orbit[x][0]]) for x in sorted(count)]


def simulate_classes(schedule, nbytes: float, topology) -> SimResult | None:
    """The class engine's result, or None when the schedule has no verified symmetry here (the
    per-step engine then runs). Raises SimulationError as the per-step engine would."""
    p = schedule.ngpus or len(schedule.gpus)
    if nbytes < 0 or schedule.nchunksperloop <= 0:
        return None
    sym = find_symmetry(schedule, topology, p)
    if sym is None or sym.order < 2:
        return None
    eng = _ClassEngine(schedule, nbytes, topology, sym)
    eng.run()
    return eng.result()


__all__ = ["simulate_classes"]
