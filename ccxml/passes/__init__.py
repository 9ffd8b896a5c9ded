"""The compiler passes, in the order :func:`compile_algo` runs them (:mod:`.pipeline`).

1. ``threadblocks`` (:mod:`.threadblocks`) — steps into TBs
2. ``ordering`` (:mod:`.ordering`) — deadlock-avoiding order (``sort=True``)
3. ``fusion`` (:mod:`.fusion`) — ``rcs``/``rrcs``/``rrs`` (``merge_rcs=True``, targets that
   execute fused types only)
4. ``lowering`` (:mod:`.lowering`) — ``rrc`` → ``r`` + ``re`` (RCCL)
5. ``splitting`` (:mod:`.splitting`) — fit the step limit
6. ``dependencies`` (:mod:`.dependencies`) — nops, hasdep
7. ``numbering`` (:mod:`.numbering`) — ids from object references
8. ``checks`` (:mod:`.checks`) — links and the target's limits

Each pass is a :class:`~ccxml.passes.pipeline.Pass` whose docstring states its guarantee and
whose ``check`` verifies it (:mod:`.guarantees`).
"""
from __future__ import annotations

from ccxml.ir.nodes import Algo
from ccxml.passes.checks import LinkError, check_limits, check_links
from ccxml.passes.dependencies import build_dependencies
from ccxml.passes.fusion import fuse_receive_send
from ccxml.passes.lowering import lower_receive_reduce
from ccxml.passes.numbering import number_steps
from ccxml.passes.ordering import order_steps
from ccxml.passes.pipeline import PASS_NAMES, Hook, Pass, Pipeline, pipeline
from ccxml.passes.splitting import LimitError, split_long_threadblocks
from ccxml.passes.threadblocks import assign_threadblocks
from ccxml.vocab.wire import profile

__all__ = ["PASS_NAMES", "Hook", "LimitError", "LinkError", "Pass", "Pipeline",
           "assign_threadblocks", "build_dependencies", "check_limits", "check_links",
           "compile_algo", "fuse_receive_send", "lower_receive_reduce", "number_steps",
           "order_steps", "pipeline", "split_long_threadblocks"]


def compile_algo(algo: Algo, *, target: str = "exec", merge_rcs: bool = True,
                 sort: bool = True, hook: Hook | None = None) -> Algo:
    """Run every pass on ``algo`` for ``target`` (calling ``hook(pass, algo)`` after each);
    raise LimitError/LinkError if it cannot fit."""
    return pipeline(profile(target), merge_rcs=merge_rcs, sort=sort).run(algo, hook)
