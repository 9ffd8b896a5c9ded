"""The pass pipeline: named passes run in order on an :class:`~ccxml.ir.nodes.Algo`, with a hook
between them (after xDSL's ``PassPipeline``).

A pass is an object with a ``name``, a docstring that states what it guarantees, ``run(algo)``
(transform the IR in place) and ``check(algo)``, which verifies that guarantee on the IR the
pass left and returns the first broken part as one line (None when it holds). ``check`` walks
the whole schedule, so compiling never calls it: the tests do, after every pass
(``tests/passes/test_pipeline.py``), through the hook.

:func:`pipeline` gives the passes one target runs; :meth:`Pipeline.run` runs them and calls
``hook(pass, algo)`` after each: ``ccxml generate --time-passes`` (:mod:`ccxml.passes.timing`)
and ``--dump-after PASS`` (:mod:`ccxml.ir.printer`) are hooks.
"""
from __future__ import annotations

import gc
from typing import Callable, ClassVar, Iterator

from ccxml.ir.nodes import Algo
from ccxml.ir.printer import StepNames
from ccxml.passes import guarantees as g
from ccxml.passes.checks import check_limits, check_links
from ccxml.passes.dependencies import build_dependencies
from ccxml.passes.fusion import fuse_receive_send
from ccxml.passes.lowering import lower_receive_reduce
from ccxml.passes.numbering import number_steps
from ccxml.passes.ordering import order_steps
from ccxml.passes.splitting import split_long_threadblocks
from ccxml.passes.threadblocks import assign_threadblocks
from ccxml.vocab.errors import CcxmlError
from ccxml.vocab.wire import Profile, StepType


