"""One defect, one finding (issue 26 part 3): the issue's example, end to end.

A ring AllGather on 4 ranks whose first send has cnt 2 instead of 1. The loader names the two
rules the edit breaks (offset-past-buffer, link-cnt-mismatch) once each; the interpreter adds only
what execution shows, grouped under the defect that causes it, in the report, its JSON, the CLI
and JUnit."""
from __future__ import annotations

import json

from click.testing import CliRunner

from ccxml.cli.app import cli
from ccxml.driver import generate_text
from ccxml.interpreter import verify


def ring_with_wrong_cnt() -> str:
    text = generate_text("ring", "allgather", 4, target="exec")[0]
    first = text.index('type="s"')
    cnt = text.index('cnt="1"', first)
    return text[:cnt] + 'cnt="2"' + text[cnt + len('cnt="1"'):]


def test_the_issue_example_is_two_defects_with_their_consequences_under_them():
    for fast in (True, False):
        rep = verify(ring_with_wrong_cnt(), fast=fast)
        codes = [f.code for f in rep.findings]
        # each static rule once, by the loader; no interpreter twin of it
        assert codes.count("offset-past-buffer") == codes.count("link-cnt-mismatch") == 1
        assert "cnt-mismatch" not in codes
        assert [f.code for f in rep.roots] == ["offset-past-buffer", "link-cnt-mismatch"]
        oob = codes.index("offset-past-buffer")
        under = rep.consequences(oob)
        assert [f.code for f in under] == ["out-of-bounds"] + ["wrong-contribution"] * 3
        assert under[0].step == rep.findings[oob].step == 0
        assert sorted(f.gpu for f in under[1:]) == [1, 2, 3]
        assert rep.consequences(codes.index("link-cnt-mismatch")) == []
        assert not rep.ok and rep.first_reason.startswith("offset-past-buffer")


def test_an_unrelated_defect_does_not_swallow_execution_findings():
    """A consequence needs a root that reaches its rank: a clean ring keeps no root, and an
    execution error with no static defect behind it is its own root."""
    rep = verify(generate_text("ring", "allgather", 4, target="exec")[0])
    assert rep.ok and rep.caused_by == {}


def test_json_junit_and_the_cli_carry_the_grouping(tmp_path):
    bad = tmp_path / "ag_bad.xml"
    bad.write_text(ring_with_wrong_cnt())
    runner = CliRunner()
    res = runner.invoke(cli, ["verify", "--json", str(bad)])
    assert res.exit_code == 1
    rep, = json.loads(res.output)
    assert {"path", "ok", "first_reason", "strict", "findings", "stats"} <= set(rep)   # old keys kept
    roots = [i for i, f in enumerate(rep["findings"]) if "caused_by" not in f]
    assert rep["defects"] == len(roots) == 2
    assert {rep["findings"][f["caused_by"]]["code"] for f in rep["findings"] if "caused_by" in f} == {
        "offset-past-buffer"}
    res = runner.invoke(cli, ["verify", "--findings", "--junit", str(tmp_path / "j.xml"), str(bad)])
    assert res.exit_code == 1
    lines = res.output.splitlines()
    assert lines[0].startswith(f"FAIL {bad}: offset-past-buffer")
    assert lines[1].startswith("  error: offset-past-buffer")
    assert lines[2].startswith("    caused: error: out-of-bounds")
    assert sum(line.startswith("    caused: error: wrong-contribution") for line in lines) == 3
    assert lines[-1].startswith("  error: link-cnt-mismatch")
    assert "  caused: error: out-of-bounds" in (tmp_path / "j.xml").read_text()
