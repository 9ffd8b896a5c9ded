"""``ccxml show``: the timeline of a simulated schedule as an HTML page or an SVG picture.

SOURCE and the topology options are ``ccxml simulate``'s (an MSCCL XML file, or an algorithm
built in memory: :func:`ccxml.driver.load_source`); the schedule is simulated at one size
with its timeline recorded and drawn by :mod:`ccxml.show`.
"""
from __future__ import annotations

import os

import click

from ccxml.cli.options import OUTPUT, SIZE, cannot_write, fail, parse_sizes, unverified_option
from ccxml.cli.shared import flat_options, refuse_free_model, source_from_options, source_options
from ccxml.cli.topology import topology_options

#: what -o's extension asks for
FORMATS = {".html": "html", ".htm": "html", ".svg": "svg"}
DEFAULT_BYTES = "1M"


@click.command("show")
@click.argument("source", metavar="SOURCE")
@source_options
@click.option("--bytes", "nbytes", type=SIZE, default=DEFAULT_BYTES, show_default=True, help="Message size, e.g. 64M.")
@topology_options
@flat_options
@click.option("-o", "--output", type=OUTPUT, required=True,
              help="OUT.html (one self-contained interactive page) or OUT.svg (a static picture).")
@unverified_option
def show(source, ranks, coll, root, nbytes, topology_file, preset, nodes, gpu, alpha, beta, gamma, output,
         unverified=False):
    """Draw how SOURCE (an MSCCL XML file or an algorithm name) runs: one row per (rank, thread
    block), each step a bar coloured by its kind, the critical path, the links' utilisation.

    The HTML page works offline (no network, one file): zoom (ctrl+wheel, + and -), pan (drag),
    filter by rank, and click a step for its buffers, offsets, cnt, dependencies and matching peer.
    The SVG is the same timeline as a static picture. SOURCE, sizes and topologies are as for
    ccxml simulate.
    """
    from ccxml.driver import window_warning
    from ccxml.show import build_view, render_html, render_svg
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError, TopologyError
    from ccxml.vocab.sizes import format_size
    from ccxml.writer.files import write_atomic
    fmt = FORMATS.get(os.path.splitext(output)[1].lower())
    if fmt is None:
        raise click.UsageError(f"-o {output}: use a .html or .svg file name")
    sizes = parse_sizes(nbytes, None, None, 2.0)
    tg = source_from_options(source, sizes, ranks=ranks, coll=coll, root=root, topology_file=topology_file,
                     preset=preset, nodes=nodes, gpu=gpu, alpha=alpha, beta=beta, gamma=gamma, command="show",
                     unverified=unverified)
    schedule, topo, n = tg.schedule, tg.topology, sizes[0]
    try:
        result = simulate_schedule(schedule, n, topo, record=True)
    except (SimulationError, TopologyError) as e:
        fail(f"{tg.label}: {e}")
    refuse_free_model(topo)
    notes = list(tg.notes)
    w = window_warning(schedule, sizes) if tg.is_file else None
    if w:
        notes.append(w)
    view = build_view(schedule, result, label=tg.label, topology=topo.describe(), notes=notes)
    text = render_html(view) if fmt == "html" else render_svg(view)
    try:
        write_atomic(output, text)
    except OSError as e:
        fail(cannot_write(output, e))
    from ccxml.vocab.files import shown_path
    click.echo(f"wrote {shown_path(output)}: {view.label}, {result.nranks} ranks, {len(view.rows)} thread blocks, "
               f"{len(view.steps)} steps, {result.time_s * 1e6:.2f} us at {format_size(n)} "
               f"({topo.describe()}), {len(text.encode('utf-8'))} bytes")
    from ccxml.driver import exact_bound_lines
    for line in exact_bound_lines(topo, schedule.coll, result.busbw):
        click.echo(line)
    for note in view.notes:
        click.echo(f"note: {note}", err=True)
