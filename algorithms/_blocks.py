"""The builders of NHR and NB: the phases of :mod:`ccxml.tables.blocks`, issued step by step.

HCCL runs a rank's steps one after another on one stream; MSCCL runs a rank's thread blocks in
parallel, so every table step ends with :meth:`ccxml.frontend.chunk.Program.next_round`, which
makes a rank's transfers of step k+1 wait for its transfers of step k (a rank idle in a step goes
on, as in HCCL, which has no global barrier). Broadcast runs its scatter on channels 0 … K−1 and
its all-gather on K … 2K−1: a rank's thread block for a peer then holds one phase's transfers only,
so a send of the all-gather is never held behind a receive that pairs with a scatter send.
Every thread block carries one direction (``Program.split_directions``) and a step's blocks go as
one message per move, packed through scratch where they are not adjacent
(:class:`ccxml.frontend.executor.Stage`).
"""
from __future__ import annotations

from typing import Callable

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import Stage, run
from ccxml.frontend.registry import registry
from ccxml.tables.blocks import COLLECTIVES, Rules, phases
from ccxml.vocab.wire import Coll


def _from(chan: int) -> Callable[[int, int, int], int]:
    """Instance c of a phase whose channels start at ``chan``: channel chan + c."""
    return lambda s, d, c: chan + c

def build(rules: Rules, coll: Coll, p: int, options: Options, root: int = 0) -> Program:
    """``coll`` with ``rules`` on p ranks (the registry has checked p and the root)."""
    k = options.channels
    prog = program(rules.name, coll, p, k if coll is Coll.SCATTER else p * k, options,
                   root=root if coll.rooted else None)
    prog.split_directions()
    if coll is Coll.ALLGATHER:
        for r in range(p):
            prog.input(r, 0, k).copy(prog.output(r, r * k, k))
    elif coll is Coll.BROADCAST:
        prog.input(root, 0, p * k).copy(prog.output(root, 0, p * k))
    elif coll is Coll.SCATTER:
        prog.input(root, root * k, k).copy(prog.output(root, 0, k))
    # a step's blocks that are not adjacent go as one message through scratch, after the
    # scratch the phases use (ReduceScatter's partial sums, Scatter's blocks)
    stage = Stage(p * k if coll in (Coll.REDUCESCATTER, Coll.SCATTER) else 0)
    for i, phase in enumerate(phases(rules, coll, p, k, root)):
        run(prog, phase, instances=k, rounds=True, stage=stage,
            channel=_from(i * k if coll is Coll.BROADCAST else 0))
    if coll is Coll.SCATTER:
        for r in range(p):
            if r != root:
                for c in range(k):
                    prog.scratch(r, c * p + r).copy(prog.output(r, c))
    return prog


def register(rules: Rules, own: dict[Coll, Callable[..., Program]] | None = None,
             **choices) -> dict[Coll, Callable[..., Program]]:
    """Register the builders of an algorithm with these tables (its name is ``rules.name``);
    return them by collective, as its ``COLLECTIVES``. ``own`` replaces the builders of some
    collectives (a script's variants, which take the ``choices``)."""
    def builder(coll: Coll):
        if coll.rooted:
            def rooted(p: int, *, root: int = 0, options: Options = Options()) -> Program:
                return build(rules, coll, p, options, root)
            rooted.__name__ = rooted.__qualname__ = coll.value
            return rooted

        def flat(p: int, *, options: Options = Options()) -> Program:
            return build(rules, coll, p, options)
        flat.__name__ = flat.__qualname__ = coll.value
        return flat

    own = own or {}
    for coll in COLLECTIVES:
        mine = own.get(coll)
        registry.register(rules.name, coll, mine or builder(coll), choices=choices if mine else None)
    return registry.get(rules.name).builders
