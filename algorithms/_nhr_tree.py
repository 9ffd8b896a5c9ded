"""NHR's single-tree mode (``nhr --variant single-tree``; HCCL's one-shot, hccl-algorithms.md §7.2):
for small messages, where α dominates, one binomial tree moves the whole buffer.

* AllReduce: one-shot Reduce to rank 0 (ns steps: in step k every rank at distance ≡ 2^k mod 2^(k+1)
  sends its partial sum 2^k nearer), then one-shot Broadcast from rank 0 (ns steps, farthest
  first): 2·ns messages on the critical path (2·ns − 1 for p not a power of two: a rank idle in a
  step goes on), each of the whole buffer, where the block mode takes 2·ns rounds of shrinking
  block sets.
* Broadcast: the one-shot Broadcast from the root (ns steps), where the block mode takes 2·ns.

The tables are :mod:`ccxml.tables.nhr_tree`. As in the block mode each rank runs its steps in
order (``Program.next_round``), like HCCL's single stream; the reduce and the broadcast of
AllReduce take channels 0 … K−1 and K … 2K−1 (``--channels K``: K chunks, channel c carries c).

Cost (α-β-γ, n bytes, ns = ⌈log2 p⌉): AllReduce 2·ns·α + 2·ns·nβ + ns·nγ; Broadcast ns(α + nβ).
"""
from __future__ import annotations

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.tables import nhr_tree
from ccxml.tables.plan import Copy, Reduce, fixed
from ccxml.vocab.wire import Buffer, Coll

I, O = Buffer.INPUT, Buffer.OUTPUT

#: ``nhr``'s AllReduce and Broadcast modes: the p-block halving (default) and the single tree
VARIANTS = ("blocks", "single-tree")


def allreduce(p: int, options: Options) -> Program:
    k = options.channels
    prog = program("nhr", Coll.ALLREDUCE, p, k, options)
    run(prog, Reduce(nhr_tree.reduce(p), own=fixed(I), acc=fixed(O), owner=lambda j: 0), instances=k,
        rounds=True)
    run(prog, Copy(nhr_tree.broadcast(p), loc=fixed(O)), instances=k, rounds=True,
        channel=lambda s, d, c: k + c)
    return prog


def broadcast(p: int, root: int, options: Options) -> Program:
    k = options.channels
    prog = program("nhr", Coll.BROADCAST, p, k, options, root=root)
    prog.input(root, 0, k).copy(prog.output(root, 0, k))
    run(prog, Copy(nhr_tree.broadcast(p), loc=fixed(O), first=fixed(I)),
        members=[(root + i) % p for i in range(p)], instances=k, rounds=True)
    return prog
