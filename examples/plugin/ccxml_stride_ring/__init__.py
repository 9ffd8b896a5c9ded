"""Stride ring: the ring 0 → s → 2s → … (mod p), for a stride s coprime with p.

Every rank sends only to r+s and receives only from r−s, so the p ranks still form one ring
(gcd(s, p) = 1), laid over the machine differently: on a torus or a switch with rails, a stride
can put consecutive ring neighbours on links that a plain ring (s = 1) leaves idle. With
``channels`` = K every block is K chunks and channel c carries chunk c of each block.

* AllGather, p−1 steps: in step k rank r sends block r−k·s to r+s, which stores it.
* AllReduce, 2(p−1) steps: every rank copies its input to its output, then ReduceScatter — in
  step k rank r sends its partial of block r−(k+1)·s to r+s, which reduces it into its own; block
  b ends fully reduced on rank b — then the AllGather above.

The plugin option: ``stride`` (CLI ``--opt stride=3``, Python ``stride=3``), default 1.
"""
from __future__ import annotations

from math import gcd

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Coll

NAME = "stride-ring"


def check_stride(p: int, stride: int) -> None:
    """The stride must make one ring of all p ranks."""
    if not isinstance(stride, int) or not 1 <= stride < p or gcd(stride, p) != 1:
        raise AlgorithmError(f"{NAME}: stride {stride!r} must be in 1..{p - 1} and coprime with "
                             f"{p} ranks (else the ranks form several rings)")


def _around(prog: Program, p: int, stride: int, k: int, *, reduce: bool) -> None:
    """p−1 steps around the ring on the output buffer. AllGather (``reduce`` False), once rank r
    holds block r: in step t rank r sends block r−t·s, which r+s stores. ReduceScatter: in step t
    rank r sends its partial of block r−(t+1)·s, which r+s reduces into its own."""
    lag = 1 if reduce else 0
    for step in range(p - 1):
        for r in range(p):
            b = (r - (step + lag) * stride) % p
            for c in range(k):
                here, there = prog.output(r, b * k + c), prog.output((r + stride) % p, b * k + c)
                if reduce:
                    here.reduce(there, chan=c)
                else:
                    here.copy(there, chan=c)


@algorithm(NAME, Coll.ALLGATHER)
def allgather(p: int, *, stride: int = 1, options: Options = Options()) -> Program:
    check_stride(p, stride)
    k = options.channels
    prog = program(NAME, Coll.ALLGATHER, p, p * k, options)
    for r in range(p):
        prog.input(r, 0, k).copy(prog.output(r, r * k, k))
    _around(prog, p, stride, k, reduce=False)
    return prog


@algorithm(NAME, Coll.ALLREDUCE)
def allreduce(p: int, *, stride: int = 1, options: Options = Options()) -> Program:
    check_stride(p, stride)
    k = options.channels
    prog = program(NAME, Coll.ALLREDUCE, p, p * k, options)
    for r in range(p):
        prog.input(r, 0, p * k).copy(prog.output(r, 0, p * k))
    _around(prog, p, stride, k, reduce=True)        # ReduceScatter: block r ends on rank r
    _around(prog, p, stride, k, reduce=False)       # AllGather
    return prog
