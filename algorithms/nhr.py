"""NHR — Nonuniform Hierarchical Ring (HCCL ``*_nhr.cc``; hccl-algorithms.md §7).

ns = ⌈log2 p⌉ (the bit length of p−1) steps per phase for any p, no special case for p not a power
of two. Step k moves n_k = ⌊(p−1+2^k)/2^(k+1)⌋ blocks (≈ p/2, p/4, …, 1: the "non-uniform"
slicing; Σ n_k = p−1). All rank and block arithmetic is mod p.

* ReduceScatter, step k = 0…ns−1, d = 2^k: rank r sends to r−d the blocks {r−d−2d·i : i < n_k};
  the receiver reduces them into its copy (the last step into the output). Rank r ends with block r.
* AllGather, step s = 0…ns−1, d = 2^(ns−1−s), n = ⌊(p−1+d)/(2d)⌋: rank r sends to r+d the blocks
  {r−2d·i : i < n}, which the receiver stores (the time-reverse of ReduceScatter).
* AllReduce = ReduceScatter + AllGather on p blocks, 2·ns steps.
* Scatter, step k, d = 2^k: the nR ranks nearest the root (δ = (root−r) mod p < nR, with nR = p−d
  in the last step when p is not a power of two, else d) send to r−d the blocks {r−d−2d·i} of the
  ranks at root-distance δ+d+2d·i < p. This is the useful-data rule: HCCL's code takes i < n_k and
  for p ∈ {7, 11, 13–15, 19, 21–23, 25–31, …} also sends a block the sender never received and
  nobody needs (p = 7, root 0: rank 6 → 4 carries block 0 as well); otherwise the two agree.
* Broadcast = Scatter + AllGather on p blocks, 2·ns steps.

Blocks: stand-alone ReduceScatter, AllGather and Scatter keep block order (block j is rank j's);
AllReduce and Broadcast place logical block j at physical block ``slice_map(p)[j]`` (HCCL's tree map,
§7.1), which makes most per-step transfers one contiguous range. Touching blocks going to the same
peer in one step travel as one step (HCCL's ``MergeSlices``). Every block is ``channels`` chunks and
channel c carries chunk c of each block, so that many instances run side by side. HCCL rounds its
AllReduce/Broadcast blocks to 128 bytes (§0.4); MSCCL chunks are equal fractions of the buffer, so
ccxml's blocks are equal. HCCL's one-shot small-message mode is ``--variant single-tree`` (AllReduce,
Broadcast; :mod:`ccxml.algorithms._nhr_tree`).

HCCL runs a rank's steps one after another on one stream, and only the per-rank order and pairing are
normative (§0.3); MSCCL runs a rank's thread blocks in parallel, so every transfer a rank makes in
step k+1 is made to wait for its transfers of step k (``Program.next_round``). The step tables are
below; the builders that run them are shared with NB (:mod:`ccxml.algorithms._blocks`).

Cost (HCCL doc, n bytes): RS ⌈log2 p⌉α + (p−1)/p·n(β+γ); AG ⌈log2 p⌉α + (p−1)/p·nβ;
AR 2⌈log2 p⌉α + 2(p−1)/p·nβ + (p−1)/p·nγ; SC ⌈log2 p⌉α + (p−1)/p·nβ; BC 2⌈log2 p⌉α + 2(p−1)/p·nβ.
ccxml's schedule sends each step's blocks as ONE message, as HCCL does: where they are not
adjacent in memory it packs them into scratch (local copies) and the receiver reduces or unpacks
them there (``ccxml.frontend.executor.Stage``); every thread block carries one direction
(``Program.split_directions``), so messages need no cut at any size. Its time in the α-β-γ model is
the doc's (``ccxml.simulator.formulas``, ``benchmarks/formula_report.py``); on a preset the
simulator charges the copies at the GPU's memory bandwidth.
"""
from __future__ import annotations

from ccxml.algorithms import _blocks, _nhr_tree
from ccxml.frontend.algorithm import Options
from ccxml.frontend.chunk import Program
from ccxml.tables import nhr
from ccxml.vocab.wire import Coll

RULES = nhr.RULES
slice_map = nhr.slice_map
VARIANTS = _nhr_tree.VARIANTS


def _allreduce(p: int, *, variant: str = VARIANTS[0], options: Options = Options()) -> Program:
    if variant == "single-tree":
        return _nhr_tree.allreduce(p, options)
    return _blocks.build(RULES, Coll.ALLREDUCE, p, options)


def _broadcast(p: int, *, root: int = 0, variant: str = VARIANTS[0], options: Options = Options()) -> Program:
    if variant == "single-tree":
        return _nhr_tree.broadcast(p, root, options)
    return _blocks.build(RULES, Coll.BROADCAST, p, options, root)


COLLECTIVES = _blocks.register(RULES, {Coll.ALLREDUCE: _allreduce, Coll.BROADCAST: _broadcast},
                               variant=VARIANTS)
allreduce, allgather, reducescatter, broadcast, scatter = COLLECTIVES.values()

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("nhr")
