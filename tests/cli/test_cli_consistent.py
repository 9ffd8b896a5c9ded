"""The command line, made consistent (issue 25): bare ``ccxml`` is help, ``-n`` is ranks
everywhere (``run`` counts iterations with ``--iters``), one size type, a tally at the end of
``verify``, a legend for ``list``, default files that never collide, a warning for rooted files,
and --help text without reStructuredText markup."""
from __future__ import annotations

import re
import subprocess
import sys

import click
import pytest
from conftest import REPO
from in_process import ccxml

from ccxml.cli.app import COMMANDS, cli
from ccxml.cli.generate import default_output
from ccxml.cli.options import Size


def test_bare_ccxml_prints_the_help_and_exits_0():
    code, out, err = ccxml()
    assert code == 0 and err == ""
    assert out.startswith("Usage: ccxml [OPTIONS] COMMAND") and "Commands:" in out and "generate" in out
    program = subprocess.run([sys.executable, "-m", "ccxml"], capture_output=True, text=True,
                             timeout=120, cwd=REPO)          # the program, as a user types it
    assert program.returncode == 0 and program.stdout == out and program.stderr == ""


def test_run_counts_iterations_with_iters_only(tmp_path):
    code, out, _ = ccxml("run", "--help")
    assert code == 0 and "--iters INTEGER" in out
    options = out.split("Options:")[1]
    assert not any(line.split()[0].startswith("-n") for line in options.splitlines() if line.strip())
    assert "mpiexec -n P ccxml run FILE" in out           # -n means ranks (mpiexec's)
    code, _, err = ccxml("run", tmp_path / "x.xml", "-n", "2")
    assert code == 2 and err == "ccxml: No such option '-n'.\n"


def _size_params():
    ctx = click.Context(cli)
    for name in COMMANDS:
        if name == "run":                  # run's sizes are parsed by the same parse_size, later
            continue
        command = cli.get_command(ctx, name)
        for sub in getattr(command, "commands", {}).values() or [command]:
            for param in sub.params:
                if isinstance(param, click.Option) and any("bytes" in o for o in param.opts):
                    yield f"{name} {param.opts[-1]}", param


def test_every_size_option_takes_the_one_size_type():
    found = dict(_size_params())
    assert {"generate --max-bytes", "generate --min-bytes", "mscclang --max-bytes", "simulate --bytes",
            "simulate --maxbytes", "select --bytes", "show --bytes", "tune --max-bytes"} <= set(found)
    wrong = [name for name, param in found.items() if not isinstance(param.type, Size)]
    assert wrong == []


@pytest.mark.parametrize("args", [
    ["generate", "ring", "-n", "4", "-o", "-", "--max-bytes", "1Q"],
    ["simulate", "ring", "-n", "4", "-c", "allreduce", "--bytes", "1Q"],
    ["select", "-n", "4", "-c", "allreduce", "--bytes", "1Q"],
    ["tune", "-n", "4", "-c", "allreduce", "--max-bytes", "1Q", "-o", "algos"],
])
def test_a_bad_size_reads_the_same_everywhere(args):
    code, _, err = ccxml(*args)
    assert code == 2 and err.count("\n") == 1
    assert "cannot read size '1Q'; use bytes or a suffix like 1K, 8M, 1G" in err


def test_generate_takes_suffixed_sizes_and_explains_the_window_once(tmp_path):
    path = tmp_path / "w.xml"
    code, out, err = ccxml("generate", "ring", "-n", "4", "--min-bytes", "64K", "--max-bytes", "1M", "-o", path)
    assert code == 0, err
    head = path.read_text().split(">", 1)[0]
    assert 'minBytes="65536"' in head and 'maxBytes="1048576"' in head
    _, help_text, _ = ccxml("generate", "--help")
    flat = " ".join(help_text.split())
    assert "--min-bytes/--max-bytes are the file's size window" in flat
    assert "every message is cut to one chunk" in flat and "a finite --max-bytes cuts fewer, longer messages" in flat


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_has_no_restructuredtext_markup(name):
    code, out, _ = ccxml(name, "--help")
    assert code == 0
    for markup in ("``", ":func:", ":class:", ":meth:", ":data:"):
        assert markup not in out, (name, markup)


