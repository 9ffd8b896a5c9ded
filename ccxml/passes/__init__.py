"""The compiler passes. Each is one frozen dataclass in its own module (:mod:`.base`), found by
name through :mod:`.registry`, which also holds their order; docs/passes.md lists them with the
guarantee each states and its ``check`` verifies (:mod:`.guarantees`).

:func:`compile_algo` runs the default pipeline of a target (or the one given) on an Algo.
"""
from __future__ import annotations

from ccxml.ir.nodes import Algo
from ccxml.passes.base import Hook, Pass, PipelineError
from ccxml.passes.checks import LinkError, check_limits, check_links
from ccxml.passes.dependencies import build_dependencies
from ccxml.passes.fusion import fuse_receive_send
from ccxml.passes.lowering import lower_receive_reduce
from ccxml.passes.numbering import number_steps
from ccxml.passes.ordering import order_steps
from ccxml.passes.pipeline import Pipeline
from ccxml.passes.registry import (
    default_pipeline,
    parse_pipeline,
    pass_class,
    pass_names,
    pipeline,
    register,
    registered,
)
from ccxml.passes.splitting import LimitError, split_long_threadblocks
from ccxml.passes.threadblocks import assign_threadblocks
from ccxml.vocab.wire import Profile, profile

__all__ = ["Hook", "LimitError", "LinkError", "Pass", "Pipeline", "PipelineError",
           "assign_threadblocks", "build_dependencies", "check_limits", "check_links",
           "compile_algo", "default_pipeline", "fuse_receive_send", "lower_receive_reduce",
           "number_steps", "order_steps", "parse_pipeline", "pass_class", "pass_names",
           "pipeline", "register", "registered", "split_long_threadblocks"]


def compile_algo(algo: Algo, *, target: Profile | str = "exec", merge_rcs: bool = True,
                 sort: bool = True, hook: Hook | None = None,
                 passes: Pipeline | None = None) -> Algo:
    """Run ``passes`` (default: the target's default pipeline with ``merge_rcs``/``sort``) on
    ``algo`` for ``target`` (calling ``hook(pass, algo)`` after each); raise LimitError/LinkError
    if it cannot fit."""
    prof = target if isinstance(target, Profile) else profile(target)
    if passes is None:
        passes = pipeline(prof, merge_rcs=merge_rcs, sort=sort)
    return passes.run(algo, prof, hook)
