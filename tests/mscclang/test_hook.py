"""The import hook serves ``msccl`` only for the length of one run, and never shadows an install."""
from __future__ import annotations

import sys
import textwrap

from mscclang_cli import run

from ccxml.mscclang.runner import msccl_served


def _fake_msccl(root):
    """A stand-in for a real msccl-tools install: a package ``msccl`` with ``language``."""
    pkg = root / "msccl"
    (pkg / "language").mkdir(parents=True)
    (pkg / "__init__.py").write_text("REAL = True\n")
    (pkg / "language" / "__init__.py").write_text("REAL = True\n")
    return root


def test_inside_the_block_msccl_is_ccxml(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_fake_msccl(tmp_path)))
    with msccl_served():
        import msccl.language as lang
        from msccl.language.collectives import AllReduce
        from msccl.topologies import fully_connected
        assert lang.MSCCLProgram.__module__ == "ccxml.mscclang.program"
        assert AllReduce.__module__ == "ccxml.mscclang.collectives" and fully_connected(3).num_nodes() == 3
        assert not hasattr(lang, "REAL")
    assert not any(m == "msccl" or m.startswith("msccl.") for m in sys.modules)
    import msccl.language as real  # the install is there again, untouched
    assert real.REAL is True
    for name in [m for m in sys.modules if m == "msccl" or m.startswith("msccl.")]:
        del sys.modules[name]


def test_a_real_install_imported_before_is_put_back(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_fake_msccl(tmp_path)))
    import msccl.language as real
    try:
        with msccl_served():
            import msccl.language as served
            assert served is not real and not hasattr(served, "REAL")
        assert sys.modules["msccl.language"] is real
        finders = [type(f).__name__ for f in sys.meta_path]
        assert "_Finder" not in finders
    finally:
        for name in [m for m in sys.modules if m == "msccl" or m.startswith("msccl.")]:
            del sys.modules[name]


def test_the_hook_is_gone_after_a_run_that_raised(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("from msccl.language import *\nraise RuntimeError('boom')\n")
    code, _, err = run(["mscclang", script])
    assert code == 2 and "boom.py:2: RuntimeError: boom" in err
    assert not any(m == "msccl" or m.startswith("msccl.") for m in sys.modules)
    assert "_Finder" not in [type(f).__name__ for f in sys.meta_path]


def test_each_run_gets_fresh_modules(tmp_path):
    script = tmp_path / "mark.py"
    script.write_text(textwrap.dedent("""\
        import msccl.language as L
        assert not hasattr(L, "MARK"), "a module of an earlier run leaked"
        L.MARK = 1
    """))
    for _ in range(2):
        code, _, err = run(["mscclang", script])
        assert code == 2 and "produced no XML" in err and "leaked" not in err
