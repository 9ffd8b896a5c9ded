"""Pass: fuse a receive and the send that forwards it into one step.

In a TB with a send and a recv peer, a receive ``R`` (``r`` or ``rrc``) directly followed by a
send ``S`` becomes one step when ``S`` has the same ``cnt``, reads exactly the chunks ``R``
wrote, and depends on nothing or only on ``R``:

* ``r`` + ``s``   → ``rcs``  (receive, store, forward)
* ``rrc`` + ``s`` → ``rrcs`` (receive, reduce, store, forward)
* ``rrc`` + ``s`` → ``rrs``  (receive, reduce, forward, no store) when the stored value is dead:
  ``S`` is the only step that ever reads it, and every chunk is next overwritten by a step of the
  same TB that does not read it, or never again and it is scratch (the Chunk API recorded who
  read and who overwrote each step's output while the steps were issued).

Guarantee: the fused schedule computes exactly what the unfused one did — every chunk read later
holds the same value, and the link sequences (order and ``cnt``) are unchanged, so every send and
receive keeps its index (the fused step takes the send's). The folded send is left with
``merged_into`` pointing at the fused step, so dependencies on it follow.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ccxml.ir.nodes import GPU, Algo, Step, step_deps, step_reads_chunk
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.wire import (
    RECV,
    RECV_COPY_SEND,
    RECV_REDUCE_COPY,
    RECV_REDUCE_COPY_SEND,
    RECV_REDUCE_SEND,
    SCRATCH,
    SEND,
    Profile,
    StepType,
)


def fuse_receive_send(algo: Algo) -> None:
    for gpu in algo.gpus:
        fuse_gpu(gpu)


def fuse_gpu(gpu: GPU) -> None:
    for tb in gpu.tbs:
        steps = tb.steps
        n = len(steps)
        if tb.send < 0 or tb.recv < 0 or n < 2:
            continue
        out: list[Step] = []
        i = 0
        while i < n:
            r = steps[i]
            i += 1
            t = r.type
            if (t is RECV or t is RECV_REDUCE_COPY) and i < n:
                s = steps[i]
                if _fusable(r, s):
                    if t is RECV:
                        _merge(r, s, RECV_COPY_SEND)
                    elif _store_is_dead(r, s):
                        _merge(r, s, RECV_REDUCE_SEND)
                    else:
                        _merge(r, s, RECV_REDUCE_COPY_SEND)
                    i += 1
            out.append(r)
        tb.steps = out


def _fusable(r: Step, s: Step) -> bool:
    if s.type is not SEND or s.cnt != r.cnt or s.src != r.dst:
        return False
    for d in step_deps(s):
        while d.merged_into is not None:
            d = d.merged_into
        if d is not r:
            return False
    return True


def _merge(r: Step, s: Step, fused: StepType) -> None:
    r.type = fused
    r.send_peer = s.send_peer
    r.send_index = s.send_index             # the link sequences are unchanged: r takes s's place
    to = s.send_to
    r.send_to = to
    if to is not None:
        to.recv_from = r
    if fused is RECV_COPY_SEND:
        r.src = r.dst
    s.merged_into = r


def _store_is_dead(r: Step, s: Step) -> bool:
    readers = r.readers_after                 # None, the one reader, or a list of them
    if type(readers) is list:
        for x in readers:
            if x is not s:
                return False
    elif readers is not None and readers is not s:
        return False
    buf, lo = r.dst
    over = r.overwritten_by                   # None, one (chunk, step), or a list of them
    if over is None:                          # never overwritten: dead only if it is scratch
        return buf is SCRATCH
    if type(over) is tuple:
        if r.cnt == 1:                        # the common case: one chunk, overwritten once
            c, w = over
            if c != lo:
                return buf is SCRATCH
            return w.tb is r.tb and not step_reads_chunk(w, buf, c)
        over = [over]
    nxt = dict(over)
    for c in range(lo, lo + r.cnt):
        w = nxt.get(c)
        if w is None:
            if buf is not SCRATCH:
                return False                  # the value is the final content of i/o
            continue
        if w.tb is not r.tb or step_reads_chunk(w, buf, c):
            return False
    return True


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class FuseReceiveSend(Pass):
    """A receive followed by the send that forwards it becomes ``rcs``/``rrcs``/``rrs`` in a TB
    with both peers; the link sequences are unchanged (the fused step takes the send's index);
    the folded send leaves its TB and dependencies on it lead to the fused step; the order of
    waits stays acyclic. (That fused schedules compute the same values is proven by the
    interpreter on the written files.) Runs for targets that execute fused types; with
    ``merge_rcs=false`` it fuses nothing (``ccxml generate --no-fuse``)."""

    name: ClassVar[str] = "fusion"
    merge_rcs: bool = True

    def applies(self, profile: Profile) -> bool:
        return self.merge_rcs and profile.fused_types_allowed

    def run(self, algo: Algo, profile: Profile) -> None:
        if self.merge_rcs:
            fuse_receive_send(algo)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.fused_steps_whole(algo, n), *gt.links_and_order(algo, n))
