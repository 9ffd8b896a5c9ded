"""Findings: what a check found wrong (or noteworthy) in a schedule, with its location.

Shared by the loader checks, the interpreter and the compiler's own checks so that every report
names places the same way. A finding's ``code`` is a stable machine-readable word (e.g.
``deadlock``, ``race``, ``postcondition``, ``too-many-steps``); ``message`` is one line for people.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    gpu: int | None = None
    tb: int | None = None
    step: int | None = None
    line: int | None = None
    severity: str = "error"          # "error" or "warning"

    def where(self) -> str:
        parts = []
        if self.gpu is not None:
            parts.append(f"gpu {self.gpu}")
        if self.tb is not None:
            parts.append(f"tb {self.tb}")
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.line:
            parts.append(f"line {self.line}")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{self.code}: {self.message}" + (f" ({where})" if where else "")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}
