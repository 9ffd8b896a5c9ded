"""Mesh (algorithms/mesh.py) against hccl-algorithms.md §2 and §13.

* Every generated schedule verifies with the reference interpreter (postcondition, deadlock with
  unbounded and bounded links, races, loader rules of the target): every collective (and the
  one-shot allreduce) in every configuration (profile × channels 1, 2 × call form) at p = 2, 3, 5;
  every root of the rooted collectives at p ≤ 9; p = 2..9, 16, 17, 32, 33 and 64 on exec (the
  complete p = 2..33 sweep is the ``slow`` test at the end).
* Communication rounds, measured on the compiled XML (tests/schedule_rounds.py), equal §13.
* Peers are spread so no channel holds more than 32 send (receive) peers; RCCL's 64-TB limit is
  a clear error naming the option.
"""
from __future__ import annotations

import itertools
from collections import Counter

import pytest
from schedule_rounds import rounds

from ccxml.algorithms import build, mesh
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.interpreter import verify
from ccxml.loader.reader import loads
from ccxml.passes.splitting import LimitError
from ccxml.vocab.wire import PROFILES, Coll

CONFIGS = list(itertools.product(sorted(PROFILES), (1, 2), (False, True)))
LEGACY_MISSING = {Coll.GATHER, Coll.SCATTER, Coll.ALLTOALLV}
CASES = [(c, {}) for c in mesh.COLLECTIVES] + [(Coll.ALLREDUCE, {"variant": "one-shot"})]
CASE_IDS = [c.value + ("-" + kw["variant"] if kw else "") for c, kw in CASES]


def counts(p: int, inplace: bool):
    """An alltoallv matrix with zeros and transfers longer than a link buffers (up to 4 chunks);
    symmetric in place (each rank sends as much as it receives)."""
    if inplace:
        return [[(i + j) % 4 + (i == j) for j in range(p)] for i in range(p)]
    return [[(3 * i + 5 * j + 1) % 5 for j in range(p)] for i in range(p)]


def generate(algorithm, coll, p, target="exec", k=1, inplace=False, root=None, m=None, **kw):
    """(xml, counts) of one configuration."""
    if coll is Coll.ALLTOALLV and m is None:
        m = counts(p, inplace)
    if coll.rooted and root is None:
        root = p - 1
    prog = build(algorithm, coll, p, options=Options(channels=k, inplace=inplace), root=root,
                 counts=m, **kw)
    return prog.to_xml(target), m


def assert_verifies(xml, target, m, what):
    rep = verify(xml, target=target, counts=m)
    assert rep.ok, f"{what}: {rep.first_reason}"
    assert all(f["chunks_checked"] > 0 for f in rep.stats["per_form"].values()), what


def sweep_configurations(algorithm, coll, kw, ps):
    for p in ps:
        for target, k, inplace in CONFIGS:
            what = f"{algorithm} {coll.value} p={p} {target} channels={k} inplace={inplace}"
            if target == "legacy" and coll in LEGACY_MISSING:
                with pytest.raises(LimitError, match=f"legacy runtime has no {coll.value}"):
                    generate(algorithm, coll, p, target, k, inplace, **kw)
                continue
            xml, m = generate(algorithm, coll, p, target, k, inplace, **kw)
            assert_verifies(xml, target, m, what)


@pytest.mark.parametrize("coll, kw", CASES, ids=CASE_IDS)
def test_every_configuration_verifies_at_small_rank_counts(coll, kw):
    sweep_configurations("mesh", coll, kw, (2, 3, 5))


@pytest.mark.parametrize("coll", [c for c in mesh.COLLECTIVES if c.rooted], ids=lambda c: c.value)
def test_every_root_verifies(coll):
    for p in range(2, 10):
        for root in range(p):
            k, inplace = 1 + root % 2, p % 2 == 0
            xml, _ = generate("mesh", coll, p, k=k, inplace=inplace, root=root)
            assert_verifies(xml, "exec", None, f"p={p} root={root}")


# ---- rounds (§13: AR 2, AG 1, RS 1, BC 2, RD 2, SC 1, GA 1, A2A 1; one-shot AR 1) ------------
REFERENCE = {Coll.ALLREDUCE: 2, Coll.ALLGATHER: 1, Coll.REDUCESCATTER: 1, Coll.BROADCAST: 2,
             Coll.REDUCE: 2, Coll.SCATTER: 1, Coll.GATHER: 1, Coll.ALLTOALL: 1, Coll.ALLTOALLV: 1}


def expected_rounds(coll, kw, p, root):
    """§13's step count per rank, with the two documented Broadcast exceptions: the root only
    sends (its own block straight from its input, so it is a 1-round rank), and at p = 2 the one
    non-root rank has nobody to forward its block to."""
    n = 1 if kw.get("variant") == "one-shot" else REFERENCE[coll]
    out = [n] * p
    if coll is Coll.BROADCAST:
        out = [1 if r == root or p == 2 else n for r in range(p)]
    return out


