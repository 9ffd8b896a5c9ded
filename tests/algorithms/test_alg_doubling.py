"""Recursive-doubling AllGather for any p (algorithms/doubling.py, ``recursive-doubling``).

* The table: after step s every member holds the blocks of its group of 2^(s+1); every member
  receives at most once a step; ⌈log2 p⌉ steps for every p.
* Every configuration verifies (target × channels × call form, bounded links included) at small
  p; exec for p up to 33 and 64 (every p to 65 is the ``slow`` sweep).
* Rounds measured on the XML and the α-only critical path (flat model) are ⌈log2 p⌉.
"""
from __future__ import annotations

import pytest
from schedule_rounds import rounds
from test_alg_mesh import assert_verifies, generate, sweep_configurations

from ccxml.algorithms import build
from ccxml.driver import algorithm_schedule
from ccxml.frontend.algorithm import Options
from ccxml.simulator import simulate_schedule
from ccxml.tables import doubling
from ccxml.topology.model import Topology
from ccxml.vocab.wire import Coll


def ns(p: int) -> int:
    return (p - 1).bit_length()


@pytest.mark.parametrize("p", [*range(2, 40), 64, 65, 100])
def test_table_gathers_every_block_one_receive_per_step(p):
    held = [{r} for r in range(p)]
    table = doubling.all_gather(p)
    assert len(table) == ns(p)
    for s, step in enumerate(table):
        receivers = [b for _, b, _ in step]
        assert len(receivers) == len(set(receivers)), f"step {s}"
        new = [set(h) for h in held]
        for a, b, blocks in step:
            assert set(blocks) <= held[a], f"step {s}: {a} sends blocks it does not hold"
            new[b] |= set(blocks)
        held = new
        size = 2 << s
        assert all(held[r] == set(range(r - r % size, min(p, r - r % size + size))) for r in range(p))
    assert all(h == set(range(p)) for h in held)


def test_every_configuration_verifies_at_small_rank_counts():
    sweep_configurations("recursive-doubling", Coll.ALLGATHER, {}, (2, 3, 5, 6))


def test_rounds_and_alpha_path_are_ceil_log2_p():
    """Built for sizes up to 64 KiB (a group's blocks are then one message; with no upper bound
    every message is one chunk, issue 17 part 1)."""
    for p in [*range(2, 18), 32, 33, 64]:
        prog = build("recursive-doubling", Coll.ALLGATHER, p,
                     options=Options(inplace=p % 2 == 1, max_bytes=1 << 16))
        xml = prog.to_xml("exec")
        assert_verifies(xml, "exec", None, f"p={p}")
        assert max(rounds(xml)) == ns(p), f"p={p}"
        sched = algorithm_schedule("recursive-doubling", "allgather", p, max_bytes=1 << 16)
        assert simulate_schedule(sched, 1 << 16, Topology.flat(1.0, 0.0, 0.0)).time_s == ns(p)


@pytest.mark.slow
def test_every_p_verifies_on_every_target():
    """Up to p = 65, in the default file (no upper size bound). Thread blocks carry one direction
    (every step's range is one message at any size), so a rank that serves a whole full group in
    the last step (p = 2^m + 1) has a send thread block per peer and instance and one to receive:
    at p = 33 two instances exceed RCCL's 64 thread blocks (one fits), at p = 65 one does."""
    for p in range(2, 66):
        for target in ("exec", "rccl", "legacy"):
            if (p, target) == (65, "rccl"):
                continue                  # test_a_fan_out_beyond_rccls_thread_blocks_is_a_clear_error
            k = 1 + p % 2 if p <= 33 and (p, target) != (33, "rccl") else 1
            prog = build("recursive-doubling", Coll.ALLGATHER, p, options=Options(channels=k))
            assert_verifies(prog.to_xml(target), target, None, f"p={p} {target} channels={k}")
    for p in (128, 256):
        assert_verifies(generate("recursive-doubling", Coll.ALLGATHER, p)[0], "exec", None, f"p={p}")


def test_a_fan_out_beyond_rccls_thread_blocks_is_a_clear_error():
    """p = 65: rank 64 serves the 64 ranks of the full group in the last step, one sending thread
    block per peer and channel instance, and one more receives: 65 exceed RCCL's 64."""
    from ccxml.passes.splitting import LimitError
    with pytest.raises(LimitError, match="gpu 64 has 65 thread blocks; the rccl limit is 64"):
        generate("recursive-doubling", Coll.ALLGATHER, 65, "rccl")
