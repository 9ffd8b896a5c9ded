"""``ccxml generate`` and ``ccxml list``."""
from __future__ import annotations

import os
import stat
import sys

import click

from ccxml.cli.options import GPU_CHOICES, OUTPUT, OWN_OPTIONS, SIZE, cannot_write, opt_option, read_opts
from ccxml.passes.registry import parse_pipeline, pass_names, pipeline
from ccxml.vocab.wire import PROFILES, Coll, Profile, Proto, profile

COLL_NAMES = [c.value for c in Coll]

# The choices each algorithm accepts (its builders validate them; tests/test_cli_generate.py
# checks these texts against the modules, which are not imported here to keep start-up light).
INTRA_HELP = ("Hierarchical algorithms: the algorithm inside a server/group. 2d-torus, 2d-mesh: "
              "ring (default) | mesh; ahc: nhr (default) | nb | ring | mesh; hierarchical: star "
              "(default) | ring; 2d-ring: allreduce (default) | reduce.")
INTER_HELP = ("Hierarchical algorithms: the algorithm between servers/groups (2d-torus, 2d-mesh, "
              "2d-ring, hierarchical, ahc): ring | nhr | nb | rhd. Default ring; ahc: ring for up "
              "to 3 groups, else nhr.")
VARIANT_HELP = ("mesh allreduce: two-shot (default, reduce-scatter + all-gather) | one-shot; nhr "
                "allreduce, broadcast: blocks (default) | single-tree (one binomial tree, small data).")


def _fail(message: str):
    raise click.ClickException(message)


def _topology_options(ranks, servers, ranks_per_server, groups, topology_file, preset=None, nodes=None,
                      gpu=None):
    """(ranks, Topology or None) from the topology options (:func:`ccxml.driver.resolve_topology`);
    one clear line on a bad shape. ccxml.topology.model (and pydantic) is imported only when a
    topology option is given."""
    from ccxml.cli.options import driven
    from ccxml.driver.topology import TopologyOptions, fit_ranks, resolve_topology
    options = TopologyOptions(topology_file=topology_file, preset=preset, nodes=nodes, groups=groups,
                              servers=servers, ranks_per_server=ranks_per_server, gpu=gpu)
    if nodes is not None and not (preset or topology_file):
        _fail("--nodes needs --preset or --topology")
    if gpu is not None and not topology_file:
        _fail("--gpu needs --topology FILE (an NCCL topology .xml)")
    if not options.given():
        return ranks, None
    with driven():
        topo, _ = resolve_topology(options, ranks=ranks)
        return fit_ranks(topo, ranks, options), topo


@click.command("generate")
@click.argument("algorithm")
@click.option("--ranks", "-n", type=int, default=None, help="Number of ranks (GPUs).")
@click.option("--coll", "-c", type=click.Choice(COLL_NAMES), default="allreduce", show_default=True)
@click.option("--root", type=int, default=None, help="Root rank of broadcast/reduce/gather/scatter (default 0).")
@click.option("--channels", type=int, default=1, show_default=True, help="Parallel instances, one channel each.")
@click.option("--proto", type=click.Choice([p.value for p in Proto]), default="Simple", show_default=True)
@click.option("--target", type=click.Choice(list(PROFILES)), default="exec", show_default=True,
              help="Runtime whose limits the file must meet.")
@click.option("--inplace/--outofplace", default=False, help="In-place or out-of-place call form.")
@click.option("--min-bytes", type=SIZE, default=0, show_default=True,
              help="Smallest message size the runtime picks this file for (e.g. 64K).")
@click.option("--max-bytes", type=SIZE, default=0, show_default=True,
              help="Largest message size the runtime picks this file for (e.g. 1M); 0 = unlimited. "
                   "It also sets how long the file's messages may be: see above.")
@click.option("--counts", type=click.Path(dir_okay=False), default=None,
              help="alltoallv: CSV file with a PxP matrix of chunk counts.")
@click.option("--no-fuse", is_flag=True, help="Do not fuse receive+send into rcs/rrs/rrcs.")
@click.option("--verify", "do_verify", is_flag=True, help="Verify the bytes written with the interpreter.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("-o", "--output", type=OUTPUT, default=None,
              help="Output path, or - for stdout (default out/<algo>_<coll>_<N>.xml).")
