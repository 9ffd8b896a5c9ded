"""Recursive doubling (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 2005, §4.1): the classic AllGather for short messages, for any p.

Step s = 0 … ⌈log2 p⌉−1, mask = 2^s: every rank sends the blocks it holds — those of its group of
``mask`` consecutive ranks — to the partner group's rank that faces it, and receives that group's
blocks; after step s it holds the blocks of its group of 2^(s+1). For p a power of two the partner
is r ⊕ mask. Otherwise the partner group of the ranks near the top is cut at p: each of its q
ranks then serves several ranks of the full group (rank b + (i mod q) serves its i-th rank), so
the step count stays ⌈log2 p⌉ (tables: :mod:`ccxml.tables.doubling`). At p = 2^m + 1 the top rank
serves 2^m ranks in the last step, a thread block per peer: on RCCL (64 per rank) p = 65 fits one
channel instance only.

The output holds block j at chunk j·K (K = ``channels``, instance c at +c); each rank first copies
its input there, so a group's blocks are one range and every transfer is one message. Each step
ends with ``next_round`` (a rank's step k+1 waits for its step k), an exchange alternates its
two directions message by message (bounded links), and peers are spread over channels as in Mesh.

Cost (ccxml's, n = the output): ⌈log p⌉α + (2^⌈log p⌉ − 1)/p·nβ. The β term is the paper's
(p−1)/p·nβ for p a power of two; otherwise the ranks of a full group each receive a whole full
group in the last step, up to twice the data (the paper's extra steps instead cost up to ⌊log p⌋
more α).
"""
from __future__ import annotations

from ccxml.algorithms.mesh import by_peer
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
    for r in range(p):
        prog.input(r, 0, k).copy(prog.output(r, r * k, k))
    run(prog, Copy(doubling.all_gather(p), loc=by_block(Buffer.OUTPUT, k)), instances=k,
        channel=by_peer(p), rounds=True, send="interleave")
    return prog


COLLECTIVES = registry.get("recursive-doubling").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("recursive-doubling")
