"""Algorithm plugins: a distribution's entry point of the group ``ccxml.algorithms`` makes its
algorithm one of ccxml's — in ``list`` (marked with the distribution), ``generate`` (with its own
options, ``--opt KEY=VALUE``), ``simulate``, ``select`` and ``tune`` — and a plugin that cannot be
used is one warning line while everything else keeps working.

The in-process tests install plugins the way pip leaves them: a ``NAME.dist-info`` folder with
``entry_points.txt`` and the module beside it, on ``sys.path``; ``importlib.metadata`` finds them
as it finds pip's. The last test really pip-installs ``examples/plugin`` into a virtual
environment and runs the ``ccxml`` of this checkout there.
"""
from __future__ import annotations

import os
import re
import shutil
import site as site_module
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO
from in_process import ccxml

from ccxml.algorithms import BUILT_IN, registry

EXAMPLE = REPO / "examples" / "plugin"

#: a plugin with a choice option, registered through ccxml's decorator
TOY = '''
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.registry import algorithm
from ccxml.vocab.wire import Coll


@algorithm("{name}", Coll.ALLGATHER, landing=("output", "scratch"))
def allgather(p: int, *, landing: str = "output", options: Options = Options()):
    prog = program("{name}", Coll.ALLGATHER, p, p, options)
    for r in range(p):
        for d in range(p):
            if landing == "output" or d == r:
                prog.input(r, 0).copy(prog.output(d, r))
            else:                                   # through scratch, then a local copy
                prog.input(r, 0).copy(prog.scratch(d, r))
                prog.scratch(d, r).copy(prog.output(d, r))
    return prog
'''


class Site:
    """A folder on ``sys.path`` holding installed distributions (dist-info + modules)."""

    def __init__(self, path):
        self.path = path

    def install(self, dist: str, entry_points: dict[str, str], modules: dict[str, str] | None = None,
                version: str = "0.1.0") -> None:
        info = self.path / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = "".join(f"{name} = {module}\n" for name, module in entry_points.items())
        (info / "entry_points.txt").write_text(f"[ccxml.algorithms]\n{lines}")
        for module, source in (modules or {}).items():
            (self.path / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path, monkeypatch):
    """Plugins installed for this test only; the registry reads them afresh, and forgets them
    afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.rescan_plugins()
    yield Site(tmp_path)
    registry.rescan_plugins()


@pytest.fixture
def stride_ring(site, monkeypatch):
    """examples/plugin, as pip would install it: its package importable, its entry point read."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    site.install("ccxml-stride-ring", {"stride-ring": "ccxml_stride_ring"})
    return site


def rows(out: str) -> dict[str, list[str]]:
    """``ccxml list``'s matrix (up to its first blank line): name -> the rest of its row."""
    return {line.split()[0]: line.split()[1:] for line in out.split("\n\n")[0].splitlines()[1:]}


# ---- a working plugin ------------------------------------------------------------------------

def test_a_plugin_is_listed_after_the_built_ins_with_its_distribution(stride_ring):
    code, out, err = ccxml("list")
    assert code == 0 and err == ""
    found = rows(out)
    assert list(found)[:len(BUILT_IN)] == [name for name, _ in BUILT_IN]
    assert found["stride-ring"] == ["x", "x", ".", ".", ".", ".", ".", ".", ".",
                                    "plugin", "ccxml-stride-ring", "0.1.0"]
    assert len(found["ring"]) == 9                          # built-ins carry no mark
    code, out, err = ccxml("list", "--options")
    assert "  stride-ring allgather, allreduce: --opt stride: integer (default 1)" in out.splitlines()
    assert "  mesh allreduce: --variant: two-shot | one-shot (default two-shot)" in out.splitlines()


def test_generate_a_plugin_with_its_own_option_and_verify_it(stride_ring, tmp_path):
    import ccxml_stride_ring
    out3, out1 = tmp_path / "s3.xml", tmp_path / "s1.xml"
    code, out, err = ccxml("generate", "stride-ring", "--ranks", "8", "--opt", "stride=3", "--verify",
                           "-o", out3)
    assert code == 0 and f"PASS {out3}" in out, err
    assert out3.read_text() == ccxml_stride_ring.allreduce(8, stride=3).to_xml("exec")
    assert ccxml("generate", "stride-ring", "--ranks", "8", "-o", out1)[0] == 0
    assert out1.read_text() != out3.read_text()          # the option reached the builder
    code, out, err = ccxml("verify", out3)
    assert code == 0 and "PASS" in out


