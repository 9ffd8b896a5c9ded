"""Star (algorithms/star.py) against hccl-algorithms.md §6 and §13.

* Every schedule verifies (postcondition, deadlock with unbounded and bounded links, races,
  loader rules): every collective in every configuration at p = 2, 3, 5; every root at p ≤ 9;
  p = 2..33 and 64.
* One round for every rank (§13: BC 1, GA 1), measured on the XML; the root talks to every rank
  and the others only to the root.
"""
from __future__ import annotations

import pytest
from schedule_rounds import rounds
from test_alg_mesh import assert_verifies, generate, sweep_configurations

from ccxml.algorithms import star
from ccxml.loader.reader import loads
from ccxml.vocab.wire import Coll

COLLS = list(star.COLLECTIVES)


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_every_configuration_verifies_at_small_rank_counts(coll):
    sweep_configurations("star", coll, {}, (2, 3, 5))


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_every_root_verifies_in_one_round(coll):
    for p in range(2, 10):
        for root in range(p):
            xml, _ = generate("star", coll, p, k=1 + root % 2, inplace=p % 2 == 0, root=root)
            assert_verifies(xml, "exec", None, f"p={p} root={root}")
            assert rounds(xml) == [1] * p
            for g in loads(xml).gpus:
                talks_to = {tb.send for tb in g.tbs} | {tb.recv for tb in g.tbs}
                expected = {root} if g.id != root else set(range(p)) - {root}
                assert talks_to - {-1} == expected, f"p={p} root={root} gpu {g.id}"


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_sweep_to_33_and_64_ranks(coll):
    for p in [*range(10, 34), 64]:
        target = ("exec", "rccl")[p % 2]
        xml, _ = generate("star", coll, p, target, root=p // 2)
        assert_verifies(xml, target, None, f"p={p}")
        assert rounds(xml) == [1] * p
    root_tbs = [tb for tb in loads(xml).gpus[32].tbs]
    assert len(root_tbs) == 63 and max(tb.chan for tb in root_tbs) == 1   # 32 + 31 peers


def test_unsupported_collective_names_what_star_supports():
    from ccxml.algorithms import build
    from ccxml.frontend.algorithm import AlgorithmError
    with pytest.raises(AlgorithmError, match="star does not support allreduce; it supports "
                                             "broadcast, reduce, scatter, gather"):
        build("star", Coll.ALLREDUCE, 4)
