"""The class engine (:mod:`ccxml.simulator.classes`) against its exact twin, the per-step engine.

The class engine simulates one rank per orbit of the schedule's verified symmetry group and
puts each transfer on the network as a flow class; its answer must be the per-step engine's:
the same step and transfer counts, warnings, ranks, pairs and links (integers exactly), and
every time — makespan, per-rank and per-link seconds, bytes — equal to 1e-12 relative. Most
cases give the very same floats (the dgx-h100 cases below are checked bit for bit); the
tolerance is for the order of floating-point sums, which the symmetry changes and real
arithmetic does not see: a representative's receive time is summed over its own sends' images,
in their order rather than in the order of the receives, and progressive filling may freeze two
links of equal share in another order (seen on ascend-910b x 4 mesh: 1 ulp). Where times tie
exactly in real arithmetic, an ulp may also pick another, equally long, critical path: its end
is compared, not its steps, except where the floats are identical.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from ccxml.simulator import simulate_schedule
from ccxml.simulator.flows import ClassFlowNetwork, FlowNetwork
from ccxml.simulator.symmetry import find_symmetry

PRESETS = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "ccxml" / "topology"
                                  / "presets").glob("*.toml"))


def _topo(preset, nodes):
    from ccxml.driver import TopologyOptions, resolve_topology
    return resolve_topology(TopologyOptions(preset=preset, nodes=nodes))[0]


def _build(name, coll, topo, nbytes):
    from ccxml.driver import algorithm_schedule
    return algorithm_schedule(name, coll, topo.nranks, topology=topo, max_bytes=nbytes)


def _close(x, y):
    return x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))


def _same(a, b, bitwise=False):
    assert (a.steps, a.transfers, a.warnings, a.model) == (b.steps, b.transfers, b.warnings, b.model)
    if bitwise:
        assert a.time_s == b.time_s
        assert (a.ranks, a.links, a.net_links) == (b.ranks, b.links, b.net_links)
        assert a.critical_path == b.critical_path
        return
    assert _close(a.time_s, b.time_s)
    for ra, rb in zip(a.ranks, b.ranks, strict=True):
        assert ra.rank == rb.rank
        for f in ("finish_s", "busy_s", "send_s", "recv_s", "reduce_s"):
            assert _close(getattr(ra, f), getattr(rb, f)), (ra, rb)
    for la, lb in zip(a.links, b.links, strict=True):
        assert (la.src, la.dst, la.level, la.transfers) == (lb.src, lb.dst, lb.level, lb.transfers)
        assert _close(la.bytes, lb.bytes) and _close(la.busy_s, lb.busy_s)
    for la, lb in zip(a.net_links, b.net_links, strict=True):
        assert (la.name, la.kind, la.capacity, la.transfers) == (lb.name, lb.kind, lb.capacity, lb.transfers)
        assert _close(la.bytes, lb.bytes) and _close(la.busy_s, lb.busy_s)
    assert a.critical_path and _close(a.critical_path[-1].end, b.critical_path[-1].end)


def _twin(name, coll, preset, nodes, nbytes, bitwise=False):
    """(symmetry order or None, both results agree); None if the algorithm cannot build here."""
    topo = _topo(preset, nodes)
    try:
        sched = _build(name, coll, topo, nbytes)
    except ValueError:
        return None
    sym = find_symmetry(sched, topo, topo.nranks)
    fast = simulate_schedule(sched, nbytes, topo)
    ref = simulate_schedule(sched, nbytes, topo, classes=False)
    _same(fast, ref, bitwise)
    return sym


@pytest.mark.parametrize("name,coll,nodes,order", [
    ("ring", "allreduce", 4, 4),         # the node shift: 8 representatives
    ("pipeline", "allreduce", 4, 4),
    ("mesh", "allreduce", 2, 2),
    ("2d-torus", "allreduce", 2, 8),     # the local shift
])
@pytest.mark.parametrize("nbytes", [1 << 16, 1 << 30])
def test_class_engine_agrees_exactly_with_the_per_step_engine(name, coll, nodes, order, nbytes):
    sym = _twin(name, coll, "dgx-h100", nodes, nbytes, bitwise=True)
    assert sym is not None and sym.order >= order       # the class engine did run


def test_a_broken_symmetry_falls_back_to_the_per_step_engine():
    topo = _topo("dgx-h100", 4)
    sched = _build("ring", "allreduce", topo, 1 << 20)
    assert find_symmetry(sched, topo, 32) is not None
    tb = sched.gpus[5].tbs[0]
    steps = tb.steps
    steps[0].cnt += 1                    # one step of one rank moves more
    tb.steps = steps
    assert find_symmetry(sched, topo, 32) is None
    _same(simulate_schedule(sched, 1 << 20, topo), simulate_schedule(sched, 1 << 20, topo, classes=False))


def test_class_flows_of_weight_one_share_as_flows_do():
    rng = random.Random(7)
    cap = [rng.choice([1e9, 2e9, 5e9]) for _ in range(12)]
    plain, classes = FlowNetwork(cap), ClassFlowNetwork(cap)
    for i in range(40):
        links = tuple(sorted(rng.sample(range(12), rng.randint(1, 4))))
        t, size = rng.random() * 1e-3, rng.random() * 1e7
        plain.add(t, links, size, i)
        classes.add(t, links, size, i)
    got = {"plain": [], "classes": []}
    for net, out in ((plain, got["plain"]), (classes, got["classes"])):
        while (t := net.next_time()) != float("inf"):
            out.extend((t, tok) for tok in net.advance(t))
    assert got["plain"] == got["classes"] and len(got["plain"]) == 40


def test_a_class_of_weight_two_moves_at_half_the_link():
    net = ClassFlowNetwork([1e9, 1e9])
    net.add(0.0, (0, 1), 1e9, "a", None, (2.0, 1.0))
    t = net.next_time()
    net.advance(t)
    assert net.next_time() == 2.0        # 1 GB at 0.5 GB/s: two members share link 0


COLLS = ["allreduce", "allgather", "reducescatter", "alltoall"]


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_every_algorithm_up_to_64_ranks(preset):
    from ccxml.algorithms import registry
    one = _topo(preset, 1)
    if not one.is_network:
        pytest.skip(f"{preset}: dedicated links, which the class engine leaves to the per-step one")
    gpus = one.nranks
    ran = 0
    for nodes in sorted({n for n in (1, 2, 4, 8) if n * gpus <= 64}):
        for coll in COLLS:
            for name in registry.entries(coll):
                for nbytes in (1 << 16, 1 << 30):
                    sym = _twin(name, coll, preset, nodes, nbytes)
                    ran += sym is not None
    assert ran > 0                      # the class engine ran on some of them
