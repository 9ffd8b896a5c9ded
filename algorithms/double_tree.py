"""Double binary tree — NCCL's AllReduce trees (``ncclGetDtree``, ``src/graph/trees.cc``), with
Reduce and Broadcast on the same trees.

Two complementary binary trees (:func:`ccxml.tables.tree.dtree`): NCCL's binary tree
(:mod:`ccxml.algorithms.tree`) and its mirror image (p even: member r ↔ p−1−r) or the tree shifted
by one member (p odd). The leaves of one tree (the odd members) are nodes of the other, so every
rank sends and receives about as much in each tree's up and down pass as any other rank. Each tree
carries half the data: blocks 0 … D−1 go over the first, D … 2D−1 over the second, pipelined
as in ``tree`` (D = 2⌈log2 p⌉ by default, at least 2), the two trees at once.

* AllReduce: in each tree reduce up to its top, broadcast back down (overlapping, as in ``tree``);
  the tops are member 0 and member p−1 (p even) or 1 (p odd), as in NCCL.
* Reduce, Broadcast: the two trees renumbered so that the root is the top of both (it swaps places
  with the other tree's top), each tree moving its half.

Tree t's up and down passes take channels 2t·K … and (2t+1)·K … (``--channels K`` ≤ 8).

Cost (α-β-γ, n bytes, D blocks per tree, h the deeper tree's levels; ccxml's own, NCCL publishes
none): AllReduce ≈ (D + 2h − 3)(α + n/(2D)·(β+γ)); Reduce, Broadcast ≈ (D + h − 2)(α + n/(2D)·β):
half of ``tree``'s bandwidth term, on a critical path of O(log p) messages.
"""
from __future__ import annotations

from ccxml.algorithms.tree import build, pipeline_depth
from ccxml.frontend.algorithm import Options
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import tree
from ccxml.vocab.wire import Coll


@algorithm("double-tree", Coll.ALLREDUCE)
def allreduce(p: int, *, depth: int = 0, options: Options = Options()) -> Program:
    return build("double-tree", Coll.ALLREDUCE, list(tree.dtree(p)), pipeline_depth(p, depth), options)


@algorithm("double-tree", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, depth: int = 0, options: Options = Options()) -> Program:
    return build("double-tree", Coll.REDUCE, list(tree.dtree(p)), pipeline_depth(p, depth), options, root)


@algorithm("double-tree", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, depth: int = 0, options: Options = Options()) -> Program:
    return build("double-tree", Coll.BROADCAST, list(tree.dtree(p)), pipeline_depth(p, depth), options,
                 root)


COLLECTIVES = registry.get("double-tree").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("double-tree")
