"""The passes' guarantees as checks over the IR, for :meth:`ccxml.passes.base.Pass.check`.

Each check walks the schedule as the pass left it and yields one line per broken guarantee,
naming the step (``gpu 0 tb s1/r3/c0 #2 rrc``, see :mod:`ccxml.ir.printer`) and what is wrong.
A pass's ``check`` chains the checks of its guarantee and reports the first line. They are
written for clarity, not speed (dicts keyed by step identity, a topological sort of every wait):
the tests run them after every pass, ``compile`` does not.
"""
from __future__ import annotations

from itertools import chain
from typing import Callable, Iterable, Iterator

from ccxml.ir.nodes import GPU, TB, Algo, Step, step_deps
from ccxml.ir.printer import StepNames, tb_label
from ccxml.vocab.wire import (
    MAX_REDUCE_FUSION,
    NOP,
    RECV_COPY_SEND,
    RECV_REDUCE_COPY_SEND,
    RECV_REDUCE_SEND,
    REDUCE,
    Profile,
)

Problems = Iterator[str]


def first_problem(*checks: Iterable[str]) -> str | None:
    """The first line any of ``checks`` yields (they run lazily, in order), or None."""
    return next(chain(*checks), None)


def _placed_steps(algo: Algo) -> Iterator[tuple[GPU, TB, int, Step]]:
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for pos, st in enumerate(tb.steps):
                yield gpu, tb, pos, st


# ---- every pass ---------------------------------------------------------------------------
def placed(algo: Algo, names: StepNames) -> Problems:
    """No issued step is left unplaced; every step of a TB is on the TB's GPU, points back at
    the TB, is in no other TB, has not been folded into another step, and sends (receives) only
    to (from) its TB's send (recv) peer."""
    seen: set[int] = set()
    for gpu in algo.gpus:
        if gpu.pending:
            yield f"gpu {gpu.id}: {len(gpu.pending)} issued steps are in no thread block"
        for tb in gpu.tbs:
            if tb.gpu != gpu.id:
                yield f"gpu {gpu.id} tb {tb_label(tb)} says it is on gpu {tb.gpu}"
    for gpu, tb, _, st in _placed_steps(algo):
        if id(st) in seen:
            yield f"{names.where(st)} is in two thread blocks"
        seen.add(id(st))
        if st.tb is not tb or st.gpu != gpu.id:
            yield f"{names.where(st)}: the step's gpu/tb fields do not name the TB holding it"
        if st.merged_into is not None:
            yield f"{names.where(st)} was folded into another step but is still in its TB"
        if st.type.sends and st.send_peer != tb.send:
            yield f"{names.where(st)} sends to {st.send_peer}, its TB to {tb.send}"
        if st.type.receives and st.recv_peer != tb.recv:
            yield f"{names.where(st)} receives from {st.recv_peer}, its TB from {tb.recv}"


def links_numbered(algo: Algo, names: StepNames) -> Problems:
    """In every TB the sends carry send indices 0, 1, ... in step order and the receives
    receive indices 0, 1, ...; the TB's counts agree; a TB declares a send (recv) peer exactly
    when it has sends (receives)."""
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            ns = nr = 0
            for st in tb.steps:
                if st.type.sends:
                    if st.send_index != ns:
                        yield (f"{names.where(st)} is send {st.send_index} of its link but the "
                               f"TB's send number {ns}: the link's message order changed")
                    ns += 1
                if st.type.receives:
                    if st.recv_index != nr:
                        yield (f"{names.where(st)} is receive {st.recv_index} of its link but "
                               f"the TB's receive number {nr}: the link's message order changed")
                    nr += 1
            where = f"gpu {gpu.id} tb {tb_label(tb)}"
            if (tb.send_count, tb.recv_count) != (ns, nr):
                yield (f"{where} counts {tb.send_count} sends and {tb.recv_count} receives, "
                       f"its steps have {ns} and {nr}")
            if (tb.send >= 0) != (ns > 0) or (tb.recv >= 0) != (nr > 0):
                yield (f"{where} has {ns} sends and {nr} receives: a TB declares exactly the "
                       f"peers it talks to")


