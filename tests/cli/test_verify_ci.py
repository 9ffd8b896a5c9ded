"""``ccxml verify --strict`` and ``--junit``: verify as a merge gate and for CI dashboards."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from handbuilt import direct_alltoall, split_allgather
from in_process import ccxml
from lxml import etree


def run(*args):
    return ccxml("verify", *args)


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.xml"
    good.write_text(split_allgather())
    warn = tmp_path / "late.xml"                 # correct, but a dependency is released late
    warn.write_text(split_allgather(late_release=True))
    bad = tmp_path / "deadlock.xml"
    bad.write_text(direct_alltoall(2, recv_first=True))
    return good, warn, bad


def test_strict_fails_a_file_with_warnings_only(files):
    good, warn, _ = files
    code, out, _ = run(good, warn)
    assert code == 0
    assert out.splitlines()[1].startswith(f"PASS {warn} (") and "warnings: dep-released-late" in out
    code, out, _ = run("--strict", good, warn)
    assert code == 1
    first, second, tally = out.splitlines()
    assert first.startswith(f"PASS {good} (")
    assert tally == "1 passed, 1 failed, 2 warnings"   # dep-released-late at 2 steps, said once (loader)
    assert second.startswith(f"FAIL {warn}: dep-") and second.endswith("[a warning; --strict fails it]")


def test_strict_json_counts_warnings(files):
    _, warn, _ = files
    code, out, _ = run("--json", warn)
    assert code == 0 and json.loads(out)[0]["ok"] is True
    code, out, _ = run("--json", "--strict", warn)
    rep, = json.loads(out)
    assert code == 1 and rep["ok"] is False and rep["strict"] is True
    assert rep["first_reason"].startswith("dep-")


def junit(path):
    root = etree.parse(str(path)).getroot()
    suite, = root.findall("testsuite")
    return root, suite, suite.findall("testcase")


def test_junit_one_case_per_file_with_findings(files, tmp_path):
    good, warn, bad = files
    report = tmp_path / "reports" / "verify.xml"       # the folder is made
    code, out, _ = run("--junit", report, good, warn, bad)
    assert code == 1 and out.count("\n") == 4 and out.splitlines()[-1] == "2 passed, 1 failed, 2 warnings"
    root, suite, cases = junit(report)
    assert root.tag == "testsuites" and root.get("tests") == suite.get("tests") == "3"
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    assert [c.get("name") for c in cases] == [str(good), str(warn), str(bad)]
    assert all(c.get("classname") == "ccxml.verify.exec" and float(c.get("time")) >= 0 for c in cases)
    assert [c.find("failure") is not None for c in cases] == [False, False, True]
    failure = cases[2].find("failure")
    assert failure.get("type") == "deadlock" and failure.get("message").startswith("deadlock: hangs")
    assert failure.text.startswith("error: deadlock: ")
    assert "warning: dep-released-late" in cases[1].find("system-out").text
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"target": "exec", "strict": "false"}


def test_junit_strict_fails_the_warning_file(files, tmp_path):
    good, warn, bad = files
    report = tmp_path / "strict.xml"
    code, _, _ = run("--strict", "--junit", report, good, warn, bad)
    assert code == 1
    _, suite, cases = junit(report)
    assert suite.get("failures") == "2"
    failure = cases[1].find("failure")
    assert failure.get("type").startswith("dep-") and "warning: dep-released-late" in failure.text


def test_junit_records_an_unusable_file_as_an_error(files, tmp_path):
    good, _, bad = files
    junk = tmp_path / "junk.xml"
    junk.write_bytes(b"\x00\x01binary junk")
    report = tmp_path / "r.xml"
    code, out, err = run("--junit", report, good, junk, bad)
    assert code == 2 and err.startswith("ccxml: ") and err.count("\n") == 1
    _, suite, cases = junit(report)
    assert suite.get("tests") == "2" and suite.get("errors") == "1"      # the run stops at junk
    error = cases[1].find("error")
    assert cases[1].get("name") == str(junk) and error.get("type") == "unusable"
    assert error.get("message") == err[len("ccxml: "):].strip()


def test_junit_is_written_whole(files, tmp_path):
    good, _, _ = files
    report = tmp_path / "r.xml"
    report.write_text("old")
    assert run("--junit", report, good)[0] == 0
    assert report.read_text().startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    assert [f for f in os.listdir(tmp_path) if f.startswith(".ccxml-")] == []
    code, _, err = run("--junit", tmp_path, good)          # a folder: cannot be written
    assert code == 2 and err.startswith("ccxml: ") and err.count("\n") == 1


def test_junit_has_the_layout_and_attributes_pytest_writes(files, tmp_path):
    """What CI dashboards read from pytest's --junitxml (a passing, a failing and an erroring
    test) is all in ccxml's report too, in the same places (pytest's run-specific timestamp and
    hostname aside)."""
    (tmp_path / "test_ref.py").write_text(
        "import pytest\n"
        "def test_pass():\n    print('out')\n"
        "def test_fail():\n    assert 0, 'boom'\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('x')\n"
        "def test_error(broken):\n    pass\n")
    ref = tmp_path / "ref.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={ref}",
                    "-o", "junit_family=xunit2", "test_ref.py"], cwd=tmp_path, capture_output=True)
    good, _, bad = files
    junk = tmp_path / "junk.xml"
    junk.write_text("not xml")
    ours = tmp_path / "ours.xml"
    run("--junit", ours, good, bad)
    ours_err = tmp_path / "ours_err.xml"
    run("--junit", ours_err, junk)

    def shape(*paths):
        found = {}
        for p in paths:
            for el in etree.parse(str(p)).iter():
                path = "/".join(a.tag for a in reversed(list(el.iterancestors()))) + "/" + el.tag
                found.setdefault(path, set()).update(el.attrib)
        return found

    theirs, mine = shape(ref), shape(ours, ours_err)
    for path, attrs in theirs.items():
        assert path in mine, path
        assert attrs - {"timestamp", "hostname"} <= mine[path], (path, attrs, mine[path])
