"""Tables of moves: every phase of every algorithm, written once, as data.

A *table* is one phase of a collective: a list of steps, each a list of *moves*
``(sender, receiver, blocks)``. Senders and receivers are positions among the phase's members
(the ranks themselves for a flat algorithm on all ranks, 0 … n−1 for a phase that runs inside a
server or among its leaders), blocks are the logical blocks the move carries. A table says
nothing about buffers, chunks or channels: the front end's executor
(:mod:`ccxml.frontend.executor`) turns a table and the places its blocks live into Chunk API
calls, and the simulator's formulas (:mod:`ccxml.simulator.formulas`) evaluate the same tables
with the same merge rule, without building a program.

One module per algorithm family (hccl-algorithms.md):

* :mod:`.ring` — ring reduce-scatter and all-gather, chains (pipelined reduce and broadcast),
  ring scatter and gather (§3)
* :mod:`.mesh` — the one-step full-mesh phases and the all-to-all (§2)
* :mod:`.star` — one root talking to every member (§6)
* :mod:`.rhd` — recursive halving-doubling and its fold (§4)
* :mod:`.pairwise` — the pairwise all-to-all (§5) and the pairwise-exchange reduce-scatter
* :mod:`.nhr`, :mod:`.nb` — the non-uniform block tables (§7, §8), and :mod:`.blocks`, the
  layout of the collectives built from them
* :mod:`.schemes` — the flat algorithms as phases of the hierarchical ones (§11)
* :mod:`.ahc` — AHC's groups and logic cards (§9); :mod:`.pipeline` — Pipeline's slots (§10)
* :mod:`.doubling` — recursive-doubling all-gather for any n; :mod:`.bruck` — Bruck's all-to-all
* :mod:`.plan` — where each move reads and writes its blocks, and the one merge rule: blocks
  that touch go as one message

This package imports only :mod:`ccxml.vocab` (CI's import contracts hold it to that).
"""
from __future__ import annotations

Move = tuple[int, int, list[int]]
"""One transfer of a step: (sender, receiver, blocks)."""
Step = list[Move]
Table = list[Step]

__all__ = ["Move", "Step", "Table"]