def links_matched(algo: Algo, names: StepNames) -> Problems:
    """Every send and its matched receive point at each other, on the two ends of one link
    (the sender's TB sends to the receiver's GPU on the receiver TB's channel), at the same
    index of that link and with the same ``cnt``."""
    for gpu, tb, _, st in _placed_steps(algo):
        if st.type.sends:
            r = st.send_to
            if r is None or r.recv_from is not st:
                yield f"{names.where(st)} has no receive matched with it"
                continue
            rtb = r.tb
            if rtb is None or rtb.gpu != tb.send or rtb.recv != gpu.id or rtb.chan != tb.chan:
                yield (f"{names.where(st)} is matched with {names.where(r)}, which is not at "
                       f"the other end of its link (channel {tb.chan})")
            elif r.recv_index != st.send_index or r.cnt != st.cnt:
                yield (f"{names.where(st)} (send {st.send_index}, cnt {st.cnt}) is matched with "
                       f"receive {r.recv_index}, cnt {r.cnt} of the link")
        if st.type.receives and (st.recv_from is None or st.recv_from.send_to is not st):
            yield f"{names.where(st)} has no send matched with it"


def waits_collected(st: Step) -> Iterator[Step]:
    """What a step waits on before the dependency build: its collected dependencies (through
    fusion) and the send its receive is matched with."""
    for d in step_deps(st):
        yield d.resolved()
    if st.recv_from is not None:
        yield st.recv_from


def waits_built(st: Step) -> Iterator[Step]:
    """What a step waits on in the runtime: its one dependency and its matched send."""
    if st.dep is not None:
        yield st.dep
    if st.recv_from is not None:
        yield st.recv_from


def one_global_order(algo: Algo, names: StepNames,
                     waits_of: Callable[[Step], Iterable[Step]]) -> Problems:
    """There is one order of all steps in which every step comes after the previous step of its
    TB and after everything ``waits_of`` it (so with unbounded links the schedule cannot
    deadlock): a topological sort of those waits leaves no step behind."""
    after: dict[int, list[Step]] = {}        # step -> the steps waiting on it
    indeg: dict[int, int] = {}
    steps = [st for _, _, _, st in _placed_steps(algo)]
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for prev, st in zip(tb.steps, tb.steps[1:]):
                after.setdefault(id(prev), []).append(st)
                indeg[id(st)] = indeg.get(id(st), 0) + 1
    for st in steps:
        for w in waits_of(st):
            after.setdefault(id(w), []).append(st)
            indeg[id(st)] = indeg.get(id(st), 0) + 1
    ready = [st for st in steps if not indeg.get(id(st))]
    done = 0
    while ready:
        st = ready.pop()
        done += 1
        for nxt in after.get(id(st), ()):
            indeg[id(nxt)] -= 1
            if not indeg[id(nxt)]:
                ready.append(nxt)
    if done != len(steps):
        stuck = next(st for st in steps if indeg.get(id(st)))
        yield (f"{len(steps) - done} steps wait on each other in a cycle (program order, "
               f"dependencies, matched sends), e.g. {names.where(stuck)}")


# ---- threadblocks -------------------------------------------------------------------------
def connections_unique(algo: Algo, names: StepNames) -> Problems:
    """No two TBs of a GPU share a (channel, send peer) or a (channel, recv peer), and no TB
    talks to its own GPU or a GPU that does not exist."""
    for gpu in algo.gpus:
        used: set[tuple[str, int, int]] = set()
        for tb in gpu.tbs:
            for kind, peer in (("send", tb.send), ("recv", tb.recv)):
                if peer < 0:
                    continue
                if peer == gpu.id or peer >= algo.ngpus:
                    yield f"gpu {gpu.id} tb {tb_label(tb)}: {kind} peer {peer} is not another rank"
                if (kind, peer, tb.chan) in used:
                    yield f"gpu {gpu.id}: two TBs {kind} {peer} on channel {tb.chan}"
                used.add((kind, peer, tb.chan))


