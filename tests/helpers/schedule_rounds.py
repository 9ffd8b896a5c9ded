"""Communication rounds measured on a compiled MSCCL XML schedule (helper for the algorithm tests).

Independent of the builders: it reads only the XML. Messages are matched on each connection
(the k-th send from a to b on channel c is the k-th receive of b from a on c). Each message gets
a Lamport-style hop count: one more than the latest message the sending rank had *received*
before the send (in its happens-before order: thread-block order, ``depid``/``deps``, and a
fused receive-and-send step receiving first). Sends do not advance a rank's count, so the p−1
sends of one Mesh phase, issued side by side, all share a round, while a send that has to wait
for data (or, with explicit dependencies, for the previous step) comes one round later.

``rounds(xml)[r]`` is the largest hop count among the messages rank r sends or receives: the
number of communication rounds rank r takes part in, in the sense of hccl-algorithms.md §13.
"""
from __future__ import annotations

from collections import defaultdict

from ccxml.loader import reader as xmlload
from ccxml.vocab.wire import StepType


def rounds(xml: str) -> list[int]:
    """Per rank, the largest hop count among the messages it sends or receives."""
    sched = xmlload.loads(xml)
    out = [0] * len(sched.gpus)
    for (src, dst, _), hop in message_hops(sched):
        out[src] = max(out[src], hop)
        out[dst] = max(out[dst], hop)
    return out


def message_hops(sched) -> list[tuple[tuple[int, int, int], int]]:
    """((src, dst, chan), hop) of every message, in a topological order of the schedule."""
    steps = []                                   # global id -> (gpu, tb, step)
    gid = {}
    for g in sched.gpus:
        for tb in g.tbs:
            for i, st in enumerate(tb.steps):
                gid[(g.id, tb.id, i)] = len(steps)
                steps.append((g.id, tb, st))
    preds = [[] for _ in steps]                  # same-rank predecessors
    sends, recvs = defaultdict(list), defaultdict(list)
    for (gpu, tb_id, i), n in gid.items():
        _, tb, st = steps[n]
        if i:
            preds[n].append(gid[(gpu, tb_id, i - 1)])
        if st.depid >= 0:
            preds[n].append(gid[(gpu, st.depid, st.deps)])
        t = StepType(st.type)
        if t.sends:
            sends[(gpu, tb.send, tb.chan)].append(n)
        if t.receives:
            recvs[(tb.recv, gpu, tb.chan)].append(n)
    sender_of = {}
    for conn, ss in sends.items():
        rs = recvs.get(conn, [])
        if len(rs) != len(ss):
            raise ValueError(f"connection {conn}: {len(ss)} sends, {len(rs)} receives")
        sender_of.update(zip(rs, ss))
    # topological order over same-rank order and send -> receive
    succ = [[] for _ in steps]
    indeg = [len(ps) for ps in preds]
    for n, ps in enumerate(preds):
        for q in ps:
            succ[q].append(n)
    for r, s in sender_of.items():
        succ[s].append(r)
        indeg[r] += 1
    ready = [n for n in range(len(steps)) if not indeg[n]]
    seen = [0] * len(steps)                      # latest hop received before/at the step
    hop = {}                                     # send step -> hop of its message
    out = []
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        gpu, _, st = steps[n]
        t = StepType(st.type)
        before = max((seen[q] for q in preds[n]), default=0)
        if t.receives:
            before = max(before, hop[sender_of[n]])
        if t.sends:
            hop[n] = before + 1
            tb = steps[n][1]
            out.append(((gpu, tb.send, tb.chan), before + 1))
        seen[n] = before
        for q in succ[n]:
            indeg[q] -= 1
            if not indeg[q]:
                ready.append(q)
    if done != len(steps):
        raise ValueError("cyclic schedule")
    return out
