"""docs/passes.md lists every registered pass with its guarantee, current (regenerate: python
benchmarks/doc_passes.py), and a pass registered later shows up in it."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import doc_passes  # noqa: E402

from ccxml.passes import Pass, registry  # noqa: E402


def test_the_pass_list_is_current():
    current = doc_passes.OUT.read_text(encoding="utf-8")
    assert current == doc_passes.render(current), (
        "docs/passes.md is not current: run python benchmarks/doc_passes.py")


def test_the_list_has_every_pass_with_its_guarantee():
    text = doc_passes.OUT.read_text(encoding="utf-8")
    for cls in registry.registered():
        assert f"`{cls.name}`" in text
        assert " ".join(cls.__doc__.split())[:60] in " ".join(text.split())


def test_a_registered_pass_changes_the_list():
    @dataclass(frozen=True)
    class Shuffle(Pass):
        """Steps are shuffled (a test pass)."""

        name: ClassVar[str] = "shuffle"
        seed: int = 7

        def applies(self, profile) -> bool:
            return False

    registry.register(Shuffle, after="ordering")
    try:
        block = doc_passes.render_passes()
    finally:
        registry.unregister("shuffle")
    assert "### 3. `shuffle`" in block and "`seed` (int, default `7`)" in block
    assert "no target (named in --passes only)" in block and "Steps are shuffled" in block
    assert "shuffle" not in doc_passes.render_passes()
