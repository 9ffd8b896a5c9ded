"""Hand-built schedules: each broken one is rejected for the right reason, valid ones pass."""
from __future__ import annotations

import pytest
from handbuilt import algo, codes, direct_alltoall, pair_allreduce, ring_allgather, ring_allreduce, tbs

from ccxml.interpreter import verify


@pytest.mark.parametrize("p", [2, 3, 5])
def test_ring_allreduce_passes(p):
    rep = verify(ring_allreduce(p))
    assert rep.ok, rep.first_reason
    assert rep.stats["per_form"]["in-place"]["chunks_checked"] == p * p


@pytest.mark.parametrize("p", [2, 3, 4])
def test_ring_allgather_passes(p):
    rep = verify(ring_allgather(p))
    assert rep.ok, rep.first_reason


def test_alltoall_passes():
    rep = verify(direct_alltoall(3))
    assert rep.ok, rep.first_reason


def test_both_call_forms_are_checked():
    # allreduce through scratch: correct out-of-place and in-place
    text = ring_allreduce(3).replace('inplace="1" outofplace="0"', 'inplace="1" outofplace="1"')
    rep = verify(text)
    assert rep.stats["forms"] == ["in-place", "out-of-place"]
    # the schedule only writes i, so out-of-place leaves the output unwritten
    assert "unwritten-output" in codes(rep)
    assert verify(text, inplace=True).ok


# ---- broken schedules -----------------------------------------------------------------------

def test_deadlock_with_unbounded_links():
    text = direct_alltoall(2, recv_first=True)
    rep = verify(text)
    assert "deadlock" in codes(rep)
    f = next(f for f in rep.findings if f.code == "deadlock")
    assert "cycle of 2 TBs" in f.message and "waits for a message" in f.message


def test_deadlock_only_with_bounded_links():
    # each side sends 3 single-call steps before receiving; Simple links buffer 2 calls
    text = direct_alltoall(2, per=3, proto="Simple", max_bytes=1 << 20)
    rep = verify(text)
    assert codes(rep) == {"deadlock-fifo"}, rep.findings
    assert "waits for room" in rep.first_reason
    # LL links buffer 8 calls: fine
    assert verify(direct_alltoall(2, per=3, proto="LL", max_bytes=1 << 20)).ok
    # maxBytes=0: worst case, one chunk per call; a cnt=3 step is 3 calls
    assert verify(direct_alltoall(2, per=2, proto="LL")).ok


def _copy_then_send(dep: bool) -> str:
    """gpu 0: tb 0 copies i[0] to o[0]; tb 1 sends o[0] to gpu 1 (after tb 0 when ``dep``)."""
    d = (0, 0) if dep else (-1, -1)
    g0 = [tbs(0, -1, -1, 0, ("cpy", "i", 0, "o", 0, 1, -1, -1, 1)),
          tbs(1, 1, -1, 0, ("s", "o", 0, "o", 0, 1, d[0], d[1], 0)),
          tbs(2, -1, 1, 1, ("r", "o", 1, "o", 1, 1, -1, -1, 0))]
    g1 = [tbs(0, -1, -1, 0, ("cpy", "i", 0, "o", 1, 1, -1, -1, 0)),
          tbs(1, -1, 0, 0, ("r", "o", 0, "o", 0, 1, -1, -1, 0)),
          tbs(2, 0, -1, 1, ("s", "i", 0, "o", 1, 1, -1, -1, 0))]
    return algo("allgather", 2, 2, {0: (1, 2, 0, g0), 1: (1, 2, 0, g1)})


def test_race_and_its_fix():
    rep = verify(_copy_then_send(dep=False))
    assert "race" in codes(rep)
    f = next(f for f in rep.findings if f.code == "race")
    assert f.gpu == 0 and "tb 0 step 0" in f.message and "tb 1 step 0" in f.message
    assert verify(_copy_then_send(dep=True)).ok


def test_race_through_in_place_aliasing():
    # tb 1 receives into o[1] while tb 2 sends i[1]: distinct out-of-place, the same chunk in-place
    g = lambda r: [  # noqa: E731
        tbs(0, 1 - r, -1, 0, ("s", "i", 1 - r, "o", 1 - r, 1, -1, -1, 0)),
        tbs(1, -1, 1 - r, 0, ("rrc", "i", r, "o", r, 1, -1, -1, 0)),
        tbs(2, 1 - r, -1, 1, ("s", "i", r, "o", r, 1, -1, -1, 0)),
        tbs(3, -1, 1 - r, 1, ("r", "i", 1 - r, "o", 1 - r, 1, -1, -1, 0))]
    text = algo("allreduce", 2, 2, {0: (2, 2, 0, g(0)), 1: (2, 2, 0, g(1))})
    # out-of-place this is not an allreduce (o[1-r] holds only the peer's copy) but race-free
    assert "race" not in codes(verify(text, inplace=False))
    assert "race" in codes(verify(text, inplace=True))


def test_wrong_offset():
    text = ring_allgather(3)
    bad = text.replace('type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1"',
                       'type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="2"', 1)
    assert bad != text
    rep = verify(bad)
    assert "wrong-contribution" in codes(rep) or "unwritten-output" in codes(rep)
    assert "race" in codes(rep) or "wrong-contribution" in codes(rep)


def test_pair_allreduce_passes():
    assert verify(pair_allreduce("r", "rrcs")).ok


