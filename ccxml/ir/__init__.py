"""The IR: ``Algo → GPU → TB → Step``, plain data mirroring the MSCCL XML hierarchy.

The classes are in :mod:`.nodes` (compiled with Cython where a compiler is at hand); this package
re-exports them. The IR imports only the vocabulary: passes transform it, the writer prints it.
"""
from __future__ import annotations

from ccxml.ir.nodes import (
    GPU,
    TB,
    Algo,
    Step,
    dep_count,
    link_steps,
    new_step,
    pack_deps,
    step_deps,
    step_reads_chunk,
    wire_operands,
)
from ccxml.vocab.errors import IRError

__all__ = ["GPU", "TB", "Algo", "IRError", "Step", "dep_count", "link_steps", "new_step",
           "pack_deps", "step_deps", "step_reads_chunk", "wire_operands"]
