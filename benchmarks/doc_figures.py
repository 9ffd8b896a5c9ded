"""Recompute the figures the documentation quotes and compare them with what it says.

    python benchmarks/doc_figures.py                 # README.md's tour
    python benchmarks/doc_figures.py docs/plugins.md # one page
    python benchmarks/doc_figures.py --all           # README.md and every docs/*.md
    python benchmarks/doc_figures.py --all --run-all # also the lines after the last figure

In a ```sh block of the docs, a comment line under a command quotes what that command prints
(``#   67108864 361.19 185.80 325.15 450.00``; ``...`` skips text). This script runs each doc's
commands in order, in a temporary copy of the repository (tests/helpers/doc_blocks.py), up to
the last command that quotes its output, and prints for each quote the line the command prints
now beside it. It exits 1 when a quoted figure is not printed any more: rerun, copy the new
line into the doc. tests/docs/test_readme.py runs the README's part in the default suite;
``pytest -m slow tests/docs`` every line of every doc.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "helpers"))

import doc_blocks  # noqa: E402


def _closest(excerpt: str, output: str) -> str:
    """The output line that shares the most words with the quote's first piece."""
    want = set(doc_blocks.normalize(excerpt.split("...")[0]).split())
    best, score = "", -1
    for line in output.splitlines():
        s = len(want & set(line.split()))
        if s > score:
            best, score = line.strip(), s
    return best


def check(doc: Path, run_all: bool) -> int:
    cmds = doc_blocks.commands(doc)
    quoting = [i for i, c in enumerate(cmds) if c.excerpts or c.exit_code]
    if not quoting and not run_all:
        print(f"{doc.relative_to(REPO)}: no figures quoted")
        return 0
    until = None if run_all else quoting[-1]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="ccxml-doc-figures-") as tmp:
        for o in doc_blocks.run_doc(doc, Path(tmp), until=until):
            if not o.ran:
                print(f"{o.cmd.where}: not run ({o.reason}): {o.cmd.text}")
                continue
            mark = "FAIL" if o.reason else "ok"
            print(f"{o.cmd.where}: {mark}: {o.cmd.text}")
            for ex in o.cmd.excerpts:
                print(f"    quoted: {ex}")
                print(f"    now:    {_closest(ex, o.output)}")
            if o.reason:
                print(f"    {o.reason}")
                bad += 1
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("docs", nargs="*", help="markdown files (default: README.md)")
    ap.add_argument("--all", action="store_true", help="README.md and every docs/*.md")
    ap.add_argument("--run-all", action="store_true",
                    help="run every line, not only up to the last quoted figure")
    args = ap.parse_args(argv)
    docs = (doc_blocks.doc_files() if args.all
            else [Path(d).resolve() for d in args.docs] or [REPO / "README.md"])
    bad = sum(check(d, args.run_all) for d in docs)
    print(f"{bad} stale figure(s)" if bad else "every quoted figure is current")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
