"""For the MSCCLang tests: where the programs are, and ``ccxml ARGS`` run in this process."""
from __future__ import annotations

from pathlib import Path

from in_process import ccxml

REPO = Path(__file__).resolve().parent.parent.parent
PROGRAMS = REPO / "tests" / "mscclang" / "programs"
EXAMPLES = REPO / "examples" / "mscclang"


def run(args):
    """(exit code, stdout, stderr) of ``ccxml ARGS`` run in this process."""
    return ccxml(*args)
