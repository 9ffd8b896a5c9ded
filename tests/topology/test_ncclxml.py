"""NCCL topology XML: the real cloud files in ../shared/topologies, NCCL's numbers, defects, safety."""
from __future__ import annotations

import pytest
from conftest import TOPOLOGIES

from ccxml.topology import TopologyError, load_topology
from ccxml.topology.ncclxml import load_nccl_topology


def real(name: str):
    path = TOPOLOGIES / f"{name}-topo.xml"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


def hops(net, a, b):
    r = net.route(a, b)
    return [net.vertex_names[net.link_src[r.links[0]]]] + [net.vertex_names[net.link_dst[x]] for x in r.links]


def test_ncv4_self_targeting_nvlinks_are_reported_not_trusted():
    read = load_nccl_topology(real("ncv4"))
    selfish = [n for n in read.notes if "names its own GPU" in n]
    assert len(selfish) == 4 and all("\n" not in n for n in read.notes)
    net = read.topology.graph()
    assert net.gpus == 4 and "nvlink" not in net.link_kind          # no NVLink was trusted
    # each GPU under its own socket: GPU-to-GPU goes through the CPUs (NCCL: AMD 16 GB/s);
    # the PCI link has no speed or width: NCCL's fallback, 16 lanes x 8 GT/s = 12 GB/s
    assert hops(net, 0, 1) == ["n0.gpu0", "n0.cpu0", "n0.cpu1", "n0.gpu1"]
    assert net.route(0, 1).bottleneck == 12e9
    # the Ethernet NIC on cpu0: 100000 Mb/s = 12.5 GB/s
    two = load_nccl_topology(real("ncv4"), nodes=2).topology.graph()
    assert min(two.link_cap[x] for x in two.route(0, 4).links) == 12e9
    assert max(two.link_cap[x] for x in two.route(0, 4).links if two.link_kind[x] == "net") == 12.5e9


def test_skeleton_files_need_the_gpu_class_for_the_nvlink_side():
    with pytest.raises(TopologyError, match="gives only the PCI tree .* add --gpu h100\\|a100\\|v100"):
        load_nccl_topology(real("ndv5"))
    with pytest.raises(TopologyError, match="--gpu is for skeleton files"):
        load_nccl_topology(real("ncv4"), gpu="a100")


def test_ndv5_h100_nvswitch_at_nccls_per_link_bandwidth_and_rail_pairs():
    read = load_nccl_topology(real("ndv5"), gpu="h100", nodes=2)
    net = read.topology.graph()
    assert hops(net, 0, 1) == ["n0.gpu0", "n0.nvswitch", "n0.gpu1"]
    assert net.route(0, 1).bottleneck == pytest.approx(18 * 20.6e9)   # 18 links x SM90_NVLINK_BW
    # each GPU and one NIC share a PCIe Gen5 x16 switch (NCCL: 16 x 240 / 80 = 48 GB/s): a rail pair
    assert net.rail_of == list(range(8))
    assert hops(net, 0, 8)[:3] == ["n0.gpu0", "n0.pci:ffff:ff:01.0", "n0.nic:0101:00:00.0"]
    assert net.route(0, 8).bottleneck == 48e9
    assert sum("no <net speed>" in n for n in read.notes) == 8


def test_ndv4_two_gpus_and_two_nics_per_switch_pair_in_order():
    net = load_nccl_topology(real("ndv4"), gpu="a100", nodes=2).topology.graph()
    assert net.rail_of == list(range(8))
    assert hops(net, 1, 9)[:3] == ["n0.gpu1", "n0.pci:ffff:ff:01.0", "n0.nic:0104:00:00.0"]
    assert net.route(0, 1).bottleneck == 12 * 20e9                 # NVLink, not the PCIe switch


def test_ndv2_v100_cube_mesh_and_one_shared_nic():
    net = load_nccl_topology(real("ndv2"), gpu="v100", nodes=2).topology.graph()
    assert net.route(0, 3).bottleneck == 2 * 20e9 and net.route(0, 1).bottleneck == 20e9
    assert hops(net, 0, 5) == ["n0.gpu0", "n0.cpu0", "n0.cpu1", "n0.gpu5"]   # no NVLink: via the sockets
    assert net.rail_of == [0] * 8                                      # one NIC for all
    # the CPU link: Intel Skylake (model 0x55) in NCCL's table, 10 GB/s
    assert net.route(0, 5).bottleneck == 10e9


def test_load_topology_reads_xml_too():
    t = load_topology(real("ndv4"), gpu="a100", nodes=2)
    assert t.is_network and t.groups == (8, 8) and t.describe().startswith("xml:ndv4-topo.xml")


FULL = """<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="80" rank="0" gdr="1">{nv0}</gpu>
    </pci>
    <pci busid="0000:02:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="80" rank="1" gdr="1">{nv1}</gpu>
    </pci>
  </cpu>
</system>
"""


def write(tmp_path, text, name="t.xml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_nvlink_defects_one_line_each(tmp_path):
    nv = '<nvlink target="{}" count="{}" tclass="0x030200"/>'
    # one-sided link: used as given, reported
    p = write(tmp_path, FULL.format(nv0=nv.format("0000:02:00.0", 4), nv1=""))
    read = load_nccl_topology(p)
    assert any("lists none back" in n for n in read.notes)
    assert read.topology.graph().route(0, 1).bottleneck == 4 * 20e9
    # a peer that is not in the file
    p = write(tmp_path, FULL.format(nv0=nv.format("0000:09:00.0", 4), nv1=""))
    assert any("no GPU with that bus id" in n for n in load_nccl_topology(p).notes)
    # counts that disagree: the smaller
    p = write(tmp_path, FULL.format(nv0=nv.format("0000:02:00.0", 4), nv1=nv.format("0000:01:00.0", 2)))
    read = load_nccl_topology(p)
    assert any("the smaller is used" in n for n in read.notes)
    assert read.topology.graph().route(0, 1).bottleneck == 2 * 20e9


@pytest.mark.parametrize("text, fragment", [
    ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><system>&a;</system>', "DOCTYPE/ENTITY"),
    ("<system><cpu>", "not well-formed XML"),
    ("<algo/>", "not NCCL's <system>"),
    ("<system/>", "no <cpu> element"),
    ('<system><cpu numaid="0"/></system>', "no GPU"),
    ("<system>" + "<cpu>" * 40 + "</cpu>" * 40 + "</system>", "nested deeper than"),
])
def test_hostile_or_broken_files_are_one_line(tmp_path, text, fragment):
    with pytest.raises(TopologyError) as e:
        load_nccl_topology(write(tmp_path, text))
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_oversized_files_are_refused_before_parsing(tmp_path, monkeypatch):
    import ccxml.topology.ncclxml as nx
    monkeypatch.setattr(nx, "MAX_FILE_BYTES", 100)
    with pytest.raises(TopologyError, match="at most 100 bytes"):
        load_nccl_topology(write(tmp_path, FULL.format(nv0="", nv1="")))
