"""The 2-D family (2d-ring, 2d-torus, 2d-mesh, hierarchical AllReduce, issue 5): every schedule
verifies on the issue's shapes and profiles, inner algorithms are interchangeable, and bad
shapes are one-line errors (also through the CLI)."""
from __future__ import annotations

import itertools

import pytest
from dataflow_rounds import depth, every_block_takes_every_step, flat_steps
from in_process import ccxml

from ccxml.algorithms import get
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.interpreter import verify
from ccxml.tables import schemes as ph
from ccxml.topology.model import Topology
from ccxml.vocab.wire import PROFILES

ALGORITHMS = ["2d-ring", "2d-torus", "2d-mesh", "hierarchical"]
SHAPES = [(2, 2), (2, 4), (3, 2), (4, 4), (5, 1), (1, 5)]


def _verified(name: str, s: int, m: int, target: str, inplace: bool = False, **kw) -> str:
    topo = Topology.uniform(s, m)
    prog = get(name).builder("allreduce")(s * m, topology=topo, options=Options(inplace=inplace), **kw)
    text = prog.to_xml(target)
    rep = verify(text, target=target)
    assert rep.ok, f"{name} {s}x{m} {target} inplace={inplace} {kw}: {rep.first_reason}"
    form = "in-place" if inplace else "out-of-place"
    assert rep.stats["per_form"][form]["chunks_checked"] > 0
    assert f'topology="{topo.to_attrs()["topology"]}"' in text
    return text


@pytest.mark.parametrize("target", sorted(PROFILES))
@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_schedule_verifies(name, target):
    for s, m in SHAPES:
        _verified(name, s, m, target)
        if target == "exec":
            _verified(name, s, m, target, inplace=True)


@pytest.mark.parametrize("target", [t if t == "exec" else pytest.param(t, marks=pytest.mark.slow)
                                    for t in sorted(PROFILES)])      # the other targets: a sweep
@pytest.mark.parametrize("name", ALGORITHMS)
def test_8x8_verifies(name, target):
    _verified(name, 8, 8, target)


#: every inner choice each algorithm takes (its ``intra`` / ``inter`` parameters, §11)
CHOICES = {
    "2d-torus": [dict(intra=a, inter=b) for a in ph.INTRA for b in ph.INTER],
    "2d-mesh": [dict(intra=a, inter=b) for a in ph.INTRA for b in ph.INTER],
    "hierarchical": [dict(intra=a, inter=b) for a in ("star", "ring") for b in ph.INTER],
    "2d-ring": [dict(intra=a, inter=b) for a in ("allreduce", "reduce") for b in ph.INTER],
}


def expected_rounds(name: str, s: int, m: int, intra: str, inter: str) -> tuple[int, bool]:
    """(the reference's step count of the composition, whether every chain takes all of it).

    The phases follow §11: level-0 RS → level-1 AR → level-0 AG (2d-torus), level-0 AR → level-1
    AR (2d-mesh), reduce to a leader → AR among leaders → broadcast (2d-ring, hierarchical). A
    pipelined chain of m ranks (ring reduce/broadcast) is m − 1 steps deep: its slots overlap.
    """
    ar = flat_steps(inter, s)
    exact = every_block_takes_every_step(inter, s)
    if name == "2d-torus":
        return 2 * flat_steps(intra, m, half=True) + ar, exact
    if name == "2d-mesh":
        return flat_steps(intra, m) + ar, exact
    chain = m - 1
    if name == "2d-ring":
        return (flat_steps("ring", m) if intra == "allreduce" else chain) + ar + chain, exact
    one = min(1, chain) if intra == "star" else chain
    return 2 * one + ar, exact


@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_inner_choice_verifies_and_takes_the_reference_rounds(name):
    """Every inner choice on every shape but 8×8, the profile rotating over the combinations.
    Rounds, measured on the XML (tests/dataflow_rounds.py) as the longest chain of
    communication steps, equal the sum of the phases' §13 step counts; where an inner algorithm
    sends some contributions straight to their owner (NHR/NB/RHD on a non-power-of-two count)
    no chain is longer than that sum."""
    targets = sorted(PROFILES)
    for i, (kw, (s, m)) in enumerate(itertools.product(CHOICES[name], SHAPES)):
        text = _verified(name, s, m, targets[i % len(targets)], **kw)
        measured = max(depth(text))
        want, exact = expected_rounds(name, s, m, kw["intra"], kw["inter"])
        if exact:
            assert measured == want, f"{name} {s}x{m} {kw}: {measured} rounds, reference {want}"
        else:
            assert 0 < measured <= want, f"{name} {s}x{m} {kw}: {measured} rounds > reference {want}"


