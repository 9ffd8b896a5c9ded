"""``ccxml verify FILE...``: load and prove MSCCL XML files with the reference interpreter.

One line per file (``PASS path (stats)`` or ``FAIL path: first reason``); exit 0 if all pass,
1 if any fails, 2 for unusable input (a file that cannot be read or parsed, bad options).
``--json`` prints the full reports instead.
"""
from __future__ import annotations

import json
import os

import click

from ccxml.vocab.wire import PROFILES, Coll


def _load_counts(path: str):
    from ccxml.vocab.collectives import parse_counts
    from ccxml.vocab.errors import CollectiveError
    try:
        with open(path, encoding="utf-8") as f:
            return parse_counts(f.read())
    except OSError as e:
        raise click.UsageError(f"--counts {path}: {e.strerror or e}") from None
    except CollectiveError as e:
        raise click.UsageError(f"--counts {path}: {e}") from None


@click.command("verify")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--target", type=click.Choice(sorted(PROFILES)), default="exec", show_default=True,
              help="Runtime whose loader rules apply.")
@click.option("--coll", type=click.Choice([c.value for c in Coll]), default=None,
              help="Check against this collective instead of the file's coll attribute.")
@click.option("--root", type=int, default=None, help="Root rank for broadcast/reduce/gather/scatter.")
@click.option("--inplace/--outofplace", "inplace", default=None,
              help="Check only this call form (default: every form the file declares).")
@click.option("--counts", "counts_path", type=click.Path(dir_okay=False), default=None,
              help="alltoallv: CSV matrix of chunk counts M[i][j] sent from rank i to rank j.")
@click.option("--json", "as_json", is_flag=True, help="Print the full reports as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def verify(files, target, coll, root, inplace, counts_path, as_json, quiet):
    """Load and prove MSCCL XML FILES: deadlocks, races, postconditions, loader rules."""
    from ccxml.interpreter import verify as run_verify

    counts = _load_counts(counts_path) if counts_path else None
    from ccxml.cli.progress import Progress

    reports = []
    with Progress(len(files), "verifying", quiet=quiet, delay=1.0) as bar:   # a terminal only
        for path in files:
            bar.update(0, os.path.basename(path))
            if not os.path.isfile(path):
                raise click.UsageError(f"{path}: no such file")
            try:
                rep = run_verify(path, target=target, coll=coll, root=root, inplace=inplace, counts=counts)
            except OSError as e:
                raise click.UsageError(f"{path}: {e.strerror or e}") from None
            except ValueError as e:          # LoadError and friends: unusable input
                msg = str(e)
                raise click.UsageError(msg if path in msg else f"{path}: {msg}") from None
            reports.append(rep)
            if not as_json:
                if rep.ok:
                    bar.echo(f"PASS {path} ({rep.summary()})")
                else:
                    bar.echo(f"FAIL {path}: {rep.first_reason}")
            bar.update(1)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in reports], indent=2))
    return 0 if all(r.ok for r in reports) else 1
