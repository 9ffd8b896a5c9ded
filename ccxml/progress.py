"""Progress bars for long commands: click's progressbar on a terminal, silent otherwise.

:class:`Progress` draws on standard error only when that is a terminal and the user did not ask
for ``--quiet``; piped or redirected runs (and tests) see nothing. With ``delay`` the bar appears
only once the work has taken that many seconds, so fast runs of a command stay uncluttered.
:meth:`Progress.echo` prints a line without tearing the bar apart.
"""
from __future__ import annotations

import sys
import time
from typing import IO

import click


def interactive(stream: IO | None = None) -> bool:
    """True if ``stream`` (default: standard error) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A bar of ``length`` units labelled ``label``; a no-op unless standard error is a terminal.

    Use as a context manager; call :meth:`update` as units finish (``item`` names the next unit
    shown beside the bar) and :meth:`echo` to print a line. ``quiet`` turns it off, ``delay``
    (seconds) holds it back until the work has run that long, ``file`` replaces standard error.
    """

    def __init__(self, length: int, label: str, *, quiet: bool = False, delay: float = 0.0,
                 file: IO | None = None):
        self.length = max(0, int(length))
        self.label = label
        self.file = sys.stderr if file is None else file
        self.enabled = not quiet and interactive(self.file)
        self.delay = delay
        self.pos = 0
        self.item: str | None = None
        self._bar = None
        self._t0 = 0.0

    # -- context ---------------------------------------------------------------------------
    def __enter__(self) -> "Progress":
        self._t0 = time.monotonic()
        if self.enabled and self.delay <= 0:
            self._show()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Finish the bar (its line is left complete) and stop drawing."""
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        self.enabled = False

    # -- drawing ---------------------------------------------------------------------------
    def _show(self) -> None:
        self._bar = click.progressbar(length=self.length, label=self.label, file=self.file,
                                      item_show_func=lambda _: self.item, show_eta=False)
        self._bar.__enter__()
        if self.pos:
            self._bar.update(self.pos)

    def update(self, n: int = 1, item: str | None = None) -> None:
        """``n`` more units are done; ``item`` (optional) names what runs next."""
        self.pos += n
        if item is not None:
            self.item = item
        if not self.enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._t0 < self.delay:
                return
            self._show()
            return
        self._bar.update(n)

    def echo(self, message: str, err: bool = False) -> None:
        """Print ``message`` (to stdout, or stderr with ``err``) above the bar."""
        if self._bar is None:
            click.echo(message, err=err)
            return
        self.file.write("\r\033[K")
        self.file.flush()
        click.echo(message, err=err)
        self._bar._last_line = None          # force a redraw below the new line
        self._bar.render_progress()
