"""``ccxml simulate`` and ``ccxml select``: α-β-γ cost of a schedule, and algorithm ranking.

``simulate`` takes an MSCCL XML file or an algorithm name (generated in memory through the
algorithm registry, :mod:`ccxml.algorithms`) and prints an nccl-tests style table; ``select``
simulates every registered algorithm that supports a collective and ranks them, beside HCCL's rule
of thumb (:mod:`ccxml.simulator.rules`).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

import click

from ccxml.cli.options import OUTPUT, SIZE, Refused, cannot_write, opt_option, read_opts, unverified_option
from ccxml.cli.topology import check_fit, ranks_of, resolve, topology_options
from ccxml.vocab.files import file_text
from ccxml.vocab.wire import UNBOUNDED, Coll

COLL_NAMES = [c.value for c in Coll]


# ---- building schedules -----------------------------------------------------------------------

def _schedule_from_text(text: str):
    """Parse XML text into a Schedule with the safe loader."""
    from ccxml.loader.reader import loads
    return loads(text)


def algorithm_schedule(algorithm: str, coll: str, ranks: int, *, root: int | None = None,
                       topology=None, target: str = "exec", opts: dict[str, str] | None = None,
                       on_limit=None, **options):
    """Generate ``algorithm``'s ``coll`` for ``ranks`` ranks in memory and load it as a Schedule:
    :func:`compiled_algorithm`, written for ``target`` and read back by the loader. When the
    target's limits stop it and ``on_limit`` is given, it is built again for the
    :data:`~ccxml.vocab.wire.UNBOUNDED` profile (to be timed, never written) and ``on_limit``
    gets the limit's one line."""
    from ccxml.vocab.errors import LimitError
    from ccxml.vocab.wire import UNBOUNDED
    from ccxml.writer.msccl import to_xml
    kw = dict(root=root, topology=topology, opts=opts, **options)
    try:
        algo = compiled_algorithm(algorithm, coll, ranks, target=target, **kw)
    except LimitError as e:
        if on_limit is None:
            raise
        target = UNBOUNDED.name
        algo = compiled_algorithm(algorithm, coll, ranks, target=target, **kw)
        on_limit(str(e).splitlines()[0])
    return _schedule_from_text(to_xml(algo, target))


def compiled_algorithm(algorithm: str, coll: str, ranks: int, *, root: int | None = None,
                       topology=None, target: str = "exec", opts: dict[str, str] | None = None,
                       **options):
    """Build ``algorithm``'s ``coll`` for ``ranks`` ranks and compile it for ``target``: the
    compiled Algo (``algorithm`` may name a variant, ``NAME:VARIANT``, as
    :meth:`Registry.entries` lists them).

    The topology is handed to builders that take one (``topology``, ``groups`` or
    ``servers``/``ranks_per_server`` parameters); other builders ignore it. ``target`` is the
    runtime profile whose limits the compiler meets (it may split long thread blocks); ``opts``
    the builder's own options as text (``--opt KEY=VALUE``).
    Raises ValueError subclasses (unknown algorithm, bad shape, limits, ...). With ``on_limit``
    a schedule that breaks one of the target's limits is built again without any
    (:data:`ccxml.vocab.wire.UNBOUNDED`, the simulator has none) and ``on_limit(reason)`` called.
    """
    from ccxml.algorithms import registry
    from ccxml.frontend.algorithm import Options
    algorithm, variant = registry.entry(algorithm)
    alg = registry.get(algorithm)
    c = Coll(coll)
    if c.rooted and root is None:
        root = 0
    kwargs = alg.topology_args(c, topology) if c in alg.builders else {}
    if opts:
        kwargs.update(alg.parse_options(c, opts))
    prog = registry.build(algorithm, c, ranks, options=Options(**options), root=root, **kwargs,
                          **variant)
    return prog.compile(target, consume=True)          # a program of its own, compiled once


def limit_note(name: str, reason: str, target: str = "exec") -> str:
    """What simulate and select say of a schedule timed without the runtime's limits."""
    from ccxml.vocab.wire import UNBOUNDED
    return (f"{name}: {reason}; timed without the {target} runtime's limits (profile "
            f"{UNBOUNDED.name!r}, as if the runtime had none): no runtime loads it as built")