def test_verify_of_many_files_ends_with_a_tally_and_names_the_legacy_target(tmp_path):
    legacy = tmp_path / "legacy.xml"                # as msccl-tools wrote them: no size window
    assert ccxml("generate", "ring", "-n", "4", "-o", legacy)[0] == 0
    legacy.write_text(re.sub(r' (minBytes|maxBytes)="\d+"', "", legacy.read_text(), count=2))
    assert "minBytes" not in legacy.read_text()
    broken = tmp_path / "broken.xml"                # no window, and a send turned into a receive
    broken.write_text(legacy.read_text().replace('type="s"', 'type="r"', 1))
    good = tmp_path / "good.xml"
    assert ccxml("generate", "ring", "-n", "4", "-o", good)[0] == 0
    code, out, _ = ccxml("verify", good, legacy, broken)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 4
    assert lines[1] == (f"FAIL {legacy}: missing-attribute: Attribute minBytes of node algo not found "
                        f"(line 1); passes with --target legacy")
    assert lines[2].startswith(f"FAIL {broken}: ") and "legacy" not in lines[2]
    assert lines[3] == "1 passed, 2 failed, 0 warnings"
    code, out, _ = ccxml("verify", "--target", "legacy", legacy)
    assert code == 0 and out.startswith(f"PASS {legacy} (") and out.count("\n") == 1   # one file: no tally


def test_default_files_are_named_by_what_changes_the_schedule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = ccxml("generate", "2d-torus", "--servers", "2", "--ranks-per-server", "8")
    assert code == 0 and "wrote out/2d-torus_allreduce_16_2x8.xml" in out
    code, out, _ = ccxml("generate", "2d-torus", "--preset", "dgx-h100", "--nodes", "2")
    assert code == 0 and "wrote out/2d-torus_allreduce_16_dgx-h100x2.xml" in out
    a, b = (tmp_path / "out" / n for n in ("2d-torus_allreduce_16_2x8.xml", "2d-torus_allreduce_16_dgx-h100x2.xml"))
    assert a.read_text() != b.read_text()           # both kept: the preset records its network
    assert default_output("ring", "allreduce", 8) == "out/ring_allreduce_8.xml"    # the plain case


def test_every_schedule_option_changes_the_default_name():
    base = dict(root=None, channels=1, proto="Simple", target="exec", inplace=False, min_bytes=0, max_bytes=0,
                counts=None, no_fuse=False, servers=None, ranks_per_server=None, groups=None,
                topology_file=None, preset=None, nodes=None, intra=None, inter=None, variant=None, opts={})
    assert default_output("ring", "allreduce", 8, **base) == "out/ring_allreduce_8.xml"
    changes = [dict(root=3), dict(channels=2), dict(proto="LL"), dict(target="rccl"), dict(inplace=True),
               dict(min_bytes=1024), dict(max_bytes=1 << 20), dict(counts="c.csv"), dict(no_fuse=True),
               dict(servers=2, ranks_per_server=4), dict(groups="3,5"), dict(topology_file="t.json"),
               dict(preset="dgx-h100"), dict(preset="dgx-h100", nodes=2), dict(intra="mesh"),
               dict(inter="nhr"), dict(variant="one-shot"), dict(opts={"stride": "3"})]
    names = [default_output("ring", "allreduce", 8, **{**base, **change}) for change in changes]
    assert len(set(names)) == len(names) and "out/ring_allreduce_8.xml" not in names
    assert all(n.startswith("out/ring_allreduce_8_") and n.endswith(".xml") and " " not in n for n in names)


def test_generate_warns_that_a_rooted_file_is_right_for_its_root_only(tmp_path):
    path = tmp_path / "bc.xml"
    code, out, err = ccxml("generate", "ring", "-n", "5", "-c", "broadcast", "--root", "3", "-o", path)
    assert code == 0 and f"wrote {path}" in out
    assert err == (f"ccxml: warning: {path} is right for root 3 only: the MSCCL runtime ignores the root "
                   f"and also runs it, with wrong results, for a broadcast from any other root\n")
    code, _, err = ccxml("generate", "ring", "-n", "5", "-o", tmp_path / "ar.xml")
    assert code == 0 and err == ""
