"""``--opt KEY=VALUE``: an algorithm's own keyword options, for ``generate`` and ``simulate``.

The options every algorithm shares have options of their own (``--root``, ``--intra``,
``--variant``, ...); any other keyword option a builder takes — a plugin's, say — is reachable
as ``--opt KEY=VALUE`` (repeatable), its value read as the type of the option's default
(:meth:`ccxml.frontend.registry.Algorithm.parse_options`).
"""
from __future__ import annotations

from contextlib import contextmanager

import click

#: builder options that have an option of their own on the command line
OWN_OPTIONS = {"root": "--root", "counts": "--counts", "topology": "--topology", "groups": "--groups",
               "servers": "--servers", "ranks_per_server": "--ranks-per-server", "intra": "--intra",
               "inter": "--inter", "variant": "--variant"}

OPT_HELP = ("An option of the algorithm's builder, e.g. --opt stride=3 (repeatable; ccxml list "
            "--options shows them).")

#: the GPU classes ``--gpu`` gives an NCCL topology .xml that has only the PCI tree
GPU_CHOICES = ("h100", "a100", "v100")


def opt_option(f):
    """Add ``--opt KEY=VALUE`` (repeatable) to a command, as its ``opts`` parameter."""
    return click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help=OPT_HELP)(f)


def read_opts(texts) -> dict[str, str]:
    """``--opt`` texts as {key: value text}; a usage error (one line, exit 2) for one without
    ``=``, a key given twice, or one that has an option of its own. Dashes in a key are
    underscores (``--opt chunk-size=2`` is ``chunk_size``)."""
    out: dict[str, str] = {}
    for text in texts:
        key, eq, value = text.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key:
            raise click.UsageError(f"--opt {text}: give KEY=VALUE")
        if key in OWN_OPTIONS:
            raise click.UsageError(f"--opt {text}: use {OWN_OPTIONS[key]}")
        if key in out:
            raise click.UsageError(f"--opt {key} is given twice")
        out[key] = value
    return out


class Size(click.ParamType):
    """A size in bytes as nccl-tests writes it (``4096``, ``1K``, ``8M``, ``1G``, ``8MiB``): the one
    type of every size option (:func:`ccxml.vocab.sizes.parse_size`); the value is an int."""

    name = "size"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        from ccxml.vocab.errors import SizeError
        from ccxml.vocab.sizes import parse_size
        try:
            return parse_size(value)
        except SizeError as e:
            self.fail(str(e), param, ctx)


#: the type of every size option (``--bytes``, ``-b``/``-e``, ``--min-bytes``/``--max-bytes``)
SIZE = Size()


class OutputPath(click.ParamType):
    """A path to write (``-o``, ``--junit``, ``--dump-to``, ``--plot``): any text but the empty
    one, which names no file (a usage error, exit 2, instead of a default place).
    What each kind of path gets: :mod:`ccxml.vocab.files`."""

    name = "path"

    def convert(self, value, param, ctx):
        if value is not None and not str(value).strip():
            what = "an empty path" if value == "" else f"a blank path {value!r}"
            self.fail(f"{what} names no file", param, ctx)
        return value


#: the type of every option that names a file to write
OUTPUT = OutputPath()


def cannot_write(path: str, e: BaseException) -> str:
    """The line for a write that failed: ``cannot write PATH: reason``."""
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return f"cannot write {path}: {reason}"


class Refused(click.ClickException):
    """A schedule the command will not use because it is wrong (it fails ``verify``): the
    command line prints one line ``ccxml: ...`` and exits 1, as ``verify`` does for it."""

    exit_code = 1


UNVERIFIED_HELP = ("Use the schedule even if it fails verification (the output says so); "
                   "without it a schedule that ccxml verify rejects is refused (exit 1).")


def unverified_option(f):
    """Add ``--unverified`` (the ``unverified`` parameter) to a command."""
    return click.option("--unverified", is_flag=True, help=UNVERIFIED_HELP)(f)


def fail(message: str):
    """One line ``ccxml: message`` on stderr, exit 2."""
    raise click.ClickException(message)


@contextmanager
def driven():
    """The driver's errors as the command line says them: options that do not go together
    (:class:`~ccxml.driver.topology.OptionError`) and a SOURCE or topology that cannot be used
    are one line and exit 2, a schedule that fails verification one line and exit 1."""
    from ccxml.driver import OptionError, SourceError, Unverified
    from ccxml.vocab.errors import TopologyError
    try:
        yield
    except Unverified as e:
        raise Refused(str(e)) from None
    except OptionError as e:
        raise click.UsageError(str(e)) from None
    except (SourceError, TopologyError) as e:
        raise click.ClickException(str(e)) from None


def parse_sizes(nbytes, minbytes, maxbytes, factor, default_max: int = 1 << 30) -> list[int]:
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
