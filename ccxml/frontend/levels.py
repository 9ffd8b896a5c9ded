"""The phases of the hierarchical algorithms: a flat algorithm among some of the ranks.

A hierarchical schedule (AHC, Pipeline, the 2-D family, Hierarchical) is a composition of flat
collectives that each run among some ranks (a server's, or one rank per server) on some of the
data. Its phases are the tables of :mod:`ccxml.tables.schemes` (and chains and stars for rooted
phases), issued by the executor for one instance at a time: every transfer of a step is concurrent
(``send="interleave"``), each block goes as its own messages, and the channels follow the
instance's lane plan (:class:`ccxml.frontend.lanes.Lanes`). A place is ``(rank, block, instance)
-> piece(s)``; :class:`ccxml.tables.plan.Space` gives the pieces of a range of units.

Ownership convention of the reduce-scatter tables: member ``pos`` ends with block ``pos``.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.lanes import Lanes
from ccxml.tables import Table
from ccxml.tables.plan import Copy, Reduce, Space, Where
from ccxml.tables.schemes import SCHEMES
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Buffer, Coll


def reduce_table(prog: Program, members: Sequence[int], table: Table, lanes: Lanes, *, src: Where,
                 acc: Where, final: Where | None = None, owner: Callable[[int], int] | None = None,
                 nblocks: int | None = None) -> None:
    """Issue a reduce table among ``members`` for the instance of ``lanes``: each transfer
    reduces the sender's value of a block into the receiver's. ``src`` is a member's own
    contribution, ``acc`` where it keeps a partial sum, ``final`` where the owner (``owner(j)``,
    default member j) stores the complete block; an owner that never receives one of its blocks
    (``nblocks``, default one per member) copies it there itself."""
    run(prog, Reduce(table, own=src, acc=acc, final=final, owner=owner,
                     nblocks=len(members) if nblocks is None else nblocks),
        members=members, instances=[lanes.c], lanes=lanes, send="interleave", merge=False)


def copy_table(prog: Program, members: Sequence[int], table: Table, lanes: Lanes, *, loc: Where,
               first: Where | None = None) -> None:
    """Issue a copy table among ``members``: each transfer stores the sender's block at the
    receiver's ``loc``; ``first``, if given, is where a sender reads a block it has not received."""
    run(prog, Copy(table, loc=loc, first=first), members=members, instances=[lanes.c], lanes=lanes,
        send="interleave", merge=False)


def reduce_scatter(prog: Program, members: Sequence[int], scheme: str, lanes: Lanes, *, src: Where,
                   acc: Where, final: Where | None = None) -> None:
    """Reduce-scatter among ``members`` on n = len(members) blocks with the flat algorithm
    ``scheme``: member pos ends with block pos at ``final`` (default ``acc``)."""
    sc, n = SCHEMES[scheme], len(members)
    final = final or acc
    tail = sc.rs_tail(n)
    if not tail:
        reduce_table(prog, members, sc.rs(n), lanes, src=src, acc=acc, final=final)
        return
    home = lambda r, j, c: final(r, j, c) if r == members[j] else acc(r, j, c)   # noqa: E731
    reduce_table(prog, members, sc.rs(n), lanes, src=src, acc=acc, owner=lambda j: sc.holder(n, j),
                 final=home)
    copy_table(prog, members, tail, lanes, loc=final, first=acc)


def all_gather(prog: Program, members: Sequence[int], scheme: str, lanes: Lanes, *, loc: Where,
               first: Where | None = None) -> None:
    """All-gather among ``members`` with ``scheme``: member pos starts with block pos (read at
    ``first`` if given) and every block lands at ``loc``."""
    copy_table(prog, members, SCHEMES[scheme].ag(len(members)), lanes, loc=loc, first=first)


def allreduce(prog: Program, members: Sequence[int], scheme: str, lanes: Lanes, *, src: Where,
              loc: Where) -> None:
    """All-reduce among ``members`` on n = len(members) blocks: the reduce-scatter of ``scheme``
    then its all-gather; ``src`` is the contribution, ``loc`` where the result goes."""
    sc, n = SCHEMES[scheme], len(members)
    reduce_table(prog, members, sc.rs(n), lanes, src=src, acc=loc, owner=lambda j: sc.holder(n, j))
    copy_table(prog, members, (sc.ar_ag or sc.ag)(n), lanes, loc=loc)


def uniform_shape(name: str, p: int, topology) -> tuple[int, int]:
    """(S servers, M ranks per server) of a uniform topology for ``p`` ranks, or AlgorithmError."""
    if topology is None:
        raise AlgorithmError(f"{name} needs a topology: give --servers S --ranks-per-server M "
                             f"(or --groups / --topology)")
    try:
        topology.check_ranks(p)
    except ValueError as e:
        raise AlgorithmError(str(e)) from None
    if topology.groups is None:
        return 1, p
    if len(set(topology.groups)) != 1:
        raise AlgorithmError(f"{name} needs servers of equal size; groups "
                             f"{','.join(map(str, topology.groups))} are uneven (use ahc)")
    return len(topology.groups), topology.groups[0]


def topology_attrs(topology) -> dict[str, str] | None:
    return topology.to_attrs() if topology is not None else None


def servers_of(s_: int, m_: int) -> list[list[int]]:
    """The ranks of each server, rank (s, i) = s·M + i."""
    return [[s * m_ + i for i in range(m_)] for s in range(s_)]


def two_level(name: str, p: int, topology, options: Options, *,
              units: Callable[[int, int], int] | None = None):
    """What a two-level AllReduce builder starts with: (Program, S, M, instances).

    Checks the uniform S×M shape, makes the Program with ``units(S, M)`` units per instance
    (default S·M) that records the topology, and gives, for each instance c of K =
    ``options.channels``, (input Space, output Space, Lanes).
    """
    s_, m_ = uniform_shape(name, p, topology)
    k_ = options.channels
    units = s_ * m_ if units is None else units(s_, m_)
    prog = program(name, Coll.ALLREDUCE, p, k_ * units, options, extra_attrs=topology_attrs(topology))
    instances = [(Space(Buffer.INPUT, units, instances=k_, instance=c),
                  Space(Buffer.OUTPUT, units, instances=k_, instance=c), Lanes(k_, c))
                 for c in range(k_)]
    return prog, s_, m_, instances


def copy(prog: Program, src_rank: int, src, dst_rank: int, dst, chan: int) -> None:
    """Copy the pieces ``src`` of ``src_rank`` into the pieces ``dst`` of ``dst_rank`` now (a cpy
    on one rank, send/receive across ranks)."""
    run(prog, Copy([[(0, 1, [0])]], loc=lambda r, j, c: dst, first=lambda r, j, c: src),
        members=[src_rank, dst_rank], channel=lambda s, d, c: chan, merge=False)
