"""Block-table collectives shared by NHR and NB (hccl-algorithms.md §7, §8).

Both algorithms cut the data into p blocks and run, per phase, ⌈log2 p⌉ steps in which every rank
sends some blocks to one peer and receives some from another. They differ only in their step
tables (who sends which logical blocks to whom in each step) and in where logical blocks live
(NHR's tree map for AllReduce/Broadcast, the identity for NB). A :class:`Rules` gives the tables;
the builders here turn them into programs:

* ReduceScatter = the reduce-scatter table; AllGather = the all-gather table;
  AllReduce = both on p blocks; Scatter = the scatter table; Broadcast = scatter + all-gather.
* Every block is ``channels`` chunks and channel c carries chunk c of each block, so that many
  copies of the algorithm run side by side. Touching blocks going to the same peer in one step
  travel as one transfer (HCCL's ``MergeSlices``).
* HCCL runs a rank's steps one after another on one stream; MSCCL runs a rank's thread blocks in
  parallel, so each table step ends with :meth:`ccxml.chunk.Program.next_round`, which makes a
  rank's transfers of step k+1 wait for its transfers of step k (a rank idle in a step goes on,
  as in HCCL, which has no global barrier).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ccxml.algorithm import Options, check_ranks, check_root, program
from ccxml.chunk import Program
from ccxml.wire import Buffer, Coll

#: (rank, logical block, channel) -> (buffer, chunk index) of that rank's copy of the block
Where = Callable[[int, int, int], tuple[Buffer, int]]
#: one transfer of a step: (sender, receiver, logical blocks)
Move = tuple[int, int, list[int]]
#: a phase: its steps, each a list of moves
Table = list[list[Move]]


@dataclass(frozen=True)
class Rules:
    """An algorithm's step tables (functions of p, and of the root for Scatter) and the physical
    position of each logical block in AllReduce and Broadcast."""

    name: str
    reduce_scatter: Callable[[int], Table]
    all_gather: Callable[[int], Table]
    scatter: Callable[[int, int], Table]
    slice_map: Callable[[int], list[int]]


def transfer(prog: Program, sender: int, receiver: int, blocks, chan: int, src: Where, dst: Where,
             out: Where | None = None) -> None:
    """Move ``blocks`` from ``sender`` to ``receiver`` on ``chan``: copy into ``dst``, or, with
    ``out``, reduce with ``dst`` into ``out``. Blocks whose chunks touch go as one transfer."""
    locs = sorted((src(sender, j, chan), dst(receiver, j, chan),
                   out(receiver, j, chan) if out else None) for j in blocks)
    runs: list[list] = []
    for loc in locs:
        if runs and all(b is None or (a[0] == b[0] and a[1] + runs[-1][1] == b[1])
                        for a, b in zip(runs[-1][0], loc)):
            runs[-1][1] += 1
        else:
            runs.append([loc, 1])
    for (s, d, o), n in runs:
        a = prog.chunk(sender, s[0], s[1], n)
        b = prog.chunk(receiver, d[0], d[1], n)
        if o is None:
            a.copy(b, chan=chan)
        else:
            a.reduce(b, chan=chan, out=prog.chunk(receiver, o[0], o[1], n))


def reduce_steps(prog: Program, table: Table, k_: int, own: Where, acc: Where,
                 final: Where) -> None:
    """Run a reduce-scatter table: ``own`` is a rank's initial copy of a block, ``acc`` its
    running sum, ``final`` where the last step's sums land."""
    summed = [set() for _ in range(prog.ngpus)]    # blocks a rank has already reduced into acc
    cur = lambda r, j, c: acc(r, j, c) if j in summed[r] else own(r, j, c)  # noqa: E731
    for k, moves in enumerate(table):
        for c in range(k_):
            for r, to, blocks in moves:
                transfer(prog, r, to, blocks, c, cur, cur, final if k == len(table) - 1 else acc)
        for _, to, blocks in moves:
            summed[to].update(blocks)
        prog.next_round()


def copy_steps(prog: Program, table: Table, k_: int, src: Where, dst: Where) -> None:
    """Run a copy table (all-gather, scatter): blocks are read with ``src``, stored with ``dst``."""
    for moves in table:
        for c in range(k_):
            for r, to, blocks in moves:
                transfer(prog, r, to, blocks, c, src, dst)
        prog.next_round()


# ---- the collectives --------------------------------------------------------------------------

def reducescatter(rules: Rules, p: int, options: Options) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program(rules.name, Coll.REDUCESCATTER, p, p * k_, options)
    reduce_steps(prog, rules.reduce_scatter(p), k_,
                 own=lambda r, j, c: (Buffer.INPUT, j * k_ + c),
                 acc=lambda r, j, c: (Buffer.SCRATCH, j * k_ + c),
                 final=lambda r, j, c: (Buffer.OUTPUT, c))
    return prog


def allgather(rules: Rules, p: int, options: Options) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program(rules.name, Coll.ALLGATHER, p, p * k_, options)
    out = lambda r, j, c: (Buffer.OUTPUT, j * k_ + c)   # noqa: E731
    for r in range(p):
        prog.input(r, 0, k_).copy(prog.output(r, r * k_, k_))
    copy_steps(prog, rules.all_gather(p), k_,
               src=lambda r, j, c: (Buffer.INPUT, c) if j == r else out(r, j, c), dst=out)
    return prog


def allreduce(rules: Rules, p: int, options: Options) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program(rules.name, Coll.ALLREDUCE, p, p * k_, options)
    phys = rules.slice_map(p)
    # channel c works on its own p chunks, so blocks that touch make one transfer
    at = lambda buf: lambda r, j, c: (buf, c * p + phys[j])   # noqa: E731
    reduce_steps(prog, rules.reduce_scatter(p), k_, own=at(Buffer.INPUT), acc=at(Buffer.OUTPUT),
                 final=at(Buffer.OUTPUT))
    copy_steps(prog, rules.all_gather(p), k_, src=at(Buffer.OUTPUT), dst=at(Buffer.OUTPUT))
    return prog


def broadcast(rules: Rules, p: int, root: int, options: Options) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program(rules.name, Coll.BROADCAST, p, p * k_, options, root=root)
    phys = rules.slice_map(p)
    out = lambda r, j, c: (Buffer.OUTPUT, c * p + phys[j])   # noqa: E731
    src = lambda r, j, c: (Buffer.INPUT, c * p + phys[j]) if r == root else out(r, j, c)  # noqa: E731
    prog.input(root, 0, p * k_).copy(prog.output(root, 0, p * k_))
    copy_steps(prog, rules.scatter(p, root), k_, src, out)
    copy_steps(prog, rules.all_gather(p), k_, src, out)
    return prog


def scatter(rules: Rules, p: int, root: int, options: Options) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program(rules.name, Coll.SCATTER, p, k_, options, root=root)
    prog.input(root, root * k_, k_).copy(prog.output(root, 0, k_))

    def held(r: int, j: int, c: int) -> tuple[Buffer, int]:
        if r == root:
            return Buffer.INPUT, j * k_ + c
        return (Buffer.OUTPUT, c) if j == r else (Buffer.SCRATCH, c * p + j)

    copy_steps(prog, rules.scatter(p, root), k_, held, held)
    return prog
