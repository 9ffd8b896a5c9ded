"""The ``ccxml`` command line (click).

Each sub-command lives in its own module of this package (:data:`COMMANDS`) and is imported only when it is
run, so that ``ccxml generate`` does not pay for the interpreter or the simulator.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
import warnings

import click

from ccxml.vocab.files import Terminated

# command name -> (module, attribute, one-line help)
COMMANDS = {
    "generate": ("ccxml.cli.generate", "generate", "Generate an algorithm's MSCCL XML."),
    "list": ("ccxml.cli.generate", "list_algorithms", "Show algorithms x collectives."),
    "verify": ("ccxml.cli.verify", "verify", "Load and prove MSCCL XML files."),
    "simulate": ("ccxml.cli.simulate", "simulate", "Estimate a schedule's time (alpha-beta-gamma)."),
    "select": ("ccxml.cli.simulate", "select", "Rank algorithms for a collective by simulated time."),
    "show": ("ccxml.cli.show", "show", "Draw a schedule's simulated timeline (HTML page or SVG)."),
    "export": ("ccxml.cli.export", "export", "Write a schedule as another format (Chakra traces, MSCCL XML)."),
    "tune": ("ccxml.cli.tune", "tune", "Write a verified MSCCL_ALGO_DIR for a cluster."),
    "topology": ("ccxml.cli.topology", "topology", "Show the topology model (presets, files)."),
    "mscclang": ("ccxml.cli.mscclang", "mscclang", "Compile an msccl-tools (MSCCLang) script, unchanged."),
    "run": ("ccxml.cli.run", "run", "Execute a schedule on MPI processes (mpiexec -n P ccxml run FILE)."),
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
    """The ``ccxml`` group: commands are imported when run, and run as a program (click's
    standalone mode) a usage error or ClickException is one line ``ccxml: ...`` on stderr and
    exit code 2 (printed by rank 0 only under ``mpiexec ... ccxml run``), never click's usage
    block or a traceback; an abort exits 130, SIGTERM or SIGHUP during a write 128 + its number
    (:func:`ccxml.vocab.files.signals_raise`)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from ccxml.vocab.errors import PluginWarning
        with warnings.catch_warnings():     # a plugin that cannot be used: one line, see below
            warnings.simplefilter("always", PluginWarning)      # the registry says each once
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            return self._main(args, prog_name, complete_var, standalone_mode, **extra)

    def _main(self, args, prog_name, complete_var, standalone_mode, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name or "ccxml", complete_var, False, **extra)
        except click.exceptions.Abort:
            click.echo("ccxml: aborted", err=True)
            sys.exit(130)
        except MemoryError:         # the limits (docs/limits.md) keep inputs from getting here
            click.echo("ccxml: out of memory", err=True)
            sys.exit(2)
        except click.ClickException as e:          # UsageError included
            if _secondary_rank(sys.argv[1:] if args is None else list(args)):
                sys.exit(0)
            click.echo(f"ccxml: {e.format_message()}", err=True)
            from ccxml.cli.options import Refused
            sys.exit(1 if isinstance(e, Refused) else 2)     # a wrong schedule: as verify
        except Terminated as e:     # SIGTERM/SIGHUP during a write: its temporary file is gone
            click.echo(f"ccxml: {e.name} while writing: stopped, no partial file left", err=True)
            sys.exit(e.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)

    def parse_args(self, ctx, args):
        # bare ``ccxml``: the help and exit 0 (click 8.2 makes no_args_is_help a usage error, exit 2)
        if not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)

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


def _one_line_warnings(show):
    """``warnings.showwarning`` that prints a :class:`~ccxml.vocab.errors.PluginWarning` as one
    line ``ccxml: warning: ...`` on stderr (the registry gives each once) and leaves every other
    warning to ``show``."""
    from ccxml.vocab.errors import PluginWarning

    def one_line(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, PluginWarning):
            click.echo(f"ccxml: warning: {message}", err=True)
        else:
            show(message, category, filename, lineno, file, line)
    return one_line


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
    """Entry point of a ``ccxml`` process: :data:`cli` as a program (exits; usage errors exit 2
    with one line, see :class:`LazyGroup`), with the process-wide settings of a one-shot run.

    Those settings stay for the rest of the process: tests run :data:`cli` in-process with
    click's ``CliRunner`` instead, and this function in a subprocess."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] not in MANY_SCHEDULES:
        # generate / verify / simulate build one large object graph that lives until exit: the
        # cyclic collector would only traverse it again and again (~40% of generation time)
        gc.disable()
        keep_freed_memory()
    cli.main(args=args, prog_name="ccxml")


def _secondary_rank(args) -> bool:
    """True in the processes other than rank 0 of ``mpiexec -n P ccxml run ...``: they leave a
    bad command line to rank 0, which prints it once (mpiexec then exits 2); exiting non-zero
    themselves could make mpiexec kill rank 0 before it has printed."""
    if not args or args[0] != "run":
        return False
    from ccxml.cli.run import launch_rank
    return bool(launch_rank())


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