def test_double_counted_contribution():
    rep = verify(pair_allreduce("rrc", "rrcs"))
    assert "double-count" in codes(rep)
    f = next(f for f in rep.findings if f.code == "double-count" and f.tb is not None)
    assert f.gpu == 0 and f.step == 1 and "(0,0)" in f.message


def test_missing_contribution():
    rep = verify(pair_allreduce("r", "rcs"))
    assert "missing-contribution" in codes(rep)
    msgs = [f.message for f in rep.findings if f.code == "missing-contribution"]
    # rank 1 stored what it received instead of reducing, and forwarded that to rank 0
    assert any("rank 1 output chunk 0" in m and "missing {(1,0)}" in m for m in msgs)
    assert any("rank 0 output chunk 0" in m and "missing {(1,0)}" in m for m in msgs)


def test_cnt_mismatch_on_a_link():
    text = pair_allreduce("r", "rrcs").replace(
        'type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1"',
        'type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="0"')
    rep = verify(text)
    # one defect, one finding: the loader's rule names it, the hang it causes is grouped under it
    assert [f.code for f in rep.roots if f.severity == "error"] == ["link-cnt-mismatch"]
    assert "cnt-mismatch" not in codes(rep)
    root = rep.findings.index(next(f for f in rep.findings if f.code == "link-cnt-mismatch"))
    assert [f.code for f in rep.consequences(root)] == ["deadlock"]


def test_dependency_on_a_step_that_never_publishes():
    g0 = [tbs(0, -1, -1, 0, ("cpy", "i", 0, "o", 0, 1, -1, -1, 0)),
          tbs(1, 1, -1, 0, ("s", "o", 0, "o", 0, 1, 0, 0, 0))]
    g1 = [tbs(0, -1, 0, 0, ("r", "o", 0, "o", 0, 1, -1, -1, 0))]
    text = algo("broadcast", 2, 1, {0: (1, 1, 0, g0), 1: (1, 1, 0, g1)}, root=0)
    rep = verify(text)
    assert [f.code for f in rep.roots if f.severity == "error"] == ["dep-never-released"]
    assert [f.code for f in rep.consequences(0)] == ["deadlock"]
    assert verify(text.replace('dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n    </tb>\n    <tb id="1"',
                               'dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>\n    </tb>\n    <tb id="1"',
                               1)).ok


def test_leftover_message():
    text = pair_allreduce("r", "rrcs").replace(
        '</tb>\n  </gpu>\n  <gpu id="1"',
        '</tb>\n  </gpu>\n  <gpu id="1"', 1)
    g0 = [tbs(0, 1, 1, 0, ("s", "i", 0, "i", 0, 1, -1, -1, 0), ("r", "i", 0, "i", 0, 1, -1, -1, 0),
              ("s", "i", 0, "i", 0, 1, -1, -1, 0))]
    g1 = [tbs(0, 0, 0, 0, ("rrcs", "i", 0, "i", 0, 1, -1, -1, 0))]
    text = algo("allreduce", 2, 1, {0: (1, 1, 0, g0), 1: (1, 1, 0, g1)}, inplace=1, outofplace=0)
    rep = verify(text)
    assert "leftover-message" in codes(rep)
    assert [f.code for f in rep.roots if f.severity == "error"] == ["link-cnt-mismatch"]


def test_uninitialised_read():
    g0 = [tbs(0, 1, -1, 0, ("s", "s", 0, "o", 0, 1, -1, -1, 0))]
    g1 = [tbs(0, -1, 0, 0, ("r", "s", 0, "o", 0, 1, -1, -1, 0))]
    text = algo("broadcast", 2, 1, {0: (1, 1, 1, g0), 1: (1, 1, 0, g1)}, root=0)
    rep = verify(text)
    assert "uninitialised-read" in codes(rep)
    f = next(f for f in rep.findings if f.code == "uninitialised-read")
    assert (f.gpu, f.tb, f.step) == (0, 0, 0) and "scratch chunk 0" in f.message


def test_unknown_collective_has_no_postcondition_verdict():
    text = ring_allgather(2).replace('coll="allgather"', 'coll="custom"')
    rep = verify(text, target="legacy")      # legacy loads "custom"; exec rejects it
    assert rep.ok, rep.first_reason
    assert "no-postcondition" in {f.code for f in rep.findings}


def test_out_of_bounds_offset():
    text = pair_allreduce("r", "rrcs").replace('type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0"',
                                                 'type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="1"')
    assert "out-of-bounds" in codes(verify(text))


def test_fused_reductions_count_each_operand_once():
    # local allreduce-like: tb 0 reduces three received copies with a fused re chain
    g0 = [tbs(0, -1, 1, 0, ("r", "i", 0, "s", 0, 1, -1, -1, 1)),
          tbs(1, -1, -1, 0, ("nop", "i", -1, "o", -1, 0, 0, 0, 0),
              ("re", "s", 0, "i", 0, 1, 0, 0, 0), ("cpy", "i", 0, "o", 0, 1, -1, -1, 0))]
    g1 = [tbs(0, 0, -1, 0, ("s", "i", 0, "s", 0, 1, -1, -1, 0))]
    text = algo("reduce", 2, 1, {0: (1, 1, 1, g0), 1: (1, 1, 0, g1)}, root=0)
    rep = verify(text)
    assert rep.ok, rep.findings
