"""The generate/list command line: outputs, and one clear line + exit 2 for every bad input."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from ccxml.cli.app import main
from ccxml.loader.reader import loads


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
    (["generate", "mesh", "--ranks", "4", "--variant", "three-shot"],
     "mesh: --variant must be one of two-shot, one-shot; got 'three-shot'"),
    (["generate", "mesh", "--ranks", "4", "--coll", "allgather", "--variant", "one-shot"],
     "mesh allgather takes no --variant"),
    (["generate", "ring", "--ranks", "4", "--inter", "nb"], "ring allreduce takes no --inter"),
    (["generate", "2d-torus", "--servers", "2", "--ranks-per-server", "2", "--intra", "nhr"],
     "2d-torus: --intra must be one of ring, mesh; got 'nhr'"),
    (["generate", "2d-mesh", "--servers", "2", "--ranks-per-server", "2", "--inter", "mesh"],
     "2d-mesh: --inter must be one of ring, nhr, nb, rhd; got 'mesh'"),
    (["generate", "hierarchical", "--servers", "2", "--ranks-per-server", "2", "--intra", "mesh"],
     "hierarchical: --intra must be one of star, ring; got 'mesh'"),
    (["generate", "2d-ring", "--servers", "2", "--ranks-per-server", "2", "--intra", "ring"],
     "2d-ring: --intra must be one of allreduce, reduce; got 'ring'"),
    (["generate", "pipeline", "--servers", "2", "--ranks-per-server", "2", "--inter", "nb"],
     "pipeline allreduce takes no --inter"),
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
    repo = str(REPO)
    r = subprocess.run([sys.executable, "-m", "ccxml", "generate", "ring", "--ranks", "3", "-o", "-"],
                       capture_output=True, text=True, cwd=repo)
    assert r.returncode == 0 and r.stdout.startswith("<algo ")
    r = subprocess.run([sys.executable, os.path.join(repo, "algorithms", "ring.py"), "--ranks", "3",
                        "--coll", "allgather", "-o", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and 'coll="allgather"' in r.stdout, r.stderr


def test_mesh_one_shot_variant(tmp_path, capsys):
    """``--variant one-shot`` writes the one-shot Mesh AllReduce (every rank sends its whole
    buffer to every peer and reduces locally: one round, a buffer of one chunk), and it verifies."""
    from dataflow_rounds import depth

    from ccxml.algorithms import build
    one, two = tmp_path / "one.xml", tmp_path / "two.xml"
    code, out, err = run(["generate", "mesh", "--ranks", "5", "--variant", "one-shot", "--verify",
                          "-o", str(one)], capsys)
    assert code == 0 and f"PASS {one}" in out, err
    code, out, err = run(["generate", "mesh", "--ranks", "5", "-o", str(two)], capsys)
    assert code == 0
    text = one.read_text()
    assert text == build("mesh", "allreduce", 5, variant="one-shot").to_xml("exec")
    assert text != two.read_text()
    sched = loads(text)
    assert sched.nchunksperloop == 1 and loads(two.read_text()).nchunksperloop == 5
    assert depth(text) == [1] * 5 and depth(two.read_text()) == [2] * 5
    for g in sched.gpus:                          # the whole buffer to each of the 4 peers
        sent = [(tb.send, st.cnt) for tb in g.tbs for st in tb.steps if st.type == "s"]
        assert sorted(peer for peer, _ in sent) == [r for r in range(5) if r != g.id]
        assert {cnt for _, cnt in sent} == {1}


def test_help_names_every_choice():
    """The --intra/--inter/--variant help (static, so that ``ccxml generate`` imports no
    algorithm) lists every choice the registry records for them, and each builder's default
    inner algorithm."""
    import inspect

    from ccxml.algorithms import registry
    from ccxml.cli import generate as cg
    from ccxml.tables.schemes import INTER
    helps = {"intra": cg.INTRA_HELP, "inter": cg.INTER_HELP, "variant": cg.VARIANT_HELP}
    seen = set()
    for alg in registry.available().values():
        for coll, choices in alg.choices.items():
            for key, allowed in choices.items():
                seen.add(key)
                for c in allowed:
                    assert c in helps[key], (alg.name, key, c)
            if "intra" in choices:
                default = inspect.signature(alg.builders[coll]).parameters["intra"].default
                assert f"{default} (default)" in cg.INTRA_HELP, (alg.name, default)
    assert seen == set(helps)
    assert " | ".join(INTER) in cg.INTER_HELP


def test_generate_without_a_topology_does_not_load_the_topology_model(tmp_path):
    """Start-up: a flat ``ccxml generate`` imports neither ccxml.topology.model nor pydantic."""
    code = ("import sys\nfrom ccxml.cli.app import main\n"
            "try:\n    main(['generate', 'ring', '--ranks', '8', '-q', '-o', sys.argv[1]])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m == 'ccxml.topology.model' or m.startswith('pydantic')))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.xml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_the_program_flushes_its_output_and_keeps_exit_codes(tmp_path):
    """``python -m ccxml`` leaves without tearing its objects down: stdout must still be
    complete, and the exit codes stay 0 (done) and 2 (bad input, one line)."""
    ok = subprocess.run([sys.executable, "-m", "ccxml", "generate", "ring", "--ranks", "16",
                         "-o", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("<algo ") and ok.stdout.endswith("</algo>\n")
    bad = subprocess.run([sys.executable, "-m", "ccxml", "generate", "ring", "--ranks", "1"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("ccxml: ")
