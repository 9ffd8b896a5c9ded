"""The pass pipeline: passes run in order on an :class:`~ccxml.ir.nodes.Algo` for one target
profile, with a hook between them (after xDSL's ``PassPipeline``, ``xdsl/passes.py`` in
github.com/xdslproject/xdsl).

A :class:`Pipeline` is data — a tuple of :class:`~ccxml.passes.base.Pass` objects — and prints as
the text :func:`ccxml.passes.registry.parse_pipeline` reads back. :meth:`Pipeline.run` calls
``hook(pass, algo)`` after each pass: ``ccxml generate --time-passes``
(:mod:`ccxml.passes.timing`) and ``--dump-after PASS`` (:mod:`ccxml.ir.printer`) are hooks, and
the tests check each pass's guarantee through one (``tests/passes/test_pipeline.py``).
"""
from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Iterator

from ccxml.ir.nodes import Algo
from ccxml.passes.base import Hook, Pass
from ccxml.vocab.wire import Profile


@dataclass(frozen=True)
class Pipeline:
    """Passes run in order, with ``hook(pass, algo)`` after each."""

    passes: tuple[Pass, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    def __iter__(self) -> Iterator[Pass]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def __str__(self) -> str:
        """The pipeline as text: ``threadblocks,ordering,fusion{merge_rcs=false},...``."""
        return ",".join(p.spec() for p in self.passes)

    def run(self, algo: Algo, profile: Profile, hook: Hook | None = None) -> Algo:
        """Run every pass on ``algo`` for ``profile`` (calling ``hook`` after each); return it.

        The cyclic garbage collector is paused meanwhile (and restored as it was): the passes
        allocate hundreds of thousands of long-lived objects and free no cycles, so its scans
        would only cost time (~30%)."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for p in self.passes:
                p.run(algo, profile)
                if hook is not None:
                    hook(p, algo)
        finally:
            if was_enabled:
                gc.enable()
        return algo