def test_rccl_limit_error_says_so():
    """More thread blocks than RCCL allows: the error names the profile and its limit, and the
    same schedule compiles for exec."""
    from ccxml.passes import LimitError
    for name in ("2d-ring", "hierarchical"):
        build = lambda: get(name).builder("allreduce")(16, topology=Topology.uniform(4, 4),  # noqa: E731
                                            options=Options(channels=8))
        with pytest.raises(LimitError, match="thread blocks; the rccl limit is 64"):
            build().to_xml("rccl")
        assert "<algo" in build().to_xml("exec")
    code, _, err = run("generate", "2d-ring", "--servers", "4", "--ranks-per-server", "4",
                       "--channels", "8", "--target", "rccl", "-o", "-")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "the rccl limit is 64" in err and "--target exec" in err


def test_channels_verify():
    for name in ALGORITHMS:
        text = get(name).builder("allreduce")(6, topology=Topology.uniform(3, 2), options=Options(channels=2)).to_xml("rccl")
        assert verify(text, target="rccl").ok


@pytest.mark.parametrize("name", ALGORITHMS)
def test_bad_shapes_are_clear_errors(name):
    build = get(name).builder("allreduce")
    with pytest.raises(AlgorithmError, match="needs a topology"):
        build(4)
    with pytest.raises(AlgorithmError, match="equal size.*2,3"):
        build(5, topology=Topology.from_groups([2, 3]))
    with pytest.raises(AlgorithmError, match="add up to 8"):
        build(6, topology=Topology.uniform(2, 4))
    with pytest.raises(AlgorithmError, match="'bogus'"):
        build(4, topology=Topology.uniform(2, 2), intra="bogus")


@pytest.mark.parametrize("args,message", [
    (["2d-torus", "--servers", "2", "--ranks-per-server", "2"], None),
    (["hierarchical", "--ranks", "6", "--servers", "3"], None),
    (["2d-mesh", "--ranks", "7", "--ranks-per-server", "2"], "--ranks 7 is not divisible by --ranks-per-server 2"),
    (["2d-ring", "--groups", "2,3"], "2d-ring needs servers of equal size"),
    (["2d-ring", "--groups", "2,0"], "group 1 has size 0"),
    (["2d-torus", "--ranks", "6", "--servers", "2", "--ranks-per-server", "4"], "--ranks 6 disagrees with --servers 2 --ranks-per-server 4: 2 groups of 4 ranks (8 in all); give --ranks 8"),
    (["2d-torus", "--servers", "2", "--ranks-per-server", "2", "--groups", "2,2"], "give either --servers/--ranks-per-server or --groups, not both"),
    (["2d-torus", "--ranks", "4"], "2d-torus needs a topology"),
])
def test_cli(tmp_path, args, message):
    out = tmp_path / "x.xml"
    code, stdout, stderr = run("generate", *args, "-o", str(out), "--verify")
    if message is None:
        assert code in (0, None), stderr
        assert "PASS" in stdout and 'topology="' in out.read_text()
    else:
        assert code == 2, stdout + stderr
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and message in lines[0], stderr
        assert not out.exists()


def run(*argv):
    return ccxml(*argv)


def test_topology_file(tmp_path):
    f = tmp_path / "t.toml"
    f.write_text("servers = 2\nranks_per_server = 3\n[intra]\nalpha = 1e-6\n[inter]\nalpha = 5e-6\n")
    out = tmp_path / "x.xml"
    code, stdout, stderr = run("generate", "2d-torus", "--topology", str(f), "-o", str(out), "--verify")
    assert code in (0, None), stderr
    text = out.read_text()
    assert 'ngpus="6"' in text and 'topology="2x3"' in text and "inter:5e-06" in text
