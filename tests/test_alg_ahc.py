"""AHC (issue 5, hccl-algorithms.md §9): group splitting and logic cards as the reference
derives them, and every schedule verifies for the issue's group shapes on every profile."""
from __future__ import annotations

import pytest

from ccxml.algorithm import AlgorithmError, Options
from ccxml.algorithms import ahc
from ccxml.interpreter import verify
from ccxml.topology import Topology
from ccxml.wire import PROFILES, Coll

SHAPES = [(2, 3), (1, 4), (3, 3, 2), (4, 4), (2, 2, 2, 2), (5, 7)]


def test_group_splitting_follows_hccl():
    """§9.1 examples: {2,5} → {2,2,3}; {2,4} → {2,2,2}; {2,3} unchanged; {1,4} → five 1s."""
    assert ahc.split_groups([2, 5]) == [2, 2, 3]
    assert ahc.split_groups([2, 4]) == [2, 2, 2]
    assert ahc.split_groups([2, 3]) == [2, 3]
    assert ahc.split_groups([1, 4]) == [1, 1, 1, 1, 1]
    assert ahc.split_groups([5, 7]) == [5, 7]


def test_logic_cards_of_the_reference_example():
    """§9.2: {0,1}+{2,3,4}: L = 6, cards k0=[0,2){0,2}, k1=[2,3){0,3}, k2=[3,4){1,3},
    k3=[4,6){1,4}; per-rank order r0 [k0,k1], r1 [k2,k3], r3 [k2,k1]."""
    big_l, cards = ahc.logic_cards([[0, 1], [2, 3, 4]])
    assert big_l == 6
    by_index = {c.index: (c.lo, c.hi, c.members) for c in cards}
    assert by_index == {0: (0, 2, (0, 2)), 1: (2, 3, (0, 3)), 2: (3, 4, (1, 3)), 3: (4, 6, (1, 4))}
    order = {r: [c.index for c in cards if r in c.members] for r in range(5)}
    assert order[0] == [0, 1] and order[1] == [2, 3] and order[3] == [2, 1]


@pytest.mark.parametrize("target", sorted(PROFILES))
@pytest.mark.parametrize("coll", list(ahc.COLLECTIVES), ids=lambda c: c.value)
def test_every_ahc_schedule_verifies(coll, target):
    for groups in SHAPES:
        for inplace in ([False, True] if target == "exec" else [False]):
            topo = Topology.from_groups(groups)
            text = ahc.COLLECTIVES[coll](sum(groups), topology=topo,
                                         options=Options(inplace=inplace)).to_xml(target)
            rep = verify(text, target=target)
            assert rep.ok, f"{coll.value} {groups} {target} inplace={inplace}: {rep.first_reason}"
            form = "in-place" if inplace else "out-of-place"
            assert rep.stats["per_form"][form]["chunks_checked"] > 0
            assert f'topology="{topo.to_attrs()["topology"]}"' in text


@pytest.mark.parametrize("kw", [dict(intra="ring"), dict(intra="mesh"), dict(inter="nhr"), dict(inter="rhd")])
def test_inner_algorithms_verify(kw):
    for coll, build in ahc.COLLECTIVES.items():
        for groups in [(2, 3), (3, 3, 2)]:
            text = build(sum(groups), topology=Topology.from_groups(groups), **kw).to_xml("exec")
            rep = verify(text, target="exec")
            assert rep.ok, f"{coll.value} {groups} {kw}: {rep.first_reason}"


def test_channels_verify():
    for coll, build in ahc.COLLECTIVES.items():
        text = build(5, topology=Topology.from_groups([2, 3]), options=Options(channels=2)).to_xml("rccl")
        assert verify(text, target="rccl").ok, coll


def test_bad_shapes_are_clear_errors():
    with pytest.raises(AlgorithmError, match="ahc needs a topology"):
        ahc.allreduce(5)
    with pytest.raises(AlgorithmError, match="add up to 5 ranks, but the schedule has 6"):
        ahc.allreduce(6, topology=Topology.from_groups([2, 3]))
    with pytest.raises(AlgorithmError, match="'bogus'"):
        ahc.allgather(5, topology=Topology.from_groups([2, 3]), inter="bogus")


def test_cli_ahc(tmp_path, capsys):
    from ccxml.cli import main
    out = tmp_path / "a.xml"
    try:
        main(["generate", "ahc", "--ranks", "5", "--groups", "2,3", "--coll", "reducescatter",
              "-o", str(out), "--verify"])
    except SystemExit as e:
        assert e.code in (0, None)
    assert "PASS" in capsys.readouterr().out
    assert 'topology="2,3"' in out.read_text()
