"""One ``python -m ccxml ...`` process from a checkout, under ``/usr/bin/time``: wall seconds, CPU
seconds (user + system, its workers included) and the peak RSS of its largest process. Shared by
bench_compile.py and bench_scale.py (import it as ``from timed import timed_ccxml``)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time


def timed_ccxml(where: str, args: str, timeout: float, env: dict | None = None, **fmt: str) -> dict:
    """Run ``ccxml ARGS`` (``args.format(**fmt)``; ``{tmp}``: a temporary directory) with
    ``where`` first on the path. ``{"ok", "wall", "cpu", "rss_mb", "stdout", "note"}``; past
    ``timeout``: ``{"ok": False, "wall", "note"}``. ``note``: the last line of stderr on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "time.txt")
        cmd = ["/usr/bin/time", "-o", stats, "-f", "%e %U %S %M", sys.executable, "-m", "ccxml",
               *shlex.split(args.format(tmp=tmp, **fmt))]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, cwd=where, capture_output=True, text=True, timeout=timeout,
                               env={**os.environ, "PYTHONPATH": where, **(env or {})})
        except subprocess.TimeoutExpired:
            return {"ok": False, "wall": time.perf_counter() - t0, "note": f"over {timeout:.0f} s"}
        with open(stats) as f:
            last = f.read().strip().splitlines()[-1].split()
    wall, user, sys_, rss = float(last[0]), float(last[1]), float(last[2]), int(last[3])
    note = "" if p.returncode == 0 else (p.stderr.strip().splitlines() or ["?"])[-1][:90]
    return {"ok": p.returncode == 0, "wall": wall, "cpu": user + sys_, "rss_mb": rss / 1024,
            "stdout": p.stdout, "note": note}
