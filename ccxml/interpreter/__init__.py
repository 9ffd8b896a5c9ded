"""The reference interpreter: prove an MSCCL XML schedule correct, or say exactly why not.

``verify(source, ...)`` loads the file (or takes a :class:`~ccxml.loader.model.Schedule`), runs the
loader checks of the target runtime, then executes the schedule symbolically for each call form
the file declares (in-place and/or out-of-place) and reports:

* deadlocks with unbounded links (``deadlock``) and only with bounded links (``deadlock-fifo``),
  as the cycle of TBs and what each waits for;
* data races (``race``), exact with respect to the happens-before relation;
* postcondition failures (``missing-contribution``, ``wrong-contribution``, ``double-count``,
  ``unwritten-output``), uninitialised reads, leftover messages, accesses outside the call
  form's buffers (``out-of-bounds``).

Static rules (peers, links, dependencies, declared offsets) are the loader's alone
(:mod:`ccxml.loader.catalogue`): the interpreter takes the loader's findings as they are and adds
what only execution shows; an execution finding that a static defect causes is grouped under it
(:mod:`.causes`, ``Report.caused_by``). Every code is in docs/findings.md.

Modules: :mod:`.program` lowers the schedule (:mod:`.plain`: its fast twin for plain TBs),
:mod:`.execute` runs it, :mod:`.postcondition` checks the result, :mod:`.causes` groups the
consequences of a defect under it, :mod:`.report` holds the result type. Their fast twins, tried first:
:mod:`.table` lowers from the loader's numpy step table (twin of :mod:`.program`) and
:mod:`.levels` proves a clean schedule level by level (twin of :mod:`.execute`); either returns
None when it cannot answer, and the exact modules run (tests/test_twins.py checks they agree).
"""
from __future__ import annotations

import gc
import os
import time

from ccxml.interpreter.causes import group
from ccxml.interpreter.execute import UNBOUNDED, deadlock_findings, leftover_finding, replay, run
from ccxml.interpreter.levels import prove
from ccxml.interpreter.plain import lower_plain
from ccxml.interpreter.postcondition import check as check_postcondition
from ccxml.interpreter.program import NotExecutable, lower, place
from ccxml.interpreter.report import Report
from ccxml.interpreter.table import lower_table, place_table
from ccxml.loader.model import Schedule
from ccxml.vocab.collectives import Collective, CollectiveError
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import Coll

__all__ = ["verify", "Report", "SCHEDULE_CODES"]

#: codes of the schedule-level problems INDEX.md's ``sched`` column names (the link rules are
#: the loader's)
SCHEDULE_CODES = {"deadlock": "dl", "deadlock-fifo": "dl-fifo", "two-tbs-one-connection": "shared-connection",
                  "link-undeclared": "unmatched-link", "link-cnt-mismatch": "unmatched-link"}

_COLL_ALIASES = {"reduce_scatter": Coll.REDUCESCATTER}


def _load(source, fast: bool) -> Schedule:
    if isinstance(source, Schedule):
        return source
    from ccxml.loader import reader as xmlload
    if isinstance(source, os.PathLike):
        return xmlload.load(os.fspath(source), fast=fast)
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if isinstance(source, str):
        if source.lstrip().startswith("<"):
            return xmlload.loads(source, fast=fast)
        return xmlload.load(source, fast=fast)
    raise TypeError(f"verify() takes a path, XML text or a Schedule, not {type(source).__name__}")


def _loader_findings(schedule: Schedule, target: str, fast: bool) -> tuple[list[Finding], str | None]:
    try:
        from ccxml.loader import rules as loadcheck
    except ImportError:          # the loader checks are optional for the interpreter
        return [], "loader checks unavailable"
    from ccxml.vocab.wire import profile
    return list(loadcheck.check(schedule, profile(target), fast=fast)), None


def collective_for(schedule: Schedule, coll=None, root=None, counts=None) -> tuple[Collective | None, str | None]:
    """The Collective to check against, or (None, why there is no postcondition)."""
    name = coll if coll is not None else schedule.coll
    if isinstance(name, Coll):
        c = name
    else:
        c = _COLL_ALIASES.get(name)
        if c is None:
            try:
                c = Coll(name)
            except ValueError:
                return None, f"collective {name!r} has no definition; no postcondition verdict"
    if root is None:
        root = schedule.root
    if c.rooted and root is None:
        return None, f"{c.value} needs a root (root attribute or --root); no postcondition verdict"
    if c is Coll.ALLTOALLV and counts is None:
        return None, "alltoallv needs the chunk counts (--counts); no postcondition verdict"
    try:
        return Collective(c, schedule.ngpus, schedule.nchunksperloop, root=root if c.rooted else None,
                          counts=tuple(tuple(r) for r in counts) if counts is not None else None), None
    except CollectiveError as e:
        return None, f"{e}; no postcondition verdict"


def call_forms(schedule: Schedule, inplace: bool | None) -> list[bool]:
    """The call forms to check: the one asked for, else every form the file declares."""
    if inplace is not None:
        return [bool(inplace)]
    forms = []
    if schedule.inplace == 1:
        forms.append(True)
    oop = schedule.attrs.get("outofplace")
    if (oop is not None and schedule.outofplace == 1) or (oop is None and schedule.inplace != 1):
        forms.append(False)
    return forms or [False]


