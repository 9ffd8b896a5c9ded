"""The topology model: groupings, link levels, files, XML attributes, and its error messages."""
from __future__ import annotations

import json

import pytest

from ccxml.topology.files import load_topology
from ccxml.topology.model import (
    INTER,
    INTRA,
    LinkLevel,
    Topology,
    TopologyError,
    encode_groups,
    parse_groups,
)


def test_uniform_servers_group_consecutive_ranks():
    t = Topology.uniform(2, 4, intra={"alpha": 1e-6, "beta": 1e-11},
                         inter={"alpha": 5e-6, "beta": 4e-11})
    assert t.groups == (4, 4)
    assert t.nranks == 8 and t.servers == 2 and t.ranks_per_server == 4 and t.is_uniform
    assert t.group_ranks() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [t.group_of(r) for r in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert t.level(1, 3) == INTRA and t.level(3, 4) == INTER and t.level(7, 0) == INTER
    assert t.link(0, 5).alpha == 5e-6 and t.link(5, 6).alpha == 1e-6


def test_asymmetric_groups_2_3():
    t = Topology.from_groups([2, 3])
    assert t.group_ranks() == [[0, 1], [2, 3, 4]]
    assert not t.is_uniform and t.ranks_per_server is None
    assert t.level(0, 1) == INTRA and t.level(1, 2) == INTER and t.level(2, 4) == INTRA


def test_inter_defaults_to_intra_and_flat_fits_any_rank_count():
    t = Topology.flat(alpha=2e-6, beta=1e-10, gamma=1e-12)
    assert t.is_flat and t.nranks is None
    t.check_ranks(3)
    t.check_ranks(64)
    assert t.link(0, 63) == LinkLevel(alpha=2e-6, beta=1e-10, gamma=1e-12)
    assert t.level(0, 63) == INTRA
    assert t.group_ranks(3) == [[0, 1, 2]]


def test_link_costs():
    lv = LinkLevel(alpha=1e-6, beta=2e-9, gamma=5e-10)
    assert lv.transfer(1000) == pytest.approx(3e-6, abs=1e-15)
    assert lv.reduce(1000) == pytest.approx(5e-7, abs=1e-15)


@pytest.mark.parametrize("data, fragment", [
    ({"groups": [2, 0]}, "group 1 has size 0"),
    ({"groups": [2, -1]}, "group 1 has size -1"),
    ({"groups": []}, "at least one group"),
    ({"groups": [2, 3], "ranks": 6}, "add up to 5, not ranks=6"),
    ({"servers": 2}, "servers and ranks_per_server must be given together"),
    ({"servers": 0, "ranks_per_server": 4}, "servers must be >= 1"),
    ({"servers": 2, "ranks_per_server": 4, "groups": [4, 4]}, "either groups or servers"),
    ({"alpha": -1e-6}, "intra.alpha: must be a finite number >= 0"),
    ({"inter": {"beta": -2}}, "inter.beta: must be a finite number >= 0"),
    ({"intra": {"gamma": float("inf")}}, "intra.gamma: must be a finite number >= 0"),
    ({"intra": {"alpha": 1, "bandwidth": 3}}, "intra.bandwidth: unknown key"),
    ({"colour": "blue"}, "colour: unknown key"),
    ({"groups": "2,x"}, "'x' is not a size"),
    ({"groups": [2.5, 3]}, "group 0 size must be an integer"),
])
def test_invalid_topologies_are_rejected_with_one_clear_line(data, fragment):
    with pytest.raises(TopologyError) as e:
        Topology.from_dict(data)
    msg = str(e.value)
    assert fragment in msg
    assert "\n" not in msg


def test_check_ranks_names_both_counts():
    t = Topology.from_groups([2, 3])
    t.check_ranks(5)
    with pytest.raises(TopologyError, match=r"add up to 5 ranks, but the schedule has 6"):
        t.check_ranks(6)


def test_groups_text_forms():
    assert parse_groups("2,3") == (2, 3)
    assert parse_groups("4x8") == (8, 8, 8, 8)
    assert parse_groups("3x8, 4") == (8, 8, 8, 4)
    assert encode_groups((8, 8, 8, 4)) == "3x8,4"
    assert encode_groups((2, 3)) == "2,3"
    for bad in ("", "2,,3", "0x4", "2,0", "ax2"):
        with pytest.raises(TopologyError):
            parse_groups(bad)


@pytest.mark.parametrize("topo", [
    Topology.uniform(4, 8, intra={"alpha": 1e-6, "beta": 5e-12, "gamma": 1e-12},
                     inter={"alpha": 5.5e-6, "beta": 4e-11}),
    Topology.from_groups([2, 3], intra={"alpha": 1.25e-6, "beta": 1 / 3e11}),
    Topology.from_groups([8, 8, 8, 4]),
    Topology.flat(alpha=1e-6, beta=1e-11, gamma=1e-12),
])
def test_xml_attributes_round_trip_exactly(topo):
    attrs = topo.to_attrs()
    assert set(attrs) == {"topology", "topology_links"}
    assert all(isinstance(v, str) and len(v) < 256 and '"' not in v for v in attrs.values())
    assert Topology.from_attrs(attrs) == topo
    # the runtime's reader ignores unknown attributes; other attributes must not disturb us
    assert Topology.from_attrs({**attrs, "coll": "allreduce", "ngpus": "8"}) == topo


def test_from_attrs_without_topology_is_none_and_garbage_is_an_error():
    assert Topology.from_attrs({"coll": "allreduce"}) is None
    with pytest.raises(TopologyError):
        Topology.from_attrs({"topology": "2,3", "topology_links": "intra:1,2"})
    with pytest.raises(TopologyError):
        Topology.from_attrs({"topology": "2,3", "topology_links": "wan:1,2,3"})
    with pytest.raises(TopologyError):
        Topology.from_attrs({"topology": "2,3", "topology_links": "intra:1,x,3"})


def test_load_json_and_toml(tmp_path):
    j = tmp_path / "c.json"
    j.write_text(json.dumps({"servers": 2, "ranks_per_server": 8,
                             "intra": {"alpha": 1e-6, "beta": 5e-12},
                             "inter": {"alpha": 5e-6, "beta": 4e-11, "gamma": 1e-12}}))
    t = load_topology(j)
    assert t.groups == (8,) * 2 and t.inter.gamma == 1e-12
    toml = tmp_path / "c.toml"
    toml.write_text('groups = [2, 3]\nranks = 5\nalpha = 1e-6\nbeta = 1e-11\n'
                    '[inter]\nalpha = 4e-6\nbeta = 2e-11\n')
    t2 = load_topology(toml)
    assert t2.groups == (2, 3) and t2.intra.alpha == 1e-6 and t2.inter.alpha == 4e-6
    # no suffix: JSON first, then TOML
    plain = tmp_path / "cluster"
    plain.write_text('groups = "4x2"\n')
    assert load_topology(plain).groups == (2, 2, 2, 2)
    # to_dict is the file format
    j2 = tmp_path / "d.json"
    j2.write_text(json.dumps(t2.to_dict()))
    assert load_topology(j2) == t2


def test_load_errors_are_one_line_and_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("groups = [2, 0]\n")
    with pytest.raises(TopologyError, match=r"bad.toml: groups: group 1 has size 0"):
        load_topology(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(TopologyError, match=r"not valid JSON") as e:
        load_topology(broken)
    assert "\n" not in str(e.value)
    with pytest.raises(TopologyError, match="cannot read topology"):
        load_topology(tmp_path / "missing.json")
    arr = tmp_path / "arr.json"
    arr.write_text("[1, 2]")
    with pytest.raises(TopologyError, match="must be a table"):
        load_topology(arr)


def test_topology_is_immutable():
    t = Topology.from_groups([2, 3])
    with pytest.raises((TypeError, ValueError)):     # pydantic's frozen model
        t.groups = (5,)
