"""Options and helpers several commands share: SOURCE (a file or an algorithm) with its shape
(``simulate``, ``show``, ``export``), the flat model's ``--alpha/--beta/--gamma``, ``--jobs``.

What they do is the driver's (:mod:`ccxml.driver`); here they become click options and one-line
errors.
"""
from __future__ import annotations

import click

from ccxml.cli.options import driven
from ccxml.cli.topology import topology_of
from ccxml.vocab.wire import Coll

COLL_NAMES = [c.value for c in Coll]


def source_options(f):
    """--ranks, --coll, --root: the shape of an algorithm SOURCE (in that order in --help)."""
    f = click.option("--root", type=int, default=None, help="Root of a rooted collective (default 0).")(f)
    f = click.option("--coll", "-c", type=click.Choice(COLL_NAMES), default=None,
                     help="Collective (required for an ALGO).")(f)
    f = click.option("--ranks", "-n", type=int, default=None,
                     help="Ranks (for an ALGO; default: the topology's rank count).")(f)
    return f


def flat_options(f):
    """--alpha, --beta, --gamma: a flat dedicated-link topology (in that order in --help)."""
    f = click.option("--gamma", type=float, default=None, help="Flat reduction time per byte, s/B.")(f)
    f = click.option("--beta", type=float, default=None, help="Flat time per byte, s/B.")(f)
    f = click.option("--alpha", type=float, default=None, help="Flat latency per transfer, s.")(f)
    return f


def refuse_free_model(topo) -> None:
    """A usage error (exit 2, one line) for a dedicated-link model in which transfers cost
    nothing (:func:`ccxml.driver.free_model_problem`)."""
    from ccxml.driver import free_model_problem
    why = free_model_problem(topo)
    if why:
        raise click.UsageError(why)


def source_from_options(source: str, sizes: list[int], *, ranks=None, coll=None, root=None, topology_file=None,
                preset=None, nodes=None, gpu=None, alpha=None, beta=None, gamma=None,
                command: str = "simulate", opts: dict[str, str] | None = None, unverified: bool = False):
    """SOURCE and its topology (:func:`ccxml.driver.load_source`); click errors (exit 2, one line)
    on bad input, exit 1 for a schedule that fails verification unless ``unverified``."""
    from ccxml.driver import load_source
    with driven():
        return load_source(source, sizes, ranks=ranks, coll=coll, root=root, command=command, opts=opts,
                           unverified=unverified,
                           topology=topology_of(topology_file, preset, nodes, gpu, alpha=alpha, beta=beta,
                                                gamma=gamma))


def jobs_option(f):
    """-j/--jobs: candidates simulated at once, in worker processes."""
    return click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                        help="Candidates to simulate at once, in worker processes (default: the "
                             "machine's cores); the output is the same for any value.")(f)


def resolve_jobs(jobs: int | None) -> int:
    from ccxml.driver.pool import default_jobs
    return default_jobs() if jobs is None else jobs
