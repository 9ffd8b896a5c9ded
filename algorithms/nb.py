"""NB — Nonuniform Bruck (HCCL ``*_nb.cc``; hccl-algorithms.md §8).

ns = ⌈log2 p⌉ (the bit length of p−1) steps per phase for any p. Distances grow 1, 2, 4, … in every
collective; blocks are never permuted (block j is rank j's). All arithmetic is mod p;
n_k = ⌊(p−1+2^k)/2^(k+1)⌋ as in NHR.

* ReduceScatter, step k, d = 2^k: rank r sends to r+d the blocks {r+d+2d·i : i < n_k}; the receiver
  reduces them into its copy (the last step into the output). Rank r ends with block r.
* AllGather, step k, d = 2^k: rank r sends to r+d the blocks {r−i : i < n}, n = 2^k except in the
  last step of a p that is not a power of two, where n = p − 2^(ns−1) (Bruck concatenation with a
  truncated last step). Distances increase, as in HCCL's code (the doc's prose says decrease, §12.1).
* AllReduce = ReduceScatter + AllGather on p blocks, 2·ns steps.
* Scatter, step k, d = 2^k, δ = (r − root) mod p: a rank with δ < d (and δ < p−d in the last step)
  sends to r+d the blocks of the ranks at root-distance δ+d+2d·i < p. This is the reference's clean
  "useful-data" rule; HCCL's code sends n_k block indices and for p ∈ {7, 11, 13–15, 19, 21–23,
  25–31, …} also ships a wrapped block nobody needs (p = 7: rank 1 → 3 carries block 0 too).
* Broadcast = Scatter + AllGather on p blocks, 2·ns steps (the binomial "binary" variant HCCL uses
  for small data or p = 2 is not generated).

Every block is ``channels`` chunks and channel c carries chunk c of each block. Blocks are equal
(MSCCL chunks are equal fractions of the buffer), so NB's skipping of empty blocks never applies.
Touching blocks sent to the same peer in one step travel as one step, and each rank runs its steps
in order (``Program.next_round``), as HCCL's single stream per rank does. The step tables are
below; the builders that run them are shared with NHR (:mod:`ccxml.algorithms._blocks`).

Cost (HCCL doc, n bytes): RS ⌈log p⌉α + (p−1)/p·n(β+γ); AG ⌈log p⌉α + (p−1)/p·nβ;
AR 2⌈log p⌉α + 2(p−1)/p·nβ + (p−1)/p·nγ; SC ⌈log p⌉α + (p−1)/p·nβ; BC 2⌈log p⌉α + 2(p−1)/p·nβ.
Each step's blocks go as one message and the time is the doc's, as for NHR
(:mod:`ccxml.algorithms.nhr`, :mod:`ccxml.algorithms._blocks`).
"""
from __future__ import annotations

from ccxml.algorithms import _blocks
from ccxml.tables import nb

RULES = nb.RULES


COLLECTIVES = _blocks.register(RULES)
allreduce, allgather, reducescatter, broadcast, scatter = COLLECTIVES.values()

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("nb")