def test_simulate_select_and_tune_take_the_plugin(stride_ring, tmp_path):
    code, out, err = ccxml("simulate", "stride-ring", "--ranks", "8", "--coll", "allgather",
                           "--opt", "stride=3", "--bytes", "1M")
    assert code == 0 and "# ccxml simulate: stride-ring allgather: allgather, 8 ranks" in out, err
    code, out, err = ccxml("select", "--ranks", "8", "--coll", "allgather", "--bytes", "1M", "--json")
    assert code == 0
    import json
    ranked = [r["algorithm"] for r in json.loads(out)["ranking"]]
    assert "stride-ring" in ranked and "ring" in ranked
    code, out, err = ccxml("tune", "--ranks", "8", "--coll", "allgather", "-a", "stride-ring",
                           "--min-bytes", "1K", "--max-bytes", "64K", "-q", "-o", tmp_path / "algos")
    assert code == 0, err
    files = sorted(p.name for p in (tmp_path / "algos").iterdir())
    assert files == ["allgather-inplace-00-stride-ring.xml", "allgather-outofplace-00-stride-ring.xml"]


def test_a_plugin_module_imported_first_is_still_the_plugin(stride_ring):
    """``import ccxml_stride_ring`` before anything asked the registry: its algorithm is the
    plugin all the same (a plugin's tests do this), in Python and in ``ccxml list``."""
    from ccxml.vocab.wire import Coll
    assert "ccxml_stride_ring" not in sys.modules
    import ccxml_stride_ring
    plugin = registry.get("stride-ring").plugin
    assert (plugin.distribution, plugin.module) == ("ccxml-stride-ring", "ccxml_stride_ring")
    assert registry.get("stride-ring").builders[Coll.ALLGATHER] is ccxml_stride_ring.allgather
    assert rows(ccxml("list")[1])["stride-ring"][-3:] == ["plugin", "ccxml-stride-ring", "0.1.0"]


def test_an_algorithm_registered_before_the_group_is_read_is_adopted(site):
    """A plugin's builder registered before ``ccxml.algorithms`` added the group (its module
    imports only the front end): reading the group makes it the plugin, not a clash."""
    from ccxml.frontend.registry import PLUGIN_GROUP, Registry
    from ccxml.vocab.wire import Coll
    site.install("early-dist", {"early": "ccxml_test_early"})

    def allgather(p: int, *, options=None):
        raise AssertionError("not built here")
    allgather.__module__ = "ccxml_test_early"
    reg = Registry()
    reg.declare("ring", "ccxml.algorithms.ring")
    reg.register("early", Coll.ALLGATHER, allgather)
    reg.add_plugins(PLUGIN_GROUP)
    assert reg.names() == ["ring", "early"]
    assert reg.plugin("early").distribution == "early-dist" and reg.get("early").plugin == reg.plugin("early")


def test_generate_ring_neither_reads_nor_imports_plugins(site, tmp_path, monkeypatch):
    """Lazy like the built-ins: a built-in's run reads no entry point, so a broken plugin does
    not disturb it."""
    import importlib.metadata
    site.install("lazy-dist", {"lazy": "ccxml_test_lazy"}, {"ccxml_test_lazy": "raise RuntimeError('imported')\n"})
    reads = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: reads.append(kw) or real(**kw))
    code, out, err = ccxml("generate", "ring", "--ranks", "4", "-o", tmp_path / "r.xml")
    assert code == 0 and err == "" and reads == []
    assert "ccxml_test_lazy" not in sys.modules
    assert "lazy" in registry.names()                       # read when every name is asked for
    assert reads == [{"group": "ccxml.algorithms"}]
    assert "ccxml_test_lazy" not in sys.modules             # and still not imported


def test_plugins_come_sorted_by_name(site):
    site.install("dist-z", {"zeta": "ccxml_test_zeta"}, {"ccxml_test_zeta": TOY.format(name="zeta")})
    site.install("dist-a", {"alpha": "ccxml_test_alpha"}, {"ccxml_test_alpha": TOY.format(name="alpha")})
    names = list(rows(ccxml("list")[1]))
    assert names == [name for name, _ in BUILT_IN] + ["alpha", "zeta"]


def test_a_choice_option_is_checked_and_reaches_the_builder(site, tmp_path):
    site.install("toy-dist", {"toy": "ccxml_test_toy"}, {"ccxml_test_toy": TOY.format(name="toy")})
    direct, staged = tmp_path / "direct.xml", tmp_path / "staged.xml"
    assert ccxml("generate", "toy", "-n", "3", "-c", "allgather", "--verify", "-o", direct)[0] == 0
    assert ccxml("generate", "toy", "-n", "3", "-c", "allgather", "--opt", "landing=scratch", "--verify",
                 "-o", staged)[0] == 0
    assert 'dstbuf="s"' in staged.read_text() and 'dstbuf="s"' not in direct.read_text()
    code, out, err = ccxml("generate", "toy", "-n", "3", "-c", "allgather", "--opt", "landing=disk", "-o", "-")
    assert code == 2 and err == "ccxml: toy: --landing must be one of output, scratch; got 'disk'\n"
    code, out, err = ccxml("list", "--options")
    assert "  toy allgather: --opt landing: output | scratch (default output)" in out.splitlines()