@click.option("--servers", type=int, default=None, help="Hierarchical algorithms: number of servers.")
@click.option("--ranks-per-server", type=int, default=None, help="Hierarchical algorithms: ranks per server.")
@click.option("--groups", default=None, help="Hierarchical algorithms: group sizes, e.g. 2,3 or 4x8.")
@click.option("--topology", "topology_file", type=click.Path(dir_okay=False), default=None,
              help="Hierarchical algorithms: topology file (JSON, TOML or NCCL topology XML).")
@click.option("--preset", default=None, metavar="NAME",
              help="Hierarchical algorithms: servers and ranks per server from a hardware preset "
                   "(dgx-h100, ...; --nodes N servers).")
@click.option("--nodes", type=int, default=None,
              help="With --preset or --topology: the number of servers (nodes), joined by its fabric.")
@click.option("--gpu", default=None, type=click.Choice(GPU_CHOICES),
              help="With an NCCL topology .xml that gives only the PCI tree: the GPUs' NVLink side.")
@click.option("--intra", default=None, metavar="ALG", help=INTRA_HELP)
@click.option("--inter", default=None, metavar="ALG", help=INTER_HELP)
@click.option("--variant", default=None, metavar="V", help=VARIANT_HELP)
@opt_option
@click.option("--time-passes", is_flag=True,
              help="Print CPU time and memory of the build, each pass and the writer to stderr.")
@click.option("--dump-after", multiple=True, metavar="PASS",
              help="Print the IR after PASS, one line per step (repeatable). Passes: "
                   + ", ".join(pass_names()) + ".")
@click.option("--passes", "passes_text", default=None, metavar="PIPELINE",
              help="Run these passes instead of the target's (experiments; docs/passes.md), e.g. "
                   "threadblocks,ordering,fusion{merge_rcs=false},splitting,dependencies,"
                   "numbering,checks.")
@click.option("--dump-to", type=OUTPUT, default="-", show_default=True, metavar="PATH",
              help="Where --dump-after writes: - for stdout, or a file.")
