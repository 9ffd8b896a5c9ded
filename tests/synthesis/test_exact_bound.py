"""The exact AllGather/ReduceScatter bound (ccxml.topology.flow): equal to a brute force over every
cut of small random networks, to hand-derived cuts of the presets, and the same on both max-flow
paths (scipy's, networkx's)."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest

pytest.importorskip("networkx")
pytest.importorskip("scipy")

from ccxml.topology import load_preset  # noqa: E402
from ccxml.topology.flow import RouteGraph, bound_lines, exact_bound  # noqa: E402
from ccxml.topology.network import Network, NetworkSpec  # noqa: E402

BW = [10e9, 20e9, 30e9, 50e9]


def random_server(rng: random.Random, gpus: int, switches: int, nic: bool) -> dict:
    """One server: a random tree of switches, each GPU (and the NIC) hung under a random switch."""
    devices = [{"name": f"sw{i}", "kind": "pcie-switch"} for i in range(switches)]
    links = [{"a": f"sw{i}", "b": f"sw{rng.randrange(i)}", "bandwidth": rng.choice(BW)} for i in range(1, switches)]
    links += [{"a": f"gpu{g}", "b": f"sw{rng.randrange(switches)}", "bandwidth": rng.choice(BW)} for g in range(gpus)]
    if nic:
        devices.append({"name": "nic0", "kind": "nic", "bandwidth": rng.choice(BW)})
        links.append({"a": "nic0", "b": f"sw{rng.randrange(switches)}", "bandwidth": rng.choice(BW)})
    return {"gpus": gpus, "devices": devices, "links": links, "fabric": {"kind": "switch"}}


def brute_force(net: Network, coll: str) -> Fraction:
    """min over vertex sets T holding a rank but not all of cap_in(T) / ranks outside T (AllGather;
    ReduceScatter: cap_out), on the physical graph of the links some route uses. Between the two
    nodes of a 2-node network the fabric switch is replaced by one vertex per direction (A->B,
    B->A), so that no path leaves a node and comes back into it."""
    p = net.nranks
    used = {x for a in range(p) for b in range(p) if a != b for x in net.route(a, b).links}
    edges = []
    for x in sorted(used):
        u, v = net.link_src[x], net.link_dst[x]
        nu, nv = net.node_of_vertex(u), net.node_of_vertex(v)
        if nu == -1:        # fabric -> node nv: the wire from the other node
            u = ("wire", 1 - nv)
        if nv == -1:        # node nu -> fabric: the wire towards the other node
            v = ("wire", nu)
        edges.append((u, v, round(net.link_cap[x] / 1e6)))
    verts = sorted({u for u, _, _ in edges} | {v for _, v, _ in edges}, key=str)
    ranks = {n * net.server_vertices + g for n in range(net.nodes) for g in range(net.gpus)}
    assert len(verts) <= 14
    best = None
    for bits in range(1, 1 << len(verts)):
        T = {v for i, v in enumerate(verts) if bits >> i & 1}
        inside = len(T & ranks)
        if inside == 0 or inside == p:
            continue
        if coll == "allgather":
            cap = sum(c for u, v, c in edges if v in T and u not in T)
        else:
            cap = sum(c for u, v, c in edges if u in T and v not in T)
        r = Fraction(cap, p - inside)
        best = r if best is None or r < best else best
    return best


def networks():
    rng = random.Random(23)
    out = []
    for _ in range(6):
        gpus = rng.randint(2, 6)
        out.append(NetworkSpec.model_validate(random_server(rng, gpus, rng.randint(1, 14 - gpus - 1), False)))
    for _ in range(5):
        gpus = rng.randint(2, 3)
        out.append(NetworkSpec.model_validate({**random_server(rng, gpus, rng.randint(1, 6 - gpus), True), "nodes": 2}))
    return out


@pytest.mark.parametrize("spec", networks(), ids=lambda s: f"{s.nodes}x{s.gpus}-{len(s.devices)}dev")
@pytest.mark.parametrize("coll", ["allgather", "reducescatter"])
def test_bound_equals_brute_force_over_all_cuts(spec, coll):
    net = Network(spec)
    want = brute_force(net, coll)
    fast = exact_bound(net, coll)
    slow = exact_bound(net, coll, use_networkx=True)
    assert fast.rate == pytest.approx(float(want) * 1e6, rel=1e-12)
    assert slow.rate == fast.rate and slow.busbw == fast.busbw
    assert fast.exact and RouteGraph.build(net).check_exact()


# hand-derived: AllGather busbw bound = (p - 1) * min over cuts of cap_in / blocks outside
HAND = [
    ("dgx-h100", 1, 450e9),                 # one GPU's NVLink in: 7 blocks / 450 GB/s
    ("dgx-h100", 2, 500e9),                 # one GPU + its PCIe switch + NIC: NVLink 450 + NIC 50
    ("dgx-h100", 4, 500e9),
    ("dgx-h100", 8, 63 / 56 * 400e9),       # one node: 8 NICs x 50 for 56 blocks = 450 GB/s
    ("dgx-a100", 2, 325e9),                 # NVLink 300 + NIC 25
    ("dgx-a100", 4, 31 / 24 * 200e9),       # one node: 8 NICs x 25 for 24 blocks = 258.3 GB/s
    ("mi300x", 1, 7 * 64e9),                # 7 xGMI links of 64 GB/s
    ("mi300x", 2, 7 * 64e9 + 50e9),         # + the NIC
    ("pcie", 1, 31.5e9),                    # a GPU's PCIe x16 link to its switch
]


@pytest.mark.parametrize("preset, nodes, want", HAND)
def test_hand_derived_bounds_of_the_presets(preset, nodes, want):
    net = load_preset(preset, nodes).graph()
    for coll in ("allgather", "reducescatter"):
        b = exact_bound(net, coll)
        assert b.busbw == pytest.approx(want, rel=1e-9), (coll, b.describe_cut())
        assert b.exact


def test_dgx_h100_cut_names_nvlink_and_nic():
    b = exact_bound(load_preset("dgx-h100", 4).graph(), "allgather")
    assert b.cut_ranks == (0,) and b.outside == 31
    assert sorted(bw for _, bw in b.cut_links) == [50e9, 450e9]
    assert any("nic0" in name for name, _ in b.cut_links)


def test_no_same_node_loop_through_the_fabric():
    """Two nodes of one GPU each under a PCIe switch with a NIC: the only route between the ranks
    crosses the fabric, so a rank's in-bound is its NIC (not NIC + a loop)."""
    spec = NetworkSpec.model_validate({"gpus": 2, "nodes": 2, "fabric": {"kind": "switch"},
                                       "devices": [{"name": "sw", "kind": "pcie-switch"},
                                                   {"name": "nic0", "kind": "nic", "bandwidth": 10e9}],
                                       "links": [{"a": "gpu{g}", "b": "sw", "bandwidth": 100e9},
                                                 {"a": "nic0", "b": "sw", "bandwidth": 100e9}]})
    b = exact_bound(Network(spec), "allgather")
    # node cut: 2 ranks inside, 2 blocks from outside through one 10 GB/s NIC -> x = 5 GB/s
    assert b.rate == pytest.approx(5e9)