def tbs_shared_per_link(algo: Algo, names: StepNames) -> Problems:
    """Per GPU and channel: with one send peer and one recv peer, one TB holds both; otherwise
    each peer that is both sent to and received from has one full-duplex TB (send == recv).
    In a one-way program (``Algo.one_way``) no TB has both a send and a receive peer."""
    if algo.one_way:
        for gpu in algo.gpus:
            for tb in gpu.tbs:
                if tb.send >= 0 and tb.recv >= 0:
                    yield (f"gpu {gpu.id} TB {tb.id}: sends to {tb.send} and receives from "
                           f"{tb.recv} in a one-way program")
        return
    for gpu in algo.gpus:
        chans: dict[int, list[TB]] = {}
        for tb in gpu.tbs:
            if tb.send >= 0 or tb.recv >= 0:
                chans.setdefault(tb.chan, []).append(tb)
        for chan, tbs in chans.items():
            sends = {tb.send for tb in tbs if tb.send >= 0}
            recvs = {tb.recv for tb in tbs if tb.recv >= 0}
            if len(sends) <= 1 and len(recvs) <= 1:
                if len(tbs) > 1:
                    yield (f"gpu {gpu.id} channel {chan}: one send and one recv peer in "
                           f"{len(tbs)} TBs instead of one")
                continue
            for peer in sorted(sends & recvs):
                if not any(tb.send == peer and tb.recv == peer for tb in tbs):
                    yield (f"gpu {gpu.id} channel {chan}: peer {peer} is sent to and received "
                           f"from in two TBs instead of one full-duplex TB")


def issue_order(algo: Algo, names: StepNames) -> Problems:
    """Each TB's steps are in issue order, on the TB's channel."""
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for prev, st in zip(tb.steps, tb.steps[1:]):
                if st.original_index <= prev.original_index:
                    yield f"{names.where(st)} was issued before the step ahead of it"
            for st in tb.steps:
                if st.chan != tb.chan:
                    yield f"{names.where(st)} is on channel {st.chan}, its TB on {tb.chan}"


def local_steps_placed(algo: Algo, names: StepNames) -> Problems:
    """A local step (``cpy``, ``re``) is in the TB of its latest dependency (in a one-way
    program: of its latest dependency that wrote part of its source, if one did); without one,
    in the TB of the first communicating step (in issue order) that depends on it; else in its
    channel's first TB with a peer; else in the channel's TB without peers."""
    for gpu in algo.gpus:
        issued = sorted((st for tb in gpu.tbs for st in tb.steps), key=lambda s: s.original_index)
        consumer: dict[int, TB] = {}
        first_tb: dict[int, TB] = {}
        own_tb: dict[int, TB] = {}
        for tb in gpu.tbs:
            if tb.send >= 0 or tb.recv >= 0:
                first_tb.setdefault(tb.chan, tb)
            else:
                own_tb[tb.chan] = tb
        for st in issued:
            if st.send_peer >= 0 or st.recv_peer >= 0:
                for d in step_deps(st):
                    consumer.setdefault(id(d), st.tb)
        for st in issued:
            if st.send_peer >= 0 or st.recv_peer >= 0:
                continue
            deps = step_deps(st)
            writers = [d for d in deps if algo.one_way and _writes_into(d, st.src, st.cnt)]
            want = (writers[-1].tb if writers else deps[-1].tb if deps else consumer.get(id(st))
                    or first_tb.get(st.chan) or own_tb.get(st.chan))
            if st.tb is not want:
                yield (f"{names.where(st)} belongs in tb {tb_label(want) if want else '?'} "
                       f"(its producer, next consumer or channel's first TB)")


def _writes_into(step, src, cnt: int) -> bool:
    """Whether ``step`` writes a chunk of the ``cnt`` chunks at ``src``."""
    dst = step.dst
    return (src is not None and dst is not None and step.type.writes_dst and dst[0] is src[0]
            and set(range(dst[1], dst[1] + step.cnt)) & set(range(src[1], src[1] + cnt)) != set())


