"""Bruck AllToAll (algorithms/bruck.py; tables in ccxml/tables/bruck.py).

* The table moves slot i of member r to member r+i in ⌈log2 n⌉ steps, one hop per set bit; the
  colours tell apart the copies of a slot that a member sends and receives in one step.
* Every configuration verifies (target × channels × call form, bounded links included) at small
  p; exec up to p = 33 and 64 (every p to 65 on every target is the ``slow`` sweep).
* Built for small messages, every step is one message each way: rounds on the XML and the α-only
  critical path (flat model) are ⌈log2 p⌉, against Pairwise's p − 1.
"""
from __future__ import annotations

import pytest
from schedule_rounds import rounds
from test_alg_mesh import assert_verifies, generate, sweep_configurations

from ccxml.algorithms import build
from ccxml.driver import algorithm_schedule
from ccxml.frontend.algorithm import Options
from ccxml.simulator import simulate_schedule
from ccxml.tables import bruck
from ccxml.topology.model import Topology
from ccxml.vocab.wire import Coll


@pytest.mark.parametrize("n", [*range(2, 34), 64, 65, 100])
def test_table_delivers_every_slot_and_colours_split_each_step(n):
    held = [[r] * n for r in range(n)]     # held[r][i]: whose data slot i of member r holds
    table = bruck.alltoall(n)
    assert len(table) == bruck.steps(n) == (n - 1).bit_length()
    for k, step in enumerate(table):
        assert sorted((a, b) for a, b, _ in step) == [(r, (r + (1 << k)) % n) for r in range(n)]
        new = [list(h) for h in held]
        for a, b, blocks in step:
            assert {bruck.colour(n, k, a)} == {j % 3 for j in blocks} != {bruck.colour(n, k, b)}
            assert [bruck.slot(j) - k * n for j in blocks] == bruck.sent(n, k)
            for i in bruck.sent(n, k):
                new[b][i] = held[a][i]
        held = new
    assert held == [[(r - i) % n for i in range(n)] for r in range(n)]


def test_every_configuration_verifies_at_small_rank_counts():
    sweep_configurations("bruck", Coll.ALLTOALL, {}, (2, 3, 5, 8))


def test_rounds_and_alpha_path_are_ceil_log2_p():
    for p in [*range(2, 18), 32, 33, 64]:
        prog = build("bruck", Coll.ALLTOALL, p, options=Options(inplace=p % 2 == 1, max_bytes=1 << 16))
        xml = prog.to_xml("exec")
        assert_verifies(xml, "exec", None, f"p={p}")
        assert max(rounds(xml)) == bruck.steps(p), f"p={p}"
        sched = algorithm_schedule("bruck", "alltoall", p, target="exec", max_bytes=1 << 16)
        assert simulate_schedule(sched, 1 << 16, Topology.flat(1.0, 0.0, 0.0)).time_s == bruck.steps(p)


@pytest.mark.slow
def test_every_p_verifies_on_every_target():
    for p in range(2, 66):
        for target in ("exec", "rccl", "legacy"):
            xml, _ = generate("bruck", Coll.ALLTOALL, p, target, k=1 + p % 2)
            assert_verifies(xml, target, None, f"p={p} {target}")
