"""``ccxml tune``: write a verified MSCCL_ALGO_DIR for a cluster (see :mod:`ccxml.tuning.engine`)."""
from __future__ import annotations

import os

import click

from ccxml.cli.options import OUTPUT, SIZE
from ccxml.cli.shared import jobs_option, refuse_free_model, resolve_jobs
from ccxml.cli.topology import check_fit, ranks_of, resolve, topology_options
from ccxml.vocab.wire import PROFILES

TARGETS = [t for t in ("exec", "rccl") if t in PROFILES]


def _colls(values) -> tuple[str, ...]:
    from ccxml.tuning.engine import DEFAULT_COLLS, TUNABLE_COLLS
    out: list[str] = []
    for v in values:
        for c in (x.strip() for x in v.split(",")):
            if not c:
                continue
            if c not in TUNABLE_COLLS:
                raise click.UsageError(f"--coll {c}: tune handles {', '.join(TUNABLE_COLLS)} "
                                       f"(the collectives the runtime selects by size)")
            if c not in out:
                out.append(c)
    return tuple(out) or DEFAULT_COLLS


def _algorithms(text):
    if text is None:
        return None
    from ccxml.algorithms import registry
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise click.UsageError("--algorithms needs at least one name")
    known = registry.available()
    for a in names:
        name, variant = registry.entry(a)            # NAME or NAME:VARIANT
        if name not in known or (variant and not any(
                variant["variant"] in ch.get("variant", ()) for ch in known[name].choices.values())):
            raise click.UsageError(f"--algorithms: unknown algorithm {a!r}; available: "
                                   f"{', '.join(known)}")
    return tuple(dict.fromkeys(names))


def _size(text, option):
    from ccxml.vocab.errors import SizeError
    from ccxml.vocab.sizes import parse_size
    try:
        return parse_size(text)
    except SizeError as e:
        raise click.UsageError(f"{option}: {e}") from None


@click.command("tune")
@click.option("--ranks", "-n", type=int, default=None,
              help="Ranks (GPUs) of the communicator (default: the topology's rank count).")
@topology_options
@click.option("--coll", "-c", "colls", multiple=True,
              help="Collective(s) to tune, repeatable or comma-separated (default: allreduce, "
                   "allgather, reducescatter, alltoall; broadcast/reduce only when named).")
@click.option("--target", type=click.Choice(TARGETS), default="exec", show_default=True,
              help="Runtime whose loader rules every file must meet.")
@click.option("--min-bytes", "min_bytes", type=SIZE, default="1K", show_default=True,
              help="Smallest size served (0: from the first byte).")
@click.option("--max-bytes", "max_bytes", type=SIZE, default="1G", show_default=True,
              help="Largest size served (0: the last window has no upper bound).")
@click.option("--factor", "-f", type=float, default=2.0, show_default=True,
              help="Sizes simulated: min, min*f, min*f^2, ... up to max.")
@click.option("--algorithms", "-a", default=None,
              help="Comma-separated algorithms to consider (default: every available one).")
@click.option("--forms", type=click.Choice(["both", "outofplace", "inplace"]), default="both",
              show_default=True, help="Call forms to write files for.")
@click.option("--root", type=int, default=0, show_default=True,
              help="Root of broadcast/reduce files (the runtime ignores the root!).")
