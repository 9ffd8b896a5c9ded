"""forest's fit of the chunk count (algorithms/forest.py): the fast count of XML nodes per rank,
from the trees' edges alone, equals the count on plan()'s hops (its exact twin), so the chunk
count fit_chunks picks, and every forest file, stay what they were."""
from __future__ import annotations

import pytest

pytest.importorskip("networkx")
pytest.importorskip("scipy")

from tiny_network import small  # noqa: E402

from ccxml.algorithms import forest as F  # noqa: E402
from ccxml.synthesis.forest import synthesize  # noqa: E402
from ccxml.topology import load_preset  # noqa: E402


@pytest.mark.parametrize("topo", [small(), load_preset("dgx-h100", 2)], ids=["tiny-2x2", "dgx-h100-x2"])
@pytest.mark.parametrize("coll", ["allgather", "reducescatter"])
def test_fast_count_is_plans_count(topo, coll):
    forest = synthesize(topo.graph(), coll=coll)
    gpus = topo.network.gpus
    seen = set()
    for lanes in (1, 2):
        # group, inner (wt-x8), near (partial sums with a NIC ahead), every (one node)
        for step in (F.Steps(gpus, 1), F.Steps(gpus, 2), F.Steps(gpus, 2, 2, 2), F.Steps(gpus, 2, 1, 3),
                     F.Steps(gpus, 2, every=True)):
            for phases in (1, 2):
                for c in (1, 5, 33):
                    fast = F._fit_steps(forest, c, lanes, phases, step)
                    assert fast == F._fit_steps_plan(forest, c, lanes, phases, step)
                    seen.add(max(fast))
    assert len(seen) > 5            # the counts do vary with the arguments


def test_fit_chunks_picks_the_largest_that_fits():
    topo = load_preset("dgx-h100", 2)
    forest = synthesize(topo.graph(), coll="allgather")
    step = F.Steps(topo.network.gpus, 2)
    need = [max(F._fit_steps_plan(forest, c, 2, 2, step)) * F.NOP_MARGIN for c in range(1, 25)]
    limit = sorted(need)[len(need) // 2]                # a limit that cuts the range
    want = max(c for c in range(1, 25) if need[c - 1] <= limit)
    assert F.fit_chunks(forest, 24, 2, 2, step, limit=limit) == want
    with pytest.raises(F.AlgorithmError, match="cannot be served"):
        F.fit_chunks(forest, 24, 2, 2, step, limit=min(need) - 1)


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [4, 8])
def test_fast_count_is_plans_count_on_larger_clusters(nodes):
    topo = load_preset("dgx-h100", nodes)
    forest = synthesize(topo.graph(), coll="allgather")
    for group, phases, c, inner, near in ((1, 1, 7, 1, 1), (2, 2, 32, 1, 2), (2, 2, 17, 2, 2)):
        step = F.Steps(topo.network.gpus, group, inner, near)
        assert F._fit_steps(forest, c, 2, phases, step) == F._fit_steps_plan(forest, c, 2, phases, step)
