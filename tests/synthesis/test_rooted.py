"""Forest Broadcast / Reduce (synthesis/rooted.py, algorithms/forest_rooted.py) and the runtime
fit counted before the layout (synthesis/fit.py).

* The bound from one root is min over ranks of max-flow(root, rank): scipy's fast path equals the
  networkx twin, and the hand-derived cuts hold on the presets.
* The packing's LP rate reaches that bound (the two computations check each other).
* Every file verifies on every target, in and out of place, from two roots; byte-reproducible.
* The fit's counts bound what the compiler emits; a profile with small limits is refused with one
  line naming the limit, and ``ccxml generate`` exits 2 with it.
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

pytest.importorskip("networkx")
pytest.importorskip("scipy")

from mpirun import ccxml_run  # noqa: E402
from tiny_network import small  # noqa: E402

from ccxml.algorithms import build  # noqa: E402
from ccxml.frontend.algorithm import AlgorithmError, Options  # noqa: E402
from ccxml.interpreter import verify  # noqa: E402
from ccxml.synthesis.fit import EVERY, demand, fit_trees, limits  # noqa: E402
from ccxml.synthesis.rooted import rooted_bound, synthesize_rooted  # noqa: E402
from ccxml.topology import load_preset  # noqa: E402
from ccxml.vocab.errors import TopologyError  # noqa: E402
from ccxml.vocab.wire import PROFILES, Coll  # noqa: E402

ROOTED = [Coll.BROADCAST, Coll.REDUCE]




@pytest.mark.parametrize("topo,root,coll,gbps", [
    (small(), 0, "broadcast", 10.0),             # rank 2 is behind the remote NIC port in
    (small(), 3, "reduce", 10.0),
    (load_preset("pcie", 1), 0, "broadcast", 22.0),       # the CPU-CPU link between the halves
    (load_preset("dgx-h100", 1), 5, "broadcast", 450.0),  # the root's NVLink ports
    (load_preset("dgx-h100", 1), 2, "reduce", 450.0),
    (load_preset("dgx-h100", 2), 0, "broadcast", 400.0),  # the root node's 8 NICs of 50 GB/s
], ids=["tiny-bcast", "tiny-reduce", "pcie-bcast", "h100x1-bcast", "h100x1-reduce", "h100x2-bcast"])
def test_bound_is_the_least_max_flow_from_the_root(topo, root, coll, gbps):
    net = topo.graph()
    fast = rooted_bound(net, coll, root)
    twin = rooted_bound(net, coll, root, use_networkx=True)
    assert fast.rate == twin.rate
    assert fast.rate == pytest.approx(gbps * 1e9)
    assert fast.busbw == fast.rate and fast.worst != root
    assert sum(bw for _, bw in fast.cut_links) == pytest.approx(fast.rate)


def test_bound_refuses_other_collectives_and_roots():
    net = small().graph()
    with pytest.raises(TopologyError, match="broadcast and reduce"):
        rooted_bound(net, "allgather", 0)
    with pytest.raises(TopologyError, match="out of range"):
        rooted_bound(net, "broadcast", 4)


@pytest.mark.parametrize("topo", [small(), load_preset("pcie", 1), load_preset("dgx-h100", 1)],
                         ids=["tiny-2x2", "pcie-x1", "dgx-h100-x1"])
@pytest.mark.parametrize("coll", ["broadcast", "reduce"])
def test_tree_rates_reach_the_bound(topo, coll):
    f = synthesize_rooted(topo.graph(), coll, 1)
    assert f.unrestricted == pytest.approx(f.bound.rate, rel=1e-6)
    assert f.rate >= 0.95 * f.bound.rate and f.k == len(f.trees)
    for t in f.trees:
        assert t.root == 1 and t.parent[1] == -1 and sum(q < 0 for q in t.parent) == 1
        assert len(t.edges_down()) == f.p - 1


@pytest.mark.parametrize("coll", ROOTED, ids=[c.value for c in ROOTED])
@pytest.mark.parametrize("target", ["exec", "rccl", "legacy"])
def test_every_file_verifies(coll, target):
    topo = small()
    for root in (0, 3):
        for inplace in (False, True):
            prog = build("forest", coll, 4, root=root, topology=topo, options=Options(inplace=inplace),
                         chunks=8)
            rep = verify(prog.to_xml(target), target=target, root=root)
            assert rep.ok, f"{coll.value} {target} root={root} inplace={inplace}: {rep.first_reason}"


@pytest.mark.slow
@pytest.mark.parametrize("coll", ROOTED, ids=[c.value for c in ROOTED])
def test_every_file_verifies_on_dgx_h100(coll):
    topo = load_preset("dgx-h100", 1)
    for target in ("exec", "rccl", "legacy"):
        prog = build("forest", coll, 8, root=6, topology=topo)
        rep = verify(prog.to_xml(target), target=target, root=6)
        assert rep.ok, f"{coll.value} {target}: {rep.first_reason}"


def test_byte_reproducible():
    topo = load_preset("pcie", 1)
    for coll in ROOTED:
        a = build("forest", coll, 8, root=2, topology=topo).to_xml("exec")
        b = build("forest", coll, 8, root=2, topology=topo).to_xml("exec")
        assert a == b


def test_runs_under_ccxml_run_check(tmp_path):
    topo = small()
    for coll in ROOTED:
        path = tmp_path / f"forest_{coll.value}.xml"
        path.write_text(build("forest", coll, 4, root=2, topology=topo, chunks=8).to_xml("exec"))
        res = ccxml_run(4, str(path), "--check", "--root", "2", "--bytes", "4K", "--iters", "1", "-w", "0")
        assert res.code == 0, res.err


def test_needs_a_network_topology():
    with pytest.raises(AlgorithmError, match="network topology"):
        build("forest", Coll.BROADCAST, 4, root=0)


@pytest.mark.parametrize("coll", ROOTED, ids=[c.value for c in ROOTED])
def test_fit_counts_bound_what_the_compiler_emits(coll):
    """The thread blocks, channels and XML nodes counted from the trees before the layout are at
    least what the compiled schedule has, on every rank."""
    topo = load_preset("dgx-h100", 1)
    for chunks in (16, 200):
        prog = build("forest", coll, 8, root=0, topology=topo, chunks=chunks)
        d = prog.forest.fit.demand
        algo = prog.compile("exec")
        for g in algo.gpus:
            nodes = 1 + algo.ngpus + len(g.tbs) + sum(len(tb.steps) for tb in g.tbs)
            assert len(g.tbs) <= d.tbs and nodes <= d.nodes
        assert algo.nchannels <= d.channels


def test_small_limits_are_refused_naming_the_limit():
    """dgx-h100 x 1: a root's trees reach all 7 peers, two lanes, one-way TBs: more than 8
    thread blocks at any k; a profile allowing 8 cannot serve it, and says which limit."""
    tight = dataclasses.replace(PROFILES["exec"], name="tiny", max_tbs=8)
    net = load_preset("dgx-h100", 1).graph()

    def fits(trees):
        return fit_trees(8, trees, 64, 2, ("down",), tight, shrink=True)

    with pytest.raises(TopologyError, match=r"cannot be served within tiny's limits.*max_tbs"):
        synthesize_rooted(net, "broadcast", 0, fits=fits)
    ok = synthesize_rooted(net, "broadcast", 0, fits=lambda trees: fit_trees(8, trees, 64, 2, ("down",), EVERY, shrink=True))
    assert ok.fit.ok and ok.fit.demand.tbs <= EVERY.max_tbs


def test_fit_shrinks_chunks_to_the_node_limit():
    """Steps grow with the chunks; the fit keeps the most chunks whose XML nodes fit."""
    net = load_preset("dgx-h100", 1).graph()
    f = synthesize_rooted(net, "broadcast", 0)
    few = dataclasses.replace(EVERY, max_nodes=200)
    fit = fit_trees(8, f.trees, 4096, 2, ("down",), few, shrink=True)
    assert fit.ok and fit.demand.nodes <= 200
    assert demand(8, f.trees, fit.chunks + 1, 2, ("down",), few).nodes > 200


def test_limits_names():
    assert limits("all") is EVERY and limits("rccl") is PROFILES["rccl"]
    assert EVERY.max_tbs == min(q.max_tbs for q in PROFILES.values())
    assert EVERY.step_types == PROFILES["rccl"].step_types      # rccl runs the fewest step types
    with pytest.raises(TopologyError, match="unknown runtime"):
        limits("nccl")


def test_generate_broadcast_prints_the_bound(tmp_path):
    out = tmp_path / "b.xml"
    res = subprocess.run([sys.executable, "-m", "ccxml", "generate", "forest", "--coll", "broadcast",
                          "--root", "2", "--preset", "pcie", "--nodes", "1", "-o", str(out), "--verify"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    text = res.stdout + res.stderr
    assert "max-flow from root 2" in text and "22.0 GB/s" in text and f"PASS {out}" in text


def test_generate_exits_2_when_limits_cannot_hold(tmp_path):
    res = subprocess.run([sys.executable, "-m", "ccxml", "generate", "forest", "--coll", "broadcast",
                          "--preset", "pcie", "--nodes", "1", "--opt", "limits=nccl", "-o",
                          str(tmp_path / "x.xml")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    assert "unknown runtime 'nccl'" in res.stderr and "Traceback" not in res.stderr


def test_allgather_fit_keeps_the_packing_where_it_fits():
    """AllGather / ReduceScatter / AllReduce are fitted too: within exec's limits the packing is
    the one found without limits, and its counted thread blocks bound the compiled ones."""
    from ccxml.synthesis.forest import synthesize
    topo = load_preset("pcie", 1)
    free = synthesize(topo.graph(), coll="allgather")
    prog = build("forest", Coll.ALLREDUCE, 8, topology=topo)
    fitted = prog.forest
    assert fitted.fit.ok and fitted.fit.profile.name == "exec"
    assert fitted.trees == free.trees and fitted.k == free.k
    algo = prog.compile("exec")
    assert max(len(g.tbs) for g in algo.gpus) <= fitted.fit.demand.tbs
    assert algo.nchannels <= fitted.fit.demand.channels


def test_generate_exits_2_naming_the_limit(tmp_path):
    """pcie x 1 AllReduce with 8 lanes: 4 peers x 2 directions x 32 channels (8 lanes, each for
    hops from the start and for forwarding hops, 2 phases) = 192 thread blocks on rank 0 at any k;
    --target rccl allows 64 and generate says so in one line, before laying out."""
    res = subprocess.run([sys.executable, "-m", "ccxml", "generate", "forest", "--coll", "allreduce",
                          "--preset", "pcie", "--nodes", "1", "--target", "rccl", "--opt", "lanes=8",
                          "-o", str(tmp_path / "x.xml")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be served within rccl's limits" in lines[0]
    assert "192 thread blocks" in lines[0] and "(max_tbs)" in lines[0] and not (tmp_path / "x.xml").exists()
    ok = subprocess.run([sys.executable, "-m", "ccxml", "generate", "forest", "--coll", "allreduce",
                         "--preset", "pcie", "--nodes", "1", "--target", "rccl", "-o", str(tmp_path / "y.xml"),
                         "--verify"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "within rccl's limits" in ok.stderr + ok.stdout


def test_automatic_lanes_drop_to_one_when_two_do_not_fit(monkeypatch):
    """pcie x 1 AllReduce: 2 lanes need 48 thread blocks on a rank; a runtime allowing 30 gets
    the same trees on 1 lane (24), and the file verifies; lanes given explicitly are kept."""
    monkeypatch.setitem(PROFILES, "tbs20", dataclasses.replace(PROFILES["exec"], name="tbs20", max_tbs=30))
    topo = load_preset("pcie", 1)
    prog = build("forest", Coll.ALLREDUCE, 8, topology=topo, limits="tbs20")
    d = prog.forest.fit.demand
    assert prog.forest.fit.ok and d.tbs <= 30 and d.channels == 4
    assert verify(prog.to_xml("exec"), target="exec").ok
    with pytest.raises(AlgorithmError, match=r"cannot be served within tbs20's limits.*48 thread blocks"):
        build("forest", Coll.ALLREDUCE, 8, topology=topo, limits="tbs20", lanes=2)


@pytest.mark.slow
def test_dgx_h100_x8_allgather_fits_rccl():
    """64 ranks, 21 peers: 72 thread blocks with 2 lanes > rccl's 64; on 1 lane it fits and verifies."""
    prog = build("forest", Coll.ALLGATHER, 64, topology=load_preset("dgx-h100", 8), limits="rccl")
    assert prog.forest.fit.ok and prog.forest.fit.demand.tbs <= 64
    assert verify(prog.to_xml("rccl"), target="rccl").ok
