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

from ccxml.ir import TB, Algo, Step


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
    counted twice and released twice, which changes nothing): the loop reads each step once."""
    steps = [st for tb in tbs for st in tb.steps]
    n = len(steps)
    m = 1
    for i, st in enumerate(steps):
        st._s = i                       # dense step number while this pass runs (numbered later)
        if st.original_index >= m:
            m = st.original_index + 1
    # heap entries are integers: (seed key · m + issue number) · n + step number, so the order is
    # the seed key, then issue order, as with tuples, at a fraction of the cost
    prio = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    tb_of = [0] * n                     # dense TB number of each step
    wait_for = [0] * n                  # a send's receive (number) to wait for, in its TB
    receives = [False] * n
    for t, tb in enumerate(tbs):
        last_send = last_recv = -1
        both = tb.recv >= 0
        nrecv = tb.recv_count
        for st in tb.steps:
            i = st._s                   # reuses the number's int object: no allocation
            tb_of[i] = t
            ty = st.type
            deg = 0
            for d in st.dep_list:       # same-rank waits
                j = d._s
                if whole or (0 <= j < n and steps[j] is d):
                    succ[j].append(i)
                    deg += 1
            rf = st.recv_from
            if rf is not None:
                j = rf._s
                if whole or (0 <= j < n and steps[j] is rf):
                    succ[j].append(i)
                    deg += 1
            if ty.sends:
                if ty.receives:
                    key = 8 * st.recv_index + 2
                else:
                    key = 8 * st.send_index
                if both:
                    wait_for[i] = min(st.send_index, nrecv)
                if last_send >= 0:
                    succ[last_send].append(i)
                    deg += 1
                last_send = i
            elif ty.receives:
                key = 8 * st.recv_index + 5
            else:
                key = 3
            if ty.receives:
                receives[i] = True
                if last_recv >= 0:
                    succ[last_recv].append(i)
                    deg += 1
                last_recv = i
            prio[i] = (key * m + st.original_index) * n + i
            indeg[i] = deg
    heap = [prio[i] for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    placed: list[list[Step]] = [[] for _ in tbs]
    recvs_placed = [0] * len(tbs)
    held: dict[int, list[int]] = {}     # TB number -> sends waiting for an earlier receive
    held_order: list[int] = []          # the same entries in one heap (stale ones skipped)
    is_held = bytearray(n)
    forced = bytearray(n)               # sends let go because nothing else could move
    heappush, heappop = heapq.heappush, heapq.heappop
    count = 0
    while heap or held:
        if not heap:                    # alternation impossible here: let one held send go,
            entry = heappop(held_order)                 # the first in priority order
            while not is_held[entry % n]:
                entry = heappop(held_order)
            t = tb_of[entry % n]
            entries = held[t]
            entries.remove(entry)
            if not entries:
                del held[t]
            is_held[entry % n] = 0
            forced[entry % n] = 1
            heappush(heap, entry)
        entry = heappop(heap)
        i = entry % n
        t = tb_of[i]
        if recvs_placed[t] < wait_for[i] and not forced[i]:
            held.setdefault(t, []).append(entry)
            heappush(held_order, entry)
            is_held[i] = 1
            continue
        placed[t].append(steps[i])
        count += 1
        if receives[i]:
            recvs_placed[t] += 1
            waiting = held.pop(t, None)
            if waiting:
                for w in waiting:
                    heappush(heap, w)
                    is_held[w % n] = 0
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heappush(heap, prio[j])
    if count != n:  # pragma: no cover - every wait points to an earlier-issued step
        raise ValueError("the steps' waits form a cycle; the program was not issued in order")
    for t, tb in enumerate(tbs):
        tb.steps = placed[t]
    for st in steps:
        st._s = -1
