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

from ccxml._native import is_compiled
from ccxml.ir.nodes import TB, Algo, dep_count, step_deps

# True when this module runs compiled (see ccxml._native): the ready heap is then a flat array
_COMPILED = is_compiled(__file__)
_ZERO = bytes(8)
_ZERO32 = bytes(4)
# a step's flags (one byte each in the pass)
_SENDS = 1              # its type sends
_RECEIVES = 2           # its type receives
_HOLDABLE = 4           # a send of a TB with both peers: may wait for the TB's receive
_HELD = 8               # held so now
_FORCED = 16            # let go because nothing else could move
_AFTER_SEND = 32        # it waits for its TB's previous send
_AFTER_RECV = 64        # it waits for its TB's previous receive
if array("i").itemsize != 4:  # pragma: no cover - every platform CPython supports
    raise ImportError("ccxml.passes.ordering needs 32-bit C ints")


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
    """List-schedule the steps of ``tbs``. ``whole``: the TBs hold every step of the schedule,
    so every wait is on one of them (no membership test).

    Waits are counted with repeats (a data dependency that is also the TB's previous send is
    counted twice and released twice, which changes nothing): the loop reads each step once.
    The steps are numbered TB after TB; the pass keeps a byte and a few 32- or 64-bit numbers
    per step and per wait, no list of steps: the TBs' lists stay until their new orders replace
    them."""
    nt = len(tbs)
    start = _zeros(nt + 1)              # TB t holds the steps numbered start[t] .. start[t + 1] - 1
    n = 0
    m = 1
    top = 0                             # the highest send or receive index
    nwaits = 0                          # data dependencies and matched sends
    for t, tb in enumerate(tbs):
        start[t] = n
        for st in tb.steps:
            st._s = n                   # dense step number while this pass runs (numbered later)
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
    # the membership test of a wait when the TBs are not the whole schedule (order_tb: one TB)
    steps = None if whole else [st for tb in tbs for st in tb.steps]
    # heap entries are integers: (seed key · m + issue number) · n + step number, so the order is
    # the seed key, then issue order, as with tuples, at a fraction of the cost. The seed key is
    # at most 8·top + 5; if an entry could exceed 64 bits, entries are ranks instead (same order)
    fits = _fits_int64(top, m, n)
    big: list[int] = []                 # the entries as Python ints, when they do not fit
    prio = _zeros(n)
    indeg = _zeros32(n)                 # waits not yet placed, the previous send/receive included
    flags = bytearray(n)                # see _SENDS ... _FORCED
    # what each step i waits on besides its TB's previous send and receive (those are found in
    # the flags when placed): the steps j of its data dependencies and its matched send, i after
    # i: waits[k] for k from e(0) + ... + e(i - 1), e(i) = indeg[i] less its previous-send and
    # -receive waits; first[j] counts the waits on j. Once sorted, its room (at least n) holds
    # the steps as placed
    waits = _zeros32(max(nwaits, n))
    first = _zeros32(n + 1)
    ne = 0
    last_type = other_type = None
    last_kind = other_kind = 0          # _SENDS if the type sends | _RECEIVES if it receives
    for t, tb in enumerate(tbs):  # noqa: B007 - t is a typed C local (ordering.pxd)
        after_send = after_recv = 0     # whether the TB had a send / a receive before the step
        both = tb.recv >= 0
        for st in tb.steps:
            i = st._s
            ty = st.type
            if ty is not last_type:     # the flags of the last two types (enum attributes are
                if ty is other_type:    # slow to read; sends and receives alternate)
                    last_type, other_type = other_type, last_type
                    last_kind, other_kind = other_kind, last_kind
                else:
                    other_type, other_kind = last_type, last_kind
                    last_type = ty
                    last_kind = (_SENDS if ty.sends else 0) | (_RECEIVES if ty.receives else 0)
            f = last_kind
            deg = 0
            for d in step_deps(st):     # same-rank waits
                j = d._s
                if whole or (0 <= j < n and steps[j] is d):
                    waits[ne] = j
                    ne += 1
                    first[j] += 1
                    deg += 1
            rf = st.recv_from
            if rf is not None:
                j = rf._s
                if whole or (0 <= j < n and steps[j] is rf):
                    waits[ne] = j
                    ne += 1
                    first[j] += 1
                    deg += 1
            if f & _SENDS:
                if f & _RECEIVES:
                    key = 8 * st.recv_index + 2
                else:
                    key = 8 * st.send_index
                if both:
                    f |= _HOLDABLE
                if after_send:
                    f |= _AFTER_SEND
                    deg += 1
                after_send = 1
            elif f & _RECEIVES:
                key = 8 * st.recv_index + 5
            else:
                key = 3
            if f & _RECEIVES:
                if after_recv:
                    f |= _AFTER_RECV
                    deg += 1
                after_recv = 1
            flags[i] = f
            if fits:
                prio[i] = (key * m + st.original_index) * n + i
            else:
                big.append(_entry(key, st.original_index, m, n, i))
            indeg[i] = deg
    if not fits:
        _rank_entries(big, prio, n)
        big = []
    # the steps waiting on each step j (by a data dependency or as its matched receive), grouped:
    # after[first[j]:first[j + 1]] (a counting sort; filled from the last wait back, so each
    # group lists its steps in ascending order)
    for j in range(1, n + 1):
        first[j] += first[j - 1]        # the end of each group, then filled back to its start
    after = _zeros32(ne)
    k = ne - 1
    for i in range(n - 1, -1, -1):
        e = indeg[i]
        if flags[i] & _AFTER_SEND:
            e -= 1
        if flags[i] & _AFTER_RECV:
            e -= 1
        while e:
            j = waits[k]
            first[j] -= 1
            after[first[j]] = i
            k -= 1
            e -= 1
    order = waits                       # the steps as placed, TB after TB: TB t's new order is
    del waits                           # order[start[t]:start[t + 1]], filled up to cursor[t]
    tb_of = _zeros32(n)                 # dense TB number of each step
    cursor = _zeros(nt)
    for t in range(nt):
        cursor[t] = start[t]
        for i in range(start[t], start[t + 1]):
            tb_of[i] = t

    # the ready steps' entries, in a binary heap: a list for heapq in pure Python, a flat array
    # compiled (_heap_push / _heap_pop: the same order, without Python ints), doubled when full
    heap: list[int] = []
    room = _zeros(1024 if _COMPILED else 0)
    ready = room
    size = 0
    for i in range(n):
        if indeg[i] == 0:
            if _COMPILED:
                if size == len(ready):
                    room = room * 2
                    ready = room
                size = _heap_push(ready, size, prio[i])
            else:
                heap.append(prio[i])
    heapq.heapify(heap)
    if not _COMPILED:
        size = len(heap)
    recvs_placed = _zeros(nt)
    held: dict[int, list[int]] = {}     # TB number -> sends waiting for an earlier receive
    held_order: list[int] = []          # the same entries in one heap (stale ones skipped)
    heappush, heappop = heapq.heappush, heapq.heappop
    count = 0
    while size or held:
        if not size:                    # alternation impossible here: let one held send go,
            entry = heappop(held_order)                 # the first in priority order
            while not flags[entry % n] & _HELD:
                entry = heappop(held_order)
            i = entry % n
            t = tb_of[i]
            entries = held[t]
            entries.remove(entry)
            if not entries:
                del held[t]
            flags[i] = (flags[i] & ~_HELD) | _FORCED    # let go because nothing else could move
        elif _COMPILED:
            entry = _heap_pop(ready, size)
            size -= 1
        else:
            entry = heappop(heap)
            size -= 1
        i = entry % n
        t = tb_of[i]
        f = flags[i]
        if f & _HOLDABLE and not f & _FORCED:
            # a send waits for its TB's receive of the same index, if the TB has that many
            tb = tbs[t]
            st = tb.steps[i - start[t]]
            if recvs_placed[t] < st.send_index and recvs_placed[t] < tb.recv_count:
                held.setdefault(t, []).append(entry)
                heappush(held_order, entry)
                flags[i] = f | _HELD
                continue
        order[cursor[t]] = i
        cursor[t] += 1
        count += 1
        if f & _RECEIVES:
            recvs_placed[t] += 1
            waiting = held.pop(t, None)
            if waiting:
                for w in waiting:
                    flags[w % n] &= ~_HELD
                    if _COMPILED:
                        if size == len(ready):
                            room = room * 2
                            ready = room
                        size = _heap_push(ready, size, w)
                    else:
                        heappush(heap, w)
                        size += 1
        # release the waits on i: its TB's next send if i sends, its next receive if i receives
        # (found in the flags: each gap between two sends or receives is read once), then
        # after[first[i]:first[i + 1]]
        next_send = next_recv = -1
        if f & _SENDS:
            next_send = _next_with(flags, i, start[t + 1], _SENDS)
        if f & _RECEIVES:
            next_recv = _next_with(flags, i, start[t + 1], _RECEIVES)
        k = first[i]
        end = first[i + 1]
        while True:
            if k < end:
                j = after[k]
                k += 1
            elif next_send >= 0:
                j = next_send
                next_send = -1
            elif next_recv >= 0:
                j = next_recv
                next_recv = -1
            else:
                break
            indeg[j] -= 1
            if indeg[j] == 0:
                if _COMPILED:
                    if size == len(ready):
                        room = room * 2
                        ready = room
                    size = _heap_push(ready, size, prio[j])
                else:
                    heappush(heap, prio[j])
                    size += 1
    if count != n:  # pragma: no cover - every wait points to an earlier-issued step
        raise ValueError("the steps' waits form a cycle; the program was not issued in order")
    del prio, indeg, tb_of, flags, first, after
    for t, tb in enumerate(tbs):
        old = tb.steps
        s0 = start[t]
        tb.steps = [old[order[k] - s0] for k in range(s0, start[t + 1])]
        for st in old:
            st._s = -1


