"""Every ``.pxd`` declares only names its ``.py`` still has (a stale declaration types nothing)."""
from __future__ import annotations

import pytest
from conftest import REPO
from pxd_names import stale_names

PXDS = sorted((REPO / "ccxml").rglob("*.pxd"))


def test_every_native_module_has_its_pxd():
    from ccxml._native import NATIVE_MODULES
    assert sorted(str(p.relative_to(REPO).with_suffix("")).replace("/", ".") for p in PXDS) == \
        sorted(NATIVE_MODULES)


@pytest.mark.parametrize("pxd", PXDS, ids=[str(p.relative_to(REPO)) for p in PXDS])
def test_the_pxd_declares_only_names_of_its_py(pxd):
    assert stale_names(pxd) == []


def test_a_stale_declaration_is_named(tmp_path):
    (tmp_path / "m.py").write_text(
        "LIMIT = 3\n\n"
        "def run(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n\n"
        "class Box:\n    __slots__ = ('size',)\n\n    def grow(self, by):\n        self.size += by\n")
    (tmp_path / "m.pxd").write_text(
        "cimport cython\n"
        "cdef int LIMIT, GONE\n"
        "@cython.locals(total=Py_ssize_t, x=Py_ssize_t,\n"
        "               count=Py_ssize_t, table=\"long long[::1]\")\n"
        "cpdef Py_ssize_t run(list xs) except -1\n"
        "cdef (Py_ssize_t, bint) walk(Py_ssize_t i)\n"
        "cdef class Box:\n"
        "    cdef public Py_ssize_t size\n"
        "    cdef public Py_ssize_t width  # renamed in the .py\n"
        "    cpdef grow(self, Py_ssize_t by)\n"
        "    cpdef shrink(self)\n"
        "cdef class Crate:\n"
        "    pass\n")
    assert stale_names(tmp_path / "m.pxd") == [
        "m.pxd: module variable GONE is not defined in m.py",
        "m.pxd: local count of function run is not used in m.py",
        "m.pxd: local table of function run is not used in m.py",
        "m.pxd: function walk is not defined in m.py",
        "m.pxd: field Box.width is not defined in m.py",
        "m.pxd: method Box.shrink is not defined in m.py",
        "m.pxd: class Crate is not defined in m.py",
    ]
