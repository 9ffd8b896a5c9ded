"""``ccxml topology show``, and the topology options every command shares.

:func:`topology_options` adds ``--topology FILE`` (JSON, TOML, or NCCL topology XML), ``--preset
NAME``, ``--nodes N`` and ``--gpu CLASS`` to a command; :func:`resolve` turns them (and the flat
``--alpha/--beta/--gamma`` where a command has them) into a
:class:`~ccxml.topology.model.Topology` plus notes for the user (defects of an XML file, what a
dedicated-link topology means).
"""
from __future__ import annotations

import json

import click

GPU_CHOICES = ("h100", "a100", "v100")


def topology_options(f):
    """--topology, --preset, --nodes, --gpu (in that order in --help)."""
    f = click.option("--gpu", default=None, type=click.Choice(GPU_CHOICES),
                     help="With an NCCL topology .xml that gives only the PCI tree: the GPUs' "
                          "NVLink side.")(f)
    f = click.option("--nodes", type=int, default=None,
                     help="Nodes (servers) of the preset or topology file, joined by its fabric "
                          "(default 1).")(f)
    f = click.option("--preset", default=None, metavar="NAME",
                     help="Hardware preset: dgx-h100, dgx-a100, mi300x, ascend-910b, pcie, flat "
                          "(ccxml topology show --preset NAME).")(f)
    f = click.option("--topology", "topology_file", type=click.Path(dir_okay=False), default=None,
                     help="Topology file: JSON or TOML, or NCCL topology XML (NCCL_TOPO_DUMP_FILE).")(f)
    return f


def resolve(topology_file=None, preset=None, nodes=None, gpu=None, *, alpha=None, beta=None,
            gamma=None, schedule=None, default=None):
    """(Topology, notes) from the options; click errors (exit 2, one line) on bad input.

    Without any option: the topology the schedule records, else ``default`` (the simulator's
    flat model when None)."""
    from ccxml.simulator import resolve_topology
    from ccxml.topology.files import load_topology
    from ccxml.topology.model import load_preset
    from ccxml.vocab.errors import TopologyError
    flat = any(x is not None for x in (alpha, beta, gamma))
    given = [name for name, v in (("--topology", topology_file), ("--preset", preset),
                                  ("--alpha/--beta/--gamma", flat)) if v]
    if len(given) == 2:
        raise click.UsageError(f"give either {given[0]} or {given[1]}, not both")
    if len(given) > 2:
        raise click.UsageError(f"give only one of {', '.join(given)}")
    if nodes is not None and not (topology_file or preset):
        raise click.UsageError("--nodes needs --preset or --topology")
    if gpu is not None and not (topology_file and topology_file.lower().endswith(".xml")):
        raise click.UsageError("--gpu goes with --topology FILE.xml (an NCCL topology file)")
    notes: list[str] = []
    try:
        if preset is not None:
            topo = load_preset(preset, 1 if nodes is None else nodes)
        elif topology_file is not None and topology_file.lower().endswith(".xml"):
            from ccxml.topology.ncclxml import load_nccl_topology
            read = load_nccl_topology(topology_file, gpu=gpu, nodes=1 if nodes is None else nodes)
            topo, notes = read.topology, list(read.notes)
        elif topology_file is not None:
            topo = load_topology(topology_file, nodes=nodes)
        elif not flat and schedule is None and default is not None:
            topo = default
        else:
            topo = resolve_topology(schedule, None, alpha, beta, gamma)
    except TopologyError as e:
        raise click.ClickException(str(e)) from None
    return topo, notes + topo.notes()


def ranks_of(topo, ranks: int | None) -> int:
    """``--ranks``, or the topology's rank count (a mismatch is the caller's to report, in the
    topology's own words: :meth:`Topology.check_ranks`)."""
    if ranks is None:
        if topo.nranks is None:
            raise click.UsageError("--ranks is required (or give --preset/--nodes or a topology with "
                                   "a rank count)")
        return topo.nranks
    return ranks


def topology_words(topology_file=None, preset=None, nodes=None) -> str:
    """The options that gave the topology, as the user typed them."""
    if preset is not None:
        return f"--preset {preset}" + (f" --nodes {nodes}" if nodes is not None else "")
    if topology_file is not None:
        return f"--topology {topology_file}" + (f" --nodes {nodes}" if nodes is not None else "")
    return "the topology the file records"


def check_fit(topo, ranks: int, *, schedule: str | None = None, given: str | None = None,
              topology_file=None, preset=None, nodes=None) -> None:
    """A usage error (one line, exit 2) in the options' words when the topology's groups do not
    add up to the rank count: which options disagree and how to make them agree. ``schedule``:
    the file whose ``ngpus`` gave the ranks (else they came from ``--ranks``); ``given``: the
    options that gave the topology (default :func:`topology_words`)."""
    groups = topo.groups
    if groups is None or sum(groups) == ranks:
        return
    total = sum(groups)
    given = given or topology_words(topology_file, preset, nodes)
    unit = "node" if preset is not None or topology_file is not None else "group"
    if len(set(groups)) == 1:
        shape = f"{len(groups)} {unit}{'s' if len(groups) > 1 else ''} of {groups[0]} ranks ({total} in all)"
    else:
        shape = f"{unit}s of {'+'.join(map(str, groups))} ranks ({total} in all)"
    per = groups[0] if len(set(groups)) == 1 else None
    by_nodes = (f"--nodes {ranks // per}" if per and ranks % per == 0 and unit == "node" else None)
    if schedule is not None:
        fix = f"give {by_nodes}" if by_nodes else "give a topology of that many ranks"
        raise click.UsageError(f"the schedule {schedule} has {ranks} ranks, but {given} gives {shape}; {fix}")
    fix = f"give {by_nodes}, or --ranks {total}" if by_nodes else f"give --ranks {total} (or leave --ranks out)"
    raise click.UsageError(f"--ranks {ranks} disagrees with {given}: {shape}; {fix}")


