"""Progress bars for long commands: click's progressbar on a terminal, silent otherwise.

:class:`Progress` draws on standard error only when that is a terminal and the user did not ask
for ``--quiet``; piped or redirected runs (and tests) see nothing. With ``delay`` the bar appears
only once the work has taken that many seconds (a timer draws it even if no unit has finished
yet, e.g. one long verification), so fast runs of a command stay uncluttered.
:meth:`Progress.echo` prints a line without tearing the bar apart.
"""
from __future__ import annotations

import sys
import threading
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
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    # -- context ---------------------------------------------------------------------------
    def __enter__(self) -> "Progress":
        self._t0 = time.monotonic()
        if self.enabled:
            if self.delay <= 0:
                self._show()
            else:
                self._timer = threading.Timer(self.delay, self._late_show)
                self._timer.daemon = True
                self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _late_show(self) -> None:
        with self._lock:
            if self.enabled and self._bar is None:
                self._show()

    def close(self) -> None:
        """Finish the bar (its line is left complete) and stop drawing."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._bar is not None:
                self._bar.__exit__(None, None, None)
                self._bar = None
            self.enabled = False

    # -- drawing ---------------------------------------------------------------------------
    def _show(self) -> None:
        self._bar = click.progressbar(length=self.length, label=self.label, file=self.file,
                                      item_show_func=lambda item: item, show_eta=False)
        self._bar.__enter__()
        self._bar.current_item = self.item
        if self.pos:
            self._bar.update(self.pos)
        else:
            self._bar.render_progress()

    def update(self, n: int = 1, item: str | None = None) -> None:
        """``n`` more units are done (0 is fine); ``item`` names what runs next (None: nothing)."""
        with self._lock:
            self.pos += n
            self.item = item
            if not self.enabled:
                return
            if self._bar is None:
                if time.monotonic() - self._t0 >= self.delay:
                    self._show()
                return
            self._bar.current_item = item
            if n:
                self._bar.update(n)
            else:
                self._bar.render_progress()

    def echo(self, message: str, err: bool = False) -> None:
        """Print ``message`` (to stdout, or stderr with ``err``) above the bar."""
        with self._lock:
            if self._bar is None:
                click.echo(message, err=err)
                return
            self.file.write("\r\033[K")
            self.file.flush()
            click.echo(message, err=err)
            self._bar._last_line = None          # force a redraw below the new line
            self._bar.render_progress()
