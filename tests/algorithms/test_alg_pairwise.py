"""PairWise (algorithms/pairwise.py) against hccl-algorithms.md §5 and §13.

* Every schedule verifies (postcondition, deadlock with unbounded and bounded links, races,
  loader rules): alltoall and alltoallv in every configuration at p = 2..6, p = 2..33 and 64 on
  exec.
* Step k: measured on the XML, the message r → r+k is exactly the k-th round (so each rank
  sends to r+1, r+2, … in turn and receives from r−1, r−2, …), p−1 rounds in all (§13).
* alltoallv from Python counts with zeros and multi-message transfers.
"""
from __future__ import annotations

import pytest
from schedule_rounds import message_hops, rounds
from test_alg_mesh import assert_verifies, generate, sweep_configurations

from ccxml.algorithms import build, pairwise
from ccxml.frontend.algorithm import Options
from ccxml.loader.reader import loads
from ccxml.vocab.wire import Coll


@pytest.mark.parametrize("coll", list(pairwise.COLLECTIVES), ids=lambda c: c.value)
def test_every_configuration_verifies_at_small_rank_counts(coll):
    sweep_configurations("pairwise", coll, {}, range(2, 7))


def step_of_each_message(xml, p):
    """{(src, dst): hops} of the schedule's messages (every channel)."""
    out: dict[tuple[int, int], set[int]] = {}
    for (src, dst, _), hop in message_hops(loads(xml)):
        out.setdefault((src, dst), set()).add(hop)
    return out


@pytest.mark.parametrize("parity", ["odd", "even"])
def test_step_k_sends_to_r_plus_k_and_takes_p_minus_1_rounds(parity):
    for p in [p for p in [*range(2, 34), 64] if p % 2 == (parity == "odd") or p == 2]:
        xml, _ = generate("pairwise", Coll.ALLTOALL, p, inplace=p % 3 == 0)
        if p <= 17 or p in (33, 64):
            assert_verifies(xml, "exec", None, f"p={p}")
        hops = step_of_each_message(xml, p)
        assert hops == {(r, (r + k) % p): {k} for r in range(p) for k in range(1, p)}, f"p={p}"
        assert rounds(xml) == [p - 1] * p


def test_alltoallv_from_python_counts_skips_empty_transfers():
    p = 5
    m = [[0 if (i + j) % 3 == 0 else 1 + (i * j) % 7 for j in range(p)] for i in range(p)]
    for k in (1, 2):
        prog = build("pairwise", "alltoallv", p, counts=m, options=Options(channels=k))
        xml = prog.to_xml("exec")
        assert_verifies(xml, "exec", m, f"channels={k}")
        sends = [(g.id, tb.send, st.cnt) for g in loads(xml).gpus for tb in g.tbs
                 for st in tb.steps if st.type == "s"]
        for i in range(p):
            for j in range(p):
                moved = sum(c for g, peer, c in sends if (g, peer) == (i, j))
                assert moved == (m[i][j] if i != j else 0)
        assert max(c for _, _, c in sends) <= 2      # one Simple link buffers 2 one-chunk calls


def test_rccl_64_ranks_two_channels_is_a_clear_error():
    from ccxml.passes.splitting import LimitError
    with pytest.raises(LimitError, match="rccl limit is 64: use fewer --channels"):
        generate("pairwise", Coll.ALLTOALL, 40, "rccl", k=2)


def test_reducescatter_step_k_sends_block_r_plus_k_to_r_plus_k():
    """Pairwise-exchange ReduceScatter: the message r → r+k is the k-th round, p−1 rounds, and
    the schedule verifies on every target (bounded links included)."""
    for p in [*range(2, 18), 32, 33]:
        xml, _ = generate("pairwise", Coll.REDUCESCATTER, p, inplace=p % 3 == 0)
        assert_verifies(xml, "exec", None, f"p={p}")
        assert step_of_each_message(xml, p) == {(r, (r + k) % p): {k} for r in range(p)
                                                for k in range(1, p)}, f"p={p}"
        assert rounds(xml) == [p - 1] * p
    for target in ("rccl", "legacy"):
        for p in (6, 9):
            xml, _ = generate("pairwise", Coll.REDUCESCATTER, p, target, k=2)
            assert_verifies(xml, target, None, f"p={p} {target}")


def test_reducescatter_beyond_the_depid_limit_is_a_clear_error():
    """The running sum passes through every peer's TB: from p = 131 a dependency names TB 128,
    beyond exec's depid limit (as for Mesh's ReduceScatter)."""
    from ccxml.passes.splitting import LimitError
    with pytest.raises(LimitError, match="the exec limit for depid is 127"):
        generate("pairwise", Coll.REDUCESCATTER, 131)
