"""``ccxml tune``: a directory the runtime can use as MSCCL_ALGO_DIR.

What a user relies on: the committed example is exactly what its documented command produces;
for every size in the range the runtime's first-match rule finds exactly one file per collective
and call form, and that file is the simulator's fastest candidate there; every file in the
directory verifies and nothing else is in it; the manifest sits beside it and tells the truth.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex

import pytest
from click.testing import CliRunner
from conftest import REPO
from in_process import ccxml

from ccxml.cli.app import cli
from ccxml.cli.progress import Progress
from ccxml.tuning.engine import plan_windows, windows_from_plan

EXAMPLE = REPO / "out" / "msccl-algorithms-8"
EXAMPLE_MANIFEST = REPO / "out" / "msccl-algorithms-8.manifest.json"
#: the command docs/cost-model.md documents for the example (without the leading ``ccxml``)
EXAMPLE_CMD = "tune --ranks 8 --algorithms ring,mesh,rhd -o out/msccl-algorithms-8"


def run(args, **kw):
    return CliRunner().invoke(cli, args, catch_exceptions=False, **kw)


def tune(tmp_path, *args, name="algos"):
    out = tmp_path / name
    res = run(["tune", "-o", str(out), *args])
    return res, out


def headers(directory):
    """The <algo> header of every file in ``directory``, as the runtime's scan reads them."""
    from ccxml.loader.reader import load
    out = []
    for name in sorted(os.listdir(directory)):          # the executor sorts by path
        s = load(str(directory / name))
        out.append((name, s))
    return out


def runtime_pick(files, coll, nbytes, inplace):
    """The runtime's internal scheduler (msccl-runtime.md §7): first file whose window,
    collective and call form match (divisibility aside)."""
    matches = []
    for name, s in files:
        lo, hi = s.min_bytes or 0, s.max_bytes or 0
        form_ok = s.inplace == 1 if inplace else s.outofplace == 1
        if s.coll == coll and form_ok and lo <= nbytes and (hi == 0 or nbytes <= hi):
            matches.append(name)
    return matches


# ---- the committed example ----------------------------------------------------------------

def test_example_is_documented_in_readme():
    doc = (REPO / "docs" / "cost-model.md").read_text(encoding="utf-8")
    assert "MSCCL_ALGO_DIR" in doc
    assert f"ccxml {EXAMPLE_CMD}" in doc


def test_example_regenerates_byte_identical(tmp_path):
    if not EXAMPLE.is_dir():
        pytest.fail(f"{EXAMPLE} is missing; regenerate with: ccxml {EXAMPLE_CMD}")
    args = shlex.split(EXAMPLE_CMD)
    i = args.index("-o")
    args[i + 1] = str(tmp_path / EXAMPLE.name)
    res = run(args)
    assert res.exit_code == 0, res.output
    fresh = tmp_path / EXAMPLE.name
    stale = f"the committed example is stale; regenerate with: ccxml {EXAMPLE_CMD}"
    assert sorted(os.listdir(fresh)) == sorted(os.listdir(EXAMPLE)), stale
    for name in sorted(os.listdir(EXAMPLE)):
        assert (fresh / name).read_bytes() == (EXAMPLE / name).read_bytes(), f"{name}: {stale}"
    assert (tmp_path / EXAMPLE_MANIFEST.name).read_bytes() == EXAMPLE_MANIFEST.read_bytes(), stale


