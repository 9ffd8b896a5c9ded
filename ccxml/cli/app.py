"""The ``ccxml`` command line (click).

Each sub-command lives in its own ``ccxml.commands_*`` module and is imported only when it is
run, so that ``ccxml generate`` does not pay for the interpreter or the simulator.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys

import click

# command name -> (module, attribute, one-line help)
COMMANDS = {
    "generate": ("ccxml.cli.generate", "generate", "Generate an algorithm's MSCCL XML."),
    "list": ("ccxml.cli.generate", "list_algorithms", "Show algorithms x collectives."),
    "verify": ("ccxml.cli.verify", "verify", "Load and prove MSCCL XML files."),
    "simulate": ("ccxml.cli.simulate", "simulate", "Estimate a schedule's time (alpha-beta-gamma)."),
    "select": ("ccxml.cli.simulate", "select", "Rank algorithms for a collective by simulated time."),
    "tune": ("ccxml.cli.tune", "tune", "Write a verified MSCCL_ALGO_DIR for a cluster."),
    "topology": ("ccxml.cli.topology", "topology", "Show the topology model (presets, files)."),
    "mscclang": ("ccxml.cli.mscclang", "mscclang", "Compile an msccl-tools (MSCCLang) script, unchanged."),
}

#: commands that build and drop many schedules in one process keep the cyclic garbage collector
MANY_SCHEDULES = {"select", "tune"}


def keep_freed_memory() -> bool:
    """Have glibc's malloc serve large blocks from its heap and keep what is freed, instead of
    mapping every large block afresh and returning it on free: the interpreter's many large
    numpy temporaries then reuse memory rather than fault in new pages each time (verify of the
    1024-rank ring: 2.3 -> 0.6 s of system time). Returns whether the settings took; a no-op
    without glibc. For a one-shot process only: the heap never shrinks."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):       # not glibc
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    return bool(mallopt(m_mmap_threshold, 1 << 30) and mallopt(m_trim_threshold, 1 << 32)
                and mallopt(m_top_pad, 1 << 26))


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        spec = COMMANDS.get(name)
        if spec is None:
            return None
        module, attr, _ = spec
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return _unavailable(name)

    def format_commands(self, ctx, formatter):
        rows = [(name, spec[2]) for name, spec in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _unavailable(name):
    @click.command(name, context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def cmd(args):
        raise click.ClickException(f"'{name}' is not available in this build of ccxml")
    return cmd


def _print_version(ctx, param, value):
    if not value or ctx.resilient_parsing:
        return
    from ccxml import __version__, _native
    click.echo(f"ccxml, version {__version__} ({_native.summary()})")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and whether the passes run compiled, then exit.")
def cli():
    """ccxml: collective algorithms compiled to MSCCL XML and proven by a reference interpreter."""


def main(argv=None):
    """Entry point: usage errors and ClickExceptions exit 2 with one line, never a traceback."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] not in MANY_SCHEDULES:
        # generate / verify / simulate build one large object graph that lives until exit: the
        # cyclic collector would only traverse it again and again (~40% of generation time)
        gc.disable()
        keep_freed_memory()
    try:
        rv = cli.main(args=argv, prog_name="ccxml", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("ccxml: aborted", err=True)
        sys.exit(130)
    except click.exceptions.UsageError as e:
        click.echo(f"ccxml: {e.format_message()}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"ccxml: {e.format_message()}", err=True)
        sys.exit(2)
    sys.exit(rv if isinstance(rv, int) else 0)


def run_script(name: str) -> None:
    """``python algorithms/<file>.py ARGS`` = ``ccxml generate <name> ARGS`` (each algorithm
    script ends by calling this when it is run as a program)."""
    main(["generate", name, *sys.argv[1:]])


def run() -> None:
    """The ``ccxml`` program: :func:`main`, then exit without tearing down the objects it built
    (freeing a large schedule object by object takes longer than writing it)."""
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
