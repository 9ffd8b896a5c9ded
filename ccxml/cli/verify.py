"""``ccxml verify FILE...``: load and prove MSCCL XML files with the reference interpreter.

One line per file (``PASS path (stats)`` or ``FAIL path: first reason``; ``CHECKED path (...)``
when there is no postcondition to prove, e.g. an alltoallv without ``--counts``: loader rules,
deadlocks and races checked, the output not; ``--strict`` fails it); exit 0 if all pass,
1 if any fails, 2 for unusable input (a file that cannot be read or parsed, bad options).
``--json`` prints the full reports instead; ``--findings`` lists every finding under the file's
line, the consequences of a defect indented under it (docs/findings.md); ``--strict`` fails a file on warnings too;
``--junit OUT.xml`` also writes the verdicts as a JUnit report (written whole or not at all,
also when an unusable file stops the run).
"""
from __future__ import annotations

import json
import os

import click

from ccxml.cli.options import OUTPUT
from ccxml.vocab.wire import PROFILES, Coll


def _load_counts(path: str):
    from ccxml.vocab.collectives import read_counts
    from ccxml.vocab.errors import CollectiveError
    try:
        return read_counts(path)
    except OSError as e:
        raise click.UsageError(f"--counts {path}: {e.strerror or e}") from None
    except CollectiveError as e:
        raise click.UsageError(f"--counts {path}: {e}") from None


@click.command("verify")
@click.argument("files", nargs=-1, required=True)
@click.option("--target", type=click.Choice(sorted(PROFILES)), default="exec", show_default=True,
              help="Runtime whose loader rules apply.")
@click.option("--coll", type=click.Choice([c.value for c in Coll]), default=None,
              help="Check against this collective instead of the file's coll attribute.")
@click.option("--root", type=int, default=None, help="Root rank for broadcast/reduce/gather/scatter.")
@click.option("--inplace/--outofplace", "inplace", default=None,
              help="Check only this call form (default: every form the file declares).")
@click.option("--counts", "counts_path", type=click.Path(dir_okay=False), default=None,
              help="alltoallv: CSV matrix of chunk counts M[i][j] sent from rank i to rank j.")
@click.option("--strict", is_flag=True,
              help="Fail a file on any warning too (a dependency released late, no postcondition verdict, ...).")
@click.option("--junit", "junit_path", type=OUTPUT, default=None,
              help="Also write a JUnit XML report to this file: one test case per file, for CI dashboards.")
@click.option("--json", "as_json", is_flag=True, help="Print the full reports as JSON.")
@click.option("--findings", "show_findings", is_flag=True,
              help="Under each file's line, print its findings: a defect once, what it causes indented under it.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def verify(files, target, coll, root, inplace, counts_path, strict, junit_path, as_json, show_findings, quiet):
    """Load and prove MSCCL XML FILES: deadlocks, races, postconditions, loader rules."""
    from ccxml.interpreter import verify as run_verify
    from ccxml.interpreter.junit import Unusable

    counts = _load_counts(counts_path) if counts_path else None
    from ccxml.cli.progress import Progress

    results = []            # a Report, or an Unusable that ends the run (exit 2)
    with Progress(len(files), "verifying", quiet=quiet, delay=1.0) as bar:   # a terminal only
        for path in files:
            bar.update(0, os.path.basename(path))
            rep = _verify_one(run_verify, path, target=target, coll=coll, root=root, inplace=inplace,
                              counts=counts)
            results.append(rep)
            if isinstance(rep, Unusable):
                break
            if not as_json:
                fails = rep.failures(strict)
                unproven = [f for f in rep.findings if f.code == "no-postcondition"]
                if not fails and unproven:
                    # nothing proves the output right: say what was checked, not PASS
                    bar.echo(f"CHECKED {path} (loader rules, deadlocks and races only; no "
                             f"postcondition: {unproven[0].message}) ({rep.summary()})")
                elif not fails:
                    bar.echo(f"PASS {path} ({rep.summary()})")
                else:
                    how = "" if fails[0].severity == "error" else " [a warning; --strict fails it]"
                    if _passes_as_legacy(run_verify, rep, target, fails, strict, coll=coll, root=root,
                                         inplace=inplace, counts=counts):
                        how += "; passes with --target legacy"
                    bar.echo(f"FAIL {path}: {fails[0]}{how}")
                if show_findings:
                    for line in rep.tree():
                        bar.echo("  " + line)
            bar.update(1)
    if junit_path:
        _write_junit(junit_path, results, strict, target)
    if isinstance(results[-1], Unusable):
        raise click.UsageError(results[-1].reason)
    if as_json:
        click.echo(json.dumps([r.to_dict(strict) for r in results], indent=2))
    elif len(files) > 1:
        click.echo(tally(results, strict))
    return 0 if all(r.passes(strict) for r in results) else 1


def tally(results, strict: bool) -> str:
    """The last line of a many-file run: ``N passed, M failed, K warnings`` (K: the warnings of
    every file, as its PASS/FAIL line lists them)."""
    passed = sum(r.passes(strict) for r in results)
    warned = sum(len(r.warnings) for r in results)
    return (f"{passed} passed, {len(results) - passed} failed, {warned} warning{'s' if warned != 1 else ''}")


def _passes_as_legacy(run_verify, rep, target: str, fails, strict: bool, **options) -> bool:
    """Whether a file that fails ``target``'s loader rules only passes for ``legacy``: a file written
    for the legacy msccl-tools runtime lacks attributes the exec target's loader requires (the fix:
    --target legacy, or regenerating it). A file that fails the interpreter is not tried again."""
    loader = set(map(id, rep.loader_findings))
    if target == "legacy" or not all(id(f) in loader for f in fails):
        return False
    try:
        again = run_verify(rep.path, target="legacy", **options)
    except (OSError, ValueError):
        return False
    return again.passes(strict)


def _verify_one(run_verify, path: str, **options):
    """The Report for ``path``, or an Unusable when the file cannot be read or parsed."""
    from ccxml.interpreter.junit import Unusable
    from ccxml.vocab.files import input_problem
    problem = input_problem(path)       # a directory, device, FIFO, loop: said, never read
    if problem:
        return Unusable(path, problem)
    try:
        return run_verify(path, **options)
    except OSError as e:
        return Unusable(path, f"{path}: {e.strerror or e}")
    except ValueError as e:          # LoadError and friends: unusable input
        msg = str(e)
        return Unusable(path, msg if path in msg else f"{path}: {msg}")


def _write_junit(path: str, results: list, strict: bool, target: str) -> None:
    from ccxml.interpreter.junit import junit_xml
    from ccxml.writer.files import write_atomic
    try:
        write_atomic(path, junit_xml(results, strict=strict, target=target))
    except OSError as e:
        raise click.UsageError(f"--junit {path}: cannot write: {e.strerror or e}") from None
