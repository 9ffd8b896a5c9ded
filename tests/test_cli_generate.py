"""The generate/list command line: outputs, and one clear line + exit 2 for every bad input."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ccxml.cli import main
from ccxml.xmlload import loads


def run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_generate_writes_the_default_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["generate", "ring", "--ranks", "8"], capsys)
    assert code == 0
    path = tmp_path / "out" / "ring_allreduce_8.xml"
    assert path.is_file()
    assert "wrote out/ring_allreduce_8.xml" in out and "8 ranks" in out and "steps" in out
    sched = loads(path.read_text())
    assert sched.ngpus == 8 and sched.coll == "allreduce"
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["ring_allreduce_8.xml"]  # no temp left


def test_generate_to_stdout_and_to_a_path(tmp_path, capsys):
    code, out, err = run(["generate", "ring", "--ranks", "4", "--coll", "allgather", "-o", "-"], capsys)
    assert code == 0 and out.startswith("<algo ") and out.rstrip().endswith("</algo>")
    assert "wrote stdout" in err
    target = tmp_path / "sub" / "ag.xml"
    code, out, err = run(["generate", "ring", "-n", "5", "-c", "broadcast", "--root", "3",
                          "--target", "rccl", "--proto", "LL", "--inplace", "-o", str(target)], capsys)
    assert code == 0
    sched = loads(target.read_text())
    assert (sched.root, sched.proto, sched.inplace, sched.outofplace) == (3, "LL", 1, 0)


def test_generate_verify_flag(capsys):
    code, out, err = run(["generate", "ring", "--ranks", "6", "--coll", "reducescatter",
                          "--verify", "-o", "-"], capsys)
    assert code == 0 and "PASS stdout" in err


def test_list_shows_the_matrix(capsys):
    code, out, err = run(["list"], capsys)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["AR", "AG", "RS", "A2A", "A2AV", "BC", "RD", "GA", "SC"]
    ring = next(r for r in rows if r.startswith("ring"))
    assert ring.split()[1:] == ["x", "x", "x", ".", ".", "x", "x", "x", "x"]


@pytest.mark.parametrize("args, message", [
    (["generate", "nosuch", "--ranks", "4"], "unknown algorithm 'nosuch'"),
    (["generate", "ring", "--ranks", "4", "--coll", "alltoall"], "ring does not support alltoall; it supports allreduce"),
    (["generate", "ring", "--ranks", "1"], "--ranks must be an integer >= 2, got 1"),
    (["generate", "ring", "--ranks", "4", "--coll", "broadcast", "--root", "4"], "--root 4 is out of range for 4 ranks"),
    (["generate", "ring", "--ranks", "4", "--coll", "broadcast", "--root", "-1"], "--root -1 is out of range"),
    (["generate", "ring", "--ranks", "4", "--channels", "40"], "exceeds the exec limit of 31"),
    (["generate", "ring", "--ranks", "4", "--coll", "gather", "--target", "legacy"], "legacy runtime has no gather"),
    (["generate", "ring", "--ranks", "4", "--coll", "allreduce", "--root", "1"], "takes no --root"),
    (["generate", "ring"], "--ranks is required"),
    (["generate", "ring", "--ranks", "four"], "not a valid integer"),
    (["generate", "ring", "--ranks", "4", "--target", "cuda"], "'cuda' is not one of"),
    (["frobnicate"], "No such command"),
])
def test_bad_input_is_one_clear_line_and_exit_2(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(args, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccxml: "), err
    assert message in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()        # nothing half-written


def test_unwritable_output_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = run(["generate", "ring", "--ranks", "4", "-o", str(blocker / "x.xml")], capsys)
    assert code == 2 and err.startswith("ccxml: cannot write")


def test_python_dash_m_and_the_script_run(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-m", "ccxml", "generate", "ring", "--ranks", "3", "-o", "-"],
                       capture_output=True, text=True, cwd=repo)
    assert r.returncode == 0 and r.stdout.startswith("<algo ")
    r = subprocess.run([sys.executable, os.path.join(repo, "algorithms", "ring.py"), "--ranks", "3",
                        "--coll", "allgather", "-o", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and 'coll="allgather"' in r.stdout, r.stderr
