"""Pipeline (issue 5): every schedule verifies on the issue's shapes and profiles, the slots
really overlap (simulated time = S transfer times, not 2S−1), and bad shapes are one-line errors."""
from __future__ import annotations

import pytest
from dataflow_rounds import depth

from ccxml.algorithms import pipeline
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.interpreter import verify
from ccxml.loader import reader as xmlload
from ccxml.topology.model import LinkLevel, Topology
from ccxml.vocab.wire import PROFILES, Coll, StepType

SHAPES = [(2, 2), (2, 4), (3, 2), (4, 4), (5, 1), (1, 5)]


def _check(coll: Coll, s: int, m: int, target: str, inplace: bool = False, channels: int = 1):
    topo = Topology.uniform(s, m)
    text = pipeline.COLLECTIVES[coll](s * m, topology=topo,
                                      options=Options(inplace=inplace, channels=channels)).to_xml(target)
    rep = verify(text, target=target)
    assert rep.ok, f"{coll.value} {s}x{m} {target} inplace={inplace}: {rep.first_reason}"
    form = "in-place" if inplace else "out-of-place"
    assert rep.stats["per_form"][form]["chunks_checked"] > 0
    assert 'topology="%s"' % topo.to_attrs()["topology"] in text
    return text


@pytest.mark.parametrize("target", sorted(PROFILES))
@pytest.mark.parametrize("coll", list(pipeline.COLLECTIVES), ids=lambda c: c.value)
def test_every_pipeline_schedule_verifies(coll, target):
    for s, m in SHAPES:
        _check(coll, s, m, target)
        if target == "exec":
            _check(coll, s, m, target, inplace=True)


@pytest.mark.parametrize("target", sorted(PROFILES))
@pytest.mark.parametrize("coll", list(pipeline.COLLECTIVES), ids=lambda c: c.value)
def test_pipeline_8x8_verifies(coll, target):
    _check(coll, 8, 8, target)


@pytest.mark.parametrize("coll", list(pipeline.COLLECTIVES), ids=lambda c: c.value)
def test_rounds_equal_the_reference(coll):
    """§13: Pipeline AG/RS take S slots, AR 2S (the RS slots then the AG slots). Measured on the
    XML as the longest chain of communication steps (tests/dataflow_rounds.py): S − 1 inter-server
    hops plus the intra-server hop (none with one rank per server: the last slot of 5×1 is only
    a local copy, §10.1), twice for AR. AllToAll's S slots carry independent data (slot t sends
    the input's part for server s+1+t, §10.4), so its chains are one inter and one intra hop
    long, and each rank meets its S − 1 inter-server peers one per slot."""
    for s, m in SHAPES:
        text = pipeline.COLLECTIVES[coll](s * m, topology=Topology.uniform(s, m)).to_xml("exec")
        measured = depth(text)
        if coll is Coll.ALLTOALL:
            want = (s > 1) + (m > 1)
            sched = xmlload.loads(text)
            for g in sched.gpus:
                inter_peers = {tb.send for tb in g.tbs if tb.send >= 0 and tb.send // m != g.id // m}
                assert len(inter_peers) == s - 1, f"{s}x{m} rank {g.id}: {sorted(inter_peers)}"
        else:
            want = (s - 1 + (m > 1)) * (2 if coll is Coll.ALLREDUCE else 1)
        assert set(measured) == {want}, f"{coll.value} {s}x{m}: rounds {sorted(set(measured))}, reference {want}"


def test_pipeline_channels_verify():
    for coll in pipeline.COLLECTIVES:
        _check(coll, 3, 2, "exec", channels=2)


@pytest.mark.parametrize("coll", [Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.ALLREDUCE])
def test_slots_overlap(coll):
    """With equal intra and inter links a slot's transfers take one transfer time t each.
    Overlapped, S slots take about S·t (AllReduce 2S·t); with the intra part of a slot waiting
    for its inter part they would take (2S−1)·t (AllReduce twice that)."""
    from ccxml.driver import algorithm_schedule
    from ccxml.simulator import simulate_schedule
    level = LinkLevel(alpha=1e-6, beta=1e-10)
    halves = 2 if coll is Coll.ALLREDUCE else 1
    for s, m in [(3, 2), (3, 3), (4, 4)]:
        topo = Topology.uniform(s, m, intra=level, inter=level)
        sched = algorithm_schedule("pipeline", coll.value, s * m, topology=topo, target="legacy")
        n = 2 ** 26
        slots = simulate_schedule(sched, n, topo).time_s / level.transfer(n / (s * m))
        assert slots <= halves * (s + 1) + 1e-6, f"{coll.value} {s}x{m}: {slots:.3f} transfer times"
        assert slots < halves * (2 * s - 1) - 0.5, f"{coll.value} {s}x{m}: {slots:.3f}: not overlapped"


def test_bad_shapes_are_clear_errors():
    with pytest.raises(AlgorithmError, match="needs a topology"):
        pipeline.allgather(4)
    with pytest.raises(AlgorithmError, match="equal size"):
        pipeline.allgather(5, topology=Topology.from_groups([2, 3]))
    with pytest.raises(AlgorithmError, match="add up to 8 ranks, but the schedule has 6"):
        pipeline.allgather(6, topology=Topology.uniform(2, 4))


def test_rccl_limit_error_says_so():
    """Too many thread blocks for RCCL: the error names the profile and its limit."""
    from ccxml.passes import LimitError
    build = lambda: pipeline.alltoall(16, topology=Topology.uniform(4, 4),  # noqa: E731
                                      options=Options(channels=8))
    with pytest.raises(LimitError, match="thread blocks; the rccl limit is 64"):
        build().to_xml("rccl")
    assert verify(build().to_xml("exec"), target="exec").ok     # exec takes the same schedule


@pytest.mark.parametrize("s, m", [(4, 8), (3, 4)])
def test_alltoall_sends_one_network_message_per_server(s, m):
    """HCCL §10.4: a rank's data for a server crosses the network once, as one message to its
    rail peer there, at any size (the default file: no --max-bytes): s − 1 inter-server messages
    per rank, each carrying that server's m blocks; and the file verifies, bounded links included."""
    text = pipeline.alltoall(s * m, topology=Topology.uniform(s, m)).to_xml("exec")
    assert verify(text, target="exec").ok
    sched = xmlload.loads(text)
    for g in sched.gpus:
        inter = [(tb.send, st.cnt) for tb in g.tbs for st in tb.steps
                 if StepType(st.type).sends and tb.send // m != g.id // m]
        assert sorted(peer for peer, _ in inter) == [(t * m + g.id % m) for t in range(s) if t != g.id // m]
        assert {cnt for _, cnt in inter} == {m}
