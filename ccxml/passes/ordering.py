"""Pass: the deadlock-avoiding order of steps inside point-to-point thread blocks.

In a TB with both a send and a recv peer, steps are ordered by the seed design's key: a send
with send index k by (2k, 0), a receive with receive index k by (2k+1, 1), a receive-and-send
(``rcs``-like) by (2k, 2) with k its receive index; a local step keeps the key of the step before
it. Between two full-duplex peers this alternates send k / receive k, so neither side ever waits
for a message the other has not been allowed to send.

Guarantees (the order is a topological sort of these constraints, smallest key first):

* a step is never moved before a same-TB step whose data it reads or overwrites, or that reads
  what it overwrites (read-after-write, write-after-read, write-after-write on any chunk): these
  hazards are exactly the same-rank dependencies the Chunk API collected when the steps were
  issued (last writer, readers since), so they are read from ``dep_list``;
* a step never moves across a step that waits on another TB (``position_fixed``), so no wait
  chain through other TBs can be turned into a cycle;
* explicit same-TB dependencies are kept;
* sends stay in send order and receives in receive order (the link sequences do not change).
"""
from __future__ import annotations

import heapq

from ccxml.ir import TB, Algo, Step


def order_steps(algo: Algo) -> None:
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            if tb.send >= 0 and tb.recv >= 0 and len(tb.steps) > 1:
                order_tb(tb)


def _key(step: Step, prev_key: tuple[int, int]) -> tuple[int, int]:
    t = step.type
    if t.sends and t.receives:
        return 2 * step.recv_index, 2
    if t.sends:
        return 2 * step.send_index, 0
    if t.receives:
        return 2 * step.recv_index + 1, 1
    return prev_key[0], 3


def order_tb(tb: TB) -> None:
    steps = tb.steps
    n = len(steps)
    keys = []
    prev = (0, 0)
    for st in steps:
        prev = _key(st, prev)
        keys.append(prev)
    if all(keys[i] <= keys[i + 1] for i in range(n - 1)):
        for st in steps:                       # already in key order: nothing can move
            st.position_fixed = any(d.tb is not tb for d in st.dep_list)
        return
    pos = {id(s): i for i, s in enumerate(steps)}
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    last_fixed = -1
    last_send = last_recv = -1
    since_fixed: list[int] = []
    for j, st in enumerate(steps):
        # data hazards on this rank were collected as dependencies when the step was issued
        preds = {pos[id(d)] for d in st.dep_list if d.tb is tb}
        t = st.type
        if t.sends:
            if last_send >= 0:
                preds.add(last_send)
            last_send = j
        if t.receives:
            if last_recv >= 0:
                preds.add(last_recv)
            last_recv = j
        st.position_fixed = any(d.tb is not tb for d in st.dep_list)
        if st.position_fixed:
            preds.update(since_fixed)
            since_fixed = []
            last_fixed = j
        elif last_fixed >= 0:
            preds.add(last_fixed)
        since_fixed.append(j)
        for i in preds:
            succ[i].append(j)
        indeg[j] = len(preds)

    heap = [(keys[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, i = heapq.heappop(heap)
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, (keys[j], j))
    # every constraint points forward in the current order, so the graph is acyclic
    tb.steps = [steps[i] for i in order]
