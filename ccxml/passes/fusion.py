"""Pass: fuse a receive and the send that forwards it into one step.

In a TB with a send and a recv peer, a receive ``R`` (``r`` or ``rrc``) directly followed by a
send ``S`` becomes one step when ``S`` has the same ``cnt``, reads exactly the chunks ``R``
wrote, and depends on nothing or only on ``R``:

* ``r`` + ``s``   → ``rcs``  (receive, store, forward)
* ``rrc`` + ``s`` → ``rrcs`` (receive, reduce, store, forward)
* ``rrc`` + ``s`` → ``rrs``  (receive, reduce, forward, no store) when the stored value is dead:
  on that rank the next access to those chunks after ``S`` is an overwrite by the same TB, or
  there is none and the chunks are scratch.

Guarantee: the fused schedule computes exactly what the unfused one did — every chunk read later
holds the same value, and the link sequences (order and ``cnt``) are unchanged. The folded send
is left with ``merged_into`` pointing at the fused step, so dependencies on it follow.
"""
from __future__ import annotations

from bisect import bisect_right

from ccxml.ir import GPU, Algo, Step
from ccxml.wire import Buffer, StepType


def fuse_receive_send(algo: Algo) -> None:
    for gpu in algo.gpus:
        fuse_gpu(gpu)


def fuse_gpu(gpu: GPU) -> None:
    accesses = None
    if any(st.type is StepType.RECV_REDUCE_COPY for tb in gpu.tbs for st in tb.steps):
        accesses = _access_index(gpu)      # taken before any fusion changes a step
    for tb in gpu.tbs:
        if tb.send < 0 or tb.recv < 0 or len(tb.steps) < 2:
            continue
        out: list[Step] = []
        steps = tb.steps
        i = 0
        while i < len(steps):
            r = steps[i]
            s = steps[i + 1] if i + 1 < len(steps) else None
            if s is not None and _fusable(r, s):
                if r.type is StepType.RECV:
                    fused = StepType.RECV_COPY_SEND
                else:
                    fused = (StepType.RECV_REDUCE_SEND if _store_is_dead(r, s, accesses)
                             else StepType.RECV_REDUCE_COPY_SEND)
                _merge(r, s, fused)
                out.append(r)
                i += 2
            else:
                out.append(r)
                i += 1
        tb.steps = out
        _renumber_links(tb)


def _fusable(r: Step, s: Step) -> bool:
    return (r.type in (StepType.RECV, StepType.RECV_REDUCE_COPY)
            and s.type is StepType.SEND
            and s.cnt == r.cnt
            and s.src == r.dst
            and all(d.resolved() is r for d in s.dep_list))


def _merge(r: Step, s: Step, fused: StepType) -> None:
    r.type = fused
    r.send_peer = s.send_peer
    r.send_to = s.send_to
    if s.send_to is not None:
        s.send_to.recv_from = r
    if fused is StepType.RECV_COPY_SEND:
        r.src = r.dst
    s.merged_into = r


def _renumber_links(tb) -> None:
    ns = nr = 0
    for st in tb.steps:
        st.send_index = st.recv_index = -1
        if st.type.sends:
            st.send_index, ns = ns, ns + 1
        if st.type.receives:
            st.recv_index, nr = nr, nr + 1
    tb.send_count, tb.recv_count = ns, nr


def _access_index(gpu: GPU) -> dict[tuple, tuple[list[int], list[Step], list[bool]]]:
    """(buffer, chunk) -> (issue indices, steps, is-pure-overwrite) of every access on this GPU."""
    table: dict[tuple, tuple[list[int], list[Step], list[bool]]] = {}
    allsteps = sorted((st for tb in gpu.tbs for st in tb.steps), key=lambda x: x.original_index)
    for st in allsteps:
        reads = {(b, c) for b, lo, hi in st.reads() for c in range(lo, hi)}
        writes = {(b, c) for b, lo, hi in st.writes() for c in range(lo, hi)}
        for key in sorted(reads | writes):
            idx, lst, pure = table.setdefault(key, ([], [], []))
            idx.append(st.original_index)
            lst.append(st)
            pure.append(key in writes and key not in reads)
    return table


def _store_is_dead(r: Step, s: Step, accesses) -> bool:
    buf, lo = r.dst
    for c in range(lo, lo + r.cnt):
        idx, lst, pure = accesses[(buf, c)]
        k = bisect_right(idx, r.original_index)
        if k >= len(lst) or lst[k] is not s:
            return False                      # someone else reads or writes it in between
        if k + 1 >= len(lst):
            if buf is not Buffer.SCRATCH:
                return False                  # the value is the final content of i/o
            continue
        if not pure[k + 1] or lst[k + 1].tb is not r.tb:
            return False
    return True
