"""ccxml's loader verdicts on the 148-file corpus equal the exec/rccl/legacy columns of INDEX.md.

Reads ../shared/xml-corpus/INDEX.md (beside the repo) and skips when the corpus is absent.
For every file and every profile: ok/not-ok must agree; a REJECT or LAUNCH-FAIL must come with
the runtime's own first message; rows that say "with outofplace/minBytes/maxBytes added: X" are
re-checked with those attributes added (outofplace = not inplace, sizes 0, as INDEX.md says).
The `sched` column is compared with the loader's safety findings (deadlocks, `dl`, are the
interpreter's job and are not checked here).
"""
from __future__ import annotations

import dataclasses
import functools

import pytest
from conftest import CORPUS  # noqa: E402

from ccxml.loader.reader import load
from ccxml.loader.rules import safety_findings, verdict

INDEX = CORPUS / "INDEX.md"

pytestmark = pytest.mark.skipif(not INDEX.is_file(), reason="../shared/xml-corpus not present")

#: Documented disagreements with INDEX.md, (file, profile) -> why INDEX.md is wrong there.
EXCEPTIONS = {
    ("microsoft__msccl-tools/ap_32.xml", "legacy"):
        "INDEX.md's legacy column only checks the attributes legacy requires (its legend says "
        "so). ap_32.xml has 256 TBs per GPU (ids 0..255) and the legacy runtime accepts TB ids "
        "< 216 (MSCCL_MAX_NUM_THREAD_BLOCKS, msccl-runtime.md §5), so legacy rejects it with "
        "'thread block id 216'.",
}

#: INDEX.md sched words -> ccxml safety codes that express them
SCHED_CODES = {
    "depid>127": {"depid-too-large"},
    "shared-connection": {"two-tbs-one-connection"},
    "unmatched-link": {"link-undeclared", "link-cnt-mismatch"},
    "peer>=ngpus": {"peer-out-of-range"},
    "chan>=nchannels": {"chan-not-connected"},
    "s-not-0..n-1": {"step-index"},
    "nop-without-dep": {"nop-without-dep"},
    "dep-target-missing": {"dep-target-missing"},
    "dep-never-released": {"dep-never-released"},
    "dep-released-late": {"dep-released-late"},
}
SIMULATED = {"dl", "dl-fifo"}    # found by the interpreter, not by inspection


def _rows() -> list[dict]:
    if not INDEX.is_file():
        return []
    rows = []
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 8 or not cells[1].endswith(".xml"):
            continue
        rows.append({"file": cells[1], "exec": cells[-5], "rccl": cells[-4], "legacy": cells[-3],
                     "sched": cells[-2]})
    return rows


ROWS = _rows()


@functools.lru_cache(maxsize=None)
def _load(name: str):
    return load(CORPUS / name)


def _first_and_retry(column: str) -> tuple[str, str | None]:
    """Split 'REJECT: msg; with ... added: X' into ('REJECT: msg', 'X')."""
    head, sep, tail = column.partition("; with ")
    if not sep:
        return column, None
    return head, tail.partition(" added: ")[2]


def _expect(ours: str, expected: str, where: str) -> None:
    exp_ok = expected.startswith("ok")
    assert (ours == "ok") == exp_ok, f"{where}: ccxml says {ours!r}, INDEX.md says {expected!r}"
    if expected.startswith("LAUNCH-FAIL"):
        assert ours.startswith("launch-fail: rccl-full-ops"), f"{where}: {ours!r}"
        used = expected.split("uses ", 1)[1].strip()
        assert f"uses {used}" in ours, f"{where}: {ours!r} vs {expected!r}"
    elif expected.startswith("REJECT: "):
        message = expected[len("REJECT: "):]
        assert ours.startswith("reject: ") and message in ours, f"{where}: {ours!r} vs {expected!r}"


def test_index_lists_148_files():
    assert len(ROWS) == 148
    assert all((CORPUS / r["file"]).is_file() for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_loader_verdicts_match_index(row):
    s = _load(row["file"])
    for prof in ("exec", "rccl", "legacy"):
        where = f"{row['file']} [{prof}]"
        if (row["file"], prof) in EXCEPTIONS:
            assert verdict(s, prof) != "ok" and row[prof].startswith("ok"), \
                f"documented exception no longer applies: {where}"
            continue
        first, retry = _first_and_retry(row[prof])
        _expect(verdict(s, prof), first, where)
        if retry is not None:
            added = {"outofplace": "0" if s.inplace else "1", "minBytes": "0", "maxBytes": "0"}
            fixed = dataclasses.replace(s, attrs={**added, **s.attrs})
            _expect(verdict(fixed, prof), retry, where + " with attributes added")


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_safety_findings_match_sched_column(row):
    s = _load(row["file"])
    codes = {f.code for f in safety_findings(s, "exec") if f.severity == "error"}
    words = set(row["sched"].split(",")) - SIMULATED - {"ok"}
    expected = set().union(*(SCHED_CODES[w] for w in words)) if words else set()
    if "unmatched-link" in words:
        # either form of unmatched link satisfies INDEX.md's single word
        assert codes & SCHED_CODES["unmatched-link"], f"{row['file']}: {sorted(codes)}"
        codes -= SCHED_CODES["unmatched-link"]
        expected -= SCHED_CODES["unmatched-link"]
    assert codes == expected, f"{row['file']}: ccxml {sorted(codes)}, INDEX.md {row['sched']!r}"


def test_agreement_totals():
    """The headline figures of INDEX.md: 104 load in exec, 85 load and run on RCCL."""
    exec_ok = sum(verdict(_load(r["file"]), "exec") == "ok" for r in ROWS)
    rccl_ok = sum(verdict(_load(r["file"]), "rccl") == "ok" for r in ROWS)
    assert (exec_ok, rccl_ok) == (104, 85)