def test_example_directory_is_loadable_and_complete():
    """Every file verifies for exec; every size and call form of the four collectives finds
    exactly one file; the manifest beside the directory matches the files."""
    from ccxml.interpreter import verify
    if not EXAMPLE.is_dir():
        pytest.fail(f"{EXAMPLE} is missing; regenerate with: ccxml {EXAMPLE_CMD}")
    doc = json.loads(EXAMPLE_MANIFEST.read_text(encoding="utf-8"))
    files = headers(EXAMPLE)
    assert [e["file"] for e in doc["files"]] and {e["file"] for e in doc["files"]} == {n for n, _ in files}
    assert not any(n.startswith(".") or not n.endswith(".xml") for n, _ in files)
    for entry in doc["files"]:
        path = EXAMPLE / entry["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
        assert verify(str(path), target="exec").ok
        assert entry["verification"]["verdict"] == "PASS"
        s = dict(files)[entry["file"]]
        assert (s.min_bytes, s.max_bytes) == (entry["window"]["min_bytes"], entry["window"]["max_bytes"])
        assert s.ngpus == 8 and s.nchunksperloop == entry["nchunksperloop"]
    for coll in ("allreduce", "allgather", "reducescatter", "alltoall"):
        for inplace in (False, True):
            for n in (1024, 1025, 4096, 123457, 1 << 20, 1 << 30):
                assert len(runtime_pick(files, coll, n, inplace)) == 1, (coll, inplace, n)
            assert runtime_pick(files, coll, 1023, inplace) == []
            assert runtime_pick(files, coll, (1 << 30) + 1, inplace) == []


# ---- windows ------------------------------------------------------------------------------

def test_plan_windows_finds_each_change_by_bisection():
    def best(n):
        return "a" if n < 1000 else "b" if n < 1500 else "c" if n < 3000 else "a"
    plan = plan_windows(best, [512, 1024, 2048, 4096, 8192])
    assert plan == [(512, "a"), (1000, "b"), (1500, "c"), (3000, "a")]
    assert windows_from_plan(plan, 300, 10000) == [(300, 999, "a"), (1000, 1499, "b"),
                                                   (1500, 2999, "c"), (3000, 10000, "a")]
    assert windows_from_plan([(1, "x")], 0, 0) == [(0, 0, "x")]
    # two changes inside one gap between samples are both found
    plan = plan_windows(lambda n: "a" if n < 600 else "b" if n < 700 else "c", [512, 1024])
    assert plan == [(512, "a"), (600, "b"), (700, "c")]


@pytest.fixture(scope="module")
def ring_rhd(tmp_path_factory):
    """allreduce with ring and rhd only, on the flat default model."""
    tmp = tmp_path_factory.mktemp("ring_rhd")
    res, out = tune(tmp, "--ranks", "8", "-a", "ring,rhd", "--coll", "allreduce",
                    "--min-bytes", "1K", "--max-bytes", "256M", "-f", "4")
    assert res.exit_code == 0, res.output
    return out


def test_each_window_is_served_by_the_simulated_fastest(ring_rhd):
    from ccxml.driver import algorithm_schedule
    from ccxml.simulator import DEFAULT_TOPOLOGY, simulate_schedule
    files = headers(ring_rhd)
    doc = json.loads((ring_rhd.parent / "algos.manifest.json").read_text())
    algos = {e["file"]: e["algorithm"] for e in doc["files"]}
    windows = sorted((s.min_bytes, s.max_bytes, algos[n]) for n, s in files if s.outofplace == 1)
    # non-overlapping, adjacent, covering 1K..256M, neighbours differ
    assert windows[0][0] == 1024 and windows[-1][1] == 256 << 20
    for (lo, hi, a), (lo2, _, b) in zip(windows, windows[1:]):
        assert lo <= hi and lo2 == hi + 1 and a != b
    for lo, hi, a in windows:
        for n in {lo, (lo + hi) // 2, hi}:
            # each candidate as built for a window ending at n: the messages it sends there
            sched = {x: algorithm_schedule(x, "allreduce", 8, max_bytes=n) for x in ("ring", "rhd")}
            t = {x: simulate_schedule(sched[x], n, DEFAULT_TOPOLOGY).time_s for x in sched}
            assert t[a] <= min(t.values()), (n, a, t)
            assert runtime_pick(files, "allreduce", n, False) == [
                next(name for name, s in files if s.outofplace == 1 and s.min_bytes == lo)]


def test_manifest_beside_directory_says_what_each_file_is(ring_rhd):
    assert not any(p.suffix == ".json" for p in ring_rhd.iterdir())
    doc = json.loads((ring_rhd.parent / "algos.manifest.json").read_text())
    assert doc["directory"] == "algos" and doc["ranks"] == 8 and doc["target"] == "exec"
    for e in doc["files"]:
        assert e["proto"] == "Simple" and e["verification"]["verdict"] == "PASS"
        C = e["nchunksperloop"]
        assert e["eligible_nbytes_multiple_of"]["4-byte types"] == 4 * C
        assert e["simulated"]["min"]["bytes"] == e["window"]["min_bytes"]
        assert e["simulated"]["max"]["busbw_GBps"] > e["simulated"]["min"]["busbw_GBps"] > 0
    text = " ".join(doc["notes"])
    assert "nchunksperloop" in text and "Simple" in text
    # no timestamps, no absolute paths
    raw = (ring_rhd.parent / "algos.manifest.json").read_text()
    assert str(ring_rhd.parent) not in raw and not re.search(r"\d{4}-\d\d-\d\dT", raw)


# ---- verification and directory hygiene ----------------------------------------------------

def test_a_candidate_that_fails_verification_is_never_written(tmp_path, monkeypatch):
    """The first algorithm tune tries to install is made to fail verification: it is reported,
    none of its files is written, and the other candidate covers the whole range."""
    import ccxml.interpreter as interp
    real = interp.verify
    doomed = []

    def verify_failing_first_winner(source, **kw):
        rep = real(source, **kw)
        name = re.search(r'<algo name="([a-z0-9-]+)_', source).group(1)
        if not doomed:
            doomed.append(name)
        if name == doomed[0]:
            from ccxml.vocab.findings import Finding
            rep.findings.append(Finding("deadlock", "injected failure"))
        return rep

    monkeypatch.setattr(interp, "verify", verify_failing_first_winner)
    res, out = tune(tmp_path, "--ranks", "8", "-a", "ring,rhd", "--coll", "allreduce",
                    "--forms", "outofplace", "--max-bytes", "64M", "-f", "8")
    assert res.exit_code == 0, res.output
    bad = doomed[0]
    assert f"reject allreduce outofplace {bad}" in res.output and "injected failure" in res.output
    names = os.listdir(out)
    assert names and not any(n.endswith(f"-{bad}.xml") for n in names)
    doc = json.loads((tmp_path / "algos.manifest.json").read_text())
    assert [r["algorithm"] for r in doc["rejected"]] == [bad]
    assert all(e["algorithm"] != bad for e in doc["files"])
    files = headers(out)
    for n in (1024, 1 << 20, 64 << 20):
        assert len(runtime_pick(files, "allreduce", n, False)) == 1


def test_foreign_file_in_directory_is_refused(tmp_path):
    out = tmp_path / "algos"
    out.mkdir()
    (out / "README").write_text("mine")
    res, _ = tune(tmp_path, "--ranks", "4", "--coll", "allreduce")
    assert res.exit_code != 0
    assert "README" in res.output and "did not write" in res.output
    assert os.listdir(out) == ["README"]
    assert not (tmp_path / "algos.manifest.json").exists()


def test_retune_replaces_previous_files_and_leaves_no_temporaries(tmp_path):
    res, out = tune(tmp_path, "--ranks", "4", "-a", "ring", "--coll", "allreduce,allgather")
    assert res.exit_code == 0, res.output
    first = set(os.listdir(out))
    assert first and all(n.endswith("-ring.xml") for n in first)
    res, out = tune(tmp_path, "--ranks", "4", "-a", "rhd", "--coll", "allreduce")
    assert res.exit_code == 0, res.output
    now = set(os.listdir(out))
    assert now and all(n.startswith("allreduce-") and n.endswith("-rhd.xml") for n in now)
    assert sorted(os.listdir(tmp_path)) == ["algos", "algos.manifest.json"]
    doc = json.loads((tmp_path / "algos.manifest.json").read_text())
    assert {e["file"] for e in doc["files"]} == now


def test_rooted_collectives_only_when_asked_and_carry_the_root(tmp_path):
    res, out = tune(tmp_path, "--ranks", "4", "-a", "ring,rhd", "--coll", "broadcast",
                    "--root", "3", "--forms", "outofplace", "--target", "rccl")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "algos.manifest.json").read_text())
    assert doc["collectives"] == ["broadcast"] and doc["root"] == 3
    assert any("never checks the root" in n for n in doc["notes"])
    from ccxml.interpreter import verify
    for name, s in headers(out):
        assert s.coll == "broadcast" and s.root == 3
        assert verify(str(out / name), target="rccl").ok


