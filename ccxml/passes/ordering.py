"""Pass: the deadlock-avoiding order of steps inside every thread block.

All steps of the schedule are placed by one global list scheduling: a step becomes *ready* once
everything it waits on is placed — its same-rank data dependencies (collected by the Chunk API:
last writer and readers since, per chunk), the send that feeds its receive, and the previous send
(receive) of its TB, since a link's messages keep their order. Among ready steps the one with the
smallest seed key is placed next and appended to its TB:

* a send with send index k: (2k, 0); a receive with receive index k: (2k+1, 1); a step that
  receives and sends (``rcs``-like) would be (2k, 2) with k its receive index (fusion runs later);
  a local step: (0, 3), i.e. as soon as it is ready.

In a TB with both peers, send k+1 is held back until receive k is placed, when that is possible
at all: between two ranks exchanging several messages this alternates send k / receive k on both
sides, so neither waits for a message the other was not yet allowed to send, even when a link
buffers only two calls. When nothing else can move, the held send first in priority order is let
go — one at a time, so that alternation holds everywhere else. A receive lands right before the
send that forwards it, ready for fusion.

Guarantees:

* the placement order is one global order in which every step comes after everything it waits on,
  and every TB's order is its restriction, so the ordered schedule cannot deadlock with unbounded
  links, whatever order the steps were issued in;
* a step is never moved before a same-TB step whose data it reads or overwrites, or that reads
  what it overwrites (those are dependencies);
* sends stay in send order and receives in receive order: the link sequences do not change.
"""
from __future__ import annotations

import heapq
from array import array
from dataclasses import dataclass
from typing import ClassVar

from ccxml._native import is_compiled
from ccxml.ir.nodes import TB, Algo, Step, dep_count, step_deps
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.wire import Profile

# a step's flags (one byte each in the pass)
_SENDS = 1              # its type sends
_RECEIVES = 2           # its type receives
_HOLDABLE = 4           # a send of a TB with both peers: may wait for the TB's receive
_HELD = 8               # held now (HeldSends)
_FORCED = 16            # let go because nothing else could move


def order_steps(algo: Algo) -> None:
    _schedule([tb for gpu in algo.gpus for tb in gpu.tbs], whole=True)


def order_tb(tb: TB) -> None:
    """Order one TB on its own (waits on other TBs are taken as already satisfied). The steps
    keep the numbers they had (``_s`` is the pass's scratch): renumber after reordering."""
    numbers = {st: st._s for st in tb.steps}
    _schedule([tb], whole=False)
    for st in tb.steps:
        st._s = numbers[st]


def _schedule(tbs: list[TB], whole: bool) -> None:
    """List-schedule the steps of ``tbs`` (see the module docstring). ``whole``: the TBs hold
    every step of the schedule, so every wait is on one of them (no membership test)."""
    start, n, m, top, nwaits = _number(tbs)
    members = None if whole else [st for tb in tbs for st in tb.steps]
    flags = bytearray(n)
    waits = WaitTable(n, nwaits)
    entries = Entries(n, m, 8 * top + 5)
    _read_steps(tbs, members, flags, waits, entries)
    entries.seal()
    placement = Placement(start, waits.seal())
    ready = ready_heap()
    for i in range(n):
        if waits.open[i] == 0:
            ready.push(entries.entry[i])
    held = HeldSends(flags, n, _HELD)
    recvs_placed = _zeros(len(tbs))
    while ready.size or held.count:
        if ready.size:
            entry = ready.pop()
        else:                           # nothing else can move: let the first held send go
            entry = held.let_go(placement.tb_of)
            flags[entry % n] |= _FORCED
        i = entry % n
        t = placement.tb_of[i]
        f = flags[i]
        if f & _HOLDABLE and not f & _FORCED:
            # alternation: a send waits for its TB's receive of the same index
            if _waits_for_receive(tbs[t], i - start[t], recvs_placed[t]):
                held.hold(t, entry)
                continue
        placement.place(i)
        if f & _RECEIVES:
            recvs_placed[t] += 1
            waiting = held.release(t)
            if waiting is not None:
                for w in waiting:
                    ready.push(w)
        # release the waits on i: its TB's next send if i sends, its next receive if i receives
        # (found in the flags: each gap between two sends or receives is read once), then the
        # steps that recorded a wait on i; each step left with none becomes ready
        if f & _SENDS:
            j = _next_with(flags, i, start[t + 1], _SENDS)
            if j >= 0 and waits.release(j):
                ready.push(entries.entry[j])
        if f & _RECEIVES:
            j = _next_with(flags, i, start[t + 1], _RECEIVES)
            if j >= 0 and waits.release(j):
                ready.push(entries.entry[j])
        for k in range(waits.first[i], waits.first[i + 1]):
            j = waits.after[k]
            if waits.release(j):
                ready.push(entries.entry[j])
    if placement.placed != n:  # pragma: no cover - every wait points to an earlier-issued step
        raise ValueError("the steps' waits form a cycle; the program was not issued in order")
    del waits, entries                  # (their tables go before the TBs' new lists are made)
    placement.apply(tbs)


