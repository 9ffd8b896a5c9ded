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

from dataclasses import dataclass
from typing import ClassVar

from ccxml.ir.nodes import GPU, TB, Algo, Step, step_deps
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as gt
from ccxml.passes.base import Pass
from ccxml.vocab.wire import MAX_REDUCE_FUSION, REDUCE, Profile


def build_dependencies(algo: Algo) -> None:
    for gpu in algo.gpus:
        build_gpu_dependencies(gpu)


def _target_order(d: Step) -> tuple[int, int, int, int]:
    """Targets in (chan, send, recv) order of their TBs, then in step order."""
    tb = d.tb
    return tb.chan, tb.send, tb.recv, d._s


def build_gpu_dependencies(gpu: GPU) -> None:
    for tb in gpu.tbs:
        for i, st in enumerate(tb.steps):
            st._s = i                   # position before any nop (numbering renumbers at the end)
    capped: list[TB] = []                   # the TBs with enough ``re`` steps for a chain
    for tb in gpu.tbs:
        steps = tb.steps
        out: list[Step] | None = None       # the new step list, once a nop goes in
        reduces = 0
        for i, st in enumerate(steps):
            st.dep = None
            if st.type is REDUCE:
                reduces += 1
            deps = step_deps(st)
            # (one unfused dependency inside this TB, the common case, needs nothing)
            if deps and (len(deps) > 1 or deps[0].tb is not tb or deps[0].merged_into is not None):
                targets = _targets(st)
                if targets:
                    if len(targets) > 1:
                        if out is None:
                            out = steps[:i]
                        for target in targets[:-1]:
                            out.append(tb.nop(target))
                    st.dep = target = targets[-1]
                    target.publish = True
            if out is not None:
                out.append(st)
        if out is not None:
            tb.steps = out
        if reduces >= MAX_REDUCE_FUSION:   # a chain needs MAX_REDUCE_FUSION ``re`` steps
            capped.append(tb)
    for tb in capped:                       # (after every TB's dependencies are set)
        _cap_reduce_chains(tb)


def _targets(st: Step) -> list[Step]:
    tb = st.tb
    origin = tb.origin
    best: dict[TB, Step] | None = None
    for d in step_deps(st):
        while d.merged_into is not None:
            d = d.merged_into
        dtb = d.tb
        if dtb.origin is origin:
            # this TB itself (program order covers it) or an earlier piece of the same original
            # TB: only the chain link into this piece is needed
            if (dtb is not tb and st._s == 0 and dtb.segment == tb.segment - 1
                    and dtb.steps[-1] is d):
                if best is None:
                    best = {}
                best[origin] = d
            continue
        if best is None:
            best = {}
        dorigin = dtb.origin
        cur = best.get(dorigin)
        if cur is None or (cur.tb.segment, cur._s) < (dtb.segment, d._s):
            best[dorigin] = d
    if best is None:
        return []
    if len(best) < 2:
        return list(best.values())
    return sorted(best.values(), key=_target_order)


def reduce_fuses(prev: Step | None, st: Step) -> bool:
    """Whether the runtime fuses the ``re`` step ``st`` into the run of ``re`` steps ending at
    ``prev``, the step before it in its TB: same destination, same source buffer, ``st`` waits
    on nothing and nothing waits on ``prev``."""
    return (prev is not None and st.type is REDUCE and prev.type is REDUCE
            and st.dep is None and not prev.hasdep and st.dst == prev.dst
            and st.src[0] == prev.src[0])


def _cap_reduce_chains(tb) -> None:
    run = 0
    prev: Step | None = None
    for st in tb.steps:
        run = run + 1 if reduce_fuses(prev, st) else (1 if st.type is REDUCE else 0)
        if run == MAX_REDUCE_FUSION:
            st.publish = True
            run = 0
        prev = st


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class BuildDependencies(Pass):
    """Each step waits on at most one step (``dep``) of another TB of its GPU, never a ``nop``,
    with ``hasdep`` set; extra dependencies become ``nop``s right before it; every dependency the
    Chunk API collected is still waited for; fused ``re`` runs stay within 16 operands; with the
    nops every TB fits the target's step limit; the runtime's waits (program order, ``dep``,
    matched sends) stay acyclic."""

    name: ClassVar[str] = "dependencies"

    def run(self, algo: Algo, profile: Profile) -> None:
        build_dependencies(algo)

    def guarantees(self, algo: Algo, n: StepNames, profile: Profile) -> tuple:
        return (gt.dependencies_built(algo, n, profile, reduce_fuses),
                gt.dependencies_cover_waits(algo, n), *gt.links_and_order(algo, n, gt.waits_built))
