"""Lanes: which stream of transfers each step belongs to, so that the threadblocks pass can keep
independent streams out of each other's thread blocks.

The threadblocks pass puts all of a rank's steps on one channel into ONE thread block when the
rank has at most one send and one receive peer there, else one TB per peer. A *stream* is a run of
table steps in which every rank keeps the same role toward each peer (a whole ring, one distance
of NHR, a mesh step); streams that share a TB can be reordered into a wait cycle. The front end
only says which transfers form one step of which stream: :class:`Lanes` (one per instance of an
algorithm) hands out lane phases, and :meth:`LanePhase.place` records the (sender, receiver)
pairs of one step as a lane group (:meth:`ccxml.frontend.chunk.Program.lane_group`); the pass
chooses the channels (:func:`ccxml.passes.threadblocks.plan_lanes`). :class:`Directions` gives
the two directions of an exchange their own phases.
"""
from __future__ import annotations

from typing import Sequence

from ccxml.frontend.chunk import Program


class Lanes:
    """The lane phases of instance ``instance`` of ``instances`` (one per instance and program).
    The pass puts lane l of instance c of K on channel ``l·K + c``."""

    def __init__(self, instances: int = 1, instance: int = 0):
        self.k, self.c = instances, instance
        self._phases = 0

    def phase(self) -> "LanePhase":
        """A new phase: its steps start new streams (never continue another phase's)."""
        self._phases += 1
        return LanePhase(self, self._phases - 1)


class LanePhase:
    """One lane phase: the steps placed on it form streams of their own."""

    def __init__(self, lanes: Lanes, number: int):
        self.lanes, self.number = lanes, number

    def place(self, prog: Program, transfers: Sequence[tuple[int, int]]) -> int:
        """The lane group of one step whose transfers are ``(sender, receiver)`` pairs."""
        return prog.lane_group(self.lanes.k, self.lanes.c, self.number, transfers)


class Directions:
    """The two lane phases of one executor call. Where two ranks exchange in one step, the
    transfer toward the higher rank goes on one and the other on the second, so the two
    directions sit in two one-way thread blocks: in one full-duplex TB one side would receive
    before it sends (the ordering pass alternates a TB's sends and receives) and the exchange
    would run one direction at a time. Every other transfer goes on the first."""

    def __init__(self, lanes: Lanes):
        self.up, self.down = lanes.phase(), lanes.phase()

    def place(self, prog: Program, pairs: Sequence[tuple[int, int] | None]) -> list[int]:
        """The lane group of each transfer ``(sender, receiver)`` of one step (-1 for None, a
        move with nothing to send)."""
        present = set(pairs)
        down = [t is not None and t[0] > t[1] and (t[1], t[0]) in present for t in pairs]
        ups = [t for t, d in zip(pairs, down) if t is not None and not d]
        downs = [t for t, d in zip(pairs, down) if d]
        cu = self.up.place(prog, ups) if ups else -1
        cd = self.down.place(prog, downs) if downs else -1
        return [-1 if t is None else cd if d else cu for t, d in zip(pairs, down)]
