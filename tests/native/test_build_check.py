"""benchmarks/build_check.py: a benchmark says which ccxml it runs and refuses to time pure
Python by mistake."""
from __future__ import annotations

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import build_check  # noqa: E402
from build_check import Build, announce  # noqa: E402

COMPILED = Build("/checkout/ccxml", 10, 10)
STALE = Build("/checkout/ccxml", 8, 10, stale=("ccxml.passes.ordering",),
              unbuilt=("ccxml.passes.pipeline",))
INSTALLED = Build("/site/ccxml", 10, 10)


@pytest.fixture
def builds(monkeypatch):
    def use(this, installed=INSTALLED):
        monkeypatch.setattr(build_check, "this_build", lambda: this)
        monkeypatch.setattr(build_check, "installed_build", lambda: installed)
    monkeypatch.delenv("CCXML_PURE", raising=False)
    return use


def test_the_report_names_the_build_and_the_installed_one(builds, capsys):
    builds(COMPILED)
    assert announce(times_native=True) is COMPILED
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "build: ccxml /checkout/ccxml (compiled, 10 of 10 native modules compiled)",
        "installed ccxml (not the one run here): /site/ccxml (compiled, 10 of 10 native modules "
        "compiled)"]
    assert err == ""


def test_a_benchmark_of_the_compiled_modules_refuses_stale_ones(builds, capsys):
    builds(STALE)
    with pytest.raises(SystemExit) as exit_:
        announce(times_native=True)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing to time pure Python by mistake" in err
    assert "2 of 10 native modules as Python (changed since the last build: passes.ordering; " \
           "never built here: passes.pipeline)" in err
    assert "the installed ccxml at /site/ccxml runs compiled" in err
    assert "python setup.py build_ext --inplace" in err and "--allow-pure" in err


def test_on_purpose_it_runs_with_a_loud_warning_or_none(builds, capsys, monkeypatch):
    builds(STALE)
    announce(times_native=True, allow_pure=True)
    assert capsys.readouterr().err.startswith("WARNING: 2 of 10 native modules run as pure Python")
    announce(times_native=False)        # (a benchmark of code that is never compiled)
    assert capsys.readouterr().err.startswith("WARNING: ")
    monkeypatch.setenv("CCXML_PURE", "1")
    announce(times_native=True)
    out, err = capsys.readouterr()
    assert out.startswith("build: ccxml /checkout/ccxml (partly compiled, 8 of 10") and \
        "CCXML_PURE is set" in out and err == ""


def test_this_build_is_the_checkout_imported_here():
    from ccxml import _native
    build = build_check.this_build()
    status = _native.status()
    assert build.path == str(REPO / "ccxml") and build.total == len(status)
    assert build.compiled == sum(status.values())
    assert set(build.stale) | set(build.unbuilt) <= {m for m, c in status.items() if not c}
