"""Pass: number thread blocks and steps from object references.

Guarantees: on every GPU, TB ids are 0..n−1 without gaps; TBs that other steps depend on come
first (the kernel stores ``depid`` in an int8, so targets need small ids), each group in
(send, recv, chan) order (the convention of real files); steps are numbered 0..k−1 in TB order,
nops included. Because
``depid``/``deps`` are read through the target Step's ``tb.id`` and ``s``, numbering last means
no index can be stale.
"""
from __future__ import annotations

from ccxml.ir import Algo


def number_steps(algo: Algo) -> None:
    for gpu in algo.gpus:
        gpu.tbs = [tb for tb in gpu.tbs if tb.steps]
        targets = {id(st.dep.tb) for tb in gpu.tbs for st in tb.steps if st.dep is not None}
        gpu.tbs.sort(key=lambda tb: (id(tb) not in targets, tb.send, tb.recv, tb.chan))
        for i, tb in enumerate(gpu.tbs):
            tb.id = i
            for s, st in enumerate(tb.steps):
                st._s = s
    algo.nchannels = 1 + max((tb.chan for gpu in algo.gpus for tb in gpu.tbs), default=0)