@pytest.mark.parametrize("opt, message", [
    ("stride", "--opt stride: give KEY=VALUE"),
    ("stride=x", "--opt stride=x: stride takes an integer"),
    ("width=2", "stride-ring allreduce takes no option 'width'; its options: stride"),
    ("variant=one-shot", "--opt variant=one-shot: use --variant"),
    ("stride=2", "stride-ring: stride 2 must be in 1..7 and coprime with 8 ranks"),
])
def test_a_bad_option_is_one_line(stride_ring, opt, message, tmp_path):
    code, out, err = ccxml("generate", "stride-ring", "--ranks", "8", "--opt", opt, "-o", tmp_path / "x.xml")
    assert code == 2 and err.count("\n") == 1 and err.startswith("ccxml: ") and message in err, err
    assert not (tmp_path / "x.xml").exists()


def test_opt_reaches_built_in_options_too(tmp_path):
    """A built-in's option without an option of its own would go the same way; one that has
    its own is refused by name, and an option a builder lacks is named."""
    code, out, err = ccxml("generate", "ring", "-n", "4", "--opt", "stride=3", "-o", tmp_path / "r.xml")
    assert code == 2 and "ring allreduce takes no option 'stride'; its options: none" in err


# ---- a plugin that cannot be used ------------------------------------------------------------

