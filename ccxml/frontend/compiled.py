"""How a :class:`~ccxml.frontend.chunk.Program` compiles: on a copy of what it recorded, so that
one program compiles for several targets, each result kept per (profile, pipeline text)
(``Program.compile`` is this; the Chunk API's module keeps the recording)."""
from __future__ import annotations

from typing import Any

from ccxml.ir.clone import clone_algo
from ccxml.ir.nodes import Algo
from ccxml.passes import pipeline
from ccxml.vocab.errors import ChunkError
from ccxml.vocab.wire import Profile, profile


class _Compiled:
    """What a Program's compiles left (``Program._compiled`` once it was compiled): the
    compiled Algo per (profile name, pipeline text), and the key of the compile that consumed
    the recorded Algo itself (``consume=True``), if one did."""

    __slots__ = ("results", "consumed")

    def __init__(self):
        self.results: dict[tuple[str, str], Algo] = {}
        self.consumed: tuple[str, str] | None = None


def compile_recorded(program: Any, target: Profile | str = "exec", *, merge_rcs: bool = True,
                     sort: bool = True, hook=None, passes=None, consume: bool = False) -> Algo:
    """:meth:`ccxml.frontend.chunk.Program.compile` (see there)."""
    prof = target if isinstance(target, Profile) else profile(target)
    if passes is None:
        passes = pipeline(prof, merge_rcs=merge_rcs, sort=sort)
    key = (prof.name, str(passes))
    done = program._compiled
    if not done:
        if program._ends:
            program._match_ends()
        program._writer = program._readers = None      # the access tables are done with
        done = program._compiled = _Compiled()
    algo = done.results.get(key)
    if algo is not None:
        return algo
    if done.consumed is not None:
        raise ChunkError(f"this program was compiled in place for target {done.consumed[0]!r} "
                         f"(consume=True); build it again to compile for {prof.name!r}"
                         + (f" with passes {key[1]}" if done.consumed[0] == prof.name else ""))
    if consume:
        done.consumed = key                      # even if a pass fails half-way
        algo = program.algo
    else:
        algo = clone_algo(program.algo)
    passes.run(algo, prof, hook)
    done.results[key] = algo
    return algo
