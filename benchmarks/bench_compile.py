"""Compile at scale (issue 27, part 1): this checkout beside the wave-1 build, one run.

    python benchmarks/bench_compile.py [--base /work/wave1] [--also /work/main] [--repeat N]
                                       [--only ring1024,ring256]

Every figure is a whole ``python -m ccxml ...`` process under ``/usr/bin/time`` (wall seconds,
CPU seconds = user + system, peak RSS), as in ``benchmarks/bench_scale.py``. The base (wave 1,
commit c20cbe3: ``git -C /work/main worktree add --detach /work/wave1 c20cbe3`` then
``python setup.py build_ext --inplace`` there, as docs/install.md builds it) and this checkout run
alternately, ``--repeat`` times each, so that both see the same load; the table gives the median
of each column, and the ratios this / base. Both sides should run compiled: the first lines say
what ``ccxml --version`` reports on each side (run ``python setup.py build_ext --inplace`` here
after editing a native module, or that module runs as pure Python).

Cases (the issue's must-hold):

* ``ring1024``: ``generate ring --ranks 1024 --target legacy --verify`` — <= 0.3x the base's
  time and <= 1 GiB peak;
* ``ring256``: ``generate ring --ranks 256`` — <= 0.5x the base's time.

``--only ag1024,rs1024`` also times ring AllGather and ReduceScatter at 1024 ranks (legacy,
``--verify``; no bound asked).

The files the two sides write are compared byte for byte (sha256) and the result printed; the
whole set of outputs is ``benchmarks/output_hashes.py``'s job.

On a shared machine the wall time depends on the other work; the CPU seconds depend less on it,
and the ratios of both are printed. Each side's ``ccxml/`` is byte-compiled first
(``compileall``), as ``pip install`` does: with ``PYTHONDONTWRITEBYTECODE`` set and no
``__pycache__``, every process would compile ~25 modules from source (0.15 s of CPU, a fifth of
``generate ring --ranks 256``); ``--no-bytecode`` skips that step.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile

from timed import timed_ccxml  # benchmarks/timed.py, beside this script

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

CASES = {
    "ring1024": "generate ring --ranks 1024 --target legacy --verify -o {out}",
    "ring256": "generate ring --ranks 256 -o {out}",
    # the other collectives of the same tables of moves (ccxml/bulk), with --only
    "ag1024": "generate ring --coll allgather --ranks 1024 --target legacy --verify -o {out}",
    "rs1024": "generate ring --coll reducescatter --ranks 1024 --target legacy --verify -o {out}",
}
#: the cases run without --only (the issue's)
DEFAULT = ("ring1024", "ring256")
#: the issue's bounds: (time ratio to the base, peak RSS in MiB or None)
BOUNDS = {"ring1024": (0.3, 1024), "ring256": (0.5, None)}


def run(where: str, args: str, out: str, timeout: float) -> dict:
    r = timed_ccxml(where, args, timeout, out=out)
    if "cpu" in r:
        r["sha"] = _sha(out) if r["ok"] else None
    return r


def _sha(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def version(where: str) -> str:
    p = subprocess.run([PY, "-m", "ccxml", "--version"], cwd=where, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": where})
    return (p.stdout.strip() or p.stderr.strip())[:100]


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def fmt(runs: list[dict]) -> str:
    good = [r for r in runs if r["ok"]]
    if not good:
        return f"{'failed':>30}"
    return f"{median(good, 'wall'):7.2f} s {median(good, 'cpu'):7.2f} cpu {median(good, 'rss_mb'):6.0f} MB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="/work/wave1", help="the wave-1 checkout (c20cbe3), built")
    ap.add_argument("--also", default=None, help="a third checkout to time (e.g. /work/main)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default=None, help="comma-separated case names")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--no-bytecode", action="store_true", help="do not byte-compile ccxml/ first")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(DEFAULT)
    sides = [("base", a.base), ("this", HERE)] + ([("also", a.also)] if a.also else [])
    for who, where in sides:
        if not a.no_bytecode:
            subprocess.run([PY, "-m", "compileall", "-q", os.path.join(where, "ccxml")], check=False,
                           capture_output=True, env={k: v for k, v in os.environ.items()
                                                     if k != "PYTHONDONTWRITEBYTECODE"})
        print(f"# {who:<5} {where}: {version(where)}")
    print(f"# load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"medians of {a.repeat} run(s)")
    print(f"# {'case':<10} " + "   ".join(f"{who + ' (wall, cpu, peak)':>30}" for who, _ in sides))
    failed = False
    with tempfile.TemporaryDirectory() as outdir:
        for name in names:
            got: dict[str, list[dict]] = {who: [] for who, _ in sides}
            for _ in range(a.repeat):
                for who, where in sides:
                    out = os.path.join(outdir, f"{name}.{who}.xml")
                    got[who].append(run(where, CASES[name], out, a.timeout))
            notes = "; ".join(r["note"] for rs in got.values() for r in rs if r["note"])
            print(f"  {name:<10} " + "   ".join(fmt(got[who]) for who, _ in sides) + f"  {notes}",
                  flush=True)
            base, this = [r for r in got["base"] if r["ok"]], [r for r in got["this"] if r["ok"]]
            if not base or not this:
                failed = True
                continue
            shas = {r["sha"] for rs in got.values() for r in rs if r["ok"]}
            wall = median(this, "wall") / median(base, "wall")
            cpu = median(this, "cpu") / median(base, "cpu")
            peak = median(this, "rss_mb")
            bound, cap = BOUNDS.get(name, (None, None))
            verdict = []
            if bound is not None:
                verdict.append(f"time {'ok' if cpu <= bound else 'OVER'} (<= {bound}x asked)")
            if cap is not None:
                verdict.append(f"peak {'ok' if peak <= cap else 'OVER'} (<= {cap} MiB asked)")
            print(f"#   {name:<10} this/base: {wall:5.2f}x wall {cpu:5.2f}x cpu; peak {peak:.0f} MiB; "
                  f"output {'identical' if len(shas) == 1 else 'DIFFERS'} on every side; "
                  + ", ".join(verdict))
            failed |= len(shas) != 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
