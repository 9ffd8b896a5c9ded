"""Network topologies: the file format, the presets and their sources, routes, the rail rule."""
from __future__ import annotations

import json
import re
import tomllib

import pytest

from ccxml.topology import Topology, TopologyError, load_preset, load_topology, preset_names
from ccxml.topology.model import PRESET_DIR
from ccxml.topology.network import Network, ecmp

PRESETS = ["ascend-910b", "dgx-a100", "dgx-h100", "flat", "mi300x", "pcie"]


def names(net, route):
    return [net.vertex_names[net.link_src[route.links[0]]]] + [net.vertex_names[net.link_dst[x]]
                                                                for x in route.links]


def test_the_presets_are_packaged_and_load_at_any_node_count():
    assert preset_names() == PRESETS
    for name in PRESETS:
        for nodes in (1, 2, 4):
            t = load_preset(name, nodes)
            assert t.groups == ((8,) * nodes if nodes > 1 or t.is_network else None)
            if t.is_network:
                assert t.graph().nranks == 8 * nodes


def test_every_preset_figure_names_its_source():
    """Each number in a preset file has a comment citing a source defined in the file's header
    (or, for the flat model, says it is ccxml's default)."""
    for name in PRESETS:
        text = (PRESET_DIR / f"{name}.toml").read_text()
        tomllib.loads(text)
        defined = set(re.findall(r"^#\s+\[(\w+)\]", text, re.M))
        for line in text.splitlines():
            m = re.match(r"\s*(bandwidth|latency|overhead|proxy_overhead|gamma|alpha|beta)\s*=\s*[0-9.e+-]+\s*(#.*)?$", line)
            if not m:
                continue
            assert m.group(2), f"{name}: {line.strip()!r} has no source comment"
            cited = set(re.findall(r"\[(\w+)\]", m.group(2)))
            assert cited and cited <= defined, f"{name}: {line.strip()!r} cites {cited - defined or 'nothing'}"


def test_dgx_h100_is_what_the_issue_describes():
    net = load_preset("dgx-h100", 2).graph()
    intra, inter = net.route(0, 1), net.route(0, 8)
    assert names(net, intra) == ["n0.gpu0", "n0.nvswitch", "n0.gpu1"]
    assert intra.bottleneck == 450e9                      # per direction, per GPU
    assert inter.bottleneck == 50e9                       # one 400 Gb/s NIC per GPU
    assert names(net, inter) == ["n0.gpu0", "n0.pcie0", "n0.nic0", "rail0", "n1.nic0", "n1.pcie0", "n1.gpu0"]
    # every GPU has its own NIC: the rail rule pairs them one to one
    assert net.rail_of == list(range(8))
    # cross-rail traffic goes through the (non-blocking) spine
    assert "spine" in names(net, net.route(1, 10))
    assert net.route(0, 1).alpha == pytest.approx(3.4e-6)
    # NCCL's reading (tuning.cc): the 14 us network step is latency; the port's per-message gap is
    # 1 / 215e6 messages/s
    assert inter.latency == pytest.approx(14e-6) and inter.overhead == pytest.approx(4.65e-9)
    # proxy = "serial": 11.3 us of the step is per-message work serialised in the sender's port
    spec = load_preset("dgx-h100", 2).network
    assert spec.proxy == "nic" and spec.with_proxy("serial").proxy == "serial"
    serial = Network(spec.with_proxy("serial")).route(0, 8)
    assert serial.latency == pytest.approx(2.7e-6) and serial.overhead == pytest.approx(11.3e-6 + 4.65e-9)
    assert serial.alpha == pytest.approx(inter.alpha) and serial.links == inter.links
    assert len(serial.setup) == 1 and net.link_kind[serial.setup[0]] == "net"


def test_a100_pcie_switches_pair_gpus_and_nics_in_order():
    net = load_preset("dgx-a100", 2).graph()
    # two GPUs and two NICs per PCIe switch: gpu1 takes the second NIC of its switch
    assert names(net, net.route(1, 9))[:3] == ["n0.gpu1", "n0.pcie0", "n0.nic1"]
    pcie = load_preset("pcie", 2).graph()
    assert pcie.rail_of == [0, 0, 1, 1, 2, 2, 3, 3]      # one NIC per two GPUs
    assert names(pcie, pcie.route(0, 7)) == ["n0.gpu0", "n0.pcie0", "n0.cpu0", "n0.cpu1", "n0.pcie3", "n0.gpu7"]


def test_full_mesh_presets_give_every_pair_its_own_link():
    for name in ("mi300x", "ascend-910b"):
        net = load_preset(name).graph()
        seen = set()
        for a in range(8):
            for b in range(8):
                if a != b:
                    r = net.route(a, b)
                    assert len(r.links) == 1
                    seen.add(r.links[0])
        assert len(seen) == 56


def test_ecmp_spreads_and_is_deterministic():
    picks = [ecmp(a, x, b, y, 8) for a in range(8) for b in range(8) for x in range(8) for y in range(8)]
    counts = [picks.count(j) for j in range(8)]
    assert min(counts) > 0.8 * len(picks) / 8 and picks == [ecmp(a, x, b, y, 8) for a in range(8)
                                                             for b in range(8) for x in range(8) for y in range(8)]
    spec = load_preset("dgx-h100", 4).network
    fabric = spec.fabric.model_copy(update={"spine": "ecmp"})
    net = Topology.from_dict({"network": spec.model_copy(update={"fabric": fabric})}).graph()
    r = net.route(1, 10)
    assert [net.link_kind[x] for x in r.links].count("spine") == 2
    assert all(net.link_cap[x] == 50e9 for x in r.links if net.link_kind[x] == "spine")


