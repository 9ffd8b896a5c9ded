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

import click

from ccxml.cli.options import OUTPUT, SIZE, cannot_write, opt_option, parse_sizes, read_opts, unverified_option
from ccxml.cli.shared import (
    flat_options,
    jobs_option,
    refuse_free_model,
    resolve_jobs,
    source_from_options,
    source_options,
)
from ccxml.cli.topology import check_fit, ranks_of, resolve, topology_options
from ccxml.driver import EXACT_CUT, exact_bound_lines, limit_note, other_reading, rank_algorithms, window_warning
from ccxml.vocab.files import file_text
from ccxml.vocab.wire import Coll

COLL_NAMES = [c.value for c in Coll]


def _fail(message: str):
    raise click.ClickException(message)


def _fmt_us(t: float) -> str:
    return f"{t * 1e6:.2f}"


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


# ---- ccxml simulate ---------------------------------------------------------------------------

@click.command("simulate")
@click.argument("source", metavar="SOURCE")
@source_options
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
def simulate(source, ranks, coll, root, nbytes, minbytes, maxbytes, stepfactor, topology_file,
             preset, nodes, gpu, alpha, beta, gamma, nlinks, as_json, plot, opts=(), unverified=False):
    """Estimate how long SOURCE (an MSCCL XML file or an algorithm name) takes.

    On a preset or a network topology (--preset, a [network] file, NCCL topology XML) every
    transfer crosses the links of its route and shares them, max-min fairly, with the transfers
    in flight there. On dedicated links (--alpha/--beta/--gamma, a file of levels, the flat
    preset) every pair of ranks has its own full-duplex link: b bytes cost α + b·β, a reduction
    b·γ. Sizes are nccl-tests' (allreduce: buffer; allgather: output; reducescatter: input;
    alltoall: total). With no topology option the topology recorded in the file is used, else
    1 µs, 100 GB/s, 1 TB/s reduction. The table shows the topology's busbw bound beside each row.
    """
    from ccxml.driver import bounds as bounds_of
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError, TopologyError
    sizes = parse_sizes(nbytes, minbytes, maxbytes, stepfactor)
    tg = source_from_options(source, sizes, ranks=ranks, coll=coll, root=root, topology_file=topology_file,
                     preset=preset, nodes=nodes, gpu=gpu, alpha=alpha, beta=beta, gamma=gamma,
                     opts=read_opts(opts), unverified=unverified)
    schedules, schedule, label, topo, notes, is_file = (tg.schedules, tg.schedule, tg.label, tg.topology,
                                                        tg.notes, tg.is_file)
    try:
        results = [simulate_schedule(sch, n, topo) for sch, n in zip(schedules, sizes)]
        bounds = bounds_of(topo, schedule, sizes, root)
    except (SimulationError, TopologyError) as e:
        _fail(f"{label}: {e}")
    refuse_free_model(topo)         # after the shape checks: their message comes first
    warnings = list(notes)
    w = window_warning(schedule, sizes) if is_file else None
    if w:
        warnings.append(w)
    for msg in results[-1].warnings:
        warnings.append(msg)
    last = results[-1]
    if as_json:
        busiest = last.busiest_link
        doc = {
            "schedule": {"name": file_text(schedule.name), "source": source, "coll": schedule.coll,
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
    if b is not None and b.busbw != float("inf") and b.cut != EXACT_CUT:  # else: exact_bound_lines
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

def _ratio(a: float, b: float) -> float:
    """a / b, or 1.0 when b is 0 (two free schedules are equally fast)."""
    return a / b if b > 0 else 1.0


def _proxy_check(topo, other: str | None, ranked, alt) -> dict | None:
    """``select`` under the other reading of the NICs' per-message cost: ``other`` is its name
    and ``alt`` the ranking of the same schedules on :func:`ccxml.driver.other_reading`'s topology. None when
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
    from ccxml.driver import bound_at, exact_bound_of
    from ccxml.simulator.rules import hccl_rule
    from ccxml.vocab.sizes import format_size
    n = parse_sizes(nbytes, None, None, 2.0)[0]
    topo, topo_notes = resolve(topology_file, preset, nodes, gpu, alpha=alpha, beta=beta, gamma=gamma)
    ranks = ranks_of(topo, ranks)
    check_fit(topo, ranks, topology_file=topology_file, preset=preset, nodes=nodes)
    refuse_free_model(topo)
    if ranks < 2:
        raise click.UsageError(f"--ranks must be >= 2, got {ranks}")
    other = other_reading(topo)
    ranked, skipped, unbounded, alts = rank_algorithms(coll, ranks, n, topo, root, jobs=resolve_jobs(jobs),
                                                       others=() if other is None else (other[1],))
    bound = bound_at(topo, coll, ranks, n, root or 0, exact_bound_of(topo, coll))
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
    from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS
    if ranks > MAX_PROVED_BUILT_RANKS:
        notes.append(f"the candidates are built for {ranks} ranks and not proved here (select "
                     f"proves a built algorithm up to {MAX_PROVED_BUILT_RANKS} ranks: proving takes "
                     f"memory that grows as ranks³; docs/limits.md)")
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
