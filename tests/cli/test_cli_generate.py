"""The generate/list command line: outputs, and one clear line + exit 2 for every bad input."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO
from in_process import ccxml

from ccxml.loader.reader import loads


def run(args):
    return ccxml(*args)


def test_generate_writes_the_default_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["generate", "ring", "--ranks", "8"])
    assert code == 0
    path = tmp_path / "out" / "ring_allreduce_8.xml"
    assert path.is_file()
    assert "wrote out/ring_allreduce_8.xml" in out and "8 ranks" in out and "steps" in out
    sched = loads(path.read_text())
    assert sched.ngpus == 8 and sched.coll == "allreduce"
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["ring_allreduce_8.xml"]  # no temp left


def test_generate_to_stdout_and_to_a_path(tmp_path):
    code, out, err = run(["generate", "ring", "--ranks", "4", "--coll", "allgather", "-o", "-"])
    assert code == 0 and out.startswith("<algo ") and out.rstrip().endswith("</algo>")
    assert "wrote stdout" in err
    target = tmp_path / "sub" / "ag.xml"
    code, out, err = run(["generate", "ring", "-n", "5", "-c", "broadcast", "--root", "3",
                          "--target", "rccl", "--proto", "LL", "--inplace", "-o", str(target)])
    assert code == 0
    sched = loads(target.read_text())
    assert (sched.root, sched.proto, sched.inplace, sched.outofplace) == (3, "LL", 1, 0)


def test_generate_verify_flag():
    code, out, err = run(["generate", "ring", "--ranks", "6", "--coll", "reducescatter",
                          "--verify", "-o", "-"])
    assert code == 0 and "PASS stdout" in err


def test_list_shows_the_matrix():
    code, out, err = run(["list"])
    assert code == 0
    matrix, legend = out.split("\n\n")
    header, *rows = matrix.splitlines()
    assert header.split() == ["AR", "AG", "RS", "A2A", "A2AV", "BC", "RED", "GA", "SC"]
    ring = next(r for r in rows if r.startswith("ring"))
    assert ring.split()[1:] == ["x", "x", "x", ".", ".", "x", "x", "x", "x"]
    # every label is spelled out below the matrix; RED is reduce, not recursive doubling
    assert legend.strip() == ("columns: AR allreduce, AG allgather, RS reducescatter, A2A alltoall, "
                              "A2AV alltoallv, BC broadcast, RED reduce, GA gather, SC scatter; "
                              "x: the algorithm builds that collective, .: it does not")


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
    (["generate", "ring", "--preset", "dgx-h100", "--nodes", "2"],
     "ring allreduce takes no topology (--topology, --preset, --servers, --groups; the algorithms "
     "that take one: ahc, pipeline, 2d-ring"),
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
    (["generate", "ring", "--ranks", "4", "--dump-after", "fuse"],
     "--dump-after: unknown pass 'fuse'; passes: threadblocks, ordering, fusion, lowering, "
     "splitting, dependencies, numbering, checks"),
    (["generate", "ring", "--ranks", "4", "--dump-after", "fusion", "--target", "rccl"],
     "--dump-after fusion: that pass does not run for target rccl; it runs threadblocks, "
     "ordering, lowering, splitting"),
])
def test_bad_input_is_one_clear_line_and_exit_2(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccxml: "), err
    assert message in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()        # nothing half-written


def test_unwritable_output_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = run(["generate", "ring", "--ranks", "4", "-o", str(blocker / "x.xml")])
    assert code == 2 and err.startswith("ccxml: cannot write")


def test_python_dash_m_and_the_script_run(tmp_path):
    repo = str(REPO)
    r = subprocess.run([sys.executable, "-m", "ccxml", "generate", "ring", "--ranks", "3", "-o", "-"],
                       capture_output=True, text=True, cwd=repo)
    assert r.returncode == 0 and r.stdout.startswith("<algo ")
    r = subprocess.run([sys.executable, os.path.join(repo, "algorithms", "ring.py"), "--ranks", "3",
                        "--coll", "allgather", "-o", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and 'coll="allgather"' in r.stdout, r.stderr


def test_mesh_one_shot_variant(tmp_path):
    """``--variant one-shot`` writes the one-shot Mesh AllReduce (every rank sends its whole
    buffer to every peer and reduces locally: one round, a buffer of one chunk), and it verifies."""
    from dataflow_rounds import depth

    from ccxml.algorithms import build
    one, two = tmp_path / "one.xml", tmp_path / "two.xml"
    code, out, err = run(["generate", "mesh", "--ranks", "5", "--variant", "one-shot", "--verify",
                          "-o", str(one)])
    assert code == 0 and f"PASS {one}" in out, err
    code, out, err = run(["generate", "mesh", "--ranks", "5", "-o", str(two)])
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


def test_time_passes_prints_cpu_and_memory_of_every_stage(tmp_path):
    # (mesh: the object path; ring AllReduce, AllGather, ReduceScatter are lowered in bulk, tests/bulk)
    code, out, err = run(["generate", "mesh", "--ranks", "8", "--time-passes", "--verify",
                          "-o", str(tmp_path / "r.xml")])
    assert code == 0 and "wrote" in out
    head, columns, *rows, total = err.strip().splitlines()
    assert "pass timing: mesh allreduce, 8 ranks, target exec" in head
    assert columns.split() == ["cpu", "s", "wall", "s", "cpu", "%", "rss", "MB", "+rss", "MB",
                               "peak", "MB", "stage"]
    stages = [row.split(None, 6)[6] for row in rows]
    assert stages == ["build (Chunk API)", "threadblocks", "ordering", "fusion", "splitting",
                      "dependencies", "numbering", "checks", "writer", "verify"]
    cpu = [float(row.split()[0]) for row in rows]
    assert all(t >= 0 for t in cpu) and float(total.split()[0]) == pytest.approx(sum(cpu), abs=1e-3)
    assert all(float(row.split()[3]) > 0 and float(row.split()[5]) > 0 for row in rows)  # MB read


def test_dump_after_prints_the_ir_after_each_named_pass_and_changes_nothing(tmp_path):
    plain, dumped = tmp_path / "a.xml", tmp_path / "b.xml"
    assert run(["generate", "ring", "--ranks", "4", "-o", str(plain)])[0] == 0
    code, out, err = run(["generate", "ring", "--ranks", "4", "-o", str(dumped),
                          "--dump-after", "ordering", "--dump-after", "dependencies"])
    assert code == 0 and dumped.read_bytes() == plain.read_bytes()
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("# ")]
    assert [lines[i].rsplit("(", 1)[1] for i in heads] == ["after ordering)", "after dependencies)"]
    ordering = lines[heads[0] + 1:heads[1]]
    final = lines[heads[1] + 1:-1]
    assert len(ordering) == 4 * 12 and len(final) == 4 * 7        # 2(p-1) sends -> fused
    assert ordering[0] == "gpu 0 tb s1/r3/c0 #0 s src i[3] dst - cnt 1 deps [] peer >1#0"
    assert not any(" rcs " in line for line in ordering) and any(" rcs " in line for line in final)
    assert lines[-1].startswith("wrote ")  # the dump comes before the summary


def test_dump_to_a_file(tmp_path):
    dump = tmp_path / "ir.txt"
    code, out, err = run(["generate", "pairwise", "--ranks", "3", "--coll", "alltoall", "-o", "-",
                          "--dump-after", "numbering", "--dump-to", str(dump)])
    assert code == 0 and out.startswith("<algo ")
    text = dump.read_text()
    assert text.startswith("# pairwise_alltoall: alltoall, 3 gpus") and "(after numbering)" in text
    assert text.count("\n") == 1 + out.count("<step ")


def test_generate_forest_from_an_nccl_topology_file_with_gpu(tmp_path, monkeypatch):
    """Issue 23's command: ``generate forest --topology FILE --gpu G --nodes N`` (an NCCL .xml
    that gives only the PCI tree gets its NVLink side from --gpu); the default name says which."""
    from conftest import TOPOLOGIES
    xml = TOPOLOGIES / "ndv5-topo.xml"
    if not xml.is_file():
        pytest.skip("../shared/topologies is absent")
    pytest.importorskip("networkx")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["generate", "forest", "--coll", "allgather", "--topology", str(xml),
                          "--gpu", "h100", "--nodes", "2"])
    assert code == 0, err
    assert "wrote out/forest_allgather_16_ndv5-topo-h100x2.xml" in out
    assert "exact bound (max-flow) busbw 418.8 GB/s" in out
    assert loads((tmp_path / "out" / "forest_allgather_16_ndv5-topo-h100x2.xml").read_text()).ngpus == 16


def test_gpu_needs_a_topology_file():
    code, _, err = run(["generate", "ring", "--ranks", "8", "--gpu", "h100"])
    assert code == 2 and err.strip() == "ccxml: --gpu needs --topology FILE (an NCCL topology .xml)"