def _zeros(n: int) -> array:
    """An array of ``n`` 64-bit zeros."""
    return array("q", _ZERO) * n


def _zeros32(n: int) -> array:
    """An array of ``n`` 32-bit zeros."""
    return array("i", _ZERO32) * n


def _fits_int64(top: int, m: int, n: int) -> bool:
    """Whether every heap entry (key · m + issue number) · n + step number, key <= 8·top + 5,
    is below 2**63 (Python ints here: the bound itself may not fit)."""
    return ((8 * top + 5) * m + m - 1) * n + n - 1 < 2 ** 63


def _entry(key: int, index: int, m: int, n: int, i: int) -> int:
    """A heap entry as a Python int (when entries may not fit 64 bits)."""
    return (key * m + index) * n + i


def _rank_entries(big: list[int], prio, n: int) -> None:
    """Replace the entries ``big`` (one per step, in step order) by rank · n + step number: the
    same order, and they fit 64 bits whenever n · n does."""
    if n * n >= 2 ** 63:  # pragma: no cover - some 3·10^9 steps
        raise OverflowError(f"{n} steps are too many to order")
    for r, e in enumerate(sorted(big)):
        i = e % n
        prio[i] = r * n + i


def _next_with(flags, i: int, end: int, bit: int) -> int:
    """The first step after ``i`` and before ``end`` whose flags have ``bit``, or -1."""
    j = i + 1
    while j < end:
        if flags[j] & bit:
            return j
        j += 1
    return -1


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
