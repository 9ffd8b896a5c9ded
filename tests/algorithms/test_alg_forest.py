"""Forest (algorithms/forest.py, ccxml/synthesis/forest.py): trees packed at the max-flow bound.

* The LP of tree rates reaches the exact bound (the two computations check each other) on small
  networks and on dgx-h100 x 2.
* Every file verifies on every target at small sizes, is byte-reproducible, and runs under
  ``ccxml run --check``.
* A builder without a network topology is one clear error.
"""
from __future__ import annotations

import pytest

pytest.importorskip("networkx")
pytest.importorskip("scipy")

from mpirun import ccxml_run  # noqa: E402
from tiny_network import small  # noqa: E402

from ccxml.algorithms import build  # noqa: E402
from ccxml.frontend.algorithm import AlgorithmError, Options  # noqa: E402
from ccxml.interpreter import verify  # noqa: E402
from ccxml.synthesis.forest import synthesize  # noqa: E402
from ccxml.topology import load_preset  # noqa: E402
from ccxml.vocab.wire import Coll  # noqa: E402

COLLS = [Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.ALLREDUCE]




@pytest.mark.parametrize("topo", [small(), load_preset("pcie", 1), load_preset("dgx-h100", 2)],
                         ids=["tiny-2x2", "pcie-x1", "dgx-h100-x2"])
def test_tree_rates_reach_the_exact_bound(topo):
    for coll in ("allgather", "reducescatter"):
        f = synthesize(topo.graph(), coll=coll)
        assert f.unrestricted == pytest.approx(f.bound.rate, rel=1e-6)
        assert f.rate >= 0.98 * f.bound.rate
        for t in f.trees:           # spanning trees of their root
            assert t.parent[t.root] == -1 and sum(q < 0 for q in t.parent) == 1
            assert len(t.edges_down()) == f.p - 1


@pytest.mark.parametrize("coll", COLLS, ids=[c.value for c in COLLS])
@pytest.mark.parametrize("target", ["exec", "rccl", "legacy"])
def test_every_file_verifies(coll, target):
    check_verifies(coll, target, [small()])


@pytest.mark.slow
@pytest.mark.parametrize("coll", COLLS, ids=[c.value for c in COLLS])
@pytest.mark.parametrize("target", ["exec", "rccl", "legacy"])
def test_every_file_verifies_on_pcie(coll, target):
    check_verifies(coll, target, [load_preset("pcie", 1)])


def check_verifies(coll, target, topos):
    for topo in topos:
        p = topo.nranks
        for inplace in (False, True):
            prog = build("forest", coll, p, topology=topo, options=Options(inplace=inplace))
            rep = verify(prog.to_xml(target), target=target)
            assert rep.ok, f"{coll.value} {target} p={p} inplace={inplace}: {rep.first_reason}"


def test_byte_reproducible():
    topo = load_preset("dgx-h100", 2)
    for coll in COLLS:
        a = build("forest", coll, 16, topology=topo).to_xml("exec")
        b = build("forest", coll, 16, topology=topo).to_xml("exec")
        assert a == b


def test_needs_a_network_topology():
    with pytest.raises(AlgorithmError, match="forest needs a network topology"):
        build("forest", Coll.ALLGATHER, 4)


def test_runs_under_ccxml_run_check(tmp_path):
    topo = small()
    for coll in COLLS:
        path = tmp_path / f"forest_{coll.value}.xml"
        path.write_text(build("forest", coll, 4, topology=topo).to_xml("exec"))
        res = ccxml_run(4, str(path), "--check", "--bytes", "4K", "--iters", "1", "-w", "0")
        assert res.code == 0, res.err


def test_missing_networkx_is_one_clear_line(monkeypatch, tmp_path):
    import sys

    from in_process import ccxml
    monkeypatch.setitem(sys.modules, "networkx", None)
    code, out, err = ccxml("generate", "forest", "--coll", "allgather", "--preset", "dgx-h100", "-q",
                           "-o", str(tmp_path / "f.xml"))
    assert code == 2 and err.count("\n") == 1 and "pip install 'ccxml[synth]'" in err, (code, err)