def generate(algorithm, ranks, coll, root, channels, proto, target, inplace, min_bytes, max_bytes,
             counts, no_fuse, do_verify, output, servers, ranks_per_server, groups, topology_file,
             preset=None, nodes=None, gpu=None, intra=None, inter=None, variant=None, opts=(), quiet=False,
             time_passes=False, dump_after=(), dump_to="-", passes_text=None):
    """Generate ALGORITHM's MSCCL XML for a collective.

    ALGORITHM is a built-in or an installed plugin (ccxml list); options of its builder that
    have no option here are --opt KEY=VALUE.

    Sizes are nccl-tests' (4096, 64K, 8M, 1G). --min-bytes/--max-bytes are the file's size window:
    the runtime picks the file for message sizes in it. The window also bounds how long a message
    of the schedule may be: a message longer than its link can buffer could wedge the link, so the
    file's messages are cut to what a link holds at --max-bytes. With --max-bytes 0 (unlimited) a
    chunk may be any size, so every message is cut to one chunk (the summary line says "N
    messages cut"); a finite --max-bytes cuts fewer, longer messages.

    The default output file is out/ALGORITHM_COLL_N.xml, with the options that change the schedule
    added to its name (--servers 4 --ranks-per-server 4: out/2d-torus_allreduce_16_4x4.xml,
    --preset dgx-h100 --nodes 2: out/2d-torus_allreduce_16_dgx-h100x2.xml); -o names it."""
    from ccxml.cli.progress import Progress  # a bar on a terminal for runs over 1 s
    prof = profile(target)              # resolved once: the passes get this object
    passes = _passes_option(passes_text, no_fuse)
    _check_dump_after(dump_after, prof, no_fuse, passes)
    opts = read_opts(opts)
    timer = None
    if time_passes:
        from ccxml.passes.timing import PassTimer
        timer = PassTimer()
    dumps: list[str] = []               # --dump-after sections, for a --dump-to file
    ranks, topology = _topology_options(ranks, servers, ranks_per_server, groups, topology_file,
                                        preset, nodes, gpu)
    if ranks is None:
        _fail("--ranks is required (e.g. ccxml generate ring --ranks 8)")
    matrix = None if counts is None else _counts_matrix(counts)
    if Coll(coll).rooted and root is None:
        root = 0
    where = ("stdout" if output == "-"
             else output or default_output(algorithm, coll, ranks, root=root, channels=channels, proto=proto,
                                           target=target, inplace=inplace, min_bytes=min_bytes,
                                           max_bytes=max_bytes, counts=counts, no_fuse=no_fuse,
                                           servers=servers, ranks_per_server=ranks_per_server,
                                           groups=groups, topology_file=topology_file, preset=preset,
                                           nodes=nodes, gpu=gpu, intra=intra, inter=inter,
                                           variant=variant, opts=opts))

    def after_pass(ps, algo):
        if timer is not None:
            timer.lap(ps.name)
        if ps.name in dump_after:
            from ccxml.ir.printer import format_ir
            text = "".join(line + "\n" for line in format_ir(algo, f"after {ps.name}"))
            if dump_to == "-":
                sys.stdout.write(text)
            else:
                dumps.append(text)
            if timer is not None:
                timer.lap(f"(--dump-after {ps.name})")

    if algorithm == "forest" and target != "exec" and "limits" not in opts:
        opts = {**opts, "limits": target}   # forest fits its trees to the target's limits (synthesis/fit.py)
    from ccxml.vocab.files import names_stdout
    from ccxml.writer.files import write_atomic
    to_stdout = output == "-" or names_stdout(where)       # -o -, /dev/stdout: the summary goes to stderr
    try:
        with Progress(1, f"generating {algorithm} {coll}, {ranks} ranks", quiet=quiet, delay=1.0) as bar:
            from ccxml.driver import build, generate_spec
            from ccxml.driver import compile as compile_program
            spec = generate_spec(algorithm, coll, ranks, root=root, counts=matrix, topology=topology,
                                 intra=intra, inter=inter, variant=variant, opts=opts, channels=channels,
                                 proto=proto, inplace=inplace, min_bytes=min_bytes, max_bytes=max_bytes)
            algo = _bulk(spec, prof, passes, dump_after, merge_rcs=not no_fuse)
            prog = None if algo is not None else build(spec)
            if timer is not None:
                timer.lap("build (Chunk API)" if prog is not None else "build + passes (bulk)")
            try:
                if prog is not None:
                    algo = compile_program(prog, prof, merge_rcs=not no_fuse, passes=passes, consume=True,
                                           hook=after_pass if timer or dump_after else None)
            finally:
                if dumps:                       # also when a later pass failed
                    try:
                        write_atomic(dump_to, dumps)
                    except OSError as e:
                        _fail(cannot_write(dump_to, e))
            source = _write_file(algo, prog is None, target, where, output, do_verify)
            if timer is not None:
                timer.lap("writer")
            bar.update(1)
    except ValueError as e:
        _fail(str(e))
    ntbs, nsteps = (algo.ntbs, algo.nsteps) if prog is None else _sizes(algo)
    window = f"{algo.minBytes}..{algo.maxBytes or 'unlimited'}"
    click.echo(f"wrote {where}: {algorithm} {coll}, {ranks} ranks, {ntbs} TBs, {nsteps} steps, "
               f"{algo.nchannels} channels, bytes {window}, target {target}{_cut_clause(algo)}",
               err=to_stdout)
    if Coll(coll).rooted:               # msccl-runtime.md §7: the runtime never matches on the root
        click.echo(f"ccxml: warning: {where} is right for root {root} only: the MSCCL runtime ignores "
                   f"the root and also runs it, with wrong results, for a {coll} from any other root",
                   err=True)
    if getattr(prog, "forest", None) is not None:
        for line in _forest_summary(prog.forest, algo, target, topology, coll):
            click.echo(line, err=to_stdout)
    if do_verify:
        _verify_written(source, where, target, root, matrix, quiet=quiet, timer=timer, to_stdout=to_stdout)
    if timer is not None:
        click.echo(timer.table(f"{algorithm} {coll}, {ranks} ranks, target {target}"), err=True)


def _bulk(spec, prof, passes, dump_after, merge_rcs: bool):
    """The schedule lowered in bulk (:mod:`ccxml.bulk`: ring AllReduce without step objects), or
    None where the object path runs: --passes, --dump-after, or whatever
    :func:`ccxml.bulk.lower` does not cover (a topology, counts, --opt, a root, ...)."""
    if passes is not None or dump_after or spec.topology is not None or spec.root is not None \
            or spec.params or spec.opts:
        return None
    from ccxml.bulk import lower
    return lower(spec.name, spec.collective, spec.ranks, profile=prof, merge_rcs=merge_rcs, **spec.options)


