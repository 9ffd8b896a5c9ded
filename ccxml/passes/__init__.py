"""The compiler passes, in the order :func:`compile_algo` runs them.

1. :func:`~ccxml.passes.threadblocks.assign_threadblocks` — steps into TBs
2. :func:`~ccxml.passes.ordering.order_steps` — deadlock-avoiding order (``sort=True``)
3. :func:`~ccxml.passes.fusion.fuse_receive_send` — ``rcs``/``rrcs``/``rrs`` (``merge_rcs=True``,
   targets that execute fused types only)
4. :func:`~ccxml.passes.lowering.lower_receive_reduce` — ``rrc`` → ``r`` + ``re`` (RCCL)
5. :func:`~ccxml.passes.splitting.split_long_threadblocks` — fit the step limit
6. :func:`~ccxml.passes.dependencies.build_dependencies` — nops, hasdep
7. :func:`~ccxml.passes.numbering.number_steps` — ids from object references
8. :func:`~ccxml.passes.checks.check_links`, :func:`~ccxml.passes.checks.check_limits`
"""
from __future__ import annotations

import gc
from typing import Callable

from ccxml.ir.nodes import Algo
from ccxml.passes.checks import LinkError, check_limits, check_links
from ccxml.passes.dependencies import build_dependencies
from ccxml.passes.fusion import fuse_receive_send
from ccxml.passes.lowering import lower_receive_reduce
from ccxml.passes.numbering import number_steps
from ccxml.passes.ordering import order_steps
from ccxml.passes.splitting import LimitError, split_long_threadblocks
from ccxml.passes.threadblocks import assign_threadblocks
from ccxml.vocab.wire import Profile, StepType, profile

__all__ = ["LimitError", "LinkError", "assign_threadblocks", "build_dependencies", "check_limits",
           "check_links", "compile_algo", "fuse_receive_send", "lower_receive_reduce", "number_steps",
           "order_steps", "pipeline", "split_long_threadblocks"]


def compile_algo(algo: Algo, *, target: str = "exec", merge_rcs: bool = True,
                 sort: bool = True) -> Algo:
    """Run every pass on ``algo`` for ``target``; raise LimitError/LinkError if it cannot fit.

    The cyclic garbage collector is paused meanwhile: the passes allocate hundreds of thousands
    of long-lived objects and free no cycles, so its scans would only cost time (~30%)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        for _, run in pipeline(profile(target), merge_rcs=merge_rcs, sort=sort):
            run(algo)
    finally:
        if paused:
            gc.enable()
    return algo


def pipeline(prof: Profile, *, merge_rcs: bool = True,
             sort: bool = True) -> list[tuple[str, Callable[[Algo], object]]]:
    """The passes :func:`compile_algo` runs for ``prof``, in order, as (name, pass) pairs
    (``benchmarks/bench_passes.py`` times them one by one)."""
    passes: list[tuple[str, Callable[[Algo], object]]] = [("threadblocks", assign_threadblocks)]
    if sort:
        passes.append(("ordering", order_steps))
    if merge_rcs and prof.fused_types_allowed:
        passes.append(("fusion", fuse_receive_send))
    if StepType.RECV_REDUCE_COPY not in prof.step_types:
        passes.append(("lowering", lower_receive_reduce))
    passes += [("splitting", lambda algo: split_long_threadblocks(algo, prof)),
               ("dependencies", build_dependencies),
               ("numbering", number_steps),
               ("checks", lambda algo: (check_links(algo), check_limits(algo, prof)))]
    return passes