def test_generate_summary_says_bound_cut_share_k_and_time(tmp_path):
    from in_process import ccxml
    code, out, err = ccxml("generate", "forest", "--coll", "reducescatter", "--preset", "dgx-h100", "-q",
                           "-o", str(tmp_path / "f.xml"))
    assert code == 0, err
    assert "exact bound (max-flow) busbw 450.0 GB/s" in out and "binding cut: rank 0" in out
    assert "route rule" in out and "of the bound; k = 1 trees per rank" in out and "synthesis" in out
    # what the written file takes of the runtime's limits, counted on the file itself
    import re

    from ccxml.loader.reader import loads
    sched = loads((tmp_path / "f.xml").read_text())
    m = re.search(r"within exec's limits: (\d+) peers, (\d+) thread blocks, (\d+) channels, (\d+) XML "
                  r"nodes per rank at most \((\d+) chunks per rank block\)", out)
    assert m, out
    peers, tbs, chans, nodes, chunks = map(int, m.groups())
    assert tbs == max(len(g.tbs) for g in sched.gpus) and peers == 7 and chans == sched.nchannels
    assert nodes == max(1 + sched.ngpus + len(g.tbs) + sum(len(t.steps) for t in g.tbs) for g in sched.gpus)
    assert chunks * sched.ngpus == sched.nchunksperloop


# the 95% figure of issue 23: simulated busbw at 1 GiB >= 95% of the exact bound
FIGURES = [("dgx-h100", 1, c) for c in ("allgather", "reducescatter", "allreduce")] + [
    ("dgx-h100", 2, "reducescatter"),          # 94.0% with one chunk a step going up, 98.6% now
    ("pcie", 1, "allgather"), ("pcie", 1, "allreduce")]


@pytest.mark.parametrize("preset, nodes, coll", FIGURES, ids=[f"{p}x{n}-{c}" for p, n, c in FIGURES])
def test_busbw_at_least_95_percent_of_the_exact_bound(preset, nodes, coll):
    check_share(preset, nodes, coll, 0.95)


def check_share(preset, nodes, coll, share):
    from ccxml.driver import algorithm_schedule
    from ccxml.simulator import simulate_schedule
    from ccxml.topology.flow import exact_bound
    topo = load_preset(preset, nodes)
    sched = algorithm_schedule("forest", coll, topo.nranks, topology=topo)
    res = simulate_schedule(sched, 1 << 30, topo)
    bound = exact_bound(topo.graph(), coll)
    assert res.busbw >= share * bound.busbw, f"{res.busbw / bound.busbw:.1%} of {bound.busbw / 1e9:.1f} GB/s"


def test_generate_ring_imports_neither_networkx_nor_scipy(tmp_path):
    import subprocess
    import sys
    code = ("import sys\nfrom ccxml.cli.app import main\n"
            "try:\n    main(['generate', 'ring', '--ranks', '8', '-q', '-o', sys.argv[1]])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('networkx', 'scipy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.xml")], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip().endswith("[]"), out.stdout + out.stderr


# every topology of issue 23 (simulated busbw at 1 GiB >= 95% of the exact bound); measured below
# the target off one node and on pcie (docs/forest.md, section 4): those cases xfail with the figure
SHARED = __import__("pathlib").Path(__file__).resolve().parents[3] / "shared" / "topologies"
ALL = [("dgx-h100", n) for n in (1, 2, 4, 8)] + [("dgx-a100", 2), ("dgx-a100", 4), ("mi300x", 1), ("mi300x", 2),
                                                 ("pcie", 1), ("ndv4-topo.xml:a100", 2), ("ndv5-topo.xml:h100", 2)]


