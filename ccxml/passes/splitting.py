"""Pass: split thread blocks that are longer than the target allows across extra channels.

A TB whose steps (plus the ``nop``s its dependencies will need) exceed the profile's
``max_steps_per_tb`` is cut into consecutive pieces; piece k runs on channel
``chan + k·nchannels`` and its first step waits on the last step of piece k−1.

Guarantees:

* every piece fits the step limit (counting the nops its dependencies will need);
* a send and the receive it is matched with land in pieces with the same k, so they are on the
  same channel and every link is still declared at both ends with equal ``cnt`` sequences;
* a piece declares only the peers it talks to; new channels never collide with existing ones;
* program order inside the original TB is kept (the chain dependency between pieces).

Raises :class:`LimitError` when the pieces would need a channel above the profile's limit.
"""
from __future__ import annotations

from ccxml.ir import GPU, TB, Algo, Step
from ccxml.wire import Profile


class LimitError(ValueError):
    """The schedule breaks a limit of the target runtime and cannot be fixed by construction."""


def nop_cost(step: Step) -> int:
    """``nop``s the dependency build will put in front of ``step`` (an upper bound)."""
    own = step.tb.origin if step.tb is not None else None
    targets = {id(d.resolved().tb.origin) for d in step.dep_list
               if d.resolved().tb is not None and d.resolved().tb.origin is not own}
    return max(0, len(targets) - 1)


def split_long_threadblocks(algo: Algo, profile: Profile) -> None:
    limit = profile.max_steps_per_tb
    tbs = [tb for gpu in algo.gpus for tb in gpu.tbs]
    costs = {id(st): 1 + nop_cost(st) for tb in tbs for st in tb.steps}
    if all(sum(costs[id(st)] for st in tb.steps) <= limit for tb in tbs):
        return
    seg: dict[int, int] = {id(st): 0 for tb in tbs for st in tb.steps}
    for _ in range(10_000):
        changed = False
        for tb in tbs:
            cur, used = 0, 0
            for st in tb.steps:
                k = max(cur, seg[id(st)])
                if k > cur:
                    cur, used = k, 0
                cost = costs[id(st)] + (1 if cur > 0 and used == 0 and st.dep_list else 0)
                if used + cost > limit and used > 0:
                    cur, used = cur + 1, 0
                    cost = costs[id(st)] + (1 if st.dep_list else 0)
                if seg[id(st)] != cur:
                    seg[id(st)] = cur
                    changed = True
                used += cost
                for partner in (st.send_to, st.recv_from):
                    if partner is not None and seg[id(partner)] < cur:
                        seg[id(partner)] = cur
                        changed = True
        if not changed:
            break
    else:  # pragma: no cover - segments only grow and are bounded by the step count
        raise LimitError("could not split thread blocks across channels (no fixed point)")

    width = max(tb.chan for tb in tbs) + 1
    top = max(seg.values())
    if top * width + width - 1 > profile.max_chan:
        longest = max(tbs, key=lambda t: len(t.steps))
        raise LimitError(
            f"a thread block on gpu {longest.gpu} has {len(longest.steps)} steps; the {profile.name} "
            f"limit is {profile.max_steps_per_tb} per TB, and splitting it needs channel "
            f"{top * width + width - 1} > {profile.max_chan}: use --target legacy "
            f"(256 steps per TB) or fewer --channels")
    for gpu in algo.gpus:
        _rebuild_gpu(gpu, seg, width)


def _rebuild_gpu(gpu: GPU, seg: dict[int, int], width: int) -> None:
    old = gpu.tbs
    gpu.tbs, gpu.channel_usage, gpu._index = [], {}, {}
    for tb in old:
        pieces: dict[int, list[Step]] = {}
        for st in tb.steps:
            pieces.setdefault(seg[id(st)], []).append(st)
        prev_last: Step | None = None
        for k in sorted(pieces):
            steps = pieces[k]
            send = tb.send if any(st.type.sends for st in steps) else -1
            recv = tb.recv if any(st.type.receives for st in steps) else -1
            if k == 0:
                send, recv = tb.send, tb.recv
            piece = TB(send, recv, tb.chan + k * width)
            piece.origin, piece.segment = tb, k
            gpu.add_tb(piece)
            for st in steps:
                piece.add_step(st)
            if prev_last is not None:
                steps[0].add_dep(prev_last)
            prev_last = steps[-1]
        tb.steps = []
