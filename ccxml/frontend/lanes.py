"""Channel plan of the hierarchical phases: which channel each transfer of a step goes on.

The thread-block pass puts all of a rank's steps on one channel into ONE thread block when the
rank has at most one send and one receive peer there, else one TB per peer. :class:`Lanes` keeps
independent streams of steps apart so that no thread block mixes them, and :class:`Directions`
gives the two directions of an exchange their own thread blocks.
"""
from __future__ import annotations

from typing import Sequence


class Lanes:
    """Channel plan of one instance, so that no thread block mixes two independent streams.

    The TB pass puts all of a rank's steps on one channel into ONE thread block when the rank
    has at most one send and one receive peer there, else one TB per peer; the step-ordering
    pass then interleaves each TB's sends and receives by index. Two streams of steps that share
    a TB can so be reordered into a wait cycle (example: a chain reduce 1→2→…→0 followed by a
    chain broadcast 0→1→…: rank 1's broadcast receive moves in front of its reduce sends).

    A *stream* is a run of table steps in which every rank keeps the same role toward each peer
    (send only, receive only, or both): a whole ring, one distance of NHR, a mesh step. Streams
    on one channel (a *lane*) must touch disjoint peers of every rank, and a rank that already
    has a stream on the lane must end up with more than one send or receive peer there (so the
    TB pass gives each peer its own TB). Lane l of instance c of K is channel ``l·K + c``.
    """

    def __init__(self, instances: int = 1, instance: int = 0):
        self.k, self.c = instances, instance
        # lane -> rank -> stream id -> (send peers, recv peers)
        self._use: list[dict[int, dict[int, tuple[set, set]]]] = []
        self._streams: list[tuple[int, dict[tuple[int, int], frozenset]]] = []   # (lane, roles)

    def phase(self) -> "LanePhase":
        """A new phase: its steps start new streams (never continue another phase's)."""
        return LanePhase(self)

    def chan(self, lane: int) -> int:
        return lane * self.k + self.c

    @property
    def used(self) -> int:
        return len(self._use)

    def _fits(self, lane: int, sid: int | None, peers: dict[int, tuple[set, set]]) -> bool:
        use = self._use[lane]
        for r, (snew, rnew) in peers.items():
            mine_s, mine_r = set(snew), set(rnew)
            other_s: set = set()
            other_r: set = set()
            for other, (ss, rr) in use.get(r, {}).items():
                if other == sid:
                    mine_s |= ss
                    mine_r |= rr
                else:
                    other_s |= ss
                    other_r |= rr
            if not other_s and not other_r:
                continue
            if (mine_s | mine_r) & (other_s | other_r):
                return False
            if len(mine_s | other_s) <= 1 and len(mine_r | other_r) <= 1:
                return False
        return True

    def _add(self, lane: int, sid: int, peers: dict[int, tuple[set, set]]) -> None:
        use = self._use[lane]
        for r, (ss, rr) in peers.items():
            s0, r0 = use.setdefault(r, {}).setdefault(sid, (set(), set()))
            s0 |= ss
            r0 |= rr


class LanePhase:
    """Places the steps of one phase on channels (see :class:`Lanes`)."""

    def __init__(self, lanes: Lanes):
        self.lanes = lanes
        self.sids: list[int] = []

    def place(self, transfers: Sequence[tuple[int, int]]) -> int:
        """The channel for one step whose transfers are ``(from_rank, to_rank)`` pairs."""
        roles: dict[tuple[int, int], set] = {}
        peers: dict[int, tuple[set, set]] = {}
        for a, b in transfers:
            roles.setdefault((a, b), set()).add("s")
            roles.setdefault((b, a), set()).add("r")
            peers.setdefault(a, (set(), set()))[0].add(b)
            peers.setdefault(b, (set(), set()))[1].add(a)
        want = {k: frozenset(v) for k, v in roles.items()}
        ln = self.lanes
        for sid in self.sids:
            lane, seen = ln._streams[sid]
            if all(seen.get(k, v) == v for k, v in want.items()) and ln._fits(lane, sid, peers):
                seen.update(want)
                ln._add(lane, sid, peers)
                return ln.chan(lane)
        sid = len(ln._streams)
        lane = 0
        while lane < len(ln._use) and not ln._fits(lane, None, peers):
            lane += 1
        if lane == len(ln._use):
            ln._use.append({})
        ln._streams.append((lane, dict(want)))
        ln._add(lane, sid, peers)
        self.sids.append(sid)
        return ln.chan(lane)


class Directions:
    """The two lane phases of one executor call. Where two ranks exchange in one step, the
    transfer toward the higher rank goes on one and the other on the second, so the two
    directions sit in two one-way thread blocks: in one full-duplex TB one side would receive
    before it sends (the ordering pass alternates a TB's sends and receives) and the exchange
    would run one direction at a time. Every other transfer goes on the first."""

    def __init__(self, lanes: Lanes):
        self.up, self.down = lanes.phase(), lanes.phase()

    def place(self, pairs: Sequence[tuple[int, int] | None]) -> list[int]:
        """The channel of each transfer ``(sender, receiver)`` of one step (-1 for None, a move
        with nothing to send)."""
        present = set(pairs)
        down = [t is not None and t[0] > t[1] and (t[1], t[0]) in present for t in pairs]
        ups = [t for t, d in zip(pairs, down) if t is not None and not d]
        downs = [t for t, d in zip(pairs, down) if d]
        cu = self.up.place(ups) if ups else -1
        cd = self.down.place(downs) if downs else -1
        return [-1 if t is None else cd if d else cu for t, d in zip(pairs, down)]