@pytest.mark.slow
@pytest.mark.parametrize("name, nodes", ALL, ids=[f"{a}x{n}" for a, n in ALL])
@pytest.mark.parametrize("coll", ["allgather", "reducescatter", "allreduce"])
def test_every_listed_topology_at_95_percent(name, nodes, coll):
    from ccxml.driver import algorithm_schedule
    from ccxml.simulator import simulate_schedule
    from ccxml.topology import load_topology
    from ccxml.topology.flow import exact_bound
    if name.endswith(".xml:a100") or name.endswith(".xml:h100"):
        path, gpu = name.split(":")
        if not (SHARED / path).exists():
            pytest.skip(f"{SHARED / path} is not here")
        topo = load_topology(SHARED / path, gpu=gpu, nodes=nodes)
    else:
        topo = load_preset(name, nodes)
    res = simulate_schedule(algorithm_schedule("forest", coll, topo.nranks, topology=topo), 1 << 30, topo)
    bound = exact_bound(topo.graph(), coll)
    if (nodes > 1 or name == "pcie") and res.busbw < 0.95 * bound.busbw:
        pytest.xfail(f"measured {res.busbw / bound.busbw:.1%} of {bound.busbw / 1e9:.1f} GB/s (docs/forest.md §4)")
    assert res.busbw >= 0.95 * bound.busbw, f"{res.busbw / bound.busbw:.1%} of {bound.busbw / 1e9:.1f} GB/s"


def test_groups_cover_every_chunk_with_lanes_out_of_phase():
    from ccxml.algorithms.forest import groups
    for count in (1, 2, 5, 16, 33):
        for size in (1, 2, 4):
            for lanes in (1, 2, 3):
                g = groups(count, size, lanes)
                assert sum(n for _, n, _ in g) == count and g[0][0] == 0
                assert all(a + n == b for (a, n, _), (b, _, _) in zip(g, g[1:]))      # contiguous
                assert [lane for *_, lane in g] == [j % lanes for j in range(len(g))]  # lanes in turn
    # lane 1 starts with half a step: its steps end half a step after lane 0's; the second half
    # of the chunks drains one per step
    g = groups(32, 4, 2)
    assert g[:5] == [(0, 4, 0), (4, 2, 1), (6, 4, 0), (10, 4, 1), (14, 4, 0)]
    assert all(n == 1 for i, n, _ in g if i >= 16) and all(n > 1 for i, n, _ in g if i < 16)
    assert groups(5, 1, 2) == [(0, 1, 0), (1, 1, 1), (2, 1, 0), (3, 1, 1), (4, 1, 0)]


