"""Where a target's limits stop a schedule, ``simulate`` and ``select`` still time it — built
without any limit (:data:`ccxml.vocab.wire.UNBOUNDED`) — and say so, instead of refusing.

The limits are shrunk here (an exec runtime keeping 20 XML nodes per rank) so that small
schedules hit them; at scale the real 4095 does (pipeline on dgx-h100 x 128)."""
from __future__ import annotations

import dataclasses
import json

import pytest
from in_process import ccxml

from ccxml.vocab import wire


@pytest.fixture
def small_exec(monkeypatch):
    monkeypatch.setitem(wire.PROFILES, "exec", dataclasses.replace(wire.PROFILES["exec"], max_nodes=20))


def _rows(out):
    return [ln.split() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]


def test_simulate_times_a_schedule_the_limits_stop_and_says_so(small_exec):
    code, out, err = ccxml("simulate", "ring", "-n", "8", "-c", "allreduce", "--bytes", "1M")
    assert code == 0, err
    assert "needs" in out and "XML nodes" in out and "timed without the exec runtime's limits" in out
    # the same figure as the schedule built without limits and simulated directly
    from ccxml.driver import algorithm_schedule
    from ccxml.simulator import DEFAULT_TOPOLOGY, simulate_schedule
    sched = algorithm_schedule("ring", "allreduce", 8, target="unbounded", max_bytes=1 << 20)
    want = simulate_schedule(sched, 1 << 20, DEFAULT_TOPOLOGY).time_s
    assert _rows(out)[0][1] == f"{want * 1e6:.2f}"


def test_without_the_fallback_the_limit_is_still_an_error(small_exec):
    from ccxml.driver import algorithm_schedule
    from ccxml.vocab.errors import LimitError
    with pytest.raises(LimitError, match="XML nodes"):
        algorithm_schedule("ring", "allreduce", 8, max_bytes=1 << 20)
    code, _, err = ccxml("generate", "ring", "-n", "8", "-c", "allreduce")
    assert code == 2 and "XML nodes" in err


def test_select_ranks_limited_candidates_and_marks_them(small_exec):
    code, out, err = ccxml("select", "-n", "8", "-c", "allreduce", "--bytes", "1M", "--json", "-j", "1")
    assert code == 0, err
    doc = json.loads(out)
    marked = [r for r in doc["ranking"] if "unbounded" in r]
    assert marked and all("XML nodes" in r["unbounded"] for r in marked)
    assert not any("XML nodes" in u["reason"] for u in doc["unavailable"])
    assert any("timed without the exec runtime's limits" in n for n in doc["notes"])
    code, table, _ = ccxml("select", "-n", "8", "-c", "allreduce", "--bytes", "1M", "-j", "1")
    assert "(no limits)" in table
    code2, table2, _ = ccxml("select", "-n", "8", "-c", "allreduce", "--bytes", "1M", "-j", "2")
    assert table2 == table


def test_unbounded_is_no_target_a_file_is_written_for():
    assert "unbounded" not in wire.PROFILES
    assert wire.profile("unbounded") is wire.UNBOUNDED
    code, _, err = ccxml("generate", "ring", "-n", "4", "-c", "allreduce", "--target", "unbounded")
    assert code == 2
