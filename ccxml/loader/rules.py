"""Loader checks: what each MSCCL runtime does with a loaded :class:`~ccxml.loader.model.Schedule`.

Two kinds of findings, kept apart because only the first decides the loader verdict:

(a) **Runtime verdict** — what makes the runtime's loader reject the file (msccl-runtime.md §2-§5,
    §8 rule 3, §10) or its first launch fail (RCCL without full ops, §4). These reproduce the
    ``exec``/``rccl``/``legacy`` columns of the corpus INDEX.md. :func:`verdict` returns the first.
(b) **Schedule safety** — what the parser lets through but makes the schedule hang, corrupt data or
    write out of bounds (§5 "practical limits", §8 generator rules, §9 rules 1-3, §13). The
    reference interpreter adds deadlocks, races and postconditions on top (it simulates; this
    module only inspects).

Every finding is a :class:`ccxml.vocab.findings.Finding`; its ``code`` is one of the rules of
:mod:`ccxml.loader.catalogue`. This module picks the checker:

* :mod:`.catalogue` — every rule once, with the section of msccl-runtime.md it comes from;
* :mod:`.rules_exact` — :class:`~ccxml.loader.rules_exact.ExactChecker`, step by step;
* :mod:`.rules_fast` — its fast twin :class:`~ccxml.loader.rules_fast.FastChecker` (column proofs
  per TB) and :func:`~ccxml.loader.rules_fast.table_clean` (a numpy proof that a whole file has no
  finding), which :func:`check` tries first.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

from ccxml.loader.catalogue import ALL_CODES, LAUNCH_CODES, REJECT_CODES, RULES, SAFETY_CODES, Rule
from ccxml.loader.model import Schedule
from ccxml.loader.rules_exact import ExactChecker
from ccxml.loader.rules_fast import FastChecker, table_clean
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import Profile

__all__ = ["ALL_CODES", "LAUNCH_CODES", "REJECT_CODES", "RULES", "SAFETY_CODES", "Rule", "check",
           "rejects", "runtime_findings", "safety_findings", "table_clean", "verdict"]


def runtime_findings(s: Schedule, profile: Profile | str) -> list[Finding]:
    """(a): every reason the runtime of ``profile`` rejects the file or fails its first launch.

    Ordered as the runtime meets them (lexical, header, then rank by rank in document order),
    so the first one is the runtime's own first complaint; launch failures come last.
    """
    return FastChecker(profile).runtime_findings(s)


def safety_findings(s: Schedule, profile: Profile | str) -> list[Finding]:
    """(b): what the loader lets through but makes the schedule unsafe (§5, §8, §9.1-3, §13).

    Deterministic order: per-GPU checks in document order, then link checks sorted by
    (sender, receiver, chan). Deadlocks, races and postconditions are the interpreter's job.
    """
    return FastChecker(profile).safety_findings(s)


def check(schedule: Schedule, profile: Profile | str, *, fast: bool = True) -> list[Finding]:
    """All loader findings for ``profile``: runtime verdict findings (a) first, then safety (b).

    ``fast=False`` applies the exact checker alone (no table proof, no column proofs): the
    reference the fast checker is tested against."""
    if fast and table_clean(schedule, profile):
        return []
    checker = (FastChecker if fast else ExactChecker)(profile)
    with _gc_paused():
        return checker.runtime_findings(schedule) + checker.safety_findings(schedule)


@contextmanager
def _gc_paused():
    """Nothing here makes reference cycles; skip cyclic GC passes over big schedules."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rejects(finding: Finding) -> bool:
    """True for findings that make the runtime reject the file or fail its launch."""
    return finding.code in REJECT_CODES or finding.code in LAUNCH_CODES


def verdict(schedule: Schedule, profile: Profile | str) -> str:
    """``"ok"``, ``"reject: <first reason>"`` or ``"launch-fail: <reason>"`` for ``profile``."""
    with _gc_paused():
        found = runtime_findings(schedule, profile)
    if not found:
        return "ok"
    f = found[0]
    kind = "launch-fail" if f.code in LAUNCH_CODES else "reject"
    return f"{kind}: {f}"
