"""setup.py's build cache: a compiled module is kept under a key of everything it was built from,
and a second build copies it instead of compiling (no compiler runs in these tests)."""
from __future__ import annotations

import runpy

import pytest
import setuptools
from conftest import REPO
from setuptools import Distribution, Extension


@pytest.fixture
def setup_py(monkeypatch):
    """setup.py's functions, without running setup()."""
    monkeypatch.setattr(setuptools, "setup", lambda **kw: None)
    return runpy.run_path(str(REPO / "setup.py"), run_name="setup_under_test")


def test_the_key_follows_the_source_the_pxds_the_compiler_flags(setup_py, monkeypatch):
    key = setup_py["cache_key"]
    name = "ccxml.passes.ordering"
    first = key(name)
    assert first == key(name) and first != key("ccxml.passes.fusion")
    monkeypatch.setenv("CFLAGS", "-O0")
    assert key(name) != first
    monkeypatch.delenv("CFLAGS")
    assert key(name) == first
    digest = setup_py["source_digest"]
    monkeypatch.setitem(key.__globals__, "source_digest", lambda base: "edited" + digest(base))
    assert key(name) != first                       # an edited module is compiled again


def test_the_cache_folder_and_turning_it_off(setup_py, monkeypatch, tmp_path):
    root = setup_py["cache_root"]
    monkeypatch.delenv("CCXML_BUILD_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert root() == str(tmp_path / "ccxml-build")
    monkeypatch.setenv("CCXML_BUILD_CACHE", str(tmp_path / "mine"))
    assert root() == str(tmp_path / "mine")
    for off in ("off", "0", ""):
        monkeypatch.setenv("CCXML_BUILD_CACHE", off)
        assert root() is None


def test_a_cached_module_is_copied_and_a_built_one_is_kept(setup_py, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CCXML_BUILD_CACHE", str(tmp_path / "cache"))
    name = "ccxml.ir.nodes"
    ext = Extension(name, ["ccxml/ir/nodes.py"])
    cmd = setup_py["OptionalBuildExt"](Distribution({"ext_modules": [ext]}))
    cmd.initialize_options()
    cmd.build_lib = str(tmp_path / "build")
    cmd.finalize_options()
    cmd._built = []
    target = cmd.get_ext_fullpath(name)
    # a build that compiled: its file goes into the cache under the module's key
    (tmp_path / "made.so").write_bytes(b"compiled nodes")
    cmd._store(name, str(tmp_path / "made.so"))
    kept = tmp_path / "cache" / setup_py["cache_key"](name) / "made.so"
    assert kept.read_bytes() == b"compiled nodes"
    # the next build finds it and copies it where the compiler would have written
    cmd._cached = {name: str(kept)}
    cmd.build_extension(ext)
    assert open(target, "rb").read() == b"compiled nodes" and cmd._built == [name]
    assert "compiling" not in capsys.readouterr().err