@click.option("--channels", type=int, default=1, show_default=True, help="Channels per instance.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("-o", "--output", type=OUTPUT, required=True, help="The directory to write (MSCCL_ALGO_DIR).")
@jobs_option
def tune(ranks, topology_file, preset, nodes, gpu, colls, target, min_bytes, max_bytes, factor,
         algorithms, forms, root, channels, quiet, output, jobs=None):
    """Write a directory the runtime can use as MSCCL_ALGO_DIR, every file verified.

    Per collective and call form, the size range is split into windows, each served by the
    algorithm the cost model ranks fastest there; each file is proven by the interpreter before
    it is written. The manifest goes beside the directory: DIR.manifest.json, with each window's
    simulated busbw and the topology's bound. Without a topology option: the flat model
    (dedicated 100 GB/s links); --preset dgx-h100 --nodes 4 tunes for that cluster.
    """
    from ccxml.cli.progress import Progress
    from ccxml.simulator import DEFAULT_TOPOLOGY
    from ccxml.tuning.directory import directory_lock, write_algo_dir
    from ccxml.tuning.engine import TuneConfig
    from ccxml.tuning.engine import tune as run_tune
    from ccxml.vocab.errors import TuneError
    lo, hi = _size(min_bytes, "--min-bytes"), _size(max_bytes, "--max-bytes")
    if hi and hi < lo:
        raise click.UsageError(f"--max-bytes {hi} is below --min-bytes {lo}")
    if factor <= 1:
        raise click.UsageError(f"--factor must be > 1, got {factor}")
    topo, topo_notes = resolve(topology_file, preset, nodes, gpu, default=DEFAULT_TOPOLOGY)
    ranks = ranks_of(topo, ranks)
    if ranks < 2:
        raise click.UsageError(f"--ranks must be >= 2, got {ranks}")
    if channels < 1:
        raise click.UsageError(f"--channels must be >= 1, got {channels}")
    if not 0 <= root < ranks:
        raise click.UsageError(f"--root {root} is out of range for {ranks} ranks (0..{ranks - 1})")
    check_fit(topo, ranks, topology_file=topology_file, preset=preset, nodes=nodes)
    refuse_free_model(topo)
    for note in topo_notes:
        click.echo(f"note: {note}", err=True)
    cfg = TuneConfig(ranks=ranks, topology=topo, colls=_colls(colls), target=target, min_bytes=lo,
                     max_bytes=hi, factor=factor, algorithms=_algorithms(algorithms),
                     forms=("outofplace", "inplace") if forms == "both" else (forms,),
                     root=root, channels=channels)
    from ccxml.vocab.errors import SizeError
    try:
        cfg.sample_sizes()                           # a sweep over the limits: one line, now
    except SizeError as e:
        raise click.UsageError(str(e)) from None
    try:
        with directory_lock(output):                 # checks the directory: fails before the work
            steps = len(cfg.colls) * len(cfg.forms)
            with Progress(steps, f"tuning {ranks} ranks", quiet=quiet) as bar:
                result = run_tune(cfg, on_step=lambda done, label: bar.update(done - bar.pos, label),
                                  jobs=resolve_jobs(jobs))
            mpath = write_algo_dir(result, output)
    except TuneError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"cannot write {output}: {e.strerror or e}") from None
    grouped: dict[tuple[str, str], list[str]] = {}
    for s in result.skipped:
        where = grouped.setdefault((s["algorithm"], s["reason"]), [])
        if s["coll"] not in where:
            where.append(s["coll"])
    for (name, reason), where in grouped.items():
        click.echo(f"skip {name} ({', '.join(where)}): {reason}", err=True)
    for r in result.rejected:
        w = r["window"]
        click.echo(f"reject {r['coll']} {r['form']} {r['algorithm']} "
                   f"{w['min_bytes']}..{w['max_bytes'] or 'unlimited'}: {r['reason']}", err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    from ccxml.vocab.sizes import format_size
    for f in result.files:
        window = f"{format_size(f.min_bytes)}..{format_size(f.max_bytes) if f.max_bytes else 'unlimited'}"
        busbw = [p["busbw_GBps"] for p in f.simulated.values()]
        bound = [p["bound_busbw_GBps"] for p in f.simulated.values() if "bound_busbw_GBps" in p]
        bounds = f" (bound {'..'.join(f'{b:g}' for b in bound)})" if bound else ""
        click.echo(f"{f.verdict['verdict']} {os.path.join(output, f.name)}: {f.coll} {f.form} "
                   f"{window} {f.algorithm} {f.proto}, busbw {'..'.join(f'{b:g}' for b in busbw)} "
                   f"GB/s{bounds}")
    click.echo(f"wrote {len(result.files)} files to {output} and {mpath}; "
               f"use: export MSCCL_ALGO_DIR={os.path.abspath(output)}")
