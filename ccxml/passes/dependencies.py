"""Pass: build the final dependencies (phase two of the two-phase build).

Each step collected ``dep_list`` while the API was called. This pass turns them into the runtime's
form. Guarantees:

* dependencies on steps folded by fusion follow the fused step;
* a dependency on a step of the same TB is dropped (program order covers it);
* of several dependencies on one TB only the latest is kept (flags are per TB and monotonic); a
  TB split into pieces counts as one TB (its pieces are chained);
* a step with several remaining dependencies gets one ``nop`` per extra dependency right in front
  of it; the step itself carries the last one, so the step after a run of nops always has its own
  dependency and every nop carries exactly one;
* no dependency points at a ``nop``; every dependency target gets ``hasdep=1``;
* ``re`` chains the runtime would fuse never exceed 16 operands (the 16th publishes, ending it).
"""
from __future__ import annotations

from ccxml.ir import GPU, TB, Algo, Step
from ccxml.wire import MAX_REDUCE_FUSION, REDUCE


def build_dependencies(algo: Algo) -> None:
    for gpu in algo.gpus:
        build_gpu_dependencies(gpu)


def _tb_order(tb) -> tuple[int, int, int]:
    return tb.chan, tb.send, tb.recv


def build_gpu_dependencies(gpu: GPU) -> None:
    for tb in gpu.tbs:
        for i, st in enumerate(tb.steps):
            st._s = i                   # position before any nop (numbering renumbers at the end)
    for tb in gpu.tbs:
        steps = tb.steps
        out: list[Step] = []
        for st in steps:
            st.dep = None
            if st.dep_list:
                targets = _targets(st)
                if targets:
                    for target in targets[:-1]:
                        out.append(tb.nop(target))
                    st.dep = target = targets[-1]
                    target.publish = True
            out.append(st)
        tb.steps = out
    for tb in gpu.tbs:
        _cap_reduce_chains(tb)


def _targets(st: Step) -> list[Step]:
    tb = st.tb
    best: dict[TB, Step] = {}
    for d in st.dep_list:
        while d.merged_into is not None:
            d = d.merged_into
        dtb = d.tb
        if d is st or dtb is tb:
            continue
        origin = dtb.origin
        if origin is tb.origin:
            # same original TB, earlier piece: only the chain link into this piece is needed
            if st._s == 0 and dtb.segment == tb.segment - 1 and dtb.steps[-1] is d:
                best[origin] = d
            continue
        cur = best.get(origin)
        if cur is None or (cur.tb.segment, cur._s) < (dtb.segment, d._s):
            best[origin] = d
    if len(best) < 2:
        return list(best.values())
    return sorted(best.values(), key=lambda d: (_tb_order(d.tb), d._s))


def _cap_reduce_chains(tb) -> None:
    run = 0
    prev: Step | None = None
    for st in tb.steps:
        fuses = (prev is not None and st.type is REDUCE and prev.type is REDUCE
                 and st.dep is None and not prev.hasdep and st.dst == prev.dst
                 and st.src[0] == prev.src[0])
        run = run + 1 if fuses else (1 if st.type is REDUCE else 0)
        if run == MAX_REDUCE_FUSION:
            st.publish = True
            run = 0
        prev = st
