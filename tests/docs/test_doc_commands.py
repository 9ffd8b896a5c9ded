"""Every line of a ```sh block in README.md and docs/*.md runs as written from the repository
root after the two set-up commands (issue 25).

The default suite checks each line without running it: its programs are the set-up's, its ccxml
command exists, every file it reads is in the repository (or written to out/ by a line before
it), a plugin command comes after the plugin's install line, nothing reaches outside the
repository. ``-m slow`` runs every line, doc by doc, in a copy of the repository, and checks the
exit codes and the output excerpts quoted under the commands (``tests/helpers/doc_blocks.py``).
"""
from __future__ import annotations

import re

import doc_blocks
import pytest
from doc_blocks import REPO, commands, doc_files, problems

DOCS = doc_files()
IDS = [str(p.relative_to(REPO)) for p in DOCS]


def test_the_docs_have_commands_to_check():
    """The parser finds the README's tour and the topic pages' blocks (a renamed fence would
    otherwise make every check below vacuous)."""
    counts = {str(p.relative_to(REPO)): len(commands(p)) for p in DOCS}
    assert counts["README.md"] >= 8, counts
    assert sum(counts.values()) >= 60, counts


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_sh_line_names_a_command_and_files_that_exist(doc):
    found = [p for c in commands(doc) for p in problems(c)]
    assert not found, "\n".join(found)


def test_the_checker_catches_what_issue_25_found():
    """The lines the issue found failing as written are refused by the check."""
    bad = ["ccxml generate pairwise --ranks 4 --coll alltoallv --counts counts.csv --verify",
           "ccxml mscclang allreduce_a100_ring.py 8 1 1",
           "ccxml verify out/ring_allreduce_8.xml ../shared/xml-corpus/*/*.xml",
           "ccxml verify FILE.xml --target rccl --json",
           "ccxml frobnicate ring"]
    for text in bad:
        assert problems(doc_blocks.Command("x.md", 1, text)), text
    assert not problems(doc_blocks.Command(
        "x.md", 1, "ccxml generate pairwise --ranks 4 --coll alltoallv "
                   "--counts examples/counts-4.csv --verify"))


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_plugin_commands_come_after_the_plugins_install_in_the_same_block(doc):
    """``stride-ring`` is a plugin's algorithm: a line using it must follow, in its block, the
    line that installs examples/plugin."""
    cmds = commands(doc)
    installed_at = None
    for c in cmds:
        if doc_blocks.needs_install(c) and "examples/plugin" in c.text:
            installed_at = c
        if "stride-ring" in c.text:
            assert installed_at is not None and doc_blocks._same_block(doc, installed_at, c), (
                f"{c.where}: a plugin command without the plugin's install line before it in "
                f"its block")


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_no_placeholders_in_sh_blocks(doc):
    """Placeholders (FILE.xml, PATH, OUT.html, NAME) live in ```text blocks."""
    for c in commands(doc):
        assert not re.search(r"\b(FILE|PATH|OUT|NAME|DIR|ALGO|SCRIPT)\b", c.text), c.where


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_sh_line_runs_as_written(doc, tmp_path):
    outcomes = doc_blocks.run_doc(doc, tmp_path)
    failed = [f"{o.cmd.where}: {o.cmd.text}\n    {o.reason}" for o in outcomes
              if o.ran and o.reason]
    assert not failed, "\n".join(failed)


def test_the_plugin_tutorials_first_program_is_the_shipped_example():
    """docs/plugins.md shows examples/stride_allgather.py, which its next block runs."""
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    shipped = (REPO / "examples" / "stride_allgather.py").read_text(encoding="utf-8")
    assert "```python\n" + shipped + "```" in text