def test_two_level_column_is_the_rail_tree():
    """On a rail-optimised cluster the packing keeps the depth-2 hierarchical tree: root to its
    node and to its rail partner in every other node, which passes the block on in its node."""
    f = synthesize(load_preset("dgx-h100", 4).graph(), coll="allgather")
    assert f.k == 1 and f.rate >= 0.99 * f.bound.rate
    t = f.of_root(0)[0]
    assert t.depth() == 2
    assert [t.parent[v] for v in (8, 16, 24)] == [0, 0, 0]
    assert all(t.parent[v] == 8 * (v // 8) for v in range(8, 32) if v % 8)


@pytest.mark.parametrize("coll", ["allgather", "reducescatter"])
def test_plan_issues_every_hop_after_the_hops_that_bring_its_data(coll):
    """Steps of 4 chunks between nodes, 1 inside: a hop's key is above the keys of the hops that
    brought each of its chunks (down) or every contribution to them (up)."""
    from ccxml.algorithms.forest import _step, plan
    topo = load_preset("dgx-h100", 2)
    f = synthesize(topo.graph(), coll="allgather")
    down, up = plan(f, 16, 2, _step(topo, 4))
    assert any(h[6] == 4 for h in down) and any(h[6] == 4 for h in up)
    if coll == "allgather":
        got = {}                                # (root, rank, chunk) -> key of the hop bringing it
        for h in down:
            key, r, idx, size, u, v = h[:2], h[2], h[5], h[6], h[7], h[8]
            for j in range(idx, idx + size):
                if r != u:
                    assert got[(r, u, j)] < key
                got[(r, v, j)] = key
    else:
        into = {}                               # (rank, chunk) -> keys of the hops into it
        for h in up:
            key, idx, size, u, v = h[:2], h[5], h[6], h[7], h[8]
            for j in range(idx, idx + size):
                assert all(k < key for k in into.get((v, j), ()))
                into.setdefault((u, j), []).append(key)


def test_going_up_hops_with_a_nic_ahead_go_first_whatever_the_step_size():
    """ReduceScatter's priority follows the node boundary, not the chunks per step: the hops
    keyed a pipeline early (a NIC still ahead of their sums) are the same with ``--opt group=1``
    as with 2, and there are some; with no topology (nothing remote) there are none."""
    from ccxml.algorithms.forest import Steps, _step, plan
    topo = load_preset("dgx-h100", 2)
    f = synthesize(topo.graph(), coll="reducescatter")
    assert _step(topo, 1).remote(0, 8) and not _step(topo, 1).remote(0, 7) and _step(topo, 2)(0, 8) == 2

    def early(step):            # (root, parent, child) of the up hops keyed before time 0
        return {(h[2], h[7], h[8]) for h in plan(f, 16, 2, step)[1] if h[0] < 0}
    assert early(_step(topo, 1)) == early(_step(topo, 2)) != set()
    assert early(Steps()) == set()


def test_partial_sums_inside_a_node_go_two_chunks_a_step_out_of_phase():
    """Going up inside a node, partial sums with a NIC ahead move ``near`` chunks a step
    (default 2), lane 1 starting with one so that the lanes' step latencies fall half a step
    apart, and no single-chunk draining (it would put the lanes back in phase); sums for a root
    in the node keep one chunk a step; between nodes the NIC's steps still drain. Going down
    nothing changes (AllGather's files are the same)."""
    from ccxml.algorithms.forest import _step, groups, plan
    g = groups(32, 2, 2, drain=False)
    assert [n for _, n, _ in g] == [2, 1] + [2] * 14 + [1]
    # chunks a lane has moved after each of its steps: even on lane 0, odd on lane 1 (each lane's
    # thread block moves its chunks at the same rate: their steps end half a step apart)
    # (but the last step, which takes what is left)
    done = {lane: list(__import__("itertools").accumulate(n for _, n, ln in g[:-1] if ln == lane))
            for lane in (0, 1)}
    assert all(c % 2 == 0 for c in done[0]) and all(c % 2 == 1 for c in done[1]) and len(done[1]) == 8
    topo = load_preset("dgx-h100", 2)
    f = synthesize(topo.graph(), coll="reducescatter")
    step = _step(topo, 2)
    assert (step.near, _step(topo, 2, near=1).near) == (2, 1)
    down, up = plan(f, 32, 2, step)
    inside = [h for h in up if not step.remote(h[7], h[8])]
    near = [h[6] for h in inside if h[7] // 8 != h[2] // 8]        # the root in the other node
    assert near.count(2) > 0.85 * len(near) and max(near) == 2
    assert all(h[6] == 1 for h in inside if h[7] // 8 == h[2] // 8)  # the root in this node
    one = _step(topo, 2, near=1)
    down1, up1 = plan(f, 32, 2, one)
    assert down1 == down                                          # AllGather: unchanged
    assert all(h[6] == 1 for h in up1 if not one.remote(h[7], h[8]))

    def nic(hops):              # (root, chunk, chunks, u, v) of the steps between nodes: unchanged
        return sorted((h[2], h[5], h[6], h[7], h[8]) for h in hops if step.remote(h[7], h[8]))
    assert nic(up) == nic(up1) and {h[2] for h in nic(up)} == {1, 2}    # 2-chunk steps, draining


def test_near_must_be_a_non_negative_integer():
    topo = load_preset("dgx-h100", 2)
    with pytest.raises(AlgorithmError, match="near must be an integer"):
        build("forest", Coll.REDUCESCATTER, 16, topology=topo, near=-1)


def test_rail_tree_for_every_root_on_eight_nodes():
    """dgx-h100 x 8: among the depth-2 trees at the bound the packing keeps, for every root, the
    rail tree (its node at once by NVLink), not one reaching its node through a local relay."""
    from ccxml.synthesis.forest import _Problem, two_level
    net = load_preset("dgx-h100", 8).graph()
    f = synthesize(net, coll="allgather")
    assert f.k == 1 and f.rate >= 0.99 * f.bound.rate
    prob = _Problem(net, False)
    assert all(t.parent == two_level(prob, t.root) for t in f.trees)


def test_steps_inside_a_node_last_enough_latencies():
    """The automatic chunks per step inside a node: the fewest whose step at 1 GiB lasts
    STEP_LATENCIES route latencies at a rank's share of its NVLink while it forwards to all 7
    peers on 2 lanes (450/14 GB/s, 3.4 µs). One chunk of 512 KiB (dgx-h100 x 8, 32 chunks) lasts
    16 µs, too short: 2; 1 MiB (x 4) is enough: 1."""
    from ccxml.algorithms.forest import STEP_LATENCIES, inner_group

    def lasts(topo, C, g):          # the step's length in latencies
        return g * (1 << 30) / (topo.nranks * C) / (450e9 / 14) / 3.4e-6
    x8, x4 = load_preset("dgx-h100", 8), load_preset("dgx-h100", 4)
    g = inner_group(x8, 64, 32, 2)
    assert g == 2 and lasts(x8, 32, g) >= STEP_LATENCIES > lasts(x8, 32, g - 1)
    assert inner_group(x4, 32, 32, 2) == 1 and lasts(x4, 32, 1) >= STEP_LATENCIES
    assert inner_group(x8, 64, 64, 2) == 4                  # twice the chunks, twice the group
    assert inner_group(load_preset("dgx-h100", 1), 8, 16, 2) == 1


def test_inner_option_steps_inside_a_node():
    """``--opt inner=N`` puts N chunks in a step inside a node (the first half of a tree's
    chunks; the second half drains one per step); a negative value is one clear error."""
    from ccxml.algorithms.forest import _step, plan
    topo = load_preset("dgx-h100", 2)
    f = synthesize(topo.graph(), coll="allgather")

    def sizes(inner):                   # chunks per step of the hops inside a node / across
        down, _ = plan(f, 16, 2, _step(topo, 2, inner=inner))
        inside = {h[6] for h in down if h[7] // 8 == h[8] // 8}
        return inside, {h[6] for h in down if h[7] // 8 != h[8] // 8}
    assert sizes(3) == ({1, 2, 3}, {1, 2}) and sizes(1) == ({1}, {1, 2})
    with pytest.raises(AlgorithmError, match="inner must be"):
        build("forest", Coll.ALLGATHER, 16, topology=topo, inner=-1)


def test_going_up_a_shallow_leaf_sends_when_its_parent_needs_the_sum():
    """On one node the up phase is the mirror image of the down phase: chunk i leaves v at
    i + D - depth(v), so the root's in-hops of a chunk share one time, from a leaf at depth 1 as
    from the chain below a depth-2 child (a leaf sending at once starved the deeper chains:
    pcie x 1 ReduceScatter 83% of the bound)."""
    from ccxml.algorithms.forest import Steps, plan
    from ccxml.synthesis.forest import Forest, Tree
    # root 0: 0 -> 1 (a leaf at depth 1), 0 -> 2 -> 3 (a leaf at depth 2)
    tree = Tree(0, (-1, 0, 0, 2), 1.0)
    f = Forest(4, (tree,), 1.0, None, 1, 1.0, 0.0)
    _, up = plan(f, 4, 1, Steps())
    t = {(h[8], h[7], h[5]): h[0] for h in up if h[2] == 0}     # (child, parent, chunk) -> time
    for i in range(4):
        assert t[(1, 0, i)] == t[(2, 0, i)] > t[(3, 2, i)]
        assert t[(1, 0, i)] == pytest.approx(t[(3, 2, i)] + 1 / 4)


def test_one_node_groups_every_edge_and_several_nodes_only_the_nics():
    """Grouped steps out of phase: on every edge of one node (every edge is of the slowest kind
    there), only between nodes off one node; group=1 gives one chunk per step everywhere."""
    from ccxml.algorithms.forest import _step
    one, two = load_preset("pcie", 1), load_preset("dgx-h100", 2)
    assert _step(one, 0)(0, 1) == 2 and _step(one, 0)(0, 7) == 2 and _step(one, 1)(0, 1) == 1
    assert _step(two, 0)(0, 1) == 1 and _step(two, 0)(0, 8) == 2
    assert not _step(one, 0).remote(0, 7)        # the up phase's NIC priority stays off one node
