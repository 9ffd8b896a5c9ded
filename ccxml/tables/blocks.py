"""The collectives built from block tables: NHR and NB (hccl-algorithms.md §7, §8).

Both algorithms cut the data into p blocks and run, per phase, ⌈log2 p⌉ steps in which every rank
sends some blocks to one peer and receives some from another. They differ only in their tables
(:class:`Rules`) and in where logical blocks live (NHR's tree map for AllReduce and Broadcast, the
identity for NB). :func:`phases` gives each collective as phases (:mod:`ccxml.tables.plan`):

* ReduceScatter = the reduce-scatter table; AllGather = the all-gather table;
  AllReduce = both on p blocks; Scatter = the scatter table; Broadcast = scatter + all-gather.
* Every block is K chunks (``--channels K``) and instance c carries chunk c of each block.
  AllReduce and Broadcast keep each instance's p chunks together (chunk c·p + physical block),
  so that blocks that touch travel as one message.
* Scatter receivers keep every block in scratch at its block index and copy their own block to
  the output at the end; AllGather and Broadcast work in the output after the local copy of the
  rank's own data (§0.2).

The builders (``ccxml.algorithms.nhr``, ``.nb``) issue these phases, each move as one message
(packed through scratch where its blocks are not adjacent), so that their time is the
reference's formula (``ccxml.simulator.formulas``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ccxml.tables import Table
from ccxml.tables.plan import Copy, Phase, Piece, Reduce, by_block, by_instance, fixed
from ccxml.vocab.wire import Buffer, Coll

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH

#: the collectives :func:`phases` builds, in the order the algorithms list them
COLLECTIVES = (Coll.ALLREDUCE, Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.BROADCAST, Coll.SCATTER)


@dataclass(frozen=True)
class Rules:
    """An algorithm's tables (functions of p, and of the root for Scatter) and the physical
    position of each logical block in AllReduce and Broadcast."""

    name: str
    reduce_scatter: Callable[[int], Table]
    all_gather: Callable[[int], Table]
    scatter: Callable[[int, int], Table]
    slice_map: Callable[[int], list[int]]


def phases(rules: Rules, coll: Coll | str, p: int, k: int = 1, root: int = 0) -> list[Phase]:
    """``coll`` on p ranks with K instances as phases, in order (module docstring)."""
    coll = Coll(coll)
    if coll is Coll.REDUCESCATTER:
        return [Reduce(rules.reduce_scatter(p), own=by_block(I, k), acc=by_block(S, k), final=fixed(O))]
    if coll is Coll.ALLGATHER:
        return [Copy(rules.all_gather(p), loc=by_block(O, k))]
    phys = rules.slice_map(p)
    if coll is Coll.ALLREDUCE:
        return [Reduce(rules.reduce_scatter(p), own=by_instance(I, p, phys), acc=by_instance(O, p, phys)),
                Copy(rules.all_gather(p), loc=by_instance(O, p, phys))]
    if coll is Coll.BROADCAST:
        out = by_instance(O, p, phys)
        # the root sends from its input, so that its sends need not wait for its local copy
        return [Copy(rules.scatter(p, root), loc=out, first=by_instance(I, p, phys)),
                Copy(rules.all_gather(p), loc=out)]
    if coll is Coll.SCATTER:
        def held(r: int, j: int, c: int) -> Piece:
            """The root reads its input; the others keep every block they receive in scratch,
            in block order, so that blocks that touch there travel together."""
            return (I, j * k + c, 1) if r == root else (S, c * p + j, 1)
        return [Copy(rules.scatter(p, root), loc=held)]
    raise ValueError(f"{rules.name} has no {coll.value}")