def _number(tbs: list[TB]):
    """Number the steps of ``tbs`` densely, TB after TB, in ``_s`` (numbered again later); return
    (start, n, m, top, nwaits): TB t holds the steps start[t] .. start[t + 1] - 1, n steps in all,
    m above every issue number, top the highest send or receive index, nwaits the data
    dependencies and matched sends."""
    nt = len(tbs)
    start = _zeros(nt + 1)
    n = 0
    m = 1
    top = 0
    nwaits = 0
    for t, tb in enumerate(tbs):
        start[t] = n
        for st in tb.steps:
            st._s = n
            n += 1
            if st.original_index >= m:
                m = st.original_index + 1
            if st.send_index > top:
                top = st.send_index
            if st.recv_index > top:
                top = st.recv_index
            nwaits += dep_count(st)
            if st.recv_from is not None:
                nwaits += 1
    start[nt] = n
    if top >= 1 << 59:  # pragma: no cover - no schedule has that many sends on one link
        raise OverflowError(f"send or receive index {top} is too large to order")
    if nwaits + 2 * n >= 1 << 31:  # pragma: no cover - step and wait numbers are 32-bit
        raise OverflowError(f"{n} steps with {nwaits} waits are too many to order")
    return start, n, m, top, nwaits


def _kind(ty) -> int:
    """_SENDS if the step type sends | _RECEIVES if it receives."""
    return (_SENDS if ty.sends else 0) | (_RECEIVES if ty.receives else 0)


def _read_steps(tbs: list[TB], members: list | None, flags: bytearray, waits: WaitTable,
                entries: Entries) -> None:
    """Each step's flags, its waits (same-rank data dependencies, the matched send, and the
    TB's previous send or receive) and its heap entry. ``members``: the steps of ``tbs`` in
    number order when they are not the whole schedule (a wait outside them is satisfied)."""
    kinds = KindMemo(_kind)
    for tb in tbs:
        after_send = after_recv = False     # whether the TB had a send / a receive before
        both = tb.recv >= 0
        for st in tb.steps:
            i = st._s
            f = kinds.of(st.type)
            for d in step_deps(st):
                if members is None or _is_member(d, members):
                    waits.wait(i, d._s)
            rf = st.recv_from
            if rf is not None and (members is None or _is_member(rf, members)):
                waits.wait(i, rf._s)
            if f & _SENDS:
                if both:
                    f |= _HOLDABLE
                if after_send:
                    waits.wait_unrecorded(i)
                after_send = True
            if f & _RECEIVES:
                if after_recv:
                    waits.wait_unrecorded(i)
                after_recv = True
            flags[i] = f
            entries.put(i, _seed_key(f, st), st.original_index)


def _is_member(st: Step, members: list) -> bool:
    """Whether ``st`` is one of ``members`` (the steps being ordered, in number order)."""
    j = st._s
    return 0 <= j < len(members) and members[j] is st


def _seed_key(f: int, st: Step) -> int:
    """The seed key of a step with flags ``f``: a send (2k, 0), a receive (2k+1, 1), a receive
    that sends (2k, 2) with k its receive index, a local step (0, 3), as 4·first + second."""
    if f & _SENDS:
        if f & _RECEIVES:
            return 8 * st.recv_index + 2
        return 8 * st.send_index
    if f & _RECEIVES:
        return 8 * st.recv_index + 5
    return 3


def _waits_for_receive(tb: TB, position: int, recvs_placed: int) -> bool:
    """Whether the send at ``position`` of ``tb`` waits for the TB's receive of its index: not
    placed yet, and the TB has that many."""
    st = tb.steps[position]
    return recvs_placed < st.send_index and recvs_placed < tb.recv_count


