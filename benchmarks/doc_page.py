"""The end of a generated documentation page's script (doc_cli.py, doc_passes.py): write the page,
or with ``--check`` say whether it is current (exit 1 if not)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def write_or_check(argv, description: str, out: Path, render, script: str) -> int:
    """``render(current text)`` is the page as it should be; write it to ``out``, or with
    ``--check`` compare it with what is there (the message names ``script`` to run)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true", help=f"exit 1 if {out.relative_to(REPO)} is not current")
    args = ap.parse_args(argv)
    current = out.read_text(encoding="utf-8") if out.exists() else ""
    text = render(current)
    if args.check:
        if current != text:
            print(f"{out.relative_to(REPO)} is not current: run python benchmarks/{script}", file=sys.stderr)
            return 1
        print(f"{out.relative_to(REPO)} is current")
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out.relative_to(REPO)} ({len(text.splitlines())} lines)")
    return 0