def algorithm_schedules(algorithm: str, coll: str, ranks: int, sizes: list[int], *,
                        root: int | None = None, topology=None, target: str = "exec",
                        opts: dict[str, str] | None = None, on_limit=None):
    """One schedule per size: the algorithm built for a window ending at that size (messages as
    large as the runtime moves at that size, §6), as ``ccxml tune`` builds them. Sizes that give
    the same primitive-call size share one schedule."""
    from ccxml.vocab.wire import max_allowed_count
    top = max(sizes)
    first = algorithm_schedule(algorithm, coll, ranks, root=root, topology=topology,
                               target=target, opts=opts, max_bytes=top, on_limit=on_limit)
    built = {max_allowed_count(first.proto, top, first.nchunksperloop): first}
    out = []
    for n in sizes:
        allowed = max_allowed_count(first.proto, n, first.nchunksperloop)
        if allowed not in built:
            built[allowed] = algorithm_schedule(algorithm, coll, ranks, root=root,
                                                topology=topology, target=target, opts=opts,
                                                max_bytes=n, on_limit=on_limit)
        out.append(built[allowed])
    return out


def _fail(message: str):
    raise click.ClickException(message)


def _sizes(nbytes, minbytes, maxbytes, factor, default_max: int = 1 << 30) -> list[int]:
    """``--bytes`` or the ``-b/-e/-f`` sweep (default 1K to ``default_max``) as byte counts."""
    from ccxml.vocab.errors import SizeError
    from ccxml.vocab.sizes import parse_size, size_range
    try:
        if nbytes is not None:
            if minbytes is not None or maxbytes is not None:
                raise click.UsageError("give either --bytes or -b/-e, not both")
            return [parse_size(nbytes)]
        lo = parse_size(minbytes) if minbytes is not None else None
        hi = parse_size(maxbytes) if maxbytes is not None else None
        if lo is None:
            lo = min(1 << 10, hi) if hi is not None else 1 << 10
        if hi is None:
            hi = max(default_max, lo)
        return size_range(lo, hi, factor)
    except SizeError as e:
        raise click.UsageError(str(e)) from None


def _fmt_us(t: float) -> str:
    return f"{t * 1e6:.2f}"


def _window_warning(schedule, sizes) -> str | None:
    lo, hi = schedule.min_bytes or 0, schedule.max_bytes or 0
    outside = [n for n in sizes if n < lo or (hi and n > hi)]
    if not outside:
        return None
    return (f"{len(outside)} of {len(sizes)} sizes are outside the file's minBytes..maxBytes "
            f"window {lo}..{hi or 'unlimited'}; the runtime would not use this file for them")


