"""Block-table collectives shared by NHR and NB (hccl-algorithms.md §7, §8).

Both algorithms cut the data into p blocks and run, per phase, ⌈log2 p⌉ steps in which every rank
sends some blocks to one peer and receives some from another. They differ only in their step
tables (who sends which logical blocks to whom in each step) and in where logical blocks live
(NHR's tree map for AllReduce/Broadcast, the identity for NB). A :class:`Rules` gives the tables;
the builders here turn them into programs (and :func:`plan` lists their messages, for the cost
formulas):

* ReduceScatter = the reduce-scatter table; AllGather = the all-gather table;
  AllReduce = both on p blocks; Scatter = the scatter table; Broadcast = scatter + all-gather.
* Every block is ``channels`` chunks and channel c carries chunk c of each block, so that many
  copies of the algorithm run side by side. Touching blocks going to the same peer in one step
  travel as one transfer (HCCL's ``MergeSlices``).
* Scatter receivers keep every block in scratch at its block index (blocks that touch travel
  together) and copy their own block to the output at the end; AllGather and Broadcast work in
  the output after the local copy of the rank's own data (§0.2).
* HCCL runs a rank's steps one after another on one stream; MSCCL runs a rank's thread blocks in
  parallel, so each table step ends with :meth:`ccxml.frontend.chunk.Program.next_round`, which makes a
  rank's transfers of step k+1 wait for its transfers of step k (a rank idle in a step goes on,
  as in HCCL, which has no global barrier).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ccxml.frontend.algorithm import Options, check_ranks, check_root, program
from ccxml.frontend.chunk import Program
from ccxml.vocab.wire import Buffer, Coll

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


Run = tuple[tuple, tuple, tuple | None, int]   # (src, dst, out) of the first block, block count


def runs(sender: int, receiver: int, blocks, chan: int, src: Where, dst: Where,
         out: Where | None = None) -> list[list]:
    """The messages moving ``blocks`` from ``sender`` to ``receiver``: blocks whose source,
    destination (and reduce output) chunks all touch go as one (HCCL's ``MergeSlices``).
    Each message is ``[(src, dst, out) of its first block, number of blocks]``."""
    locs = sorted((src(sender, j, chan), dst(receiver, j, chan),
                   out(receiver, j, chan) if out else None) for j in blocks)
    found: list[list] = []
    for loc in locs:
        if found and all(b is None or (a[0] == b[0] and a[1] + found[-1][1] == b[1])
                         for a, b in zip(found[-1][0], loc)):
            found[-1][1] += 1
        else:
            found.append([loc, 1])
    return found


def _split(messages: list[list], bounds: set[int]) -> list[list]:
    """``messages`` cut at the cumulative block counts in ``bounds``."""
    out, at = [], 0
    for (locs, n) in messages:
        cuts = sorted(x - at for x in bounds if at < x < at + n)
        for lo, hi in zip([0, *cuts], [*cuts, n]):
            out.append([tuple(None if l is None else (l[0], l[1] + lo) for l in locs), hi - lo])
        at += n
    return out


def step_messages(moves: list[Move], chan: int, src: Where, dst: Where,
                  out: Where | None = None) -> list[tuple[int, int, list[list]]]:
    """(sender, receiver, messages) of every move of one step. Where two ranks send to each other
    in the step, both directions are cut at the same block counts, so that their k-th messages
    are equal: a thread block that sends and receives on one link alternates message by
    message, and equal pairs keep the exchange as fast as two independent transfers."""
    found = {(s, d): runs(s, d, blocks, chan, src, dst, out) for s, d, blocks in moves}
    for (s, d), mine in found.items():
        theirs = found.get((d, s))
        if theirs is not None and s < d:
            bounds = set()
            for msgs in (mine, theirs):
                at = 0
                for _, n in msgs:
                    at += n
                    bounds.add(at)
            found[(s, d)], found[(d, s)] = _split(mine, bounds), _split(theirs, bounds)
    return [(s, d, found[(s, d)]) for s, d, _ in moves]


def issue(prog: Program, sender: int, receiver: int, messages: list[list], chan: int) -> None:
    """Issue ``messages`` (from :func:`runs`): copies, or reduces where they name an output."""
    for (s, d, o), n in messages:
        a = prog.chunk(sender, s[0], s[1], n)
        b = prog.chunk(receiver, d[0], d[1], n)
        if o is None:
            a.copy(b, chan=chan)
        else:
            a.reduce(b, chan=chan, out=prog.chunk(receiver, o[0], o[1], n))


def reduce_steps(prog: Program, table: Table, k_: int, own: Where, acc: Where,
                 final: Where, record: list | None = None) -> None:
    """Run a reduce-scatter table: ``own`` is a rank's initial copy of a block, ``acc`` its
    running sum, ``final`` where the last step's sums land. With ``record``, append each step's
    messages (channel 0) there."""
    summed = [set() for _ in range(prog.ngpus)]    # blocks a rank has already reduced into acc
    cur = lambda r, j, c: acc(r, j, c) if j in summed[r] else own(r, j, c)  # noqa: E731
    for k, moves in enumerate(table):
        out = final if k == len(table) - 1 else acc
        _run_step(prog, moves, k_, cur, cur, out, record)
        for _, to, blocks in moves:
            summed[to].update(blocks)


def copy_steps(prog: Program, table: Table, k_: int, src: Where, dst: Where,
               record: list | None = None, chan0: int = 0) -> None:
    """Run a copy table (all-gather, scatter): blocks are read with ``src``, stored with ``dst``,
    on channels ``chan0`` … ``chan0 + k_ − 1``."""
    for moves in table:
        _run_step(prog, moves, k_, src, dst, None, record, chan0)


def _run_step(prog, moves, k_, src, dst, out, record, chan0=0) -> None:
    for c in range(k_):
        per_move = step_messages(moves, c, src, dst, out)
        if record is not None and c == 0:
            record.append([(s, d, [n for _, n in msgs], out is not None) for s, d, msgs in per_move])
        for s, d, msgs in per_move:
            issue(prog, s, d, msgs, chan0 + c)
    prog.next_round()


# ---- the collectives --------------------------------------------------------------------------

def reducescatter(rules: Rules, p: int, options: Options, record: list | None = None) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program(rules.name, Coll.REDUCESCATTER, p, p * k_, options)
    reduce_steps(prog, rules.reduce_scatter(p), k_,
                 own=lambda r, j, c: (Buffer.INPUT, j * k_ + c),
                 acc=lambda r, j, c: (Buffer.SCRATCH, j * k_ + c),
                 final=lambda r, j, c: (Buffer.OUTPUT, c), record=record)
    return prog


def allgather(rules: Rules, p: int, options: Options, record: list | None = None) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program(rules.name, Coll.ALLGATHER, p, p * k_, options)
    out = lambda r, j, c: (Buffer.OUTPUT, j * k_ + c)   # noqa: E731
    for r in range(p):
        prog.input(r, 0, k_).copy(prog.output(r, r * k_, k_))
    copy_steps(prog, rules.all_gather(p), k_, out, out, record=record)
    return prog


def allreduce(rules: Rules, p: int, options: Options, record: list | None = None) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program(rules.name, Coll.ALLREDUCE, p, p * k_, options)
    phys = rules.slice_map(p)
    # channel c works on its own p chunks, so blocks that touch make one transfer
    at = lambda buf: lambda r, j, c: (buf, c * p + phys[j])   # noqa: E731
    reduce_steps(prog, rules.reduce_scatter(p), k_, own=at(Buffer.INPUT), acc=at(Buffer.OUTPUT),
                 final=at(Buffer.OUTPUT), record=record)
    copy_steps(prog, rules.all_gather(p), k_, src=at(Buffer.OUTPUT), dst=at(Buffer.OUTPUT),
               record=record)
    return prog


def broadcast(rules: Rules, p: int, root: int, options: Options,
              record: list | None = None) -> Program:
    """Scatter on channels 0…K−1, all-gather on K…2K−1: a rank's thread block for a peer then
    holds one phase's transfers only, so a send of the all-gather is never held behind a receive
    that pairs with a scatter send (the ordering pass alternates sends and receives per TB)."""
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program(rules.name, Coll.BROADCAST, p, p * k_, options, root=root)
    phys = rules.slice_map(p)
    out = lambda r, j, c: (Buffer.OUTPUT, c * p + phys[j])   # noqa: E731
    prog.input(root, 0, p * k_).copy(prog.output(root, 0, p * k_))
    copy_steps(prog, rules.scatter(p, root), k_, out, out, record=record)
    copy_steps(prog, rules.all_gather(p), k_, out, out, record=record, chan0=k_)
    return prog


def scatter(rules: Rules, p: int, root: int, options: Options,
            record: list | None = None) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program(rules.name, Coll.SCATTER, p, k_, options, root=root)
    prog.input(root, root * k_, k_).copy(prog.output(root, 0, k_))

    def held(r: int, j: int, c: int) -> tuple[Buffer, int]:
        """The root reads its input; the others keep every block they receive in scratch, in
        block order, so that blocks that touch there travel together."""
        return (Buffer.INPUT, j * k_ + c) if r == root else (Buffer.SCRATCH, c * p + j)

    copy_steps(prog, rules.scatter(p, root), k_, held, held, record=record)
    for r in range(p):
        if r != root:
            for c in range(k_):
                prog.scratch(r, c * p + r).copy(prog.output(r, c))
    return prog


def plan(rules: Rules, coll: Coll | str, p: int, root: int = 0) -> list[list[tuple]]:
    """The messages of ``coll`` on p ranks, one channel, step by step: per step a list of
    (sender, receiver, [blocks per message], reduces). What the cost formulas of the simulator
    evaluate (ccxml.simulator.formulas); nothing is compiled."""
    record: list = []
    build = {Coll.REDUCESCATTER: reducescatter, Coll.ALLGATHER: allgather,
             Coll.ALLREDUCE: allreduce}.get(Coll(coll))
    if build is not None:
        build(rules, p, Options(), record)
    else:
        {Coll.BROADCAST: broadcast, Coll.SCATTER: scatter}[Coll(coll)](rules, p, root, Options(),
                                                                       record)
    return record


def collectives(rules: Rules) -> dict[Coll, Callable[..., Program]]:
    """The builders of an algorithm with these tables, as its ``COLLECTIVES`` (ccxml.algorithms),
    in the order allreduce, allgather, reducescatter, broadcast, scatter."""
    def allreduce_(p: int, *, options: Options = Options()) -> Program:
        return allreduce(rules, p, options)

    def allgather_(p: int, *, options: Options = Options()) -> Program:
        return allgather(rules, p, options)

    def reducescatter_(p: int, *, options: Options = Options()) -> Program:
        return reducescatter(rules, p, options)

    def broadcast_(p: int, *, root: int = 0, options: Options = Options()) -> Program:
        return broadcast(rules, p, root, options)

    def scatter_(p: int, *, root: int = 0, options: Options = Options()) -> Program:
        return scatter(rules, p, root, options)

    return {Coll.ALLREDUCE: allreduce_, Coll.ALLGATHER: allgather_,
            Coll.REDUCESCATTER: reducescatter_, Coll.BROADCAST: broadcast_, Coll.SCATTER: scatter_}