def rounds_case(coll, kw):
    return pytest.param(coll, kw, id=coll.value + ("-" + kw["variant"] if kw else ""))


SWEEP = [*range(2, 10), 16, 17, 33]


def one_message_counts(p):
    """Symmetric alltoallv counts of 0..1 chunks: every transfer is one message (with no size
    bound a link buffers one-chunk messages only, so longer transfers are cut)."""
    return [[(i + j) % 2 for j in range(p)] for i in range(p)]


@pytest.mark.parametrize("coll, kw", [rounds_case(c, kw) for c, kw in CASES])
def test_rounds_equal_the_reference_and_schedules_verify(coll, kw):
    for p in SWEEP:
        inplace = p % 2 == 1
        m = one_message_counts(p) if coll is Coll.ALLTOALLV else None
        xml, m = generate("mesh", coll, p, inplace=inplace, m=m, **kw)
        assert_verifies(xml, "exec", m, f"p={p}")
        root = p - 1 if coll.rooted else None
        assert rounds(xml) == expected_rounds(coll, kw, p, root), f"p={p}"


# ---- channels and thread-block limits ----------------------------------------------------------
def test_peer_channels_are_symmetric_and_hold_at_most_32_peers():
    for p in [*range(2, 70), 128]:
        for r in range(p):
            per_chan = Counter(mesh.peer_channel(r, j, p) for j in range(p) if j != r)
            assert max(per_chan.values()) <= 32
            assert sorted(per_chan) == list(range(mesh.channels_per_instance(p)))
            for j in range(p):
                if j != r:
                    assert mesh.peer_channel(r, j, p) == mesh.peer_channel(j, r, p)
                    assert mesh.peer_channel(r, j, p, 1) == mesh.peer_channel(r, j, p) + \
                        mesh.channels_per_instance(p)


def tbs_per_channel_and_direction(xml):
    sched = loads(xml)
    worst = 0
    for g in sched.gpus:
        for side in ("send", "recv"):
            per = Counter(tb.chan for tb in g.tbs if getattr(tb, side) >= 0)
            worst = max(worst, *per.values())
    return worst, max(len(g.tbs) for g in sched.gpus)


@pytest.mark.parametrize("coll, target", [(Coll.ALLTOALL, "rccl"), (Coll.ALLREDUCE, "exec")],
                         ids=str)
def test_64_ranks_fit_the_runtime_limits_and_verify(coll, target):
    xml, _ = generate("mesh", coll, 64, target)
    per_chan, tbs = tbs_per_channel_and_direction(xml)
    assert per_chan <= 32 and tbs == 63          # one full-duplex TB per peer
    assert loads(xml).nchannels == 2
    assert_verifies(xml, target, None, f"{coll.value} p=64 {target}")


def test_rccl_thread_block_limit_is_a_clear_error():
    with pytest.raises(LimitError, match=r"gpu 0 has 78 thread blocks; the rccl limit is 64: "
                                         r"use fewer --channels"):
        generate("mesh", Coll.ALLTOALL, 40, "rccl", k=2)


# ---- parameters -------------------------------------------------------------------------------
def test_one_shot_is_one_message_per_peer_and_bad_variant_is_named():
    xml, _ = generate("mesh", Coll.ALLREDUCE, 4, variant="one-shot", k=1)
    sched = loads(xml)
    assert sched.nchunksperloop == 1
    sends = [st for g in sched.gpus for tb in g.tbs for st in tb.steps if st.type == "s"]
    assert len(sends) == 4 * 3
    with pytest.raises(AlgorithmError, match="variant must be one of two-shot, one-shot"):
        build("mesh", "allreduce", 4, variant="three-shot")


@pytest.mark.parametrize("m, message", [
    (None, "alltoallv needs counts"),
    ([[1, 1], [1, 1]], "must be a 3x3 matrix for --ranks 3"),
    ([[1, 1, -1]] * 3, "must be >= 0"),
    ([[0] * 3] * 3, "all zero"),
    ([["a"] * 3] * 3, "matrix of integers"),
])
def test_bad_alltoallv_counts_are_named(m, message):
    with pytest.raises(AlgorithmError, match=message):
        build("mesh", "alltoallv", 3, counts=m)


def test_in_place_alltoallv_needs_equal_send_and_receive_sizes():
    with pytest.raises(AlgorithmError, match="rank 0 sends 3 chunks and receives 2"):
        build("mesh", "alltoallv", 2, counts=[[1, 2], [1, 0]], options=Options(inplace=True))


@pytest.mark.slow
@pytest.mark.parametrize("coll, kw", CASES, ids=CASE_IDS)
def test_complete_sweep_2_to_33_and_64(coll, kw):
    for p in [p for p in range(2, 34) if p not in SWEEP] + [64]:
        xml, m = generate("mesh", coll, p, inplace=p % 2 == 0, **kw)
        assert_verifies(xml, "exec", m, f"p={p}")
