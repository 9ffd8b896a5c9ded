"""README.md fits on a screen and says what is true now (issue 25): at most 250 lines, its
picture is what ``ccxml show`` draws today, its table is ``ccxml list``'s, the figures of its
tour are what the commands print, and its links and the docs' links lead to files that exist."""
from __future__ import annotations

import re

import doc_blocks
import pytest
from doc_blocks import REPO, doc_files
from in_process import ccxml

README = REPO / "README.md"
PICTURE = REPO / "docs" / "img" / "ring-allreduce-4.svg"
PICTURE_ARGS = ["show", "ring", "-n", "4", "-c", "allreduce", "--bytes", "1M"]


def test_readme_fits_on_a_screen():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines"


def test_the_readme_picture_is_what_show_draws_now(tmp_path):
    """Regenerate the README's SVG with the command its caption gives; it must be the committed
    file byte for byte (after a change to ``ccxml show``, rerun that command)."""
    text = README.read_text(encoding="utf-8")
    assert "docs/img/ring-allreduce-4.svg" in text
    assert "ccxml " + " ".join(PICTURE_ARGS) + " -o docs/img/ring-allreduce-4.svg" in " ".join(
        text.split())
    out = tmp_path / "ring-allreduce-4.svg"
    code, _, err = ccxml(*PICTURE_ARGS, "-o", out)
    assert code == 0, err
    assert out.read_bytes() == PICTURE.read_bytes(), (
        "docs/img/ring-allreduce-4.svg is stale: run ccxml " + " ".join(PICTURE_ARGS)
        + " -o docs/img/ring-allreduce-4.svg")


def test_the_algorithm_table_is_ccxml_lists():
    code, out, err = ccxml("list")
    assert code == 0, err
    listed = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 10 and all(c in ("x", ".") for c in f[1:10]):  # plugins add a column
            listed[f[0]] = [c == "x" for c in f[1:10]]
    assert len(listed) >= 18, out
    table = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `([a-z0-9-]+)` \|((?:[^|]*\|){9})\s*$", line)
        if m:
            table[m.group(1)] = [c.strip() == "✓" for c in m.group(2).split("|")[:9]]
    assert table == listed


def test_the_tours_figures_are_what_the_commands_print(tmp_path, monkeypatch):
    """Run the README's commands up to the last one that quotes its output, in a copy of the
    repository, and check every quoted excerpt (benchmarks/doc_figures.py prints them all)."""
    cmds = doc_blocks.commands(README)
    last = max(i for i, c in enumerate(cmds) if c.excerpts or c.exit_code)
    assert sum(len(c.excerpts) for c in cmds) >= 4
    def invoke(args, cwd):
        monkeypatch.chdir(cwd)
        code, out, err = ccxml(*args)
        return code, out + err

    outcomes = doc_blocks.run_doc(README, tmp_path, until=last, mpi=False, invoke=invoke)
    bad = [f"{o.cmd.where}: {o.cmd.text}: {o.reason}" for o in outcomes if o.ran and o.reason]
    assert not bad, "\n".join(bad)
    assert all(o.ran for o in outcomes if o.cmd.excerpts)


_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_lead_to_files_that_exist(doc):
    missing = []
    text = re.sub(r"<!--.*?-->", "", doc.read_text(encoding="utf-8"), flags=re.S)
    for target, _ in _LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (doc.parent / target).exists():
            missing.append(target)
    assert not missing, f"{doc.name}: {missing}"


def test_figures_in_the_tours_prose_are_quoted_figures():
    """A figure the tour's text gives (361.19 µs, 325.15 GB/s) is one of the command excerpts that
    test_the_tours_figures_are_what_the_commands_print reruns, so it cannot go stale alone."""
    text = README.read_text(encoding="utf-8")
    tour = text.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    prose = re.sub(r"```.*?```", "", tour, flags=re.S)
    quoted = " ".join(ex for c in doc_blocks.commands(README) for ex in c.excerpts)
    figures = re.findall(r"\d+\.\d+", prose)
    assert figures
    for f in figures:
        assert f in quoted, f"the tour's text gives {f}, which no command excerpt quotes"