# ---- ccxml topology show ------------------------------------------------------------------------

@click.group("topology")
def topology():
    """Inspect the topology the simulator, select and tune use."""


def _gbps(x: float) -> str:
    return "unlimited" if x == float("inf") else f"{x / 1e9:g} GB/s"


def _us(x: float) -> str:
    if 0 < x < 5e-9:                # a NIC's per-message gap: nanoseconds
        return f"{x * 1e9:.2f} ns"
    return f"{x * 1e6:.2f} us"


def describe_lines(topo) -> list[str]:
    """What the model uses, for people (``ccxml topology show``)."""
    from ccxml.topology.bounds import lower_bound
    out = [f"# topology: {topo.describe()}"]
    if topo.network is None:
        lv = [("intra", topo.intra)] + ([("inter", topo.inter)] if topo.inter is not None else [])
        out.append("# model: dedicated links - every pair of ranks has its own full-duplex link; "
                   "transfers on one link go one after the other")
        for name, level in lv:
            out.append(f"#   {name}: alpha {_us(level.alpha)} per transfer, "
                       f"{_gbps(1 / level.beta if level.beta else float('inf'))} per link "
                       f"(beta {level.beta:g} s/B), gamma {level.gamma:g} s/B")
        p = topo.nranks
    else:
        net = topo.graph()
        spec = topo.network
        p = net.nranks
        if spec.description:
            out.append(f"# {spec.description}")
        out.append("# model: shared links - transfers in flight share every link they cross, "
                   "max-min fairly")
        out.append(f"# ranks: {p} (rank r = gpu r%{net.gpus} of node r//{net.gpus}); reduction "
                   f"gamma {net.gamma:g} s/B ({1 / net.gamma / 1e9:.0f} GB/s)" if net.gamma else
                   f"# ranks: {p} (rank r = gpu r%{net.gpus} of node r//{net.gpus}); reductions free")
        groups: dict[tuple, list[int]] = {}
        for ln in range(len(net.link_src)):
            key = (net.link_kind[ln], net.link_cap[ln], net.link_lat[ln], net.link_ovh[ln])
            groups.setdefault(key, []).append(ln)
        out.append("# links (each direction):")
        out.append(f"#   {'kind':<8} {'count':>5}  {'bandwidth':>12}  {'latency':>9}  "
                   f"{'overhead':>9}  example")
        for (kind, cap, lat, ovh), lns in sorted(groups.items(), key=lambda kv: kv[1][0]):
            out.append(f"#   {kind:<8} {len(lns):>5}  {_gbps(cap):>12}  {_us(lat):>9}  "
                       f"{(_us(ovh) if ovh else '-'):>9}  {net.link_name(lns[0])}")
        if spec.proxy is not None:
            out.append(f"# nic proxy: {spec.proxy} (" + (
                "NCCL's reading: a network step's latency is latency; the port is busy its "
                "overhead per message" if spec.proxy == "nic" else
                "a proxy handling one message at a time: proxy_overhead per message, serialised "
                "in the port") + "; docs/nic-model.md)")
        if net.nics:
            pairs = ", ".join(f"gpu{g}>{net.device_names[net.nics[k]]}" for g, k in enumerate(net.rail_of))
            out.append(f"# rail pairs (a GPU's traffic to other nodes leaves through): {pairs}")
        examples = [(0, 1, "same node")]
        if net.nodes > 1:
            examples.append((0, net.gpus, "next node, same local GPU"))
            if net.gpus > 1:
                examples.append((0, net.gpus + 1, "next node, another local GPU"))
        out.append("# routes:")
        for a, b, what in examples:
            if b >= p:
                continue
            r = net.route(a, b)
            hops = " > ".join([net.vertex_names[net.link_src[r.links[0]]]]
                              + [net.vertex_names[net.link_dst[x]] for x in r.links])
            out.append(f"#   rank {a} -> rank {b} ({what}): {hops}; alpha {_us(r.alpha)} "
                       f"(latency {_us(r.latency)} + overhead {_us(r.overhead)}), "
                       f"bottleneck {_gbps(r.bottleneck)}")
    if p is not None and p >= 2:
        from ccxml.simulator import busbw_factor
        n = float(1 << 30)
        parts = []
        for coll in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast"):
            b = lower_bound(topo, coll, p, n)
            parts.append(f"{coll} {busbw_factor(coll, p) * n / b.time_s / 1e9:.1f}" if b.time_s > 0
                         else f"{coll} unlimited")
        out.append(f"# busbw bounds (GB/s, from the cuts each collective must cross): {', '.join(parts)}")
    return out


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


@topology.command("show")
@topology_options
@click.option("--json", "as_json", is_flag=True, help="Print the topology file form (JSON).")
def show(topology_file, preset, nodes, gpu, as_json):
    """Print what the model will use: devices, links, routes, bounds."""
    if not (topology_file or preset):
        raise click.UsageError("give --preset NAME (--nodes N) or --topology FILE")
    topo, notes = resolve(topology_file, preset, nodes, gpu)
    if as_json:
        click.echo(json.dumps({"topology": topo.to_dict(), "describe": topo.describe(), "notes": notes},
                              indent=1))
        return
    lines = describe_lines(topo)
    if topo.network is not None and topo.nranks and topo.nranks > 1:
        for coll in ("allgather", "reducescatter"):
            lines += exact_bound_lines(topo, coll)
        lines.append("# allreduce: ReduceScatter + AllGather at their bounds")
    lines += [f"# note: {n}" for n in notes]
    click.echo("\n".join(lines))
