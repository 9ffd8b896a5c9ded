"""The optional native build (setup.py, ccxml/_native.py): a compiled module runs only when it was
built from the source that is there, and compiled and pure Python write the same bytes."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO as _REPO

from ccxml import _native

REPO = str(_REPO)
BUILT = _native.recorded_digests()


def _origin(finder, name):
    spec = finder.find_spec(name)
    return None if spec is None else os.path.basename(spec.origin)


def test_a_module_whose_source_changed_since_the_build_runs_as_python():
    stale = _native._SourceFirst(False, {"ccxml.passes.ordering": "0" * 64})
    assert _origin(stale, "ccxml.passes.ordering") == "ordering.py"
    assert _origin(stale, "ccxml.ir.nodes") == "nodes.py"             # not in the record: never compiled
    assert stale.find_spec("ccxml.loader.reader") is None          # not a native module: default import


def test_a_compiled_module_whose_cimported_ir_is_stale_runs_as_python():
    """A pass compiled against the compiled IR cannot use the IR's pure-Python classes: when the
    IR's source changed since the build, the passes that cimport it run as Python too."""
    if not BUILT:
        pytest.skip("no native build in this checkout (pure Python install)")
    digests = dict(BUILT, **{"ccxml.ir.nodes": "0" * 64})
    finder = _native._SourceFirst(False, digests)
    assert _origin(finder, "ccxml.ir.nodes") == "nodes.py"
    assert _origin(finder, "ccxml.passes.fusion") == "fusion.py"      # cimports ccxml.ir.nodes
    assert "ccxml.ir.nodes" in _native.cimported(os.path.join(REPO, "ccxml", "passes", "fusion"))


def test_ccxml_pure_runs_every_native_module_as_python():
    digest = _native.source_digest(os.path.join(REPO, "ccxml", "ir", "nodes"))
    assert _origin(_native._SourceFirst(True, {"ccxml.ir.nodes": digest}), "ccxml.ir.nodes") == "nodes.py"


def test_the_digest_covers_the_pxd(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    plain = _native.source_digest(str(tmp_path / "m"))
    (tmp_path / "m.pxd").write_text("cdef int x\n")
    typed = _native.source_digest(str(tmp_path / "m"))
    (tmp_path / "m.pxd").write_text("cdef long x\n")
    assert len({plain, typed, _native.source_digest(str(tmp_path / "m"))}) == 3


@pytest.mark.skipif(not BUILT, reason="no native build in this checkout (pure Python install)")
def test_every_module_the_build_recorded_runs_compiled():
    if os.environ.get("CCXML_PURE"):
        pytest.skip("CCXML_PURE is set")
    status = _native.status()
    stale = [m for m in BUILT if not status[m]]
    assert stale == [], (f"{stale} changed since the native build and run as pure Python: "
                         f"rebuild with `python setup.py build_ext --inplace`")


def test_a_compiled_step_is_160_bytes():
    """A schedule holds millions of steps: the compiled Step keeps its object fields, then its
    32-bit ones, with no padding and no vtable (docs/benchmarks.md)."""
    import ccxml.ir.nodes
    if not _native.is_compiled(ccxml.ir.nodes.__file__):
        pytest.skip("ccxml.ir.nodes runs as pure Python here")
    from ccxml.vocab.wire import StepType
    assert sys.getsizeof(ccxml.ir.nodes.Step(StepType.SEND, 0)) == 160


@pytest.mark.skipif(not BUILT, reason="no native build in this checkout (pure Python install)")
def test_compiled_and_pure_python_write_identical_files():
    """Every algorithm x collective x target on 2..33 ranks and the hierarchical shapes (the
    --quick cases of benchmarks/output_hashes.py), one MD5 per file, both ways."""
    script = os.path.join(REPO, "benchmarks", "output_hashes.py")
    runs = []
    for pure in ("", "1"):
        env = dict(os.environ, CCXML_PURE=pure, PYTHONPATH=REPO)
        out = subprocess.run([sys.executable, script, "--quick"], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(out.stdout.splitlines())
    compiled, pure = runs
    assert len(compiled) > 500
    assert [a for a, b in zip(compiled, pure) if a != b] == []
