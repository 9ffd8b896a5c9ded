"""Running ``ccxml run`` under mpiexec in the tests: find the launcher or skip with the install hint."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
HINT = "pip install -e '.[test]' (or pip install 'ccxml[mpi]': mpi4py and the mpich wheel)"


def mpiexec() -> str:
    """The mpiexec that belongs to this Python's MPI (the mpich wheel puts it beside the
    interpreter's scripts); skips the test with the install command when there is none."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip(f"mpi4py is not installed: {HINT}")
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        exe = shutil.which("mpiexec", path=folder)
        if exe:
            return exe
    exe = shutil.which("mpiexec")
    if exe is None:
        pytest.skip(f"mpiexec not found: {HINT}")
    return exe


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float

    def rows(self) -> list[list[str]]:
        """The table's data rows, split into columns."""
        return [ln.split() for ln in self.out.splitlines() if ln.strip() and not ln.startswith("#")]


def ccxml_run(nprocs: int, *args, timeout: float = 300) -> Result:
    """``mpiexec -n nprocs python -m ccxml run ARGS`` from the repository root."""
    cmd = [mpiexec(), "-n", str(nprocs), sys.executable, "-m", "ccxml", "run", *map(str, args)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                       stdin=subprocess.DEVNULL)
    return Result(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)