@pytest.mark.parametrize("args, needle", [
    (["--ranks", "1"], "--ranks"),
    (["--ranks", "8", "-a", "nosuch"], "unknown algorithm"),
    (["--ranks", "8", "--coll", "gather"], "--coll gather"),
    (["--ranks", "8", "--min-bytes", "1M", "--max-bytes", "1K"], "below"),
    (["--ranks", "8", "--max-bytes", "lots"], "--max-bytes"),
    (["--ranks", "8", "--root", "8", "--coll", "reduce"], "--root"),
    (["--ranks", "8", "--channels", "0"], "--channels"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    code, _, err = ccxml("tune", "-o", tmp_path / "d", *args)
    assert code == 2
    assert err.startswith("ccxml: ") and needle in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_output_must_be_a_directory_of_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run(["tune", "--ranks", "4", "-o", "."])
    assert res.exit_code != 0 and "directory of its own" in res.output
    assert os.listdir(tmp_path) == []


def test_topology_mismatch_is_refused(tmp_path):
    topo = tmp_path / "t.json"
    topo.write_text('{"servers": 2, "ranks_per_server": 4}')
    res, out = tune(tmp_path, "--ranks", "6", "--topology", str(topo))
    assert res.exit_code != 0 and not out.exists()
    assert (f"--ranks 6 disagrees with --topology {topo}: 2 nodes of 4 ranks (8 in all); give --ranks 8 "
            f"(or leave --ranks out)") in res.output


# ---- progress -----------------------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_on_a_terminal_only():
    tty = _Tty()
    with Progress(3, "tuning", file=tty) as bar:
        for _ in range(3):
            bar.update(1, "allreduce")
    assert "tuning" in tty.getvalue() and "#" in tty.getvalue()
    for quiet, stream in ((True, _Tty()), (False, io.StringIO())):
        with Progress(3, "tuning", file=stream, quiet=quiet) as bar:
            bar.update(3)
        assert stream.getvalue() == ""
    delayed = _Tty()
    with Progress(3, "slow", file=delayed, delay=60) as bar:
        bar.update(3)
    assert delayed.getvalue() == ""            # finished before the delay: never drawn
    waiting = _Tty()
    with Progress(1, "one long step", file=waiting, delay=0.05):
        import time
        time.sleep(0.3)                        # no update: the timer draws it anyway
    assert "one long step" in waiting.getvalue()


def test_verify_and_generate_take_quiet(tmp_path):
    out = tmp_path / "r.xml"
    res = run(["generate", "ring", "--ranks", "4", "-o", str(out), "--verify", "--quiet"])
    assert res.exit_code == 0 and "PASS" in res.output and "generating" not in res.output
    res = run(["verify", "--quiet", str(out)])
    assert res.exit_code == 0 and res.output.startswith("PASS") and "verifying" not in res.output


def test_tune_output_has_no_bar_when_piped(ring_rhd):
    res = run(["tune", "--ranks", "4", "-a", "ring", "--coll", "allreduce", "--forms", "inplace",
               "-o", str(ring_rhd.parent / "piped")])
    assert res.exit_code == 0
    assert "tuning" not in res.output and "\r" not in res.output


def test_topology_reaches_the_hierarchical_builders(tmp_path):
    topo = tmp_path / "t.toml"
    topo.write_text("servers = 2\nranks_per_server = 4\n[intra]\nalpha = 1e-6\nbeta = 5e-12\n"
                    "[inter]\nalpha = 5e-6\nbeta = 4e-11\n")
    res, out = tune(tmp_path, "--ranks", "8", "--topology", str(topo), "-a", "ring,2d-ring",
                    "--coll", "allreduce", "--forms", "outofplace", "-f", "16")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "algos.manifest.json").read_text())
    assert doc["topology"]["groups"] == [4, 4] and doc["topology"]["inter"]["alpha"] == 5e-6
    assert not any(s["algorithm"] == "2d-ring" for s in doc["skipped"])
    assert {e["simulated"]["min"].get("runner_up") for e in doc["files"]} <= {"ring", "2d-ring"}


def test_tune_gives_the_small_sizes_to_the_log_step_algorithms():
    """Issue 17's Bruck and recursive doubling win the small windows on the flat model (⌈log2 p⌉
    steps against p − 1), Pairwise and the bidirectional ring the large ones."""
    from ccxml.topology.model import Topology
    from ccxml.tuning.engine import TuneConfig, tune
    cfg = TuneConfig(ranks=8, topology=Topology.flat(1e-6, 1e-11, 1e-12),
                     colls=("alltoall", "allgather"), min_bytes=1 << 10, max_bytes=64 << 20,
                     factor=8.0, algorithms=("bruck", "pairwise", "recursive-doubling", "bidir-ring"),
                     forms=("outofplace",))
    picks = {(f.coll, f.min_bytes): f.algorithm for f in tune(cfg).files}
    first = {coll: picks[min(k for k in picks if k[0] == coll)] for coll in cfg.colls}
    last = {coll: picks[max(k for k in picks if k[0] == coll)] for coll in cfg.colls}
    assert first == {"alltoall": "bruck", "allgather": "recursive-doubling"}
    assert last == {"alltoall": "pairwise", "allgather": "bidir-ring"}
