"""Pass: number thread blocks and steps from object references.

Guarantees: on every GPU, TB ids are 0..n−1 without gaps; TBs that other steps depend on come
first (the kernel stores ``depid`` in an int8, so targets need small ids), each group in
(send, recv, chan) order (the convention of real files); steps are numbered 0..k−1 in TB order,
nops included. Because
``depid``/``deps`` are read through the target Step's ``tb.id`` and ``s``, numbering last means
no index can be stale.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import ClassVar

from ccxml.ir.nodes import Algo
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.wire import Profile

_TB_ORDER = attrgetter("send", "recv", "chan")
_CHAN = attrgetter("chan")


def number_steps(algo: Algo) -> None:
    top = None                      # the highest channel of any TB
    for gpu in algo.gpus:
        tbs = [tb for tb in gpu.tbs if tb.steps]
        targets = set()             # membership only (TBs hash by identity): never iterated
        for tb in tbs:
            for s, st in enumerate(tb.steps):
                st._s = s
                dep = st.dep
                if dep is not None:
                    targets.add(dep.tb)
        # sorted by (not a target, send, recv, chan): two stable sorts of the two groups
        first = [tb for tb in tbs if tb in targets]
        rest = [tb for tb in tbs if tb not in targets] if first else tbs
        first.sort(key=_TB_ORDER)
        rest.sort(key=_TB_ORDER)
        gpu.tbs = tbs = first + rest
        for i, tb in enumerate(tbs):
            tb.id = i
        if tbs:
            chan = max(map(_CHAN, tbs))
            top = chan if top is None else max(top, chan)
    algo.nchannels = 1 + (0 if top is None else top)


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class NumberSteps(Pass):
    """TB ids run 0..n-1 on every GPU with no empty TB, the TBs depended on first, each group in
    (send, recv, chan) order; steps are numbered by position; ``nchannels`` covers every
    channel."""

    name: ClassVar[str] = "numbering"

    def run(self, algo: Algo, profile: Profile) -> None:
        number_steps(algo)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.numbered(algo, n),)