def _next_with(flags, i: int, end: int, bit: int) -> int:
    """The first step after ``i`` and before ``end`` whose flags have ``bit``, or -1."""
    j = i + 1
    while j < end:
        if flags[j] & bit:
            return j
        j += 1
    return -1


# ---- the parts ---------------------------------------------------------------------------
# The tables of the list scheduling, each behind a small interface. Steps are numbered densely
# (0..n-1, TB after TB) while the pass runs, and every part keeps a byte or a few 32- or 64-bit
# numbers per step or per wait in flat arrays, no list of steps: schedules have millions of
# them. Compiled (ordering.pxd), the parts are final C structs whose hot methods are inline C
# functions of this module, and their tables typed memoryviews (in a module of their own, every
# call would go through a vtable: ordering a 64-rank ring took 16% more instructions).
#
# * Entries — each step's heap entry: its priority and its number in one integer;
# * WaitTable — who waits on whom, and how many waits each step still has open;
# * ReadyHeap — the ready steps, smallest entry first, in a flat array of C integers; its exact
#   twin HeapqReady keeps them in a list with heapq. ready_heap() picks the array compiled and
#   heapq as Python (its C code beats a heap written in Python); tests/passes/
#   test_ordering_parts.py checks that both pop the same entries in the same order;
# * HeldSends — sends held back until a receive of their TB is placed;
# * Placement — the TBs' new orders, filled step by step;
# * KindMemo — a function of step types, remembering the last two.

#: True when this module runs compiled (see ccxml._native): :func:`ready_heap` is then the array
_COMPILED = is_compiled(__file__)
_ZERO = bytes(8)
_ZERO32 = bytes(4)
if array("i").itemsize != 4:  # pragma: no cover - every platform CPython supports
    raise ImportError("ccxml.passes.ordering needs 32-bit C ints")


def _zeros(n: int) -> array:
    """An array of ``n`` 64-bit zeros."""
    return array("q", _ZERO) * n


def _zeros32(n: int) -> array:
    """An array of ``n`` 32-bit zeros."""
    return array("i", _ZERO32) * n


class Entries:
    """Each step's heap entry: ``(key · m + issue number) · n + step number``, so that entries
    order by key, then issue order, as tuples would, at a fraction of the cost, and ``entry % n``
    is the step. ``m`` exceeds every issue number and keys are at most ``top_key``; if an entry
    could exceed 64 bits, the entries become their ranks (rank · n + step: the same order)."""

    def __init__(self, n: int, m: int, top_key: int):
        self.n = n
        self.m = m
        self.fits = _fits_int64(top_key, m, n)
        self.entry = _zeros(n)
        self.big: list[int] = []        # the entries as Python ints, when they may not fit

    def put(self, i: int, key: int, index: int) -> None:
        """Step ``i`` (steps come in order 0, 1, ...) has seed key ``key`` and issue number
        ``index``."""
        if self.fits:
            self.entry[i] = (key * self.m + index) * self.n + i
        else:
            self._put_big(i, key, index)

    def _put_big(self, i: int, key: int, index: int) -> None:
        self.big.append(_entry(key, index, self.m, self.n, i))

    def seal(self) -> None:
        """After every step's :meth:`put`: rank the entries if they may not fit 64 bits."""
        if not self.fits:
            _rank_entries(self.big, self.entry, self.n)
            self.big = []


def _fits_int64(top_key: int, m: int, n: int) -> bool:
    """Whether every entry (key · m + issue number) · n + step number, key <= ``top_key``, is
    below 2**63 (Python ints here: the bound itself may not fit)."""
    return (top_key * m + m - 1) * n + n - 1 < 2 ** 63


def _entry(key: int, index: int, m: int, n: int, i: int) -> int:
    """An entry as a Python int (compiled, the arithmetic of :meth:`Entries.put` is 64-bit)."""
    return (key * m + index) * n + i


def _rank_entries(big: list[int], entry, n: int) -> None:
    """Replace the entries ``big`` (one per step, in step order) by rank · n + step number: the
    same order, and they fit 64 bits whenever n · n does."""
    if n * n >= 2 ** 63:  # pragma: no cover - some 3·10^9 steps
        raise OverflowError(f"{n} steps are too many to order")
    for r, e in enumerate(sorted(big)):
        i = e % n
        entry[i] = r * n + i


