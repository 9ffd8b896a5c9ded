"""The ``ccxml`` command line, the top layer: one module per command group (:mod:`.generate`,
:mod:`.verify`, :mod:`.simulate`, :mod:`.tune`, :mod:`.run`), each imported only when its
command runs; the group itself and the entry point are in :mod:`.app`."""
from __future__ import annotations

from ccxml.cli.app import main, run, run_script

__all__ = ["main", "run", "run_script"]
