"""The stride ring: proven for every stride that makes one ring, its links are r -> r+s, a bad
stride is one clear error, and an installed copy is a ccxml plugin."""
from __future__ import annotations

import pytest
from ccxml_stride_ring import NAME, allgather, allreduce

from ccxml import loads, verify
from ccxml.vocab.errors import AlgorithmError

P = 8


@pytest.mark.parametrize("builder", [allgather, allreduce])
@pytest.mark.parametrize("stride", [1, 3, 5, 7])
def test_every_coprime_stride_is_proven(builder, stride):
    report = verify(builder(P, stride=stride).to_xml("exec"))
    assert report.ok, report.first_reason


@pytest.mark.parametrize("builder", [allgather, allreduce])
def test_two_channels_and_rccl_are_proven(builder):
    from ccxml.frontend.algorithm import Options
    text = builder(6, stride=5, options=Options(channels=2)).to_xml("rccl")
    assert verify(text, target="rccl").ok


@pytest.mark.parametrize("stride", [1, 3])
def test_each_rank_sends_to_r_plus_stride_only(stride):
    sched = loads(allreduce(P, stride=stride).to_xml("exec"))
    for gpu in sched.gpus:
        peers = {tb.send for tb in gpu.tbs if tb.send >= 0}
        sources = {tb.recv for tb in gpu.tbs if tb.recv >= 0}
        assert peers == {(gpu.id + stride) % P} and sources == {(gpu.id - stride) % P}


@pytest.mark.parametrize("stride", [0, 2, 4, 8, "3"])
def test_a_stride_that_splits_the_ring_is_refused(stride):
    with pytest.raises(AlgorithmError, match=f"{NAME}: stride .* must be in 1..7 and coprime with 8 ranks"):
        allgather(P, stride=stride)


def test_installed_it_is_a_plugin_of_ccxml():
    """Through its entry point: ccxml's registry names the distribution and builds it."""
    from ccxml.algorithms import registry
    plugin = registry.plugin(NAME)
    if plugin is None:
        pytest.skip("ccxml-stride-ring is not installed (pip install examples/plugin)")
    assert plugin.distribution == "ccxml-stride-ring" and plugin.module == "ccxml_stride_ring"
    alg = registry.get(NAME)
    assert alg.plugin == plugin and alg.defaults[alg.collectives[0]] == {"stride": 1}
    assert registry.build(NAME, "allgather", P, stride=3).to_xml() == allgather(P, stride=3).to_xml()
