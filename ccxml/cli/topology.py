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

from ccxml.cli.options import GPU_CHOICES
from ccxml.driver import exact_bound_lines


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


def topology_of(topology_file=None, preset=None, nodes=None, gpu=None, *, alpha=None, beta=None,
                gamma=None):
    """The options as the driver's :class:`~ccxml.driver.topology.TopologyOptions`."""
    from ccxml.driver.topology import TopologyOptions
    return TopologyOptions(topology_file=topology_file, preset=preset, nodes=nodes, gpu=gpu, alpha=alpha,
                           beta=beta, gamma=gamma)


def resolve(topology_file=None, preset=None, nodes=None, gpu=None, *, alpha=None, beta=None,
            gamma=None, schedule=None, default=None):
    """(Topology, notes) from the options (:func:`ccxml.driver.resolve_topology`, the one parser);
    click errors (exit 2, one line) on bad input.

    Without any option: the topology the schedule records, else ``default`` (the simulator's
    flat model when None)."""
    from ccxml.cli.options import driven
    from ccxml.driver.topology import resolve_topology
    with driven():
        return resolve_topology(topology_of(topology_file, preset, nodes, gpu, alpha=alpha, beta=beta,
                                            gamma=gamma), schedule=schedule, default=default)


def ranks_of(topo, ranks: int | None) -> int:
    """``--ranks``, or the topology's rank count (a mismatch is :func:`check_fit`'s to report)."""
    from ccxml.cli.options import driven
    from ccxml.driver.topology import ranks_of as driver_ranks_of
    with driven():
        return driver_ranks_of(topo, ranks)


def check_fit(topo, ranks: int, *, schedule: str | None = None, given: str | None = None,
              topology_file=None, preset=None, nodes=None) -> None:
    """A usage error (one line, exit 2) in the options' words when the topology's groups do not
    add up to the rank count (:func:`ccxml.driver.check_fit`)."""
    from ccxml.cli.options import driven
    from ccxml.driver.topology import check_fit as driver_check_fit
    with driven():
        driver_check_fit(topo, ranks, topology_of(topology_file, preset, nodes), schedule=schedule, given=given)


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
        from ccxml.driver import EXACT_CUT, bound_at, exact_bound_of
        n = float(1 << 30)
        parts = []
        for coll in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast"):
            b = bound_at(topo, coll, p, n, 0, exact_bound_of(topo, coll))
            mark = " (max-flow)" if b.cut == EXACT_CUT else ""
            parts.append(f"{coll} {b.busbw / 1e9:.1f}{mark}" if b.time_s > 0 else f"{coll} unlimited")
        out.append("# busbw bounds (GB/s, the tighter of the cuts each collective must cross and the "
                   f"max-flow bound below): {', '.join(parts)}")
    return out


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
