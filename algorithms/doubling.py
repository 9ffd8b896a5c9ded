"""Recursive doubling (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 2005, §4.1): the classic AllGather for short messages, for any p.

Step s = 0 … ⌈log2 p⌉−1, mask = 2^s: every rank sends the blocks it holds — those of its group of
``mask`` consecutive ranks — to the partner group's rank that faces it, and receives that group's
blocks; after step s it holds the blocks of its group of 2^(s+1). For p a power of two the partner
is r ⊕ mask. Otherwise the partner group of the ranks near the top is cut at p: each of its q
ranks then serves several ranks of the full group (rank b + (i mod q) serves its i-th rank), so
the step count stays ⌈log2 p⌉ (tables: :mod:`ccxml.tables.doubling`). At p = 2^m + 1 the top rank
serves 2^m ranks in the last step, a thread block per peer: on RCCL (64 per rank) p = 65 fits one
channel instance, and then only built for a size window (with no upper bound the 64 one-chunk
receives of rank 64 spill into a 65th thread block).

The output holds block j at chunk j·K (K = ``channels``, instance c at +c); each rank first copies
its input there, so a group's blocks are one range and every transfer is one message. Each step
ends with ``next_round`` (a rank's step k+1 waits for its step k), an exchange alternates its
two directions message by message (bounded links). A rank that serves several ranks in a step
sends to the first on its instance's first channel and to the others 32 to a channel after it.

Cost (ccxml's, n = the output): ⌈log p⌉α + (2^⌈log p⌉ − 1)/p·nβ. The β term is the paper's
(p−1)/p·nβ for p a power of two; otherwise the ranks of a full group each receive a whole full
group in the last step, up to twice the data (the paper's extra steps instead cost up to ⌊log p⌋
more α).
"""
from __future__ import annotations

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import doubling
from ccxml.tables.plan import Copy, by_block
from ccxml.vocab.wire import Buffer, Coll


@algorithm("recursive-doubling", Coll.ALLGATHER)
def allgather(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("recursive-doubling", Coll.ALLGATHER, p, p * k, options)
    prog.split_directions()     # one message per step and peer at any size: no cut to one chunk
    for r in range(p):
        prog.input(r, 0, k).copy(prog.output(r, r * k, k))
    table = doubling.all_gather(p)
    lanes = _lanes(table)
    per = 1 + max(lanes.values(), default=0)
    run(prog, Copy(table, loc=by_block(Buffer.OUTPUT, k)), instances=k,
        channel=lambda a, b, c: c * per + lanes[(a, b)], rounds=True, send="interleave")
    return prog


def _lanes(table) -> dict[tuple[int, int], int]:
    """(sender, receiver) -> channel within an instance: a sender's first receiver of a step on 0,
    the further ones (a cut group serving a full one) 32 to a channel from 1, so that no channel
    has more than 32 thread blocks a direction. (A pair talks in one step only: the highest bit
    in which the two ranks differ.)"""
    lanes: dict[tuple[int, int], int] = {}
    for step in table:
        served: dict[int, int] = {}
        for a, b, _ in step:
            lanes[(a, b)] = (served.get(a, 0) + 31) // 32
            served[a] = served.get(a, 0) + 1
    return lanes


COLLECTIVES = registry.get("recursive-doubling").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("recursive-doubling")