def _write_file(algo, bulk: bool, target: str, where: str, output, do_verify: bool):
    """Write ``algo`` (an Algo, or with ``bulk`` a :class:`ccxml.bulk.BulkSchedule`, which writes
    the same bytes) to ``where``; return what --verify reads: the text (``-o -``), the bytes
    written, or None: the file, read back."""
    from ccxml.writer.files import write_atomic
    from ccxml.writer.msccl import xml_parts

    def parts():
        return algo.xml_parts(target) if bulk else xml_parts(algo, target)

    if output == "-":
        text = "".join(parts())         # kept for --verify
        sys.stdout.write(text)
        return text
    # streamed to the file, a GPU at a time. With --verify, what is verified is the bytes
    # written: a regular file this process has just renamed into place is read back, mapped (no
    # copy of the text is kept in memory beside the IR: 254 MB for the 1024-rank ring, issue 27);
    # another path (/dev/null, a FIFO, a device) is never read back, and its bytes are kept instead
    source = (b"".join(part.encode("utf-8") for part in parts())
              if do_verify and not _renamed_into_place(where) else None)
    try:
        write_atomic(where, parts() if source is None else source)
    except OSError as e:
        _fail(cannot_write(where, e))
    return source


def _sizes(algo) -> tuple[int, int]:
    """(thread blocks, steps) of a compiled Algo."""
    return sum(len(g.tbs) for g in algo.gpus), sum(len(tb.steps) for g in algo.gpus for tb in g.tbs)


def _counts_matrix(counts: str):
    """The --counts file read, or one line and exit 2."""
    from ccxml.vocab.collectives import read_counts
    try:
        return read_counts(counts)
    except OSError as e:
        _fail(f"cannot read --counts {counts}: {e.strerror}")
    except ValueError as e:
        _fail(f"--counts {counts}: {e}")


def _verify_written(source, where: str, target: str, root, matrix, *, quiet: bool, timer,
                    to_stdout: bool) -> None:
    """``generate --verify``: prove ``source`` (the text written, or the bytes written to
    ``where``, read back when None) with the interpreter; PASS, or FAIL and exit code 1."""
    from ccxml.cli.progress import Progress
    from ccxml.interpreter import verify as run_verify
    with Progress(1, f"verifying {where}", quiet=quiet, delay=1.0) as bar:
        if source is None or isinstance(source, bytes):     # the bytes written to the file
            from ccxml.loader.reader import load, loads
            try:
                source = load(where, mapped=True) if source is None else loads(source, where)
            except ValueError as e:         # (its message starts with the path)
                click.echo(f"FAIL {e}", err=True)
                sys.exit(1)
            except OSError as e:            # the file went between the write and the read
                _fail(f"cannot read back {where}: {e.strerror or e}")
        report = run_verify(source, target=target, root=root, counts=matrix)
        bar.update(1)
    if timer is not None:
        timer.lap("verify")
    if not report.ok:
        click.echo(f"FAIL {where}: {report.first_reason}", err=True)
        sys.exit(1)
    click.echo(f"PASS {where}", err=to_stdout)


