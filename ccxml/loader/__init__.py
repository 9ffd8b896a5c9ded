"""The loader: MSCCL XML (anyone's) into a checked, immutable :class:`Schedule`.

* :mod:`.reader` — the safe reader (:func:`load`, :func:`loads`): picks one of the readers below.

  - :mod:`.exact` — the exact reader, tag by tag; :mod:`.tokenizer` — the port of the runtime's
    tokenizer it checks every tag with;
  - :mod:`.fast` — its fast twin, canonical ``<tb>`` bodies in one go, from the whole-file numpy
    step table of :mod:`.scan` or one regex pass.
* :mod:`.model` — the loaded model (:class:`Schedule` and its GPUs, TBs and step tables).
* :mod:`.rules` — what each runtime's loader accepts, as findings.
"""
from __future__ import annotations

from ccxml.loader.model import Schedule
from ccxml.loader.reader import load, loads
from ccxml.vocab.errors import LoadError

__all__ = ["LoadError", "Schedule", "load", "loads"]