NETWORK_TOML = """
[network]
name = "two-gpu-box"
gpus = 2
gamma = 1e-12
[[network.devices]]
name = "sw"
kind = "pcie-switch"
[[network.devices]]
name = "nic0"
kind = "nic"
bandwidth = 10e9
[[network.links]]
a = "gpu{g}"
b = "sw"
bandwidth = 20e9
latency = 1e-6
[[network.links]]
a = "nic0"
b = "sw"
bandwidth = 20e9
[network.fabric]
kind = "switch"
"""


def test_a_network_file_loads_round_trips_and_takes_nodes(tmp_path):
    f = tmp_path / "box.toml"
    f.write_text(NETWORK_TOML)
    t = load_topology(f)
    assert t.is_network and t.groups == (2,) and t.describe().startswith("two-gpu-box: 1 node")
    t2 = load_topology(f, nodes=3)
    assert t2.groups == (2, 2, 2) and t2.graph().route(0, 2).bottleneck == 10e9
    again = Topology.from_dict(json.loads(json.dumps(t2.to_dict())))
    assert again == t2
    # a preset by name, in a file
    p = tmp_path / "p.toml"
    p.write_text('preset = "dgx-h100"\nnodes = 2\n')
    assert load_topology(p) == load_preset("dgx-h100", 2)
    # the generated file records the preset, and reading it back rebuilds it
    assert Topology.from_attrs(t2.to_attrs()).is_network is False       # not a preset: shape only
    assert Topology.from_attrs(load_preset("dgx-h100", 2).to_attrs()) == load_preset("dgx-h100", 2)


def test_todays_files_still_load_and_say_what_inter_means(tmp_path):
    f = tmp_path / "old.toml"
    f.write_text("servers = 4\nranks_per_server = 8\n[intra]\nalpha = 1e-6\nbeta = 5e-12\n"
                 "[inter]\nalpha = 5e-6\nbeta = 4e-11\n")
    t = load_topology(f)
    assert not t.is_network and t.groups == (8,) * 4
    assert len(t.notes()) == 1 and "'inter' level is each cross-server pair's link" in t.notes()[0]
    assert Topology.flat(1e-6, 1e-11).notes() == []


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["network"]["links"].append({"a": "gpu0", "b": "nope", "bandwidth": 1e9}), "no device named 'nope'"),
    (lambda d: d["network"]["links"].append({"a": "gpu0", "b": "gpu0", "bandwidth": 1e9}), "joins a device to itself"),
    (lambda d: d["network"]["links"].append({"a": "gpu1", "b": "sw", "bandwidth": 1e9}), "given twice"),
    (lambda d: d["network"]["links"][0].update(bandwidth=-1), "must be a finite number > 0"),
    (lambda d: d["network"]["devices"][0].update(kind="router"), "network.devices.0.kind"),
    (lambda d: d.update(intra={"alpha": 1e-6}), "takes its costs and shape from its devices and links"),
    (lambda d: d.update(groups=[3]), "do not match the network's 1 node(s) of 2 GPUs"),
    (lambda d: d["network"].update(nodes=2, fabric={"kind": "none"}), "2 nodes need a fabric"),
    (lambda d: d["network"]["devices"][1].pop("bandwidth"), "nic 'nic0' needs a bandwidth"),
])
def test_network_errors_are_one_line(mutate, fragment):
    data = tomllib.loads(NETWORK_TOML)
    mutate(data)
    with pytest.raises(TopologyError) as e:
        Topology.from_dict(data).graph()
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_unknown_preset_and_bad_nodes():
    with pytest.raises(TopologyError, match="unknown preset 'dgx-h200'; known: ascend-910b"):
        load_preset("dgx-h200")
    with pytest.raises(TopologyError, match="--nodes must be an integer >= 1"):
        load_preset("dgx-h100", 0)


def test_unreachable_gpu_is_refused():
    data = tomllib.loads(NETWORK_TOML)
    data["network"]["gpus"] = 3
    data["network"]["links"][0]["a"] = "gpu{g/2}"          # gpu0 and gpu1 only
    with pytest.raises(TopologyError, match="gpu0 cannot reach gpu2|gpu2 has no link"):
        Topology.from_dict(data).graph()


def test_a_serial_proxy_needs_the_latency_it_is_taken_from():
    """proxy = "serial" moves proxy_overhead out of the route's latency (half from each of the
    two ports a network route crosses); more than that is a one-line error, and only a NIC has it."""
    nic = {"name": "nic{g}", "kind": "nic", "bandwidth": 50e9, "latency": 1e-6,
           "proxy": "serial", "proxy_overhead": 3e-6}
    spec = {"gpus": 2, "nodes": 2, "devices": [nic],
            "links": [{"a": "gpu{g}", "b": "nic{g}", "bandwidth": 50e9},
                      {"a": "gpu0", "b": "gpu1", "bandwidth": 100e9}]}
    with pytest.raises(TopologyError, match="proxy_overhead"):
        Topology.from_dict({"network": spec}).graph()
    ok = Topology.from_dict({"network": {**spec, "devices": [{**nic, "proxy_overhead": 2e-6}]}})
    r = ok.graph().route(0, 2)
    assert r.latency == pytest.approx(0.0, abs=1e-15) and r.overhead == pytest.approx(2e-6)
    nic_reading = Network(ok.network.with_proxy("nic")).route(0, 2)
    assert nic_reading.latency == pytest.approx(2e-6) and nic_reading.overhead == 0
    with pytest.raises(TopologyError, match="only a nic"):
        Topology.from_dict({"network": {**spec, "devices": [
            {**nic, "proxy_overhead": 0.0}, {"name": "sw", "kind": "switch", "proxy_overhead": 1e-6}]}}).graph()
