"""The result of :func:`ccxml.interpreter.verify`."""
from __future__ import annotations

from dataclasses import dataclass, field

from ccxml.vocab.findings import Finding


@dataclass
class Report:
    """Verdict, findings (loader findings first) and statistics for one file."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    n_loader: int = 0            # findings[:n_loader] come from the loader checks
    #: index of a consequence in ``findings`` -> index of the finding that causes it (its root;
    #: see :mod:`ccxml.interpreter.causes`): a defect counts once, its consequences go under it
    caused_by: dict = field(default_factory=dict)

    @property
    def loader_findings(self) -> list[Finding]:
        return self.findings[:self.n_loader]

    @property
    def interpreter_findings(self) -> list[Finding]:
        return self.findings[self.n_loader:]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "error"]

    @property
    def roots(self) -> list[Finding]:
        """The findings no other finding causes: one per defect."""
        return [f for i, f in enumerate(self.findings) if i not in self.caused_by]

    def consequences(self, i: int) -> list[Finding]:
        """The findings caused by ``findings[i]``."""
        return [self.findings[k] for k, r in self.caused_by.items() if r == i]

    def tree(self, findings: list[Finding] | None = None) -> list[str]:
        """``severity: finding`` lines of ``findings`` (default: all), each root followed by its
        consequences indented (``  caused: ...``); a consequence whose root is not listed is
        listed on its own."""
        chosen = self.findings if findings is None else findings
        pick = set(map(id, chosen))
        index = {id(f): i for i, f in enumerate(self.findings)}
        kids: dict[int, list] = {}
        for k, r in sorted(self.caused_by.items()):
            if id(self.findings[r]) in pick and id(self.findings[k]) in pick:
                kids.setdefault(r, []).append(self.findings[k])
        out = []
        for f in chosen:
            i = index.get(id(f))
            if i in self.caused_by and id(self.findings[self.caused_by[i]]) in pick:
                continue
            out.append(f"{f.severity}: {f}")
            out.extend(f"  caused: {c.severity}: {c}" for c in (kids.get(i, ()) if i is not None else ()))
        return out

    @property
    def ok(self) -> bool:
        """True iff no finding is an error (warnings such as ``no-postcondition`` do not fail)."""
        return not self.errors

    @property
    def first_reason(self) -> str | None:
        errs = self.errors
        return str(errs[0]) if errs else None

    def failures(self, strict: bool = False) -> list[Finding]:
        """The findings that fail the file: its errors, and with ``strict`` its warnings too
        (``ccxml verify --strict``: a dependency released late, a file with no postcondition
        verdict, ... fail)."""
        return list(self.findings) if strict else self.errors

    def passes(self, strict: bool = False) -> bool:
        return not self.failures(strict)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def summary(self) -> str:
        s = self.stats
        parts = [f"{s.get('steps', 0)} steps", f"{s.get('tbs', 0)} tbs", f"{s.get('gpus', 0)} gpus"]
        if s.get("forms"):
            parts.append("+".join(s["forms"]))
        warn = [f.code for f in self.findings if f.severity != "error"]
        if warn:
            parts.append("warnings: " + ",".join(sorted(set(warn))))
        parts.append(f"{s.get('time_s', 0):.3f}s")
        return ", ".join(parts)

    def to_dict(self, strict: bool = False) -> dict:
        """The report as JSON data; with ``strict``, ``ok`` and ``first_reason`` count warnings.
        A consequence's finding has ``caused_by``: the index of its root in ``findings``;
        ``defects`` counts the roots."""
        fails = self.failures(strict)
        found = []
        for i, f in enumerate(self.findings):
            d = f.to_dict()
            if i in self.caused_by:
                d["caused_by"] = self.caused_by[i]
            found.append(d)
        return {"path": self.path, "ok": not fails, "first_reason": str(fails[0]) if fails else None,
                "strict": strict, "findings": found, "defects": len(self.findings) - len(self.caused_by),
                "stats": self.stats}