# ---- ordering -----------------------------------------------------------------------------
def same_tb_waits_first(algo: Algo, names: StepNames) -> Problems:
    """No step comes before a step of its own TB that it depends on."""
    for _, tb, pos, st in _placed_steps(algo):
        for d in step_deps(st):
            d = d.resolved()
            if d.tb is tb and names.position(d) >= pos:
                yield f"{names.where(st)} comes before {names.where(d)}, which it depends on"


# ---- fusion -------------------------------------------------------------------------------
_FUSED = (RECV_COPY_SEND, RECV_REDUCE_SEND, RECV_REDUCE_COPY_SEND)


def fused_steps_whole(algo: Algo, names: StepNames) -> Problems:
    """A fused step (``rcs``, ``rrs``, ``rrcs``) is in a TB with both peers; an ``rcs`` forwards
    what it stored (src == dst); a dependency on a folded send leads to the placed fused step."""
    for _, tb, _, st in _placed_steps(algo):
        if st.type in _FUSED and (tb.send < 0 or tb.recv < 0):
            yield f"{names.where(st)} is fused in a TB without both peers"
        if st.type is RECV_COPY_SEND and st.src != st.dst:
            yield f"{names.where(st)} forwards {st.src}, not what it stored ({st.dst})"
        for d in step_deps(st):
            if d.merged_into is not None and names.position(d.resolved()) < 0:
                yield f"{names.where(st)} depends on a folded step whose fused step is unplaced"


# ---- lowering -----------------------------------------------------------------------------
def types_executed(algo: Algo, names: StepNames, prof: Profile) -> Problems:
    """Every step has a type the target executes."""
    for _, _, _, st in _placed_steps(algo):
        if st.type not in prof.step_types:
            yield f"{names.where(st)}: {prof.name} does not execute {st.type.value}"


# ---- splitting ----------------------------------------------------------------------------
def pieces_fit_and_chain(algo: Algo, names: StepNames, prof: Profile) -> Problems:
    """Every TB holds at most the target's steps (before nops: the dependency check counts them)
    on a channel the target has; each piece of a split TB starts by waiting on the last step of
    the piece before it."""
    for gpu in algo.gpus:
        pieces: dict[int, list[TB]] = {}
        for tb in gpu.tbs:
            where = f"gpu {gpu.id} tb {tb_label(tb)}"
            if len(tb.steps) > prof.max_steps_per_tb:
                yield f"{where} has {len(tb.steps)} steps; {prof.name} allows {prof.max_steps_per_tb}"
            if tb.chan > prof.max_chan:
                yield f"{where} is on channel {tb.chan}; {prof.name} has 0..{prof.max_chan}"
            pieces.setdefault(id(tb.origin), []).append(tb)
        for group in pieces.values():
            group.sort(key=lambda t: t.segment)
            for before, tb in zip(group, group[1:]):
                if tb.steps and before.steps and before.steps[-1] not in step_deps(tb.steps[0]):
                    yield (f"{names.where(tb.steps[0])} starts piece {tb.segment} without waiting "
                           f"on the end of piece {before.segment} ({names.where(before.steps[-1])})")