class WaitTable:
    """Who waits on whom. Step by step, :meth:`wait` records that step ``i`` waits on step ``j``
    and :meth:`wait_unrecorded` counts a wait the caller releases itself; :meth:`seal` then
    groups the recorded waits by the step waited on (a counting sort: the steps waiting on ``j``
    are ``after[first[j]:first[j + 1]]``, in ascending order), and :meth:`release` closes one
    wait of a step, saying when it has none left.

    Waits may repeat (a data dependency that is also the previous send of the TB is counted,
    and released, twice): that changes nothing and keeps the steps read once."""

    def __init__(self, n: int, room: int):
        self.open = _zeros32(n)              # waits not yet released, per step
        self.unrecorded = bytearray(n)      # of those, the ones not recorded (until sealed)
        # the recorded waits, step after step; once sealed its room (at least n) is spare
        self.waits = _zeros32(max(room, n))
        self.size = 0
        self.first = _zeros32(n + 1)         # counts per step waited on, then group starts
        self.after = _zeros32(0)

    def wait(self, i: int, j: int) -> None:
        """Step ``i`` waits on step ``j`` (released when ``j``'s waiters are)."""
        self.waits[self.size] = j
        self.size += 1
        self.first[j] += 1
        self.open[i] += 1

    def wait_unrecorded(self, i: int) -> None:
        """Step ``i`` waits on a step that the caller finds and releases itself."""
        self.open[i] += 1
        self.unrecorded[i] += 1

    def seal(self):
        """Group the recorded waits by the step waited on; return the spare room (an array of
        at least n 32-bit ints) for the caller to reuse."""
        n = len(self.open)
        first = self.first
        for j in range(1, n + 1):
            first[j] += first[j - 1]        # the end of each group, then filled back to its start
        after = _zeros32(self.size)
        waits = self.waits
        k = self.size - 1
        for i in range(n - 1, -1, -1):      # from the last wait back: groups come out ascending
            e = self.open[i] - self.unrecorded[i]
            while e:
                j = waits[k]
                first[j] -= 1
                after[first[j]] = i
                k -= 1
                e -= 1
        self.after = after
        self.unrecorded = bytearray(0)
        self.waits = _zeros32(0)
        return waits

    def release(self, j: int) -> bool:
        """One wait of step ``j`` is over; whether it has none left."""
        self.open[j] -= 1
        return self.open[j] == 0


class ReadyHeap:
    """A binary min-heap of distinct 64-bit entries in a flat array, doubled when full: the
    order of :class:`HeapqReady`, without a Python int per entry."""

    def __init__(self):
        self.room = _zeros(1024)             # the array (``items`` is its typed view)
        self.items = self.room
        self.size = 0

    def push(self, x: int) -> None:
        if self.size == len(self.items):
            self._grow()
        self.size = _heap_push(self.items, self.size, x)

    def _grow(self) -> None:
        self.room = self.room * 2           # (the old entries, then as many again: room)
        self.items = self.room

    def pop(self) -> int:
        """Remove and return the smallest entry (the heap is not empty)."""
        x = _heap_pop(self.items, self.size)
        self.size -= 1
        return x


class HeapqReady:
    """:class:`ReadyHeap`'s exact twin on a list with :mod:`heapq` (the pure-Python heap)."""

    def __init__(self):
        self.items: list[int] = []
        self.size = 0

    def push(self, x: int) -> None:
        heapq.heappush(self.items, x)
        self.size += 1

    def pop(self) -> int:
        self.size -= 1
        return heapq.heappop(self.items)


def ready_heap():
    """The heap of ready entries: :class:`ReadyHeap` compiled, :class:`HeapqReady` as Python."""
    return ReadyHeap() if _COMPILED else HeapqReady()