def _plot(path: str, label: str, rows, title: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _fail("--plot needs matplotlib: pip install 'ccxml[plot]'")
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in ("png", "svg", "pdf"):
        raise click.UsageError(f"--plot {path}: use a .png or .svg file name")
    from ccxml.vocab.files import open_output
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([r.nbytes for r in rows], [r.busbw / 1e9 for r in rows], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        with open_output(path, binary=True) as f:       # a file: whole or not at all
            fig.savefig(f, format=ext)
    except OSError as e:
        _fail(cannot_write(path, e))
    finally:
        plt.close(fig)


# ---- what to simulate: a file or an algorithm ----------------------------------------------

def target_options(f):
    """--ranks, --coll, --root: the shape of an ALGO target (in that order in --help)."""
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


@dataclass
class Target:
    """What ``ccxml simulate TARGET`` (or ``show``) runs: one schedule per size, on a topology."""
    schedules: list
    label: str
    topology: object
    notes: list[str]
    is_file: bool

    @property
    def schedule(self):
        """The schedule of the largest size (the only one for a file)."""
        return self.schedules[-1]


UNVERIFIED_NOTE = "not verified (--unverified): the figures are those of a schedule that may be wrong"


def verification_failure(schedule, target: str = "exec") -> str | None:
    """The first reason ``ccxml verify`` (``target``, every call form the file declares) fails
    ``schedule``, or None when it passes (warnings pass, as in ``verify`` without --strict)."""
    from ccxml.interpreter import verify
    try:
        rep = verify(schedule, target=target)
    except ValueError as e:               # NotExecutable and friends: it cannot be run at all
        return str(e).splitlines()[0]
    fails = rep.failures(False)
    return str(fails[0]) if fails else None


def refuse_free_model(topo) -> None:
    """A usage error (exit 2, one line) for a dedicated-link model in which transfers cost
    nothing (alpha = beta = 0 on every level): it would time every schedule at 0 s, and
    bandwidths and ratios would divide by zero."""
    if topo.is_network:
        return
    levels = [topo.intra] + ([topo.inter] if topo.inter is not None else [])
    if all(lv.alpha == 0 and lv.beta == 0 for lv in levels):
        raise click.UsageError("a cost model with alpha = beta = 0 makes every transfer free and "
                               "every time 0 s: give --alpha or --beta > 0 (or a --preset)")


def check_verified(schedules, label: str, unverified: bool, command: str,
                   target: str = "exec") -> list[str]:
    """Refuse (exit 1, one line) a schedule that fails verification for ``target``, unless
    ``unverified``: then the notes say it was not verified. Returns the notes to print."""
    if unverified:
        return [UNVERIFIED_NOTE]
    seen: set = set()
    for sch in schedules:
        if id(sch) in seen:
            continue
        seen.add(id(sch))
        why = verification_failure(sch, target)
        if why:
            raise Refused(f"{label} fails verification: {why} (ccxml verify says why; "
                          f"{command} --unverified uses it anyway)")
    return []


def load_target(target: str, sizes: list[int], *, ranks=None, coll=None, root=None, topology_file=None,
                preset=None, nodes=None, gpu=None, alpha=None, beta=None, gamma=None,
                command: str = "simulate", opts: dict[str, str] | None = None,
                unverified: bool = False) -> Target:
    """TARGET (an MSCCL XML file, or an algorithm name built in memory for every size, §6, with
    its own options ``opts``) and the topology the options give; click errors (exit 2, one line)
    on bad input. A schedule that fails verification is refused (exit 1) unless ``unverified``,
    and then the notes say so."""
    is_file = os.path.lexists(target) or target.lower().endswith(".xml")
    if is_file and opts:
        raise click.UsageError("--opt goes with an algorithm name, not a file")
    if is_file:
        from ccxml.vocab.files import input_problem
        problem = input_problem(target)     # a directory, device, FIFO, loop: said, never read
        if problem:
            _fail(problem)
        from ccxml.loader.reader import load
        try:
            schedule = load(target)
        except (OSError, ValueError) as e:
            _fail(str(e))
        if ranks is not None and ranks != schedule.ngpus:
            raise click.UsageError(f"--ranks {ranks} does not match the file's ngpus={schedule.ngpus}")
        if coll is not None and coll != schedule.coll:
            raise click.UsageError(f"--coll {coll} does not match the file's coll={schedule.coll}")
        topo, notes = resolve(topology_file, preset, nodes, gpu, alpha=alpha, beta=beta, gamma=gamma,
                              schedule=schedule)
        check_fit(topo, schedule.ngpus or len(schedule.gpus), schedule=os.path.basename(target),
                  topology_file=topology_file, preset=preset, nodes=nodes)
        label = os.path.basename(target)
        notes = check_verified([schedule], label, unverified, command) + notes
        return Target([schedule] * len(sizes), label, topo, notes, True)
    topo, notes = resolve(topology_file, preset, nodes, gpu, alpha=alpha, beta=beta, gamma=gamma)
    if coll is None or (ranks is None and topo.nranks is None):
        raise click.UsageError(f"{target!r} is not a file; to {command} an algorithm give "
                               f"--ranks and --coll (e.g. ccxml {command} ring --ranks 8 --coll "
                               f"allreduce; --preset/--nodes give the ranks too)")
    ranks = ranks_of(topo, ranks)
    check_fit(topo, ranks, topology_file=topology_file, preset=preset, nodes=nodes)
    limits: list[str] = []
    try:
        schedules = algorithm_schedules(target, coll, ranks, sizes, root=root, topology=topo, opts=opts,
                                        on_limit=limits.append)
    except ValueError as e:
        _fail(str(e))
    label = f"{target} {coll}"
    notes = check_verified(schedules, label, unverified, command,
                           target=UNBOUNDED.name if limits else "exec") + notes
    notes = notes + [limit_note(target, why) for why in dict.fromkeys(limits)]
    return Target(schedules, label, topo, notes, False)


# ---- ccxml simulate ---------------------------------------------------------------------------

@click.command("simulate")
@click.argument("target")
@target_options
@click.option("--bytes", "nbytes", type=SIZE, default=None, help="One message size, e.g. 8M.")
@click.option("-b", "--minbytes", type=SIZE, default=None, help="Sweep start (default 1K).")
@click.option("-e", "--maxbytes", type=SIZE, default=None, help="Sweep end (default 1G).")
@click.option("-f", "--stepfactor", type=float, default=2.0, show_default=True,
              help="Sweep multiplication factor.")
@topology_options
@flat_options
@click.option("--links", "nlinks", type=int, default=5, show_default=True,
              help="Busiest links to list (0: none; --json lists all).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--plot", type=OUTPUT, default=None, help="Write busbw vs size to OUT.png or OUT.svg.")
@opt_option
@unverified_option
def simulate(target, ranks, coll, root, nbytes, minbytes, maxbytes, stepfactor, topology_file,
             preset, nodes, gpu, alpha, beta, gamma, nlinks, as_json, plot, opts=(), unverified=False):
    """Estimate how long TARGET (an MSCCL XML file or an algorithm name) takes.

    On a preset or a network topology (--preset, a [network] file, NCCL topology XML) every
    transfer crosses the links of its route and shares them, max-min fairly, with the transfers
    in flight there. On dedicated links (--alpha/--beta/--gamma, a file of levels, the flat
    preset) every pair of ranks has its own full-duplex link: b bytes cost α + b·β, a reduction
    b·γ. Sizes are nccl-tests' (allreduce: buffer; allgather: output; reducescatter: input;
    alltoall: total). With no topology option the topology recorded in the file is used, else
    1 µs, 100 GB/s, 1 TB/s reduction. The table shows the topology's busbw bound beside each row.
    """
    from ccxml.simulator import busbw_bound, simulate_schedule
    from ccxml.vocab.errors import SimulationError, TopologyError
    sizes = _sizes(nbytes, minbytes, maxbytes, stepfactor)
    tg = load_target(target, sizes, ranks=ranks, coll=coll, root=root, topology_file=topology_file,
                     preset=preset, nodes=nodes, gpu=gpu, alpha=alpha, beta=beta, gamma=gamma,
                     opts=read_opts(opts), unverified=unverified)
    schedules, schedule, label, topo, notes, is_file = (tg.schedules, tg.schedule, tg.label, tg.topology,
                                                        tg.notes, tg.is_file)
    try:
        results = [simulate_schedule(sch, n, topo) for sch, n in zip(schedules, sizes)]
        p = schedule.ngpus or len(schedule.gpus)
        the_root = root if root is not None else (int(schedule.attrs.get("root", 0) or 0))
        bounds = [busbw_bound(topo, schedule.coll, p, n, the_root) if p >= 2 else None for n in sizes]
    except (SimulationError, TopologyError) as e:
        _fail(f"{label}: {e}")
    refuse_free_model(topo)         # after the shape checks: their message comes first
    warnings = list(notes)
    w = _window_warning(schedule, sizes) if is_file else None
    if w:
        warnings.append(w)
    for msg in results[-1].warnings:
        warnings.append(msg)
    last = results[-1]
    if as_json:
        busiest = last.busiest_link
        doc = {
            "schedule": {"name": file_text(schedule.name), "source": target, "coll": schedule.coll,
                         "ngpus": schedule.ngpus, "nchunksperloop": schedule.nchunksperloop,
                         "proto": schedule.proto},
            "topology": topo.to_dict(),
            "model": last.model,
            "rows": [{"bytes": r.nbytes, "time_s": r.time_s, "algbw_GBps": r.algbw / 1e9,
                      "busbw_GBps": r.busbw / 1e9} for r in results],
            "bounds": [None if b is None else
                       {"bytes": n, "time_s": b.time_s, "busbw_GBps": b.busbw / 1e9, "cut": b.cut}
                       for n, b in zip(sizes, bounds)],
            "at_bytes": last.nbytes,
            "critical_path": [s.to_dict() for s in last.critical_path],
            "link_busy": [ln.to_dict(last.time_s) for ln in last.links],
            "links": [ln.to_dict(last.time_s) for ln in last.net_links],
            "busiest_link": None if busiest is None else busiest.to_dict(last.time_s),
            "ranks": [r.to_dict() for r in last.ranks],
            "warnings": warnings,
        }
        click.echo(json.dumps(doc, indent=1))
    else:
        _print_table(label, schedule, topo, results, bounds, warnings, nlinks)
    if plot:
        _plot(plot, label, results, f"{label}, {schedule.ngpus} ranks ({topo.describe()})")


def _fmt_bw(x: float) -> str:
    return "inf" if x == float("inf") else f"{x / 1e9:.2f}"


def exact_bound_lines(topo, coll, busbw: float | None = None) -> list[str]:
    """``# ``-lines of the exact max-flow bound (AllGather, ReduceScatter, AllReduce on a network
    topology; ccxml.topology.flow), with its cut and the route rule, and the share ``busbw`` reaches."""
    net = getattr(topo, "network", None)
    coll = getattr(coll, "value", coll)
    if net is None or coll not in ("allgather", "reducescatter", "allreduce"):
        return []
    from ccxml.topology.flow import bound_lines, exact_bound
    lines = bound_lines(topo.graph(), coll)
    if busbw is not None and lines and "unavailable" not in lines[0]:
        share = busbw / exact_bound(topo.graph(), coll).busbw * 100
        lines[0] += f"; this schedule reaches {share:.1f}% of it"
    return [f"# {ln}" for ln in lines]


def _print_table(label, schedule, topo, results, bounds, warnings, nlinks) -> None:
    from ccxml.vocab.sizes import format_size
    out = [f"# ccxml simulate: {label}: {schedule.coll}, {schedule.ngpus} ranks, "
           f"nchunksperloop {schedule.nchunksperloop}, {schedule.nsteps} steps",
           f"# topology: {topo.describe()}",
           "#",
           f"# {'size':>12} {'time':>12} {'algbw':>9} {'busbw':>9} {'bound':>9}",
           f"# {'(B)':>12} {'(us)':>12} {'(GB/s)':>9} {'(GB/s)':>9} {'(GB/s)':>9}"]
    for r, b in zip(results, bounds):
        out.append(f"  {int(r.nbytes):>12} {_fmt_us(r.time_s):>12} {r.algbw / 1e9:>9.2f} "
                   f"{r.busbw / 1e9:>9.2f} {_fmt_bw(b.busbw) if b else '-':>9}")
    last, b = results[-1], bounds[-1]
    at = format_size(last.nbytes)
    path = last.critical_path
    hops = " > ".join(f"r{s.gpu}/tb{s.tb}/{s.step}:{s.type}" for s in path[:8])
    more = f" > ... ({len(path) - 8} more)" if len(path) > 8 else ""
    out.append(f"# critical path at {at}: {len(path)} steps: {hops}{more}")
    if b is not None and b.busbw != float("inf"):
        share = last.busbw / b.busbw * 100 if b.busbw > 0 else 0.0
        out.append(f"# bound at {at}: busbw <= {b.busbw / 1e9:.2f} GB/s ({b.cut}); this schedule "
                   f"reaches {share:.1f}% of it")
    out += exact_bound_lines(topo, schedule.coll, last.busbw)
    busiest = last.busiest_link
    if busiest is not None:
        util = busiest.utilization(last.time_s) * 100
        busy = busiest.busy_s / last.time_s * 100 if last.time_s > 0 else 0.0
        out.append(f"# busiest link at {at}: {busiest.name} ({busiest.kind}), {busiest.transfers} "
                   f"transfers, utilisation {util:.1f}%, busy {busy:.1f}% of the time")
        if nlinks > 0 and len(last.net_links) > 1:
            ranked = sorted(last.net_links, key=lambda ln: (-ln.utilization(last.time_s), ln.name))
            out.append(f"# links at {at} (utilisation = bytes / (bandwidth x time)):")
            for ln in ranked[:nlinks]:
                out.append(f"#   {ln.name:<28} {ln.kind:<7} {_fmt_bw(ln.capacity):>8} GB/s  "
                           f"{ln.utilization(last.time_s) * 100:5.1f}%  {ln.transfers} transfers")
            if len(ranked) > nlinks:
                out.append(f"#   ... {len(ranked) - nlinks} more links (--links N, or --json)")
    for w in warnings:
        out.append(f"# note: {w}")
    click.echo("\n".join(out))


# ---- ccxml select -----------------------------------------------------------------------------

def _rank_one(name: str, coll: str, ranks: int, nbytes: int, topology, root: int | None,
              others: tuple = ()):
    """One candidate of :func:`rank_algorithms` (a worker of the process pool): ``(name,
    SimResult, None, limit, other results)`` — ``limit`` the runtime limit it breaks when it was
    built and timed without the limits, else None; ``other results`` its times on ``others``
    (topologies of the same shape) — or ``(name, None, reason, None, ())`` when it cannot build
    this shape or fails verification."""
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError
    limits: list[str] = []
    try:
        sched = algorithm_schedule(name, coll, ranks, root=root, topology=topology,
                                   max_bytes=int(nbytes), on_limit=limits.append)
        limit = limits[0] if limits else None
        why = verification_failure(sched, target=UNBOUNDED.name if limit else "exec")
        if why:
            return name, None, f"fails verification: {why}", None, ()
        return (name, simulate_schedule(sched, nbytes, topology), None, limit,
                tuple(simulate_schedule(sched, nbytes, t) for t in others))
    except (ValueError, SimulationError) as e:
        return name, None, str(e).splitlines()[0] if str(e) else type(e).__name__, None, ()


def _by_time(ranked: list) -> list:
    """Fastest first, ties by name; a schedule timed at 0 s (or not a finite time) moves nothing
    the model can see: never first."""
    return sorted(ranked, key=lambda x: (not 0 < x[1].time_s < float("inf"), x[1].time_s, x[0]))


def rank_algorithms(coll: str, ranks: int, nbytes: int, topology, root: int | None = None,
                    jobs: int = 1, others: tuple = ()):
    """Simulate every available algorithm supporting ``coll`` and each of its variants
    (``NAME:VARIANT``, :meth:`Registry.entries`), each built for a window ending at ``nbytes``
    (its messages as large as the runtime moves at that size) and verified, ``jobs`` candidates
    at a time in worker processes (:func:`ccxml.tuning.pool.run_all`: the same result with any
    ``jobs``).

    Returns (ranked, unavailable, unbounded, other rankings): ranked = [(name, SimResult)]
    fastest first (ties by name); unavailable = [(name, reason)] for algorithms that cannot
    build this shape or fail verification; unbounded = {name: limit} for those a runtime limit
    stops, timed without the limits; other rankings = one ranked list per topology of
    ``others`` (the same schedules on the same shape, e.g. another reading of its NICs).
    """
    from ccxml.algorithms import registry
    from ccxml.tuning.pool import run_all
    ranked, skipped, unbounded = [], [], {}
    alt: list[list] = [[] for _ in others]
    work = [(name, coll, ranks, nbytes, topology, root, tuple(others)) for name in registry.entries(coll)]
    for name, result, why, limit, more in run_all(_rank_one, work, jobs):
        if result is None:
            skipped.append((name, why))
            continue
        ranked.append((name, result))
        if limit is not None:
            unbounded[name] = limit
        for lst, r in zip(alt, more):
            lst.append((name, r))
    return _by_time(ranked), skipped, unbounded, [_by_time(lst) for lst in alt]


def jobs_option(f):
    """-j/--jobs: candidates simulated at once, in worker processes."""
    return click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                        help="Candidates to simulate at once, in worker processes (default: the "
                             "machine's cores); the output is the same for any value.")(f)


def resolve_jobs(jobs: int | None) -> int:
    from ccxml.tuning.pool import default_jobs
    return default_jobs() if jobs is None else jobs


def _ratio(a: float, b: float) -> float:
    """a / b, or 1.0 when b is 0 (two free schedules are equally fast)."""
    return a / b if b > 0 else 1.0


def _other_reading(topo):
    """(name, topology) of the other reading of the NICs' per-message cost (docs/nic-model.md):
    NCCL's (``proxy = "nic"``: a network step's latency is latency) or a serial proxy's
    (``proxy = "serial"``); None when the topology has no such choice."""
    spec = topo.network if topo.is_network else None
    if spec is None or spec.proxy not in ("nic", "serial"):
        return None
    from ccxml.topology import Topology
    other = "serial" if spec.proxy == "nic" else "nic"
    return other, Topology.from_dict({"network": spec.with_proxy(other)})


def _proxy_check(topo, other: str | None, ranked, alt) -> dict | None:
    """``select`` under the other reading of the NICs' per-message cost: ``other`` is its name
    and ``alt`` the ranking of the same schedules on :func:`_other_reading`'s topology. None when
    the topology has no such choice (``other`` is None) or nothing ranked."""
    if other is None or not ranked or not alt:
        return None
    spec = topo.network
    first, t_first = ranked[0][0], ranked[0][1].time_s
    o_first, o_time = alt[0][0], alt[0][1].time_s
    o_times = {name: r.time_s for name, r in alt}
    po = max(d.proxy_overhead for d in spec.devices if d.kind == "nic")
    reading = {"nic": "NCCL's reading: a network step's latency is latency",
               "serial": f"a proxy handling one message at a time, {po * 1e6:.1f} us each"}
    note = (f"the winner depends on how the NIC's per-message cost is read: with proxy = "
            f"\"{other}\" ({reading[other]}) {o_first} ranks first ({_fmt_us(o_time).strip()} us) "
            f"and {first} takes {_fmt_us(o_times.get(first, float('nan'))).strip()} us; this ranking "
            f"uses proxy = \"{spec.proxy}\" ({reading[spec.proxy]}; docs/nic-model.md)")
    return {"reading": spec.proxy, "first": first, "time_s": t_first, "other": other,
            "other_first": o_first, "other_time_s": o_time,
            "other_ranking": [{"algorithm": a, "time_s": r.time_s} for a, r in alt], "note": note}


@click.command("select")
@click.option("--ranks", "-n", type=int, default=None,
              help="Ranks (default: the topology's rank count).")
@click.option("--coll", "-c", type=click.Choice(COLL_NAMES), required=True, help="Collective.")
@click.option("--bytes", "nbytes", type=SIZE, required=True, help="Message size, e.g. 8M.")
@click.option("--root", type=int, default=None, help="Root of a rooted collective (default 0).")
@topology_options
@flat_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@jobs_option
def select(ranks, coll, nbytes, root, topology_file, preset, nodes, gpu, alpha, beta, gamma, as_json,
           jobs=None):
    """Rank every algorithm that supports COLL by simulated time, beside HCCL's rule of thumb.

    Without a topology option: the flat model (dedicated 100 GB/s links, 1 µs per transfer);
    --preset NAME --nodes N ranks on that cluster, with its links shared."""
    from ccxml.simulator import busbw_bound
    from ccxml.simulator.rules import hccl_rule
    from ccxml.vocab.sizes import format_size
    n = _sizes(nbytes, None, None, 2.0)[0]
    topo, topo_notes = resolve(topology_file, preset, nodes, gpu, alpha=alpha, beta=beta, gamma=gamma)
    ranks = ranks_of(topo, ranks)
    check_fit(topo, ranks, topology_file=topology_file, preset=preset, nodes=nodes)
    refuse_free_model(topo)
    if ranks < 2:
        raise click.UsageError(f"--ranks must be >= 2, got {ranks}")
    other = _other_reading(topo)
    ranked, skipped, unbounded, alts = rank_algorithms(coll, ranks, n, topo, root, jobs=resolve_jobs(jobs),
                                                       others=() if other is None else (other[1],))
    bound = busbw_bound(topo, coll, ranks, n, root or 0)
    advice = hccl_rule(coll, ranks, n, topo)
    names = [name for name, _ in ranked]
    times = {name: r.time_s for name, r in ranked}
    rule_pick = next((a for a in advice.algorithms if a in names), None)
    notes = []
    alt = advice.unless_faster
    if rule_pick is not None and alt in times and alt != rule_pick and times[alt] < times[rule_pick]:
        notes.append(f"the rule's {rule_pick} gives way to {alt}: the model shows {alt} is faster "
                     f"here ({_ratio(times[alt], times[rule_pick]):.2f}x {rule_pick}'s time)")
        rule_pick = alt
    if advice.algorithms and rule_pick is not None and rule_pick != advice.algorithms[0] \
            and advice.algorithms[0] not in names and advice.algorithms[0] != alt:
        notes.append(f"the rule's first choice ({advice.algorithms[0]}) cannot run {coll} here; "
                     f"next: {rule_pick}")
    notes.extend(limit_note(name, why) for name, why in unbounded.items())
    if not ranked:
        notes.append(f"no available algorithm can run {coll} on {ranks} ranks here")
    elif rule_pick is None:
        from ccxml.algorithms import registry
        present = [a for a in advice.algorithms if a in registry.available()]
        why = "cannot run this shape" if present else "is not in this build of ccxml"
        notes.append(f"the rule's choice ({', '.join(advice.algorithms) or 'none'}) {why}")
    elif rule_pick != names[0]:
        why = ""
        if advice.level == "server-outer" and rule_pick in ("ring", "rhd", "nhr", "nb"):
            why = (f"; the rule names the algorithm between servers, ccxml's {rule_pick} runs over "
                   f"all ranks at once")
        elif not topo.is_network and topo.servers > 1:
            why = ("; the dedicated-link model gives every pair of ranks its own full-duplex link, "
                   "which favours many-link algorithms more than real NICs do (try --preset)")
        notes.append(f"the rule picks {rule_pick} (ranked {names.index(rule_pick) + 1} of "
                     f"{len(names)}, {_ratio(times[rule_pick], times[names[0]]):.2f}x the best time) but "
                     f"the model prefers {names[0]}{why}")
    proxy = _proxy_check(topo, None if other is None else other[0], ranked, alts[0] if alts else [])
    if proxy is not None and proxy["first"] != proxy["other_first"]:
        notes.append(proxy["note"])
    if as_json:
        click.echo(json.dumps({
            "coll": coll, "ranks": ranks, "bytes": n, "topology": topo.to_dict(),
            "proxy": None if proxy is None else {k: v for k, v in proxy.items() if k != "note"},
            "model": "shared" if topo.is_network else "dedicated",
            "bound": {"time_s": bound.time_s, "busbw_GBps": bound.busbw / 1e9, "cut": bound.cut},
            "ranking": [{"algorithm": a, "time_s": r.time_s, "algbw_GBps": r.algbw / 1e9,
                         "busbw_GBps": r.busbw / 1e9,
                         **({"unbounded": unbounded[a]} if a in unbounded else {})} for a, r in ranked],
            "unavailable": [{"algorithm": a, "reason": why} for a, why in skipped],
            "rule": {"level": advice.level, "algorithms": list(advice.algorithms),
                     "reason": advice.reason, "pick": rule_pick, "unless_faster": alt},
            "notes": notes, "topology_notes": topo_notes}, indent=1))
        return
    # the name column: a variant's NAME:VARIANT and a long name may be wider than 14
    w = max([14, *(len(name) for name, _ in ranked), *(len(name) for name, _ in skipped)])
    out = [f"# ccxml select: {coll}, {ranks} ranks, {format_size(n)} ({n} B)",
           f"# topology: {topo.describe()}",
           f"# bound: busbw <= {_fmt_bw(bound.busbw)} GB/s ({bound.cut})",
           *exact_bound_lines(topo, coll),
           f"# HCCL rule ({advice.level}): {advice.reason} -> {', '.join(advice.algorithms) or '-'}",
           "#",
           f"# {'rank':>4}  {'algorithm':<{w}} {'time (us)':>12} {'algbw':>9} {'busbw':>9} {'vs best':>8}  rule"]
    best = ranked[0][1].time_s if ranked else 0.0
    for i, (name, r) in enumerate(ranked, 1):
        mark = "<- rule" if name == rule_pick else ""
        if name in unbounded:
            mark = (mark + " (no limits)").strip()
        rel = r.time_s / best if best > 0 else 1.0
        out.append(f"  {i:>4}  {name:<{w}} {_fmt_us(r.time_s):>12} {r.algbw / 1e9:>9.2f} "
                   f"{r.busbw / 1e9:>9.2f} {rel:>7.2f}x  {mark}".rstrip())
    for name, why in skipped:
        out.append(f"  {'-':>4}  {name:<{w}} n/a: {why}")
    for note in notes + topo_notes:
        out.append(f"# note: {note}")
    click.echo("\n".join(out))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(simulate())
