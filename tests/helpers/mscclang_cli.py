"""For the MSCCLang tests: where the programs are, and ``ccxml ARGS`` run in this process."""
from __future__ import annotations

from pathlib import Path

import pytest

from ccxml.cli.app import main

REPO = Path(__file__).resolve().parent.parent.parent
PROGRAMS = REPO / "tests" / "mscclang" / "programs"
EXAMPLES = REPO / "examples" / "mscclang"


def run(args, capsys):
    """(exit code, stdout, stderr) of ``ccxml ARGS`` run in this process."""
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err
