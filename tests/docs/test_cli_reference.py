"""docs/cli.md is the commands' own --help, current (regenerate: python benchmarks/doc_cli.py)."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import doc_cli  # noqa: E402


def test_cli_reference_is_current():
    assert doc_cli.OUT.read_text(encoding="utf-8") == doc_cli.render(), (
        "docs/cli.md is not current: run python benchmarks/doc_cli.py")


def test_cli_reference_has_every_command():
    from ccxml.cli.app import COMMANDS
    text = doc_cli.OUT.read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"\n## ccxml {name}\n" in text, name