BROKEN = {
    "import error": ({"bad-import": "ccxml_test_bad_import"},
                     {"ccxml_test_bad_import": "import ccxml_test_no_such_thing\n"},
                     "plugin bad-import (distribution broken-dist 0.1.0): cannot import "
                     "ccxml_test_bad_import: ModuleNotFoundError: No module named 'ccxml_test_no_such_thing'"),
    "clash with a built-in": ({"ring": "ccxml_test_ring"}, {"ccxml_test_ring": TOY.format(name="ring")},
                              "plugin ring (distribution broken-dist 0.1.0): ring is a built-in "
                              "algorithm; the plugin is left out"),
    "registers nothing": ({"empty": "ccxml_test_empty"}, {"ccxml_test_empty": "X = 1\n"},
                          "plugin empty (distribution broken-dist 0.1.0): ccxml_test_empty registers "
                          "no algorithm 'empty'"),
    "registers a built-in's name": ({"sneaky": "ccxml_test_sneaky"},
                                    {"ccxml_test_sneaky": TOY.format(name="mesh")},
                                    "plugin sneaky (distribution broken-dist 0.1.0): cannot import "
                                    "ccxml_test_sneaky: AlgorithmError: ccxml_test_sneaky registers "
                                    "mesh, which is a built-in algorithm (ccxml.algorithms.mesh)"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_plugin_is_one_warning_and_the_rest_works(site, case, tmp_path):
    entry_points, modules, message = BROKEN[case]
    site.install("broken-dist", entry_points, modules)
    site.install("good-dist", {"toy": "ccxml_test_good"}, {"ccxml_test_good": TOY.format(name="toy")})
    code, out, err = ccxml("list")
    assert code == 0 and err == f"ccxml: warning: {message}\n", err
    found = rows(out)
    assert list(found) == [name for name, _ in BUILT_IN] + ["toy"]
    assert len(found["ring"]) == 9 and len(found["mesh"]) == 9
    code, out, err = ccxml("generate", "mesh", "-n", "4", "--verify", "-o", tmp_path / "m.xml")
    assert code == 0 and "Traceback" not in err
    code, out, err = ccxml("generate", "toy", "-n", "3", "-c", "allgather", "-o", tmp_path / "t.xml")
    assert code == 0


def test_generate_a_broken_plugin_is_one_line_naming_it(site, tmp_path):
    site.install("broken-dist", *BROKEN["import error"][:2])
    code, out, err = ccxml("generate", "bad-import", "-n", "4", "-o", tmp_path / "x.xml")
    assert code == 2 and err == f"ccxml: {BROKEN['import error'][2]}\n"


def test_a_builder_that_fails_is_one_line_and_select_skips_it(site):
    site.install("crash-dist", {"crash": "ccxml_test_crash"}, {"ccxml_test_crash": '''
        from ccxml.frontend.registry import algorithm
        from ccxml.vocab.wire import Coll


        @algorithm("crash", Coll.ALLGATHER)
        def allgather(p, *, options=None):
            return {}["missing"]
        '''})
    code, out, err = ccxml("generate", "crash", "-n", "4", "-c", "allgather", "-o", "-")
    assert code == 2 and err == ("ccxml: plugin crash (distribution crash-dist 0.1.0): its allgather "
                                 "builder failed: KeyError: 'missing'\n")
    code, out, err = ccxml("select", "--ranks", "4", "--coll", "allgather", "--bytes", "1M", "--json")
    assert code == 0 and "Traceback" not in err
    import json
    skipped = {s["algorithm"]: s["reason"] for s in json.loads(out)["unavailable"]}
    assert "builder failed: KeyError" in skipped["crash"]


def test_the_same_name_from_two_distributions_keeps_the_first_by_distribution(site):
    site.install("b-dist", {"twin": "ccxml_test_twin_b"}, {"ccxml_test_twin_b": TOY.format(name="twin")})
    site.install("a-dist", {"twin": "ccxml_test_twin_a"}, {"ccxml_test_twin_a": TOY.format(name="twin")})
    code, out, err = ccxml("list")
    assert code == 0 and rows(out)["twin"][-3:] == ["plugin", "a-dist", "0.1.0"]
    assert err == ("ccxml: warning: plugin twin (distribution b-dist 0.1.0): twin is already plugin "
                   "twin (distribution a-dist 0.1.0); b-dist's is left out\n")


# ---- really installed ------------------------------------------------------------------------

def _run(args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kw)


def _outer_site_dirs() -> list[str]:
    """The site-packages of the interpreter running the tests (a venv's own, or the system's):
    where ``pip install -e '.[test]'`` put pip, setuptools, pytest and ccxml's dependencies."""
    dirs = list(site_module.getsitepackages())
    if site_module.ENABLE_USER_SITE and os.path.isdir(site_module.getusersitepackages()):
        dirs.append(site_module.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def test_pip_install_the_example_in_a_virtual_environment(tmp_path):
    """``pip install examples/plugin`` into a fresh venv (offline: no index, no build isolation),
    then the ``ccxml`` of this checkout lists it, generates it and proves the file, and the plugin's
    own tests pass there.

    The nested venv sees the site-packages of the interpreter running the tests through a ``.pth``
    file (not ``--system-site-packages``, which would give it the *base* interpreter's packages:
    from a plain venv, the system's setuptools and no wheel), so pip, the build backend and pytest
    are the ones the test extra installed. The skip check asks the nested interpreter itself."""
    env = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", env])
    if made.returncode != 0:
        pytest.skip(f"python -m venv is unavailable: {made.stderr.strip().splitlines()[-1:]}")
    py = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(purelib) / "ccxml-test-outer-site.pth").write_text("".join(d + "\n" for d in _outer_site_dirs()))
    run_env = {**os.environ, "PYTHONPATH": str(REPO), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               "PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if _run([py, "-m", "pip", "--version"], env=run_env).returncode != 0:
        pytest.skip("pip is not importable from the virtual environment")
    # the offline build needs setuptools >= 70.1 (it writes wheels itself) or an older one and wheel
    backend = _run([py, "-c", "import importlib.util as u, setuptools as s; "
                    "print(s.__version__, u.find_spec('wheel') is not None)"], env=run_env)
    if backend.returncode != 0:
        pytest.skip("setuptools is not importable in the virtual environment: "
                    "pip install -e '.[test]' brings it")
    version, has_wheel = backend.stdout.split()
    if tuple(int(x) for x in re.findall(r"\d+", version)[:2]) < (70, 1) and has_wheel != "True":
        pytest.skip(f"setuptools {version} builds wheels only with the wheel package: "
                    f"pip install -e '.[test]' brings setuptools >= 70.1")
    src = tmp_path / "src"                  # pip builds in the tree: build a copy, not the checkout
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    installed = _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                      "--no-index", src], env=run_env, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    where = _run([py, "-c", "import ccxml, ccxml_stride_ring, sys; print(ccxml.__file__); "
                  "print(ccxml_stride_ring.__file__); print(sys.prefix)"], env=run_env, cwd=tmp_path)
    ccxml_file, plugin_file, prefix = where.stdout.split()
    assert ccxml_file.startswith(str(REPO)), ccxml_file     # the checkout under test, not another
    assert plugin_file.startswith(str(env)) and prefix == str(env)

    listed = _run([py, "-m", "ccxml", "list"], env=run_env, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    assert rows(listed.stdout)["stride-ring"][-3:] == ["plugin", "ccxml-stride-ring", "0.1.0"]
    xml = tmp_path / "X.xml"
    made = _run([py, "-m", "ccxml", "generate", "stride-ring", "--ranks", "8", "--opt", "stride=3",
                 "-o", xml], env=run_env, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    proved = _run([py, "-m", "ccxml", "verify", xml], env=run_env, cwd=tmp_path)
    assert proved.returncode == 0 and f"PASS {xml}" in proved.stdout, proved.stdout + proved.stderr
    tests = _run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], env=run_env, cwd=src)
    summary = tests.stdout.strip().splitlines()[-1]
    assert tests.returncode == 0 and "passed" in summary and "skipped" not in summary, tests.stdout