class Pass:
    """A compiler pass for one target profile. Subclasses set ``name``, state their guarantee
    in their docstring and implement :meth:`run` and :meth:`check`."""

    name: ClassVar[str] = ""

    def __init__(self, profile: Profile):
        self.profile = profile

    def run(self, algo: Algo) -> None:
        """Transform ``algo`` in place."""
        raise NotImplementedError

    def check(self, algo: Algo) -> str | None:
        """The first part of this pass's guarantee that ``algo`` breaks, as one line, or None."""
        names = StepNames(algo)
        return g.first_problem(g.placed(algo, names), *self.guarantees(algo, names))

    def guarantees(self, algo: Algo, names: StepNames) -> tuple[Iterator[str], ...]:
        """The checks of :mod:`ccxml.passes.guarantees` that make up this pass's guarantee
        (besides :func:`~ccxml.passes.guarantees.placed`, which every pass keeps)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<pass {self.name} ({self.profile.name})>"


def _links_and_order(algo: Algo, n: StepNames, waits_of=g.waits_collected) -> tuple:
    """What the passes up to the dependency build keep: the links numbered and matched, one
    global order of all waits."""
    return (g.links_numbered(algo, n), g.links_matched(algo, n),
            g.one_global_order(algo, n, waits_of))


class AssignThreadblocks(Pass):
    """Every issued step is in one TB of its GPU and channel whose peers are its own; no two TBs
    of a GPU share a (channel, send peer) or (channel, recv peer); on a channel with one send
    and one recv peer one TB holds both, otherwise a peer both sent to and received from gets a
    full-duplex TB (in a one-way program, ``Algo.one_way``, no TB both sends and receives); a
    local step joins its producer's TB (one-way: its source's writer's), else its next
    consumer's, else its channel's first TB, else a TB of its own; each TB is in issue order,
    which orders every wait (its links numbered 0, 1, ... in that order)."""

    name = "threadblocks"

    def run(self, algo: Algo) -> None:
        assign_threadblocks(algo)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.connections_unique(algo, n), g.tbs_shared_per_link(algo, n),
                g.issue_order(algo, n), g.local_steps_placed(algo, n), *_links_and_order(algo, n))


class OrderSteps(Pass):
    """Each TB's steps are reordered so that one global order of all steps puts every step
    after its TB's previous step, its dependencies and the send its receive is matched with (no
    deadlock with unbounded links); no step precedes a same-TB step it depends on; sends stay in
    send order and receives in receive order (the link sequences do not change)."""

    name = "ordering"

    def run(self, algo: Algo) -> None:
        order_steps(algo)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.same_tb_waits_first(algo, n), *_links_and_order(algo, n))


class FuseReceiveSend(Pass):
    """A receive followed by the send that forwards it becomes ``rcs``/``rrcs``/``rrs`` in a TB
    with both peers; the link sequences are unchanged (the fused step takes the send's index);
    the folded send leaves its TB and dependencies on it lead to the fused step; the order of
    waits stays acyclic. (That fused schedules compute the same values is proven by the
    interpreter on the written files.)"""

    name = "fusion"

    def run(self, algo: Algo) -> None:
        fuse_receive_send(algo)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.fused_steps_whole(algo, n), *_links_and_order(algo, n))


class LowerReceiveReduce(Pass):
    """Every step has a type the target executes (``rrc`` became ``r`` + ``re``, and ``cpy``
    where its operands overlap); the links keep their message order and matching; the order of
    waits stays acyclic."""

    name = "lowering"

    def run(self, algo: Algo) -> None:
        lower_receive_reduce(algo)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.types_executed(algo, n, self.profile), *_links_and_order(algo, n))


class SplitLongThreadblocks(Pass):
    """Every TB fits the target's step limit on a channel the target has (raises LimitError
    otherwise); each piece of a split TB waits on the end of the piece before it; a send and
    its receive stay on one channel at the same index of their link; a piece declares only the
    peers it talks to; the order of waits stays acyclic."""

    name = "splitting"

    def run(self, algo: Algo) -> None:
        split_long_threadblocks(algo, self.profile)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.pieces_fit_and_chain(algo, n, self.profile), *_links_and_order(algo, n))


class BuildDependencies(Pass):
    """Each step waits on at most one step (``dep``) of another TB of its GPU, never a ``nop``,
    with ``hasdep`` set; extra dependencies become ``nop``s right before it; every dependency the
    Chunk API collected is still waited for; fused ``re`` runs stay within 16 operands; with the
    nops every TB fits the target's step limit; the runtime's waits (program order, ``dep``,
    matched sends) stay acyclic."""

    name = "dependencies"

    def run(self, algo: Algo) -> None:
        build_dependencies(algo)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.dependencies_built(algo, n, self.profile), g.dependencies_cover_waits(algo, n),
                *_links_and_order(algo, n, g.waits_built))


class NumberSteps(Pass):
    """TB ids run 0..n-1 on every GPU with no empty TB, the TBs depended on first, each group in
    (send, recv, chan) order; steps are numbered by position; ``nchannels`` covers every
    channel."""

    name = "numbering"

    def run(self, algo: Algo) -> None:
        number_steps(algo)

    def guarantees(self, algo: Algo, n: StepNames) -> tuple:
        return (g.numbered(algo, n),)


class CheckLinksAndLimits(Pass):
    """Every link is declared at both ends with equal ``cnt`` sequences and one TB per
    connection, and every limit of the target holds (raises LinkError / LimitError naming the
    first that does not)."""

    name = "checks"

    def run(self, algo: Algo) -> None:
        check_links(algo)
        check_limits(algo, self.profile)

    def check(self, algo: Algo) -> str | None:
        try:
            self.run(algo)
        except CcxmlError as e:
            return str(e)
        return None


#: every pass in the order the pipeline runs them (a target runs a subset: see :func:`pipeline`)
PASSES: tuple[type[Pass], ...] = (AssignThreadblocks, OrderSteps, FuseReceiveSend,
                                  LowerReceiveReduce, SplitLongThreadblocks, BuildDependencies,
                                  NumberSteps, CheckLinksAndLimits)
PASS_NAMES: tuple[str, ...] = tuple(p.name for p in PASSES)

Hook = Callable[[Pass, Algo], object]


class Pipeline:
    """Passes run in order, with ``hook(pass, algo)`` after each."""

    def __init__(self, passes: list[Pass]):
        self.passes = tuple(passes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    def __iter__(self) -> Iterator[Pass]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def run(self, algo: Algo, hook: Hook | None = None) -> Algo:
        """Run every pass on ``algo`` (calling ``hook`` after each); return it.

        The cyclic garbage collector is paused meanwhile (and restored as it was): the passes
        allocate hundreds of thousands of long-lived objects and free no cycles, so its scans
        would only cost time (~30%)."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for p in self.passes:
                p.run(algo)
                if hook is not None:
                    hook(p, algo)
        finally:
            if was_enabled:
                gc.enable()
        return algo


def pipeline(prof: Profile, *, merge_rcs: bool = True, sort: bool = True) -> Pipeline:
    """The passes that compile for ``prof``: ordering unless ``sort`` is false, fusion where the
    target executes fused types and ``merge_rcs``, lowering where it does not execute ``rrc``."""
    runs = {
        "threadblocks": True,
        "ordering": sort,
        "fusion": merge_rcs and prof.fused_types_allowed,
        "lowering": StepType.RECV_REDUCE_COPY not in prof.step_types,
    }
    return Pipeline([cls(prof) for cls in PASSES if runs.get(cls.name, True)])
