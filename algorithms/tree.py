"""Tree — pipelined binary-tree AllReduce, Reduce and Broadcast (NCCL's tree, ``src/graph/trees.cc``).

The ranks form NCCL's binary tree (``ncclGetBtree``, :func:`ccxml.tables.tree.btree`): member 0
on top with one child, odd members leaves, a node xx10…0 above xx01…0 and xx11…0, so the tree is
⌈log2 p⌉ + 1 levels deep for any p. The data is cut into D blocks (the pipeline depth, default
2⌈log2 p⌉, at least 2) that follow each other along the tree:

* Reduce: block j goes up; a member sends it to its parent once both children's copies have been
  reduced into its own (step j + height). The top ends with the sum.
* Broadcast: block j goes down; a member forwards it to its children as it arrives.
* AllReduce = Reduce up to member 0 + Broadcast down from it, the two overlapping: block j starts
  down while block j+1 is still going up (the two directions of a link are separate channels).

Reduce and Broadcast use the same tree with the ranks renumbered so that the root is member 0.
With ``channels`` = K every block is K chunks and channel c carries chunk c of each (K trees side
by side); the up and down directions take channels 0 … K−1 and K … 2K−1.

Cost (α-β-γ, n bytes, h = ⌈log2 p⌉ + 1 levels, D blocks; ccxml's own: NCCL publishes no formula):
Reduce, Broadcast (D + h − 2)(α + n/D·β) (+ n/D·γ per step for Reduce); AllReduce
(D + 2h − 3)(α + n/D·(β+γ)) — about nβ for large n, where Ring needs 2(p−1)/p·nβ, and a critical
path of D + 2h − 3 messages (log p) where Ring's is 2(p−1).
"""
from __future__ import annotations

from typing import Callable

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import tree
from ccxml.tables.plan import Copy, Reduce, by_block
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Buffer, Coll

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH



def _from(chan: int) -> Callable[[int, int, int], int]:
    """Instance c of a tree whose channels start at ``chan``: channel chan + c."""
    return lambda s, d, c: chan + c


def _always(top: int) -> Callable[[int], int]:
    """Every block's owner is the tree's top."""
    return lambda j: top


@algorithm("tree", Coll.ALLREDUCE)
def allreduce(p: int, *, depth: int = 0, options: Options = Options()) -> Program:
    return build("tree", Coll.ALLREDUCE, [tree.btree(p)], pipeline_depth(p, depth), options)


@algorithm("tree", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, depth: int = 0, options: Options = Options()) -> Program:
    return build("tree", Coll.REDUCE, [tree.btree(p)], pipeline_depth(p, depth), options, root)


@algorithm("tree", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, depth: int = 0, options: Options = Options()) -> Program:
    return build("tree", Coll.BROADCAST, [tree.btree(p)], pipeline_depth(p, depth), options, root)


def pipeline_depth(p: int, depth: int) -> int:
    """The blocks per tree: ``depth``, or 2⌈log2 p⌉ (at least 2) for 0."""
    if not isinstance(depth, int) or depth < 0:
        raise AlgorithmError(f"--depth must be an integer >= 0 (0: automatic), got {depth}")
    return depth or max(2, 2 * (p - 1).bit_length())


def build(name: str, coll: Coll, trees: list[list[int]], depth: int, options: Options,
          root: int = 0) -> Program:
    """``coll`` on the trees (parent lists; tree t carries blocks t·D … t·D + D − 1): up, down or
    both, tree t's up on channels 2t·K … and its down on (2t+1)·K …. A rooted collective uses the
    trees renumbered so that its root is member 0 of each."""
    p, k = len(trees[0]), options.channels
    nblocks = depth * len(trees)
    if 2 * len(trees) * k > 32:
        raise AlgorithmError(f"{name}: --channels {k} needs {2 * len(trees) * k} channels; "
                             f"at most 32 exist (--channels <= {32 // (2 * len(trees))})")
    prog = program(name, coll, p, nblocks * k, options, root=root if coll.rooted else None)
    members = [(root + i) % p for i in range(p)]
    if coll.rooted:
        trees = [tree.rooted_at_zero(t) for t in trees]
    tops = [t.index(-1) for t in trees]
    blocks = [list(range(t * depth, (t + 1) * depth)) for t in range(len(trees))]
    if coll is Coll.BROADCAST:
        prog.input(root, 0, nblocks * k).copy(prog.output(root, 0, nblocks * k))
    if coll is not Coll.BROADCAST:
        for t, parent in enumerate(trees):
            acc = by_block(O if coll is Coll.ALLREDUCE else S, k)
            run(prog, Reduce(tree.reduce_up(parent, blocks[t]), own=by_block(I, k), acc=acc,
                             final=by_block(O, k), owner=_always(tops[t])),
                members=members, instances=k, channel=_from(2 * t * k))
    if coll is not Coll.REDUCE:
        for t, parent in enumerate(trees):
            run(prog, Copy(tree.broadcast_down(parent, blocks[t]), loc=by_block(O, k),
                           first=by_block(I, k) if coll is Coll.BROADCAST else None),
                members=members, instances=k, channel=_from((2 * t + 1) * k))
    return prog


COLLECTIVES = registry.get("tree").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("tree")
