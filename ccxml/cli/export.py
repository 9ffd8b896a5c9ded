"""``ccxml export FORMAT SOURCE -o OUT``: a schedule in another format, through the output
backends of :mod:`ccxml.export` (``ccxml export --help`` lists them).

SOURCE is ``ccxml simulate``'s: an MSCCL XML file, or an algorithm name with ``--ranks``,
``--coll``, ``--root``, the topology options and ``--opt KEY=VALUE``, built in memory
(:func:`ccxml.driver.load_source`). A ``"schedule"`` backend (chakra) takes the loaded
schedule; a ``"program"`` backend (msccl-exec, msccl-rccl, msccl-legacy) takes the algorithm
compiled for its runtime profile, so its SOURCE is an algorithm name.
"""
from __future__ import annotations

import os

import click

from ccxml.cli.options import OUTPUT, SIZE, fail, opt_option, parse_sizes, read_opts, unverified_option
from ccxml.cli.shared import source_from_options, source_options
from ccxml.cli.topology import ranks_of, resolve, topology_options
from ccxml.export import BACKENDS


def _formats_help() -> str:
    return "\n".join(f"  {b.name:<13} {b.summary}; -o {b.output}" for b in BACKENDS.values())


@click.command("export", epilog="\b\nFORMAT:\n" + _formats_help())
@click.argument("fmt", metavar="FORMAT")
@click.argument("source")
@source_options
@click.option("--bytes", "nbytes", type=SIZE, default=None,
              help="Collective size, e.g. 1M (nccl-tests' convention): chakra's comm_size; an "
                   "algorithm is built for a window ending there (required by chakra).")
@topology_options
@opt_option
@click.option("-o", "--output", type=OUTPUT, required=True,
              help="Output path (chakra: a prefix, PREFIX.<rank>.et).")
@unverified_option
def export(fmt, source, ranks, coll, root, nbytes, topology_file, preset, nodes, gpu, output, opts=(),
           unverified=False):
    """Write SOURCE (an MSCCL XML file or an algorithm name) as FORMAT.

    chakra writes one Chakra execution trace per rank, OUT.<rank>.et, the input of ASTRA-sim's
    custom collectives ("all-reduce-implementation-custom": ["OUT"]); msccl-* write the MSCCL
    XML of an algorithm for one runtime (as ccxml generate --target does). docs/export.md.
    """
    from ccxml.writer.files import write_atomic
    backend = BACKENDS.get(fmt)
    if backend is None:
        raise click.UsageError(f"unknown FORMAT {fmt!r}; choose one of {', '.join(BACKENDS)}")
    opts = read_opts(opts)
    sizes = parse_sizes(nbytes, None, None, 2.0) if nbytes is not None else None
    if backend.takes == "schedule":
        if sizes is None:
            raise click.UsageError(f"{fmt} needs --bytes B, the collective's size (e.g. --bytes 1M)")
        tg = source_from_options(source, sizes, ranks=ranks, coll=coll, root=root, topology_file=topology_file,
                         preset=preset, nodes=nodes, gpu=gpu, command="export", opts=opts,
                         unverified=unverified)
        subject, label = tg.schedule, tg.label
        extra = {"source_text": _text_of(source) if tg.is_file else ""}
    else:
        subject, label = _compiled(source, backend.profile, sizes, ranks=ranks, coll=coll, root=root,
                                   topology_file=topology_file, preset=preset, nodes=nodes, gpu=gpu,
                                   opts=opts), f"{source} {coll}"
        extra = {}
    try:
        module = backend.load()
    except ImportError as e:
        fail(f"export {fmt}: {e}")
    try:
        files = module.export(subject, output, nbytes=sizes[0] if sizes else 0, profile=backend.profile,
                              **extra)
    except ImportError as e:                    # an optional dependency (protobuf for chakra)
        fail(str(e))
    except ValueError as e:
        fail(f"{label}: {e}")
    if output == "-" and len(files) > 1:
        raise click.UsageError(f"{fmt} writes {len(files)} files, -o PREFIX names them; not -")
    written = 0
    for path, content in files:
        try:
            write_atomic(path, content)
        except OSError as e:
            fail(f"cannot write {path}: {e.strerror or e}")
        except ValueError as e:                 # what the runtime profile cannot take
            fail(f"{label}: {e}")
        written += os.path.getsize(path)
    where = files[0][0] if len(files) == 1 else f"{len(files)} files {files[0][0]} .. {files[-1][0]}"
    click.echo(f"wrote {where}: {label}, {fmt}, {written} bytes")


#: the largest XML file whose text every rank's trace repeats (GlobalMetadata's input_file, as
#: the upstream converter stores it); a larger one would make the traces ranks x its size
EMBED_LIMIT = 1 << 20


def _text_of(path: str) -> str:
    """The file's text for GlobalMetadata's ``input_file``, or "" (with a note) past EMBED_LIMIT."""
    try:
        size = os.path.getsize(path)
        if size > EMBED_LIMIT:
            click.echo(f"note: {path} is {size} bytes; the traces' input_file is left empty "
                       f"(it is kept up to {EMBED_LIMIT} bytes)", err=True)
            return ""
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror or e}")


def _compiled(source, profile, sizes, *, ranks, coll, root, topology_file, preset, nodes, gpu, opts):
    """The algorithm SOURCE compiled for ``profile`` (built for a window ending at the size when
    one is given); one line, exit 2, for a file or a bad shape."""
    if os.path.exists(source) or source.lower().endswith(".xml"):
        raise click.UsageError(f"{source} names an XML file; the msccl-* formats write an algorithm compiled for "
                               f"their runtime (e.g. ccxml export msccl-rccl ring --ranks 8 --coll allreduce)")
    topo, _ = resolve(topology_file, preset, nodes, gpu)
    if coll is None or (ranks is None and topo.nranks is None):
        raise click.UsageError(f"to export the algorithm {source!r} give --ranks and --coll (e.g. ccxml "
                               f"export msccl-exec {source} --ranks 8 --coll allreduce -o out.xml)")
    ranks = ranks_of(topo, ranks)
    from ccxml.driver import AlgorithmSpec, compiled
    window = {"max_bytes": sizes[0]} if sizes else {}
    try:
        return compiled(AlgorithmSpec(source, coll, ranks, options=window, topology=topo, root=root, opts=opts),
                        profile)
    except ValueError as e:
        fail(str(e))
