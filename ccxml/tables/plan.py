"""Where each move of a table reads and writes its blocks, and the one merge rule.

A phase is a table (:mod:`ccxml.tables`) and the places its blocks live. A place is a
:data:`Where`: ``where(rank, block, instance)`` gives the *location* of a block on a rank for one
of the K parallel instances of the algorithm (``--channels K``): a :data:`Piece` ``(buffer, first
chunk, chunks)``, or a list of pieces when the block is several ranges. Two kinds of phase:

* :class:`Copy` — every move stores the sender's blocks at the receiver's ``loc``; a sender reads
  a block it has not received at ``first`` (its own block, before a local copy has put it at
  ``loc``).
* :class:`Reduce` — every move combines the sender's value of a block into the receiver's: the
  receiver's operand is its own contribution (``own``) until it has received the block, its
  running sum (``acc``) after; the owner's last receive of its block writes ``final``. A staged
  reduce (``land``) instead lands every copy in a slot of its own and sums them locally.

:func:`messages` works out which place every block is read from and written to and turns each
step of moves into messages with the merge rule: the executor issues them
(:mod:`ccxml.frontend.executor`) and the simulator's formulas time them
(:mod:`ccxml.simulator.formulas`).

**The merge rule** (HCCL's ``MergeSlices``): the blocks a move carries go as one message where
their source, local operand and destination ranges all touch; blocks are taken in the order of
their locations. Optionally (``even``, NHR and NB), where two members send to each other in one
step, both directions are cut at the same block counts, so that their k-th messages are equal: a
thread block that sends and receives on one link alternates message by message, and equal pairs
keep the exchange as fast as two independent transfers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ccxml.tables import Table
from ccxml.vocab.wire import Buffer

Piece = tuple[Buffer, int, int]
"""``(buffer, first chunk, chunks)``: one range of a buffer on one rank."""
Where = Callable[[int, int, int], "Piece | list[Piece]"]
"""``(rank, block, instance) -> location``."""
Message = tuple[Piece, "Piece | None", Piece]
"""One message: (source on the sender, local operand on the receiver or None for a copy,
destination on the receiver), ranges of equal size."""


@dataclass(frozen=True)
class Copy:
    """A table whose moves store blocks (all-gather, broadcast, scatter, gather)."""

    table: Table
    loc: Where
    first: Where | None = None


@dataclass(frozen=True)
class Reduce:
    """A table whose moves reduce blocks (reduce-scatter, reduce).

    ``owner(j)`` is the position that ends with block j (default j); its last receive of the block
    writes ``final`` (default ``acc``). With ``nblocks``, an owner that never receives one of
    blocks 0 … nblocks−1 (a member alone) copies its own contribution there itself. With
    ``land(receiver, sender, block, instance)`` the reduce is staged: each copy lands in its own
    slot and the receiver then sums them locally, nearest sender first, into ``final``.
    """

    table: Table
    own: Where
    acc: Where
    final: Where | None = None
    owner: Callable[[int], int] | None = None
    nblocks: int | None = None
    land: Callable[[int, int, int, int], Piece] | None = None


Phase = Copy | Reduce


def messages(phase: Phase, c: int = 0, members: Sequence[int] | None = None, n: int | None = None,
             merge: bool = True, even: bool = False) -> "Steps":
    """The messages of ``phase`` for instance ``c``, step by step: per step, ``(sender rank,
    receiver rank, messages)`` of every move. ``members`` maps positions to ranks (default: the
    positions are ranks), ``n`` is the number of positions (default: the largest in the table
    + 1). With ``merge`` the blocks of a move that touch go as one message (the merge rule,
    module docstring), else each block goes on its own, cut where its ranges are several pieces;
    with ``even`` the two directions of an exchange are cut at the same block counts.

    A table lists a block's moves in the order the block travels: a member forwards a block after
    the move that brings it (in a later step, for a reduce table), and a receiver's operand is
    what the moves before it left. A staged reduce's moves land in slots: the receivers' values
    change only when they sum them, after the step."""
    return Steps(phase, c, members, n, merge, even)


class Steps:
    """Iterator of :func:`messages`: it works out one step at a time, keeping where every member
    holds each block (a phase of the biggest algorithms has millions of moves) in flat lists,
    one slot per member and block, made once: growing tables while the Chunk API makes steps
    would scatter the steps in memory, and the passes read them in order."""

    # the fields' types, for the type checker (the .pxd types them when compiled); a reduce
    # phase sets own/acc/final/last/held, a copy phase loc/first (and have when first is set)
    table: Table
    c: int
    si: int
    merge: bool
    members: list[int] | None
    two_way: list[bool] | None
    reduces: bool
    staged: bool
    held: list[list[Where | None]] | None
    have: list[bytearray] | None
    last: list[int] | None
    own: Where | None
    acc: Where | None
    final: Where | None
    loc: Where | None
    first: Where | None

    def __init__(self, phase: Phase, c: int, members: Sequence[int] | None, n: int | None, merge: bool,
                 even: bool):
        table = phase.table
        top, blocks = _extent(table)
        n = top if n is None else max(n, top)
        self.table, self.c, self.si, self.merge = table, c, 0, merge
        self.members = None if members is None else list(members)
        self.two_way = _two_way(table) if even else None
        self.reduces = isinstance(phase, Reduce)
        self.held = self.have = self.last = None
        self.staged = False
        self.own = self.acc = self.final = self.loc = self.first = None
        if isinstance(phase, Reduce):
            self.own, self.acc = phase.own, phase.acc
            self.final = phase.final or phase.acc
            self.last = completions(phase, blocks)
            self.held = [[None] * blocks for _ in range(n)]
            self.staged = phase.land is not None
        else:
            self.loc, self.first = phase.loc, phase.first
            if self.first is not None:
                self.have = [bytearray(blocks) for _ in range(n)]

    def __iter__(self) -> "Steps":
        return self

    def __next__(self) -> list[tuple[int, int, list[Message]]]:
        if self.si >= len(self.table):
            raise StopIteration
        found = self.step(self.si)
        self.si += 1
        return found

    def step(self, si: int) -> list[tuple[int, int, list[Message]]]:
        """Step ``si`` (the steps must be asked for in order)."""
        found = []
        ti = 0
        for a, b, blocks in self.table[si]:
            found.append(self.move(si, ti, a, b, blocks))
            ti += 1
        if self.two_way is not None and self.two_way[si]:
            _equal_cuts(found)
        return found

    def move(self, si: int, ti: int, a: int, b: int, blocks: list[int]) -> tuple[int, int, list[Message]]:
        """``(sender rank, receiver rank, messages)`` of move ``ti`` of step ``si``, (a, b,
        blocks); the moves must be asked for in table order. (:meth:`step` without the even cut:
        the executor issues a move's messages before it asks for the next move.)"""
        c = self.c
        if self.members is None:
            ra, rb = a, b
        else:
            ra, rb = self.members[a], self.members[b]
        locs: list[Any] = []
        if self.reduces:                    # (held, last, own, acc and final are set)
            ha, hb, move = self.held[a], self.held[b], (si << 32) + ti     # type: ignore[index]
            own, acc, final, last = self.own, self.acc, self.final, self.last
            staged = self.staged
            for j in blocks:
                into = final if last[j] == move else acc                      # type: ignore[index]
                src, opnd = ha[j], hb[j]
                locs.append((_at(own if src is None else src, ra, j, c),
                             _at(own if opnd is None else opnd, rb, j, c), _at(into, rb, j, c)))
                if not staged:
                    hb[j] = into
        elif self.have is None:
            loc = self.loc
            for j in blocks:
                locs.append((_at(loc, ra, j, c), None, _at(loc, rb, j, c)))
        else:
            sa, sb = self.have[a], self.have[b]
            loc, first = self.loc, self.first
            for j in blocks:
                locs.append((_at(loc if sa[j] else first, ra, j, c), None, _at(loc, rb, j, c)))
                sb[j] = 1
        if len(locs) > 1:
            locs = runs(locs) if self.merge else [m for x in locs for m in aligned(x)]
        elif locs and not self.merge and (type(locs[0][0]) is list or type(locs[0][1]) is list
                                          or type(locs[0][2]) is list):
            locs = aligned(locs[0])
        return ra, rb, locs


def completions(phase: Reduce, blocks: int | None = None) -> list[int]:
    """Per block j, the move (step · 2^32 + index in the step) whose receiver, the owner of j,
    completes it (its last receive of j); -1 for a block its owner never receives."""
    owner = phase.owner
    if blocks is None:
        blocks = _extent(phase.table)[1]
    last = [-1] * blocks
    for si, step in enumerate(phase.table):
        ti = 0
        for _, b, bl in step:
            for j in bl:
                if (j if owner is None else owner(j)) == b:
                    last[j] = (si << 32) + ti
            ti += 1
    return last


def _extent(table: Table) -> tuple[int, int]:
    """(1 + the largest member, 1 + the largest block) a table names."""
    top = nb = 0
    for step in table:
        for a, b, blocks in step:
            if a >= top or b >= top:
                top = max(a, b) + 1
            for j in blocks:
                if j >= nb:
                    nb = j + 1
    return top, nb


def _at(where: Any, r: int, j: int, c: int) -> Piece | list[Piece]:
    """``where(r, j, c)``; a :class:`Layout` or :class:`Listed` without the call (speed)."""
    if type(where) is Layout:
        lay = where
        return lay.at(j, c)
    if type(where) is Listed:
        listed = where
        return listed.places[c][j]
    return where(r, j, c)             # type: ignore[no-any-return]


def landings(step: list[tuple[int, int, list[int]]]) -> dict[tuple[int, int], list[int]]:
    """(receiver, block) -> the members that send it that block in ``step``, in move order."""
    out: dict[tuple[int, int], list[int]] = {}
    for a, b, blocks in step:
        for j in blocks:
            out.setdefault((b, j), []).append(a)
    return out


def tail(phase: Reduce) -> list[tuple[int, int]]:
    """``(position, block)`` of every block of ``phase.nblocks`` whose owner never receives it
    (a member alone): the owner copies its own contribution to ``final`` itself."""
    if phase.nblocks is None:
        return []
    done = completions(phase, max(phase.nblocks, _extent(phase.table)[1]))
    return [(j if phase.owner is None else phase.owner(j), j) for j in range(phase.nblocks) if done[j] < 0]


# ---- the merge rule --------------------------------------------------------------------------

def _touch(a: Piece | None, b: Piece) -> bool:
    """Whether location ``b`` starts where ``a`` ends (None: no operand on either side)."""
    return a is None or (a[0] is b[0] and a[1] + a[2] == b[1])


def runs(locs: list[Any]) -> list[Message]:
    """``locs`` (one (source, operand, destination) per block, single pieces) as messages:
    sorted by location, consecutive blocks whose every range touches the last one's go as one."""
    if len(locs) == 1:
        return locs
    found: list[list[Any]] = []
    for s, o, d in sorted(locs, key=_order):
        if found:
            ps, po, pd = found[-1]
            if _touch(ps, s) and _touch(po, o) and _touch(pd, d):
                n = ps[2] + s[2]
                found[-1] = [(ps[0], ps[1], n), None if po is None else (po[0], po[1], n),
                             (pd[0], pd[1], n)]
                continue
        found.append([s, o, d])
    return [tuple(m) for m in found]


def _order(loc: Message) -> tuple[Any, ...]:
    s, o, d = loc
    return (s[0], s[1], d[0], d[1]) if o is None else (s[0], s[1], o[0], o[1], d[0], d[1])


def aligned(locs: tuple[Any, ...]) -> list[Message]:
    """One block's (source, operand, destination), each a piece or a list of pieces, cut at
    every boundary of any of them: messages whose three ranges have equal sizes."""
    parts = [None if x is None else ([x] if type(x) is tuple else x) for x in locs]
    sizes = {sum(p[2] for p in x) for x in parts if x is not None}
    if len(sizes) != 1:
        raise ValueError(f"internal: a move's ranges differ in size {sorted(sizes)}")
    if all(x is None or len(x) == 1 for x in parts):
        return [tuple(None if x is None else x[0] for x in parts)]   # type: ignore[list-item]  # 3 ranges
    bounds = sorted({at for x in parts if x is not None for at in _ends(x)})
    cut = [None if x is None else _cut(x, bounds) for x in parts]
    return list(zip(*(c if c is not None else [None] * (len(bounds) - 1) for c in cut)))


def _ends(pieces: list[Piece]) -> list[int]:
    out, at = [0], 0
    for p in pieces:
        at += p[2]
        out.append(at)
    return out


def _cut(pieces: list[Piece], bounds: list[int]) -> list[Piece]:
    out, at = [], 0
    for buf, index, size in pieces:
        inner = [b for b in bounds if at <= b <= at + size]
        out += [(buf, index + lo - at, hi - lo) for lo, hi in zip(inner, inner[1:])]
        at += size
    return out


def _two_way(table: Table) -> list[bool]:
    """Per step: whether two members send to each other in it."""
    out = []
    for step in table:
        pairs = {(a, b) for a, b, _ in step}
        out.append(any((b, a) in pairs for a, b in pairs))
    return out


def _equal_cuts(found: list[tuple[int, int, list[Message]]]) -> None:
    """Where two members send to each other, cut both directions at the same running sizes."""
    index = {(s, d): i for i, (s, d, _) in enumerate(found)}
    for i, (s, d, mine) in enumerate(found):
        k = index.get((d, s))
        if k is not None and s < d:
            theirs = found[k][2]
            bounds = {at for msgs in (mine, theirs) for at in _ends([m[0] for m in msgs])[1:]}
            found[i] = (s, d, _split(mine, bounds))
            found[k] = (d, s, _split(theirs, bounds))


def _split(messages: list[Message], bounds: set[int]) -> list[Message]:
    """``messages`` cut at the running sizes in ``bounds``."""
    out, at = [], 0
    for m in messages:
        n = m[0][2]
        cuts = sorted(x - at for x in bounds if at < x < at + n)
        for lo, hi in zip([0, *cuts], [*cuts, n]):
            out.append(tuple(None if p is None else (p[0], p[1] + lo, hi - lo) for p in m))
        at += n
    return out                  # type: ignore[return-value]  # 3 ranges


# ---- layouts ----------------------------------------------------------------------------------

class Layout:
    """A place given by a formula: block j of instance c is ``width`` chunks of ``buffer`` from
    chunk ``per_block·(perm[j] or j) + per_instance·c + offset``, on every rank. Calling it is
    calling a :data:`Where`; the planner evaluates it without a call."""

    def __init__(self, buffer: Buffer, per_block: int, per_instance: int, offset: int = 0,
                 width: int = 1, perm: Sequence[int] | None = None):
        self.buffer, self.per_block, self.per_instance = buffer, per_block, per_instance
        self.offset, self.width = offset, width
        self.perm = None if perm is None else list(perm)

    def at(self, j: int, c: int) -> Piece:
        b = j if self.perm is None else self.perm[j]
        return (self.buffer, self.per_block * b + self.per_instance * c + self.offset, self.width)

    def __call__(self, r: int, j: int, c: int) -> Piece:
        return self.at(j, c)


class Listed:
    """A place looked up in a list, the same on every rank: ``places[c][j]`` (blocks whose sizes
    differ, as in an all-to-all-v)."""

    def __init__(self, places: list[list[Piece]]):
        self.places = places

    def __call__(self, r: int, j: int, c: int) -> Piece:
        return self.places[c][j]


def by_block(buffer: Buffer, k: int, width: int = 1) -> Layout:
    """Block j is K·``width`` chunks and instance c has the c-th ``width`` of each:
    chunk (j·K + c)·width."""
    return Layout(buffer, k * width, width, width=width)


def by_instance(buffer: Buffer, n: int, perm: Sequence[int] | None = None) -> Layout:
    """Instance c has its own n chunks, block j at chunk c·n + j (or c·n + perm[j])."""
    return Layout(buffer, 1, n, perm=perm)


def fixed(buffer: Buffer) -> Layout:
    """Instance c's chunk c, whatever the block (a rank's own block of K chunks)."""
    return Layout(buffer, 0, 1)


class Space:
    """Units ``[0, units)`` of ``buffer`` on every rank, for instance ``instance`` of K.

    With ``block=None`` instance c owns chunks ``[base + c·units, base + (c+1)·units)`` (one
    contiguous slice). With ``block=X`` the buffer is a row of rank-blocks of K·X chunks and
    instance c owns the X chunks at offset c·X of each rank-block, so a unit range that crosses a
    rank-block boundary is several pieces.
    """

    def __init__(self, buffer: Buffer, units: int, *, block: int | None = None, instances: int = 1,
                 instance: int = 0, base: int = 0):
        self.buffer, self.units, self.block = Buffer(buffer), units, block
        self.k, self.c, self.base = instances, instance, base

    def __call__(self, lo: int, hi: int) -> "Piece | list[Piece]":
        """Units lo … hi−1: one piece, or a list of pieces."""
        if not 0 <= lo < hi <= self.units:
            raise ValueError(f"internal: unit range [{lo}, {hi}) outside [0, {self.units})")
        if self.block is None:
            return (self.buffer, self.base + self.c * self.units + lo, hi - lo)
        x, out = self.block, []
        u = lo
        while u < hi:
            b, off = divmod(u, x)
            n = min(hi - u, x - off)
            out.append((self.buffer, self.base + b * self.k * x + self.c * x + off, n))
            u += n
        return out[0] if len(out) == 1 else out
