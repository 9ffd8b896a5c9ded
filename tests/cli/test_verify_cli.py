"""``ccxml verify``: one line per file, exit codes 0/1/2, --json, options."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from handbuilt import direct_alltoall, pair_allreduce
from in_process import ccxml

from ccxml.algorithms import ring
from ccxml.frontend.algorithm import Options


def run(*args):
    return ccxml("verify", *args)


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.xml"
    good.write_text(ring.allreduce(4, options=Options(inplace=True)).to_xml("exec"))
    bad = tmp_path / "bad.xml"
    bad.write_text(direct_alltoall(2, recv_first=True))
    dc = tmp_path / "dc.xml"
    dc.write_text(pair_allreduce("rrc", "rrcs"))
    return good, bad, dc


def test_pass_line_and_exit_0(files):
    good, _, _ = files
    rc, out, err = run(good)
    assert rc == 0, err
    assert out.startswith(f"PASS {good} (") and out.count("\n") == 1


def test_fail_line_and_exit_1(files):
    good, bad, dc = files
    rc, out, err = run(good, bad, dc)
    assert rc == 1
    program = subprocess.run([sys.executable, "-m", "ccxml", "verify", str(good), str(bad)],
                             capture_output=True, text=True, timeout=120)     # end to end
    assert program.returncode == 1
    assert [line.split(" (")[0] for line in program.stdout.splitlines()] == [
        line.split(" (")[0] for line in out.splitlines()[:2]] + ["1 passed, 1 failed, 0 warnings"]
    lines = out.splitlines()
    assert lines[3] == "1 passed, 2 failed, 0 warnings" and len(lines) == 4
    assert lines[0].startswith("PASS") and lines[1].startswith(f"FAIL {bad}: deadlock:")
    assert lines[2].startswith(f"FAIL {dc}: double-count:")


def test_unusable_input_exit_2(tmp_path, files):
    junk = tmp_path / "junk.xml"
    junk.write_bytes(b"\x00\x01binary junk")
    for f in (junk, tmp_path / "missing.xml"):
        rc, out, err = run(f)
        assert rc == 2 and err.startswith("ccxml: ") and err.count("\n") == 1
        assert "Traceback" not in err


def test_json_report(files):
    good, bad, _ = files
    rc, out, _ = run("--json", good, bad)
    assert rc == 1
    data = json.loads(out)
    assert [d["ok"] for d in data] == [True, False]
    assert data[1]["findings"][0]["code"] == "deadlock" or any(
        f["code"] == "deadlock" for f in data[1]["findings"])
    assert data[0]["stats"]["steps"] > 0


def test_coll_root_and_form_options(tmp_path):
    f = tmp_path / "bc.xml"
    f.write_text(ring.broadcast(3, root=1).to_xml("exec"))
    assert run(f)[0] == 0
    rc, out, _ = run("--root", 0, f)         # the file was written for root 1
    assert rc == 1 and "FAIL" in out
    rc, out, _ = run("--coll", "allreduce", f)
    assert rc == 1
    rc, out, _ = run("--inplace", f)
    assert "in-place" in out or rc in (0, 1)


def test_alltoallv_counts(tmp_path):
    f = tmp_path / "a2a.xml"
    f.write_text(direct_alltoall(2).replace('coll="alltoall"', 'coll="alltoallv"'))
    counts = tmp_path / "m.csv"
    counts.write_text("1,1\n1,1\n")
    assert run("--counts", counts, f)[0] == 0
    counts.write_text("2,0\n0,2\n")
    assert run("--counts", counts, f)[0] == 1
    counts.write_text("1,x\n")
    rc, _, err = run("--counts", counts, f)
    assert rc == 2 and err.startswith("ccxml: ")