def test_allreduce_bound_is_reducescatter_plus_allgather():
    net = load_preset("dgx-h100", 2).graph()
    ar = exact_bound(net, "allreduce")
    ag = exact_bound(net, "allgather")
    assert ar.time_s(1 << 30) == pytest.approx(2 * ag.time_s(1 << 30))
    lines = bound_lines(net, "allreduce")
    assert "ReduceScatter + AllGather" in lines[0] and "route rule" in lines[2]


def test_the_bound_is_computed_once_per_network_and_collective(monkeypatch):
    """simulate, select, show and topology show ask for the same bound several times (AllReduce's
    is ReduceScatter's and AllGather's): the network keeps it; the networkx twin still computes."""
    import ccxml.topology.flow as flow
    net = load_preset("dgx-h100", 2).graph()
    net.exact_bounds.clear()
    calls = []
    real = flow._exact_bound
    monkeypatch.setattr(flow, "_exact_bound", lambda *a: calls.append(a[1]) or real(*a))
    ar = flow.exact_bound(net, "allreduce")
    assert calls == ["allreduce", "allgather", "reducescatter"]
    assert flow.exact_bound(net, "allgather") is flow.exact_bound(net, "allgather")
    assert flow.exact_bound(net, "allreduce") is ar and len(calls) == 3
    assert flow.exact_bound(net, "allgather", use_networkx=True).busbw == pytest.approx(ar.busbw)
    assert len(calls) == 4
