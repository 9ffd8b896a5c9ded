"""The interpreter on the real corpus: INDEX.md's ``sched`` column, and a postcondition verdict
for every file the loader can read (PASS, or FAIL for a reason checked by hand, written below)."""
from __future__ import annotations

import pytest
from conftest import CORPUS  # noqa: E402

from ccxml.interpreter import SCHEDULE_CODES, verify
from ccxml.loader import reader as xmlload

pytestmark = pytest.mark.skipif(not (CORPUS / "INDEX.md").is_file(), reason="corpus not present")

#: files whose interpreter verdict is FAIL, with the error codes and the hand-checked reason
EXPECTED_FAILURES = {
    # gpu 6 tbs 4 and 5 both send to gpu 2 on chan 0 (and gpu 2 has two receivers): one FIFO is
    # shared (the loader's two-tbs-one-connection), the pairing of sends and receives is
    # undefined, and the result is wrong: consequences, grouped under the loader's finding
    **{f"microsoft__msccl-tools/ar_{n}.xml": {"missing-contribution", "wrong-contribution"}
       for n in (1, 2, 4, 8)},
    # coll="custom" (no postcondition), declared inplace="1": in the in-place call i and o alias, and
    # e.g. gpu 1 tb 0 receives into o[0..8) while tb 4 sends i[0..8) with no dependency between them
    **{f"microsoft__msccl-tools/alltonext_{n}in.xml": {"race"} for n in (2, 4, 8, 16)},
    # ns-3 timing files, never checked for correctness: each GPU sends its chunk and *receives*
    # (type r, no reduction) the peer's into the other position, e.g. gpu 0 ends with
    # i[0] = {(1,1)} where allreduce needs {(0,0),(1,0)}
    "rouge3877__ns3-msccl/allreduce_ring_2_1.xml": {"wrong-contribution"},
    "rouge3877__ns3-msccl/algorithms__allreduce_ring_2_1.xml": {"wrong-contribution"},
    "rouge3877__ns3-msccl/test_x2_gpu.xml": {"wrong-contribution", "missing-contribution"},
    # same pattern on 3 GPUs with 3 TBs per GPU all writing i[1]: unordered writes (race)
    "rouge3877__ns3-msccl/test_x3_gpu.xml": {"race", "wrong-contribution", "missing-contribution"},
    # INDEX sched=dl: both GPUs' single TB start with r from each other
    "spriestgcl__teccl-msccl/64MB_msccl_annotated.xml": {"deadlock"},
    "spriestgcl__teccl-msccl/64MB_msccl_strict.xml": {"deadlock"},
}

SCHED_CODES = {**SCHEDULE_CODES, "depid-too-large": "depid>127"}
#: files whose interpreter errors are all consequences of a defect the loader reports
CAUSED = {f"microsoft__msccl-tools/ar_{n}.xml" for n in (1, 2, 4, 8)}


def index_rows():
    if not (CORPUS / "INDEX.md").is_file():
        return []
    rows = []
    for line in (CORPUS / "INDEX.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| file"):
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((cols[0], cols[-1]))
    return rows


ROWS = index_rows()


def _report(name):
    try:
        schedule = xmlload.load(str(CORPUS / name))
    except xmlload.LoadError:
        pytest.skip("the loader cannot read this file")
    return verify(schedule, target="exec")


@pytest.mark.parametrize("name,sched", ROWS, ids=[r[0] for r in ROWS])
def test_corpus_file(name, sched):
    rep = _report(name)
    found = {SCHED_CODES[f.code] for f in rep.findings if f.code in SCHED_CODES}
    expected = set() if sched == "ok" else set(sched.split(","))
    assert found == expected, [str(f) for f in rep.findings if f.code in SCHED_CODES]
    errors = {f.code for f in rep.interpreter_findings if f.severity == "error"}
    assert errors == EXPECTED_FAILURES.get(name, set()), rep.first_reason
    own = [f for f in rep.interpreter_findings if f.severity == "error" and f in rep.roots]
    assert (name in CAUSED) == (bool(errors) and not own), [str(f) for f in own]
    # every file with a known collective got a postcondition verdict (checked chunks)
    if "no-postcondition" not in {f.code for f in rep.findings} and not {"deadlock"} & errors:
        assert all(s.get("chunks_checked", 0) > 0 for s in rep.stats["per_form"].values())


def test_expected_failures_are_corpus_files():
    names = {n for n, _ in ROWS}
    assert set(EXPECTED_FAILURES) <= names
