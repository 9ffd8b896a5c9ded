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
at all: between two ranks exchanging several messages this alternates
send k / receive k on both sides, so neither waits for a message the other was not yet allowed
to send, even when a link buffers only two calls. A receive lands right before the send that
forwards it, ready for fusion.

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


def _key(step: Step) -> tuple[int, int]:
    t = step.type
    if t.sends and t.receives:
        return 2 * step.recv_index, 2
    if t.sends:
        return 2 * step.send_index, 0
    if t.receives:
        return 2 * step.recv_index + 1, 1
    return 0, 3


def order_steps(algo: Algo) -> None:
    _schedule([tb for gpu in algo.gpus for tb in gpu.tbs])


def order_tb(tb: TB) -> None:
    """Order one TB on its own (waits on other TBs are taken as already satisfied)."""
    _schedule([tb])


def _schedule(tbs: list[TB]) -> None:
    steps = [st for tb in tbs for st in tb.steps]
    index = {id(st): i for i, st in enumerate(steps)}
    succ: list[list[int]] = [[] for _ in steps]
    indeg = [0] * len(steps)
    for tb in tbs:
        last_send = last_recv = -1
        for st in tb.steps:
            i = index[id(st)]
            preds = {index[id(d)] for d in st.dep_list if id(d) in index}
            if st.recv_from is not None and id(st.recv_from) in index:
                preds.add(index[id(st.recv_from)])
            if st.type.sends:
                if last_send >= 0:
                    preds.add(last_send)
                last_send = i
            if st.type.receives:
                if last_recv >= 0:
                    preds.add(last_recv)
                last_recv = i
            preds.discard(i)
            for j in preds:
                succ[j].append(i)
            indeg[i] = len(preds)
            st.position_fixed = any(d.tb is not tb for d in st.dep_list)
    heap = [(_key(st), st.original_index, i) for i, st in enumerate(steps) if indeg[i] == 0]
    heapq.heapify(heap)
    placed: dict[int, list[Step]] = {id(tb): [] for tb in tbs}
    recvs_placed: dict[int, int] = {id(tb): 0 for tb in tbs}
    held: dict[int, list] = {}          # TB -> sends waiting for an earlier receive
    forced: set[int] = set()            # sends let go because nothing else could move
    count = 0
    while heap or held:
        if not heap:                    # alternation impossible here: let the held sends go
            for entries in held.values():
                for entry in entries:
                    forced.add(entry[2])
                    heapq.heappush(heap, entry)
            held.clear()
        entry = heapq.heappop(heap)
        i = entry[2]
        st = steps[i]
        tb = st.tb
        if (st.type.sends and tb.recv >= 0 and i not in forced
                and recvs_placed[id(tb)] < min(st.send_index, tb.recv_count)):
            held.setdefault(id(tb), []).append(entry)
            continue
        placed[id(tb)].append(st)
        count += 1
        if st.type.receives:
            recvs_placed[id(tb)] += 1
            for waiting in held.pop(id(tb), ()):
                heapq.heappush(heap, waiting)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                nxt = steps[j]
                heapq.heappush(heap, (_key(nxt), nxt.original_index, j))
    if count != len(steps):  # pragma: no cover - every wait points to an earlier-issued step
        raise ValueError("the steps' waits form a cycle; the program was not issued in order")
    for tb in tbs:
        tb.steps = placed[id(tb)]