def _heap_push(heap, size: int, x: int) -> int:
    """Add ``x`` to the binary min-heap ``heap[:size]`` (an array with room); return the new
    size. With :func:`_heap_pop` the same order as heapq (entries are distinct)."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        p = heap[parent]
        if p < x:
            break
        heap[pos] = p
        pos = parent
    heap[pos] = x
    return size + 1


def _heap_pop(heap, size: int) -> int:
    """Remove and return the smallest entry of the binary min-heap ``heap[:size]``."""
    top = heap[0]
    size -= 1
    x = heap[size]
    pos = 0
    child = 1
    while child < size:
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if x < heap[child]:
            break
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = x
    return top


class HeldSends:
    """Sends held back, per TB, until a receive of their TB is placed, and all of them in one
    heap in entry order (for when nothing else can move). Whether a step is held is a bit of
    its flags byte (``flags[i] & held_bit``), so that entries released from a TB's list and
    left in the heap are skipped there."""

    def __init__(self, flags: bytearray, n: int, held_bit: int):
        self.flags = flags
        self.n = n
        self.bit = held_bit
        self.by_tb: dict[int, list[int]] = {}   # TB number -> its held entries
        self.order: list[int] = []              # every entry held so far (stale ones too)
        self.count = 0                          # entries held now

    def hold(self, t: int, entry: int) -> None:
        """Hold the send ``entry`` of TB ``t``."""
        self.by_tb.setdefault(t, []).append(entry)
        heapq.heappush(self.order, entry)
        self.flags[entry % self.n] |= self.bit
        self.count += 1

    def release(self, t: int) -> list[int] | None:
        """Let every send held in TB ``t`` go; return their entries (None if there are none)."""
        entries = self.by_tb.pop(t, None)
        if entries is not None:
            for e in entries:
                self.flags[e % self.n] &= ~self.bit
            self.count -= len(entries)
        return entries

    def let_go(self, tb_of) -> int:
        """Let the held send with the smallest entry go (``tb_of[step]`` is its TB); return it."""
        entry = heapq.heappop(self.order)
        while not self.flags[entry % self.n] & self.bit:
            entry = heapq.heappop(self.order)
        i = entry % self.n
        t = tb_of[i]
        entries = self.by_tb[t]
        entries.remove(entry)
        if not entries:
            del self.by_tb[t]
        self.flags[i] &= ~self.bit
        self.count -= 1
        return entry


class Placement:
    """The TBs' new orders as steps are placed: TB ``t`` holds the steps numbered
    ``start[t] .. start[t + 1] - 1`` and its new order fills ``order[start[t]:start[t + 1]]``."""

    def __init__(self, start, room):
        nt = len(start) - 1
        self.start = start
        self.order = room                   # at least n 32-bit ints
        self.cursor = _zeros(nt)             # where TB t's next placed step goes
        self.tb_of = _zeros32(start[nt])     # each step's TB
        self.placed = 0
        _fill_tbs(start, self.cursor, self.tb_of)

    def place(self, i: int) -> None:
        """Step ``i`` goes next in its TB."""
        t = self.tb_of[i]
        self.order[self.cursor[t]] = i
        self.cursor[t] += 1
        self.placed += 1

    def apply(self, tbs: list) -> None:
        """Give each TB of ``tbs`` its new order (every step placed); reset the steps' ``_s``."""
        self.tb_of = _zeros32(0)             # (freed before the new lists are made)
        start = self.start
        order = self.order
        for t, tb in enumerate(tbs):
            old = tb.steps
            s0 = start[t]
            tb.steps = [old[order[k] - s0] for k in range(s0, start[t + 1])]
            for st in old:
                st._s = -1


def _fill_tbs(start, cursor, tb_of) -> None:
    """Each TB's first free place (its first step number) and each step's TB."""
    for t in range(len(cursor)):
        cursor[t] = start[t]
        for i in range(start[t], start[t + 1]):
            tb_of[i] = t


class KindMemo:
    """``kind(t)`` for step types ``t``, remembering the last two types asked for: an enum's
    attributes are slow to read, and sends and receives alternate."""

    def __init__(self, kind):
        self.kind = kind
        self.last = self.other = None
        self.last_kind = self.other_kind = 0

    def of(self, t) -> int:
        if t is not self.last:
            if t is self.other:
                self.last, self.other = self.other, self.last
                self.last_kind, self.other_kind = self.other_kind, self.last_kind
            else:
                self.other, self.other_kind = self.last, self.last_kind
                self.last = t
                self.last_kind = self.kind(t)
        return self.last_kind


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class OrderSteps(Pass):
    """Each TB's steps are reordered so that one global order of all steps puts every step
    after its TB's previous step, its dependencies and the send its receive is matched with (no
    deadlock with unbounded links); no step precedes a same-TB step it depends on; sends stay in
    send order and receives in receive order (the link sequences do not change)."""

    name: ClassVar[str] = "ordering"

    def run(self, algo: Algo, profile: Profile) -> None:
        order_steps(algo)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.same_tb_waits_first(algo, n), *gt.links_and_order(algo, n))
