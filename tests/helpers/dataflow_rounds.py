"""Dataflow depth of a compiled MSCCL XML schedule (helper for the hierarchical algorithm tests).

Independent of the builders: it reads only the XML and runs it (thread-block order, ``depid``,
FIFO send/receive matching per connection) tracking, for every chunk of every buffer, how many
communication steps its value has been through. A message's depth is one more than the deepest
chunk it reads; a received chunk takes the message's depth (a reduction the deeper of the
message and the local operand). So a message cut into pieces, or transfers issued side by side,
do not add rounds; only data that must arrive before it can be forwarded does.

``depth(xml)[r]`` is the deepest message rank r sends or receives: the number of algorithm steps
on the longest chain that ends at rank r, the step count of hccl-algorithms.md §13 for the flat
algorithms (a pipelined chain of n ranks counts n − 1: its slots overlap).
"""
from __future__ import annotations

from ccxml.loader import reader as xmlload

_RECV = {"r", "rcs", "rrc", "rrs", "rrcs"}
_SEND = {"s", "rcs", "rrs", "rrcs"}
_REDUCES = {"rrc", "rrs", "rrcs", "re"}
_WRITES = {"r", "rcs", "rrc", "rrcs", "cpy", "re"}


def replay(sched, visit) -> None:
    """Run a loaded schedule in thread-block order: a step waits for its ``depid``/``deps`` and,
    if it receives, for a message on its connection (one FIFO per sender, receiver, channel).
    ``visit(g, key, tb, st, msg)`` is called for each step as it runs — ``key`` is (gpu, tb id),
    ``msg`` the payload it receives (None if it does not) — and returns the payload of the
    message the step sends, if it sends. Raises ValueError if the schedule does not complete."""
    tbs = {(g.id, tb.id): tb for g in sched.gpus for tb in g.tbs}
    pc = dict.fromkeys(tbs, 0)
    fifo: dict[tuple[int, int, int], list] = {}
    progress = True
    while progress:
        progress = False
        for key, tb in tbs.items():
            g = key[0]
            while pc[key] < len(tb.steps):
                st = tb.steps[pc[key]]
                if st.depid >= 0 and pc[(g, st.depid)] <= st.deps:
                    break
                link = (tb.recv, g, tb.chan)
                if st.type in _RECV and not fifo.get(link):
                    break
                pc[key] += 1
                progress = True
                sent = visit(g, key, tb, st, fifo[link].pop(0) if st.type in _RECV else None)
                if st.type in _SEND:
                    fifo.setdefault((g, tb.send, tb.chan), []).append(sent)
    stuck = [k for k, tb in tbs.items() if pc[k] < len(tb.steps)]
    if stuck:
        raise ValueError(f"schedule does not run to completion: {stuck[:3]}")


def depth(xml: str) -> list[int]:
    """Per rank, the deepest message it sends or receives (0 if it never communicates)."""
    held: dict[tuple[int, str, int], int] = {}        # (gpu, buffer, index) -> depth of its value
    sched = xmlload.loads(xml)
    out = [0] * len(sched.gpus)

    def visit(g, key, tb, st, msg):
        src = [held.get((g, st.srcbuf, st.srcoff + i), 0) for i in range(st.cnt)]
        if msg is not None:
            out[g] = max(out[g], max(msg, default=0))
            # rrc/rrs/rrcs reduce the message with the local src (msccl-runtime.md §4)
            vals = [max(m, v) for m, v in zip(msg, src)] if st.type in _REDUCES else msg
        elif st.type == "re":
            vals = [max(v, held.get((g, st.dstbuf, st.dstoff + i), 0)) for i, v in enumerate(src)]
        else:
            vals = src
        sent = None
        if st.type in _SEND:
            sent = [v + 1 for v in vals]
            out[g] = max(out[g], max(sent, default=0))
        if st.type in _WRITES:
            for i, v in enumerate(vals):
                held[(g, st.dstbuf, st.dstoff + i)] = v
        return sent

    replay(sched, visit)
    return out


def flat_steps(alg: str, n: int, half: bool = False) -> int:
    """hccl-algorithms.md §13's steps of a reduce-scatter or all-gather (``half``) or all-reduce
    of the flat algorithm ``alg`` among n ranks (RHD, §4.3: ⌊log2 n⌋ plus one fold or unfold
    step per half when n is not a power of two)."""
    if n == 1:
        return 0
    ns = (n - 1).bit_length()
    one = {"ring": n - 1, "mesh": 1, "nhr": ns, "nb": ns,
           "rhd": n.bit_length() - 1 + (n & (n - 1) != 0)}[alg]
    return one if half else 2 * one


def every_block_takes_every_step(alg: str, n: int) -> bool:
    """Whether every block's chain is as long as the step count: ring and mesh always; NHR/NB on
    n ≠ 2^k send some contributions straight to their owner and RHD folds only some ranks."""
    return alg in ("ring", "mesh") or n & (n - 1) == 0
