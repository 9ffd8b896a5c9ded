"""One defect, one finding: group what execution shows under the static defect that causes it.

The loader's rules (:mod:`ccxml.loader.catalogue`) report each static defect once. Executing a
schedule that has one shows its consequences too: a send whose ``cnt`` was changed from 1 to 2
in a ring AllGather is one ``offset-past-buffer`` (and one ``link-cnt-mismatch``) for the loader,
and for the interpreter an ``out-of-bounds`` access at that step, then ``wrong-contribution`` on
every rank downstream. :func:`group` links each such execution finding to its root:

* an execution finding at the very step of a loader finding that names the same defect
  (:data:`SAME_STEP`: ``out-of-bounds`` under ``offset-past-buffer``) is that finding's child;
* otherwise an execution error is the child of the first loader *safety* error (document order)
  whose rank can reach the finding's rank along the file's connections (a TB's send peer), the
  rank itself included: data, messages and waits only travel along them. A finding with no rank
  (e.g. an empty file's) goes under the first such error.

Roots are the loader's findings and the execution findings no static defect reaches. A file
that the runtime rejects is not grouped under its rejection (a missing attribute does not make
data wrong); warnings are never children. ``Report.caused_by`` holds the links; the CLI prints
children indented under their root and counts a defect once (docs/findings.md).
"""
from __future__ import annotations

from ccxml.loader.catalogue import SAFETY_CODES
from ccxml.loader.model import Schedule
from ccxml.vocab.findings import Finding

#: execution code -> loader codes that name the same defect when both are at one step
SAME_STEP = {"out-of-bounds": frozenset({"offset-past-buffer"})}


def reach(schedule: Schedule) -> dict[int, set[int]]:
    """rank -> the ranks its data, messages and waits can reach (itself included)."""
    out_of: dict[int, set[int]] = {}
    for g in schedule.gpus:
        out_of.setdefault(g.id, set()).update(tb.send for tb in g.tbs if tb.send >= 0)
    closure: dict[int, set[int]] = {}
    for r in out_of:
        seen = {r}
        todo = [r]
        while todo:
            for q in out_of.get(todo.pop(), ()):
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        closure[r] = seen
    return closure


def group(findings: list[Finding], n_loader: int, schedule: Schedule) -> dict[int, int]:
    """{index of a consequence in ``findings``: index of its root}; ``findings[:n_loader]`` are
    the loader's (never consequences), the rest the interpreter's."""
    roots = [i for i, f in enumerate(findings[:n_loader])
             if f.severity == "error" and f.code in SAFETY_CODES]
    if not roots:
        return {}
    at_step: dict[tuple, int] = {}
    for i in roots:
        f = findings[i]
        at_step.setdefault((f.code, f.gpu, f.tb, f.step), i)
    closure = reach(schedule)
    out: dict[int, int] = {}
    for k in range(n_loader, len(findings)):
        f = findings[k]
        if f.severity != "error" or f.code == "not-executable":
            continue
        root = next((at_step[key] for code in SAME_STEP.get(f.code, ())
                     if (key := (code, f.gpu, f.tb, f.step)) in at_step), None)
        if root is None:
            root = next((i for i in roots if f.gpu is None or (g := findings[i].gpu) is None
                         or f.gpu in closure.get(g, ())), None)
        if root is not None:
            out[k] = root
    return out
