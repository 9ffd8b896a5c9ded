"""Shared links: max-min fair sharing and the network model on generated schedules (the fast
path's agreement with its exact twin: tests/test_twins.py)."""
from __future__ import annotations

import pytest
from flow_runs import drive

from ccxml.driver import algorithm_schedule
from ccxml.simulator import simulate_schedule
from ccxml.simulator.flows import FlowNetwork, maxmin_rates
from ccxml.simulator.formulas import lookup
from ccxml.topology import Topology, load_preset

# ---- the allocation ----------------------------------------------------------------------------


def test_maxmin_textbook_example():
    # link 0 (10 B/s) carries f1, f2; link 1 (4 B/s) carries f2, f3: link 1 fills first (2 each),
    # then f1 takes what f2 leaves of link 0
    rates = maxmin_rates({1: (0,), 2: (0, 1), 3: (1,)}, [10.0, 4.0])
    assert rates == {1: 8.0, 2: 2.0, 3: 2.0}


def test_two_flows_share_a_link_then_the_survivor_speeds_up():
    for twin in (False, True):
        net = FlowNetwork([100.0], exact_twin=twin)
        net.add(0.0, (0,), 100.0, "a")
        net.add(0.0, (0,), 300.0, "b")
        # 50 B/s each: a ends at 2; b has 200 B left at 100 B/s: ends at 4
        assert drive(net) == {"a": 2.0, "b": 4.0}
        assert net.busy == [4.0]


def test_a_flow_is_limited_by_its_bottleneck_and_frees_its_share_elsewhere():
    net = FlowNetwork([10.0, 2.0])
    net.add(0.0, (0, 1), 4.0, "slow")      # 2 B/s (link 1): ends at 2
    net.add(0.0, (0,), 16.0, "fast")       # gets the 8 B/s left on link 0: ends at 2
    assert drive(net) == {"slow": 2.0, "fast": 2.0}


def test_link_changes_are_recorded_only_when_asked():
    net = FlowNetwork([100.0], record=True)
    net.add(0.0, (0,), 100.0, "a")
    net.add(1.0, (0,), 100.0, "b")
    drive(net)
    # a alone [0, 1) at full rate; both [1, ...) still full; b alone; then idle
    assert net.changes[0][0] == (0.0, 1.0) and net.changes[0][-1] == (2.0, 0.0)
    assert FlowNetwork([1.0]).changes is None


# ---- the network model on generated schedules -----------------------------------------------------

def test_a_ring_on_dedicated_links_costs_the_ring_formula():
    """mi300x has one xGMI link per pair of GPUs; a one-channel ring never puts two transfers on
    one link, so sharing changes nothing: the HCCL ring formula with α = the link's latency and
    β = 1 / its bandwidth, γ the GPU's."""
    topo = load_preset("mi300x")
    net = topo.graph()
    alpha, beta, gamma = net.route(0, 1).alpha, 1 / net.route(0, 1).bottleneck, net.gamma
    p, n = 8, float(8 * 4 * 32768)
    sched = algorithm_schedule("ring", "allreduce", p, target="legacy", max_bytes=int(n))
    t = simulate_schedule(sched, n, topo).time_s
    assert t == pytest.approx(lookup("ring", "allreduce", p).doc(p, n, alpha, beta, gamma), rel=1e-9)


def test_an_nvswitch_port_is_shared_by_the_transfers_through_it():
    """Mesh AllGather on one dgx-h100 node: every GPU sends its block to 7 peers at once through
    its one 450 GB/s NVLink port (the dedicated-link model would give each its own link), after
    copying it into its output at the GPU's memory bandwidth (3.35 TB/s, read and write)."""
    topo = load_preset("dgx-h100")
    route = topo.graph().route(0, 1)
    p, n = 8, float(8 << 20)
    sched = algorithm_schedule("mesh", "allgather", p, max_bytes=int(n))
    t = simulate_schedule(sched, n, topo).time_s
    assert t == pytest.approx(2 * (n / p) / 3.35e12 + route.alpha + 7 * (n / p) / 450e9, rel=1e-9)
    flat = Topology.flat(route.alpha, 1 / 450e9, 0.0)
    assert simulate_schedule(sched, n, flat).time_s == pytest.approx(route.alpha + (n / p) / 450e9, rel=1e-9)


def test_flat_mesh_allreduce_across_nodes_pays_for_each_gpus_one_nic():
    """4 dgx-h100 nodes: in Mesh AllReduce every GPU sends 24 of its 32 blocks off-node in the
    reduce-scatter and 24 again in the all-gather, all through its one 50 GB/s NIC."""
    topo = load_preset("dgx-h100", 4)
    p, n = 32, float(64 << 20)
    sched = algorithm_schedule("mesh", "allreduce", p, topology=topo, max_bytes=int(n))
    r = simulate_schedule(sched, n, topo)
    off_node = 2 * 24 * n / p
    assert r.time_s >= off_node / 50e9
    busiest = r.busiest_link
    assert busiest.kind == "net" and busiest.utilization(r.time_s) > 0.5


def test_record_gives_spans_critical_path_and_link_utilisation():
    topo = load_preset("dgx-h100", 2)
    sched = algorithm_schedule("ring", "allgather", 16, max_bytes=1 << 20)
    plain = simulate_schedule(sched, 1 << 20, topo)
    assert plain.timeline is None
    r = simulate_schedule(sched, 1 << 20, topo, record=True)
    tl = r.timeline
    assert r.time_s == plain.time_s
    assert len(tl.spans) == r.steps and max(s.end for s in tl.spans) == r.time_s
    spans = {(s.gpu, s.tb, s.step): s for s in tl.spans}
    assert [spans[c].end for c in tl.critical] == [s.end for s in r.critical_path]
    nic = tl.links["n0.nic7->rail7"]
    assert nic[-1][1] == 0.0 and all(0.0 <= u <= 1.0 + 1e-12 for _, u in nic)
    assert [t for t, _ in nic] == sorted(t for t, _ in nic)
    # dedicated links record busy/idle
    flat = simulate_schedule(sched, 1 << 20, Topology.flat(1e-6, 1e-11, 0.0), record=True)
    assert set(u for pts in flat.timeline.links.values() for _, u in pts) <= {0.0, 1.0}
