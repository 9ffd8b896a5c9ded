"""Fast twin of :func:`ccxml.interpreter.program.lower_tb` for the common TB: one instruction per step.

A TB with no ``nop`` and no ``re`` step, known step types and buffers, stores one kernel
instruction per XML step and its step counter is the step's position (nothing is dropped or
fused), so its columns are the XML columns, copied in bulk (C-level ``map``/``extend``) instead
of step by step. :func:`lower_tb_plain` does that, or returns False and leaves the TB to the exact
:func:`~ccxml.interpreter.program.lower_tb`; :func:`lower_plain` is
:func:`~ccxml.interpreter.program.lower` with this twin tried first. They give the same Program
(tests/interpreter/test_plain.py).
"""
from __future__ import annotations

from itertools import compress

from ccxml.interpreter.program import BUFFER_NAMES, KIND_OF, Columns, Program, lower
from ccxml.loader.model import Schedule

_KINDS = frozenset(KIND_OF)
_BUFS = frozenset(BUFFER_NAMES)


def lower_tb_plain(c: Columns, t: int, gid: int, steps: tuple) -> bool:
    """Append TB ``t``'s instructions to ``c`` in bulk when each step is one instruction whose
    counter is its position; False (``c`` unchanged) otherwise."""
    cs, ctype, csb, cso, cdb, cdo, ccnt, cdepid, cdeps, chasdep, cline = steps
    n = len(cs)
    types = set(ctype)
    if not (n and "nop" not in types and "re" not in types and types <= _KINDS
            and set(csb) <= _BUFS and set(cdb) <= _BUFS):
        return False
    start = len(c.kind)
    if max(cdepid) >= 0:
        # a step's only dependency is its own (no nop carries one over)
        c.raw_deps.extend((start + j, gid, cdepid[j], cdeps[j])
                          for j in compress(range(n), map((-1).__lt__, cdepid)))
    c.kind.extend(map(KIND_OF.__getitem__, ctype))
    c.s.extend(cs)
    c.line.extend(cline)
    c.cnt.extend(ccnt)
    c.pub.extend([i if h else -1 for i, h in enumerate(chasdep)] if any(chasdep) else [-1] * n)
    c.deps.extend([None] * n)
    c.srcbuf.extend(csb)
    c.srcoff.extend(cso)
    c.dstbuf.extend(cdb)
    c.dstoff.extend(cdo)
    c.tb_of.extend([t] * n)
    return True


def lower_plain(schedule: Schedule) -> Program:
    """:func:`~ccxml.interpreter.program.lower`, with :func:`lower_tb_plain` tried per TB."""
    return lower(schedule, lower_tb_plain)