# ---- dependencies -------------------------------------------------------------------------
def dependencies_built(algo: Algo, names: StepNames, prof: Profile,
                       reduce_fuses: Callable[[Step | None, Step], bool]) -> Problems:
    """Every dependency is one step (``dep``) of another TB of the same GPU that is no ``nop``
    and has ``hasdep``; every ``nop`` has one and is followed by a ``nop`` or a step with its
    own; runs of ``re`` the runtime would fuse (``reduce_fuses(previous step, step)``, the
    dependencies pass's rule) stay within its operand limit; with the nops in, every TB fits the
    target's step limit."""
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            run = 0
            prev: Step | None = None
            for pos, st in enumerate(tb.steps):
                dep = st.dep
                if dep is not None:
                    if dep.gpu != st.gpu or dep.tb is tb or dep.type is NOP:
                        yield (f"{names.where(st)} depends on {names.where(dep)}: not another "
                               f"TB's step of its GPU")
                    elif not dep.publish:
                        yield f"{names.where(dep)} is depended on but has no hasdep"
                if st.type is NOP:
                    nxt = tb.steps[pos + 1] if pos + 1 < len(tb.steps) else None
                    if dep is None or nxt is None or (nxt.type is not NOP and nxt.dep is None):
                        yield f"{names.where(st)} is not a nop carrying one of the next step's dependencies"
                run = run + 1 if reduce_fuses(prev, st) else (1 if st.type is REDUCE else 0)
                if run > MAX_REDUCE_FUSION:
                    yield (f"{names.where(st)} ends a run of {run} re steps the runtime fuses; "
                           f"it takes {MAX_REDUCE_FUSION} operands")
                prev = st
            if len(tb.steps) > prof.max_steps_per_tb:
                yield (f"gpu {gpu.id} tb {tb_label(tb)} has {len(tb.steps)} steps with its nops; "
                       f"{prof.name} allows {prof.max_steps_per_tb}")


def dependencies_cover_waits(algo: Algo, names: StepNames) -> Problems:
    """Every collected dependency is still waited for: on its own TB by program order, on
    another piece of its TB by the chain, on another TB by the step's own ``dep`` or a ``nop``
    right before it on that TB at or after the step depended on (flags only grow)."""
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            covered: dict[int, tuple[int, int]] = {}     # origin -> (segment, position) reached
            for pos, st in enumerate(tb.steps):
                if st.dep is not None:
                    dtb = st.dep.tb
                    mark = (dtb.segment, names.position(st.dep))
                    key = id(dtb.origin)
                    covered[key] = max(covered.get(key, mark), mark)
                if st.type is NOP:
                    continue
                for d in step_deps(st):
                    d = d.resolved()
                    dtb = d.tb
                    if dtb.origin is tb.origin:
                        if (dtb.segment, names.position(d)) >= (tb.segment, pos):
                            yield f"{names.where(st)} comes before {names.where(d)}, which it depends on"
                    elif covered.get(id(dtb.origin), (-1, -1)) < (dtb.segment, names.position(d)):
                        yield f"{names.where(st)} no longer waits on {names.where(d)}"
                covered = {}


# ---- numbering ----------------------------------------------------------------------------
def numbered(algo: Algo, names: StepNames) -> Problems:
    """On every GPU the TBs are numbered 0..n-1 in order, none is empty, the TBs others depend
    on come first and each group is in (send, recv, chan) order; steps are numbered by their
    position; ``nchannels`` is one more than the highest channel."""
    top = -1
    for gpu in algo.gpus:
        targets = {id(st.dep.tb) for tb in gpu.tbs for st in tb.steps if st.dep is not None}
        keys = [(id(tb) not in targets, tb.send, tb.recv, tb.chan) for tb in gpu.tbs]
        if keys != sorted(keys):
            yield f"gpu {gpu.id}: TBs are not in (depended on, send, recv, chan) order"
        for i, tb in enumerate(gpu.tbs):
            top = max(top, tb.chan)
            if tb.id != i or not tb.steps:
                yield f"gpu {gpu.id} tb {tb_label(tb)} has id {tb.id} at place {i} and {len(tb.steps)} steps"
            for s, st in enumerate(tb.steps):
                if st.s != s:
                    yield f"{names.where(st)} is numbered {st.s}"
    if algo.nchannels != top + 1:
        yield f"nchannels is {algo.nchannels}, the highest channel {top}"


def links_and_order(algo: Algo, names: StepNames,
                    waits_of: Callable[[Step], Iterator[Step]] = waits_collected) -> tuple:
    """What every pass up to the dependency build keeps: the links numbered and matched, one
    global order of all waits."""
    return (links_numbered(algo, names), links_matched(algo, names),
            one_global_order(algo, names, waits_of))
