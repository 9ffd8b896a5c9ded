"""An algorithm simulate builds for more ranks than it proves (vocab.limits.MAX_PROVED_BUILT_RANKS)
is timed with a note instead of a proof whose memory grows as ranks³ (pipeline AllReduce on 512
GPUs took more than 23 GB); at or below it the proof still runs and still refuses a wrong one."""
from __future__ import annotations

from in_process import ccxml

from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS


def test_a_large_built_algorithm_is_timed_with_a_note_not_proved(monkeypatch):
    import ccxml.driver.source as source
    called = []
    monkeypatch.setattr(source, "verification_failure", lambda *a, **k: called.append(1))
    p = MAX_PROVED_BUILT_RANKS + 8
    code, out, err = ccxml("simulate", "ring", "--ranks", str(p), "--coll", "allgather", "--bytes", "1M")
    assert code == 0, err
    assert f"built for {p} ranks and not proved here" in out and not called


def test_a_small_built_algorithm_is_still_proved(monkeypatch):
    import ccxml.driver.source as source
    monkeypatch.setattr(source, "verification_failure", lambda *a, **k: "wrong-contribution: planted")
    code, out, err = ccxml("simulate", "ring", "--ranks", "8", "--coll", "allgather", "--bytes", "1M")
    assert code == 1 and "fails verification: wrong-contribution: planted" in err, (code, out, err)


def test_select_says_when_its_candidates_are_not_proved(monkeypatch):
    import ccxml.driver.source as source
    import ccxml.vocab.limits as limits
    called = []
    monkeypatch.setattr(source, "verification_failure", lambda *a, **k: called.append(1))
    monkeypatch.setattr(limits, "MAX_PROVED_BUILT_RANKS", 6)      # select reads it when called
    code, out, err = ccxml("select", "--ranks", "8", "--coll", "allgather", "--bytes", "1M", "-j", "1")
    assert code == 0, err
    assert "built for 8 ranks and not proved here" in out and not called
    code, out, err = ccxml("select", "--ranks", "6", "--coll", "allgather", "--bytes", "1M", "-j", "1")
    assert code == 0 and "not proved" not in out and called