def verify(source, *, target: str = "exec", coll=None, root: int | None = None,
           inplace: bool | None = None, counts=None, fast: bool = True) -> Report:
    """Load ``source`` (path, XML text or Schedule) and prove it, for the ``target`` runtime.

    ``coll``/``root`` override the file's ``coll``/``root`` attributes; ``inplace`` picks one call
    form (default: every form the file declares); ``counts`` is alltoallv's P×P chunk matrix.
    Raises the loader's error (a ValueError) when the file cannot be parsed at all.
    ``fast=False`` runs every stage's exact twin alone (exact reader, exact loader checker,
    :mod:`.program` and :mod:`.execute`): the reference the fast paths are tested against;
    the same report, slower.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()          # the interpreter allocates many small acyclic objects
    try:
        return _verify(source, target, coll, root, inplace, counts, fast)
    finally:
        if gc_was_enabled:
            gc.enable()


def _verify(source, target, coll, root, inplace, counts, fast) -> Report:
    t0 = time.perf_counter()
    schedule = _load(source, fast)
    t_load = time.perf_counter() - t0
    findings: list[Finding] = []
    stats: dict = {"gpus": len(schedule.gpus), "tbs": sum(len(g.tbs) for g in schedule.gpus),
                   "steps": schedule.nsteps, "coll": schedule.coll, "proto": schedule.proto,
                   "target": target}
    loader, note = _loader_findings(schedule, target, fast)
    findings.extend(loader)
    if note:
        stats["loader"] = note
    collective, why_not = collective_for(schedule, coll, root, counts)
    if why_not:
        findings.append(Finding("no-postcondition", why_not, severity="warning"))
    forms = call_forms(schedule, inplace)
    stats["forms"] = ["in-place" if f else "out-of-place" for f in forms]
    seen: set = {(f.code, f.message, f.gpu, f.tb, f.step) for f in findings}
    per_form = _verify_table(schedule, collective, forms, stats) if fast else None
    if per_form is None:
        try:
            prog = (lower_plain if fast else lower)(schedule)
        except NotExecutable as e:
            prog = None
            findings.append(Finding("not-executable", f"{e}; the interpreter cannot run this file"))
        stats["instructions"] = prog.ninstr if prog else 0
        per_form = [(_label(form), _verify_form(prog, collective, form, stats, _label(form), fast))
                    for form in (forms if prog is not None else ())]
    for label, found in per_form:
        prefix = f"[{label}] " if len(forms) > 1 else ""
        for f in found:
            if prefix:
                f = Finding(f.code, prefix + f.message, f.gpu, f.tb, f.step, f.line, f.severity)
            key = (f.code, f.message, f.gpu, f.tb, f.step)
            if key not in seen:
                seen.add(key)
                findings.append(f)
    elapsed = time.perf_counter() - t0
    stats["load_s"] = round(t_load, 4)
    stats["time_s"] = round(elapsed, 4)
    stats["steps_per_s"] = int(schedule.nsteps / elapsed) if elapsed > 0 else 0
    return Report(path=schedule.path, findings=findings, stats=stats, n_loader=len(loader),
                  caused_by=group(findings, len(loader), schedule))


def _label(form: bool) -> str:
    return "in-place" if form else "out-of-place"


def _verify_table(schedule, collective, forms, stats: dict):
    """[(label, findings)] per call form from the loader's step table and the level prover,
    or None when either cannot take the schedule (then the exact path runs)."""
    prog = lower_table(schedule)
    if prog is None:
        return None
    mine: dict = {}
    out = []
    for form in forms:
        if not place_table(prog, collective, form):
            return None
        res = prove(prog)
        if res is None:
            return None
        out.append((_label(form), _form_findings(prog, collective, res, [], mine, _label(form))))
    stats["instructions"] = prog.ninstr
    stats.update(mine)
    return out


def _verify_form(prog, collective, form: bool, stats: dict, label: str, fast: bool) -> list[Finding]:
    out = list(prog.findings)
    out.extend(place(prog, collective, form))
    data_res = prove(prog) if fast else None
    if data_res is None:
        data_res = _exact(prog, out)
    return _form_findings(prog, collective, data_res, out, stats, label)


def _form_findings(prog, collective, data_res, out: list, stats: dict, label: str) -> list[Finding]:
    """``out`` plus leftover messages and postcondition findings; statistics into ``stats``."""
    s = stats.setdefault("per_form", {}).setdefault(label, {})
    s.update(links=len(prog.links),
             link_calls=prog.cap, max_allowed_count=prog.max_allowed, tracked=prog.ntracked,
             races=data_res.races, completed=data_res.completed)
    if data_res.completed:
        out.extend(leftover_finding(prog, k, n) for k, n in data_res.leftover)
        if collective is not None:
            post, counts = check_postcondition(prog, data_res)
            out.extend(post)
            s["chunks_checked"] = counts.get("_checked", 0)
            s["chunks_wrong"] = sum(v for k, v in counts.items() if not k.startswith("_"))
    return out


def _exact(prog, out: list):
    """The exact engine (control run, deadlock analysis, replay); its findings go to ``out``."""
    ctl = run(prog, prog.cap)
    data_ctl = ctl
    if not ctl.completed:
        free = run(prog, UNBOUNDED)
        if free.completed:
            out.extend(deadlock_findings(
                prog, ctl, "deadlock-fifo", f"hangs when a link buffers only {prog.cap} calls of "
                f"{prog.max_allowed} chunk(s) (completes with unbounded links): "))
        else:
            out.extend(deadlock_findings(prog, free, "deadlock", "hangs even with unbounded links: "))
        data_ctl = free
    data_res = replay(prog, data_ctl)
    data_res.leftover = data_ctl.leftover
    out.extend(data_res.findings)
    return data_res
