"""The bidirectional ring (algorithms/bidir_ring.py): half the data each way round the ring.

* Every collective verifies in every configuration (target × channels × call form) at p = 2, 3, 5,
  and on exec for p up to 17 (33 in the ``slow`` sweep), bounded links included.
* On the flat model (every link full duplex) its bandwidth term is half Ring's and its latency term
  is Ring's: simulated with β alone and with α alone.
* Both directions of every link carry data.
"""
from __future__ import annotations

import pytest
from test_alg_mesh import assert_verifies, generate, sweep_configurations

from ccxml.algorithms import bidir_ring
from ccxml.driver import algorithm_schedule
from ccxml.loader.reader import loads
from ccxml.simulator import simulate_schedule
from ccxml.topology.model import Topology

COLLS = list(bidir_ring.COLLECTIVES)


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_every_configuration_verifies_at_small_rank_counts(coll):
    sweep_configurations("bidir-ring", coll, {}, (2, 3, 5))


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_verifies_up_to_17_ranks(coll):
    for p in (4, 6, 7, 8, 9, 16, 17):
        xml, _ = generate("bidir-ring", coll, p, k=1 + p % 2, inplace=p % 3 == 0)
        assert_verifies(xml, "exec", None, f"p={p}")


@pytest.mark.slow
@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_verifies_for_every_p_to_33(coll):
    for p in range(2, 34):
        for target in ("exec", "rccl", "legacy"):
            xml, _ = generate("bidir-ring", coll, p, target)
            assert_verifies(xml, target, None, f"p={p} {target}")


def _time(name, coll, p, n, alpha, beta):
    sched = algorithm_schedule(name, coll.value, p, target="legacy", max_bytes=n)
    return simulate_schedule(sched, n, Topology.flat(alpha, beta, 0.0)).time_s


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_bandwidth_term_is_half_rings_and_latency_term_rings(coll):
    n = 1 << 30
    for p in (3, 4, 8, 13):
        assert _time("bidir-ring", coll, p, n, 0.0, 1e-9) == pytest.approx(
            _time("ring", coll, p, n, 0.0, 1e-9) / 2, rel=1e-9), f"p={p}"
        assert _time("bidir-ring", coll, p, n, 1e-6, 0.0) == pytest.approx(
            _time("ring", coll, p, n, 1e-6, 0.0), rel=1e-9), f"p={p}"


def test_both_directions_of_every_link_carry_data():
    p = 6
    sched = loads(generate("bidir-ring", COLLS[0], p)[0])
    links = {(g.id, tb.send) for g in sched.gpus for tb in g.tbs for st in tb.steps
             if tb.send >= 0 and st.type in ("s", "rcs", "rrcs", "rrs")}
    assert links == {(r, (r + d) % p) for r in range(p) for d in (1, -1)}
