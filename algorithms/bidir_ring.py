"""Bidirectional ring: half the data each way round the ring (the ``*_double_ring*`` idea of HCCL's
intra-server templates, hccl-algorithms.md §3, and NCCL's two rings in opposite directions).

The data is cut in two halves. The first half runs Ring (§3) on the ring 0 → 1 → … → p−1 → 0, the
second half runs Ring on the reversed ring 0 → p−1 → … → 1 → 0, at the same time: every rank sends
to r+1 and to r−1 and receives from both, so both directions of every link carry data. With
``channels`` = K each half is K instances (channel c for the first ring, K + c for the second, so
the two rings never share a thread block, even at p = 2 where r+1 = r−1).

* ReduceScatter, p−1 steps per ring: each rank's block is 2K chunks, the first K reduced round the
  first ring, the last K round the second; rank r ends with its whole block.
* AllGather, p−1 steps per ring: the own block's halves go round the two rings.
* AllReduce = ReduceScatter + AllGather on 2p blocks (p per ring), 2(p−1) steps per ring.

Cost (ccxml's, n bytes; the two rings run side by side on full-duplex links, each with n/2):
RS (p−1)α + (p−1)/p·(n/2)(β+γ); AG (p−1)α + (p−1)/p·(n/2)β;
AR 2(p−1)α + 2(p−1)/p·(n/2)β + (p−1)/p·(n/2)γ — Ring's α term, half its β and γ terms.
"""
from __future__ import annotations

from typing import Callable

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import ring
from ccxml.tables.plan import Copy, Layout, Reduce
from ccxml.vocab.wire import Buffer, Coll

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def _rings(p: int, k: int):
    """(members, channel offset, chunk offset of the half in a 2K-chunk block) of both rings."""
    return (list(range(p)), 0, 0), ([(-i) % p for i in range(p)], k, k)


def _from(chan: int) -> Callable[[int, int, int], int]:
    """Instance c of a ring whose channels start at ``chan``: channel chan + c."""
    return lambda s, d, c: chan + c


def _half(buffer: Buffer, half: int, members: list[int], stride: int) -> Layout:
    """Block j (of member j, i.e. of rank members[j]) of one ring: K chunks at
    members[j]·stride + half (instance c at + c)."""
    return Layout(buffer, stride, 1, offset=half, perm=members)


@algorithm("bidir-ring", Coll.ALLREDUCE)
def allreduce(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("bidir-ring", Coll.ALLREDUCE, p, 2 * p * k, options)
    for members, chan, half in _rings(p, k):     # block j of a ring: chunks at (2j + half/K)·K
        own, acc = _half(I, half, members, 2 * k), _half(O, half, members, 2 * k)
        run(prog, Reduce(ring.reduce_scatter(p), own=own, acc=acc), members=members, instances=k,
            channel=_from(chan), order="channels")
    for members, chan, half in _rings(p, k):
        run(prog, Copy(ring.all_gather(p), loc=_half(O, half, members, 2 * k)), members=members,
            instances=k, channel=_from(chan), order="channels")
    return prog


@algorithm("bidir-ring", Coll.ALLGATHER)
def allgather(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("bidir-ring", Coll.ALLGATHER, p, 2 * p * k, options)
    for r in range(p):
        prog.input(r, 0, 2 * k).copy(prog.output(r, r * 2 * k, 2 * k))
    for members, chan, half in _rings(p, k):
        run(prog, Copy(ring.all_gather(p), loc=_half(O, half, members, 2 * k),
                       first=Layout(I, 0, 1, offset=half)),
            members=members, instances=k, channel=_from(chan), order="channels")
    return prog


@algorithm("bidir-ring", Coll.REDUCESCATTER)
def reducescatter(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("bidir-ring", Coll.REDUCESCATTER, p, 2 * p * k, options)
    for members, chan, half in _rings(p, k):
        run(prog, Reduce(ring.reduce_scatter(p), own=_half(I, half, members, 2 * k),
                         acc=_half(S, half, members, 2 * k), final=Layout(O, 0, 1, offset=half)),
            members=members, instances=k, channel=_from(chan), order="channels")
    return prog


COLLECTIVES = registry.get("bidir-ring").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("bidir-ring")