def _renamed_into_place(path: str) -> bool:
    """Whether writing ``path`` makes a regular file through a rename (ccxml.vocab.files: no
    symlink, device or FIFO is there), so that reading it back gives exactly the bytes written."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISREG(mode)


def default_output(algorithm: str, coll: str, ranks: int, **options) -> str:
    """``out/ALGORITHM_COLL_N.xml``, with every option that changes the schedule and is not at its
    default added to the name, so that two different schedules never share a default file:
    ``2d-torus --servers 4 --ranks-per-server 8`` writes out/2d-torus_allreduce_32_4x8.xml,
    ``--preset dgx-h100 --nodes 4`` out/2d-torus_allreduce_32_dgx-h100x4.xml; the plain case
    keeps the plain name (out/ring_allreduce_8.xml)."""
    o = options
    parts = []
    if o.get("preset"):
        parts.append(f"{o['preset']}x{o.get('nodes') or 1}")
    elif o.get("topology_file"):
        stem = os.path.splitext(os.path.basename(o["topology_file"]))[0]
        parts.append(stem + (f"-{o['gpu']}" if o.get("gpu") else "") + (f"x{o['nodes']}" if o.get("nodes") else ""))
    elif o.get("groups"):
        parts.append("g" + str(o["groups"]).replace(",", "+"))
    elif o.get("servers") or o.get("ranks_per_server"):
        servers = o.get("servers") or ranks // o["ranks_per_server"]
        parts.append(f"{servers}x{o.get('ranks_per_server') or ranks // servers}")
    for key in ("intra", "inter", "variant"):
        if o.get(key):
            parts.append(f"{key}-{o[key]}" if key != "variant" else str(o[key]))
    for key, value in sorted((o.get("opts") or {}).items()):
        parts.append(f"{key}{value}")
    if o.get("root"):
        parts.append(f"root{o['root']}")
    if o.get("counts"):
        parts.append(os.path.splitext(os.path.basename(o["counts"]))[0])
    if (o.get("channels") or 1) != 1:
        parts.append(f"ch{o['channels']}")
    if o.get("proto") and o["proto"] != "Simple":
        parts.append(str(o["proto"]).lower())
    if o.get("inplace"):
        parts.append("inplace")
    if o.get("min_bytes") or o.get("max_bytes"):
        from ccxml.vocab.sizes import format_size
        top = format_size(o["max_bytes"]) if o.get("max_bytes") else "max"
        parts.append(f"{format_size(o.get('min_bytes') or 0)}-{top}")
    if o.get("no_fuse"):
        parts.append("nofuse")
    if o.get("target") and o["target"] != "exec":
        parts.append(str(o["target"]))
    name = "_".join([algorithm, coll, str(ranks), *parts])
    safe = "".join(c if c.isalnum() or c in "._+-" else "-" for c in name)
    return os.path.join("out", safe + ".xml")


def _forest_summary(forest, algo, target, topology, coll) -> list[str]:
    """The forest's summary: the exact bound and its cut, the simulated busbw at 1 GiB as a share
    of it, k and the synthesis time."""
    from ccxml.driver import export
    from ccxml.loader.reader import loads
    from ccxml.simulator import simulate_schedule
    from ccxml.topology.flow import RULE, exact_bound
    # Broadcast / Reduce: the max-flow bound from the root the forest carries (synthesis/rooted.py)
    bound = forest.bound if coll in ("broadcast", "reduce") else exact_bound(topology.graph(), coll)
    res = simulate_schedule(loads(export(algo, target)), 1 << 30, topology)
    extra = " (ReduceScatter + AllGather at their bounds)" if coll == "allreduce" else ""
    lines = [f"forest: exact bound (max-flow) busbw {bound.busbw / 1e9:.1f} GB/s{extra}; binding cut: "
             f"{bound.describe_cut()}",
             f"forest: {RULE}",
             f"forest: simulated busbw at 1 GiB {res.busbw / 1e9:.1f} GB/s = {res.busbw / bound.busbw:.1%} of "
             f"the bound; k = {forest.k} trees per rank, NIC headroom {forest.headroom:g}, synthesis "
             f"{forest.seconds:.2f} s"]
    fit = getattr(forest, "fit", None)
    if fit is not None:                 # synthesis/fit.py: the trees were fitted to these limits
        lines.append(f"forest: within {fit.profile.name}'s limits: {_demand(algo)}")
    return lines


def _demand(algo) -> str:
    """What the written schedule takes of the runtime's limits, per rank at its worst: peers,
    thread blocks, channels, XML nodes (counted as ccxml.passes.checks does), and the chunks
    per rank block of the layout (synthesis/fit.py's count before the layout is an estimate)."""
    peers = max(len({x for tb in g.tbs for x in (tb.send, tb.recv) if x >= 0}) for g in algo.gpus)
    tbs = max(len(g.tbs) for g in algo.gpus)
    nodes = max(1 + algo.ngpus + len(g.tbs) + sum(len(tb.steps) for tb in g.tbs) for g in algo.gpus)
    return (f"{peers} peers, {tbs} thread blocks, {algo.nchannels} channels, {nodes} XML nodes per rank "
            f"at most ({algo.nchunksperloop // algo.ngpus} chunks per rank block)")


def _cut_clause(algo) -> str:
    """The summary's word on messages the Chunk API cut, and why ("" if none was)."""
    if not algo.cut_messages:
        return ""
    why = ("the runtime's cnt limit" if algo.one_way else
           "so that no link can wedge with bounded buffers: give --max-bytes to cut less")
    return f"; {algo.cut_messages} messages cut to {algo.cut_to} chunks ({why})"


def _passes_option(text: str | None, no_fuse: bool):
    """The pipeline --passes spells (None: the target's default); one line and exit 2 for text
    that names an unknown pass or option."""
    if text is None:
        return None
    if no_fuse:
        _fail("--no-fuse and --passes: write fusion{merge_rcs=false} in --passes instead")
    from ccxml.passes.base import PipelineError
    try:
        return parse_pipeline(text)
    except PipelineError as e:
        _fail(f"--passes: {e}")


def _check_dump_after(names, prof: Profile, no_fuse: bool, passes=None) -> None:
    """One line and exit 2 for a --dump-after pass that does not exist or does not run here."""
    runs = (passes or pipeline(prof, merge_rcs=not no_fuse)).names
    known = pass_names()
    for name in names:
        if name not in known:
            _fail(f"--dump-after: unknown pass {name!r}; passes: {', '.join(known)}")
        if name not in runs:
            how = " with --passes" if passes else " with --no-fuse" if no_fuse else ""
            _fail(f"--dump-after {name}: that pass does not run for target {prof.name}"
                  f"{how}; it runs {', '.join(runs)}")


#: the builder options the shape of the run gives (rank counts, topology, root, counts)
SHAPE_OPTIONS = ("root", "counts", "topology", "groups", "servers", "ranks_per_server")


#: ``ccxml list``'s column label of each collective (its legend spells them out)
COLUMN_LABELS = {"allreduce": "AR", "allgather": "AG", "reducescatter": "RS", "alltoall": "A2A",
                 "alltoallv": "A2AV", "broadcast": "BC", "reduce": "RED", "gather": "GA", "scatter": "SC"}


@click.command("list")
@click.option("--options", "show_options", is_flag=True,
              help="Also list each algorithm's own options, their defaults and choices.")
def list_algorithms(show_options=False):
    """Show which collectives each algorithm supports: the built-ins, then the installed plugins
    (entry-point group ccxml.algorithms), each marked with its distribution."""
    from ccxml.algorithms import registry
    found = registry.available()
    width = max(len(n) for n in found) + 2
    click.echo(" " * width + " ".join(f"{COLUMN_LABELS[c]:>4}" for c in COLL_NAMES))
    for name, alg in found.items():
        marks = " ".join(f"{'x' if Coll(c) in alg.builders else '.':>4}" for c in COLL_NAMES)
        origin = f"  plugin {alg.plugin.distribution} {alg.plugin.version}" if alg.plugin else ""
        click.echo(f"{name:<{width}}{marks}{origin}")
    click.echo("")                      # the matrix ends at the first blank line
    click.echo("columns: " + ", ".join(f"{COLUMN_LABELS[c]} {c}" for c in COLL_NAMES)
               + "; x: the algorithm builds that collective, .: it does not")
    if show_options:
        click.echo("")
        click.echo("options (--opt KEY=VALUE where no option of its own is named):")
        for line in _option_lines(found):
            click.echo(f"  {line}")


def _option_lines(found) -> list[str]:
    """One line per algorithm and set of collectives with the same own options: each option as
    the command line spells it, its default and its choices (or the type --opt reads)."""
    lines = []
    for name, alg in found.items():
        described: dict[str, list[str]] = {}
        for coll in alg.builders:
            parts = []
            for key, default in alg.defaults[coll].items():
                if key in SHAPE_OPTIONS:
                    continue
                spelled = OWN_OPTIONS.get(key, f"--opt {key}")
                allowed = alg.choices[coll].get(key)
                kind = " | ".join(allowed) if allowed else _kind(default)
                said = "chosen by the algorithm" if default is None else default
                parts.append(f"{spelled}: {kind} (default {said})")
            if parts:
                described.setdefault("; ".join(parts), []).append(coll.value)
        for text, colls in described.items():
            lines.append(f"{name} {', '.join(colls)}: {text}")
    return lines


def _kind(default) -> str:
    for kind, word in ((bool, "true|false"), (int, "integer"), (float, "number")):
        if isinstance(default, kind):
            return word
    return "text"
