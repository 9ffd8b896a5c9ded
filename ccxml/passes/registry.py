"""Every compiler pass by name, in the order the default pipeline runs them (after xDSL's
``get_all_passes``, ``xdsl/transforms/__init__.py`` in github.com/xdslproject/xdsl).

Each pass is one frozen dataclass in its own module (:class:`ccxml.passes.base.Pass`); one
``register(...)`` line below makes it known. The default pipeline of a target is data: the
registered passes in this order, each with its default options, kept where ``applies(profile)``
(:func:`default_pipeline`). A pipeline is also text, ``threadblocks,ordering,fusion{merge_rcs=false}``
(:func:`parse_pipeline`, ``ccxml generate --passes``; ``str(pipeline)`` prints it back).

Adding a pass: write ``ccxml/passes/NAME.py`` with its function and its ``Pass`` dataclass, then
add one line here — ``register(NewPass)`` at its place in the order, or ``register(NewPass,
after="fusion")`` (docs/passes.md).
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping

from ccxml.passes.base import Pass, PipelineError
from ccxml.passes.checks import CheckLinksAndLimits
from ccxml.passes.dependencies import BuildDependencies
from ccxml.passes.fusion import FuseReceiveSend
from ccxml.passes.lowering import LowerReceiveReduce
from ccxml.passes.numbering import NumberSteps
from ccxml.passes.ordering import OrderSteps
from ccxml.passes.pipeline import Pipeline
from ccxml.passes.splitting import SplitLongThreadblocks
from ccxml.passes.threadblocks import AssignThreadblocks
from ccxml.vocab.wire import Profile

#: name -> pass class, in pipeline order (filled by the register lines below)
_PASSES: dict[str, type[Pass]] = {}


def register(cls: type[Pass], *, after: str | None = None) -> type[Pass]:
    """Make ``cls`` known by its ``name``: last in the default order, or right after the pass
    named ``after``. Returns ``cls`` (usable as a decorator)."""
    if not cls.name or not re.fullmatch(r"[a-z][a-z0-9_-]*", cls.name):
        raise ValueError(f"pass {cls.__qualname__} needs a name of lower-case letters, digits, "
                         f"- and _ (got {cls.name!r})")
    if cls.name in _PASSES and _PASSES[cls.name] is not cls:
        raise ValueError(f"two passes are named {cls.name!r}")
    if after is None:
        _PASSES[cls.name] = cls
        return cls
    order = [c for c in _PASSES.values() if c is not cls]
    at = next((i for i, c in enumerate(order) if c.name == after), None)
    if at is None:
        raise ValueError(f"register({cls.__qualname__}, after={after!r}): no such pass")
    order.insert(at + 1, cls)
    _PASSES.clear()
    _PASSES.update((c.name, c) for c in order)
    return cls


def unregister(name: str) -> None:
    """Forget the pass ``name`` (for tests that register one of their own)."""
    _PASSES.pop(name, None)


register(AssignThreadblocks)
register(OrderSteps)
register(FuseReceiveSend)
register(LowerReceiveReduce)
register(SplitLongThreadblocks)
register(BuildDependencies)
register(NumberSteps)
register(CheckLinksAndLimits)


def registered() -> tuple[type[Pass], ...]:
    """Every registered pass class, in the default order."""
    return tuple(_PASSES.values())


def pass_names() -> tuple[str, ...]:
    return tuple(_PASSES)


def pass_class(name: str) -> type[Pass]:
    """The pass registered as ``name``; PipelineError (naming the known ones) if none is."""
    cls = _PASSES.get(name)
    if cls is None:
        raise PipelineError(f"unknown pass {name!r}; passes: {', '.join(_PASSES)}")
    return cls


def default_pipeline(profile: Profile, options: Mapping[str, Mapping[str, object]] | None = None,
                     skip: Iterable[str] = ()) -> Pipeline:
    """The passes that compile for ``profile``: every registered pass (with ``options[name]``
    set, as values) whose ``applies(profile)`` holds, less those named in ``skip``."""
    options = options or {}
    skip = frozenset(skip)
    for name in (*options, *skip):
        pass_class(name)
    passes = (cls(**options.get(name, {})) for name, cls in _PASSES.items() if name not in skip)
    return Pipeline(tuple(p for p in passes if p.applies(profile)))


# ---- pipeline text -----------------------------------------------------------------------------
#: one pass of the text: a name, then options in braces (``key=value`` separated by spaces)
_SPEC = re.compile(r"\s*([^\s,{}=]+)\s*(?:\{([^{}]*)\})?\s*(,|$)")
_OPTION = re.compile(r"([^\s,{}=]+)=([^\s,{}=]+)")


def parse_pipeline(text: str) -> Pipeline:
    """The pipeline ``text`` spells (``threadblocks,ordering,fusion{merge_rcs=false},...``);
    PipelineError names the unknown pass or option, or where the text stops making sense."""
    passes: list[Pass] = []
    pos = 0
    if not text.strip():
        raise PipelineError("the pipeline is empty; passes: " + ", ".join(_PASSES))
    while pos < len(text):
        m = _SPEC.match(text, pos)
        if m is None or m.end() == pos:
            raise PipelineError(f"cannot read the pipeline at {text[pos:pos + 20]!r} (write "
                                f"name,name{{option=value option=value}},...)")
        name, body, comma = m.groups()
        cls = pass_class(name)
        options: dict[str, str] = {}
        for item in (body or "").split():
            om = _OPTION.fullmatch(item)
            if om is None:
                raise PipelineError(f"{name}{{{body}}}: write each option as key=value")
            if om[1] in options:
                raise PipelineError(f"{name}: option {om[1]!r} is given twice")
            options[om[1]] = om[2]
        passes.append(cls.from_options(options))
        pos = m.end()
        if comma == "," and pos == len(text):
            raise PipelineError("the pipeline ends with a comma")
    return Pipeline(tuple(passes))


def pipeline(profile: Profile, *, merge_rcs: bool = True, sort: bool = True) -> Pipeline:
    """The default pipeline of ``profile`` with the Chunk API's two switches: fusion fuses only
    with ``merge_rcs``, ordering runs only with ``sort``."""
    return default_pipeline(profile, {"fusion": {"merge_rcs": merge_rcs}},
                            () if sort else ("ordering",))
