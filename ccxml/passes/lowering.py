"""Pass: lower receive-reduce-copy for runtimes that execute only ``s r cpy re nop`` (RCCL).

``rrc`` (dst = received ⊕ src) becomes a receive and a local reduce in the same TB:

* src and dst disjoint: ``r`` into dst, then ``re`` dst ⊕= src;
* src and dst overlap: ``r`` into a scratch slot of the TB, then ``re`` src ⊕= slot (src == dst),
  or ``re`` slot ⊕= src and ``cpy`` slot → dst (partial overlap).

Guarantee: same values in every chunk read later, same link sequences; steps that depended on the
``rrc`` now depend on the last step of its lowering (the original Step object is reused for it).
Runs before fusion is skipped for such targets, so no ``rcs``/``rrs``/``rrcs`` exist here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ccxml.ir.nodes import Algo, Step
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.wire import COPY, RECV, RECV_REDUCE_COPY, REDUCE, SCRATCH, Buffer, Profile


def lower_receive_reduce(algo: Algo) -> None:
    for gpu in algo.gpus:
        scratch_top = _scratch_top(gpu)
        slot_of: dict[int, int] = {}
        for tb in gpu.tbs:
            if not any(st.type is RECV_REDUCE_COPY for st in tb.steps):
                continue
            width = max(st.cnt for st in tb.steps if st.type is RECV_REDUCE_COPY)
            out: list[Step] = []
            for st in tb.steps:
                if st.type is not RECV_REDUCE_COPY:
                    out.append(st)
                    continue
                if id(tb) not in slot_of:
                    slot_of[id(tb)] = scratch_top
                    scratch_top += width
                out.extend(_lower(st, (SCRATCH, slot_of[id(tb)])))
            tb.steps = out
            ns = nr = 0
            for st in tb.steps:
                if st.type.sends:
                    st.send_index, ns = ns, ns + 1
                if st.type.receives:
                    st.recv_index, nr = nr, nr + 1
            tb.send_count, tb.recv_count = ns, nr


def _scratch_top(gpu) -> int:
    top = 0
    for st in gpu.steps():
        for side in (st.src, st.dst):
            if side is not None and side[0] is SCRATCH:
                top = max(top, side[1] + st.cnt)
    return top


def _overlap(a, b, n) -> bool:
    return a[0] == b[0] and a[1] < b[1] + n and b[1] < a[1] + n


def _lower(st: Step, slot: tuple[Buffer, int]) -> list[Step]:
    src, dst, n = st.src, st.dst, st.cnt
    recv = Step(RECV, st.gpu, dst=dst if not _overlap(src, dst, n) else slot, cnt=n,
                recv_peer=st.recv_peer, chan=st.chan, original_index=st.original_index)
    recv.tb = st.tb
    recv._dep_pack = st._dep_pack
    recv.recv_from = st.recv_from
    if st.recv_from is not None:
        st.recv_from.send_to = recv
    # the original object becomes the last step, so dependencies on the rrc follow it
    st.recv_from = None
    st.recv_peer = -1
    st._dep_pack = None
    st.type = REDUCE
    if not _overlap(src, dst, n):                       # dst := recv; dst ⊕= src
        st.src, st.dst = src, dst
        return [recv, st]
    if src == dst:                                      # src ⊕= slot
        st.src, st.dst = slot, dst
        return [recv, st]
    red = Step(REDUCE, st.gpu, src=src, dst=slot, cnt=n, chan=st.chan,
               original_index=st.original_index)
    red.tb = st.tb
    st.type = COPY                             # slot ⊕= src; dst := slot
    st.src, st.dst = slot, dst
    return [recv, red, st]


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class LowerReceiveReduce(Pass):
    """Every step has a type the target executes (``rrc`` became ``r`` + ``re``, and ``cpy``
    where its operands overlap); the links keep their message order and matching; the order of
    waits stays acyclic. Runs for targets that do not execute ``rrc``."""

    name: ClassVar[str] = "lowering"

    def applies(self, profile: Profile) -> bool:
        return RECV_REDUCE_COPY not in profile.step_types

    def run(self, algo: Algo, profile: Profile) -> None:
        lower_receive_reduce(algo)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.types_executed(algo, n, profile), *gt.links_and_order(algo, n))
