"""Speed and memory figures of issue 7, one line per case: the figure, its target, and a verdict.

Every case runs as its own process (whole-process wall time, peak RSS from wait4), so start-up
counts. Exits 1 when a target is missed by more than 50% (machines are noisy).

    python benchmarks/run.py            # all cases
    python benchmarks/run.py --quick    # skip the 1024-rank case

It first says which ccxml the cases run and refuses (exit 2) to time a checkout whose native
modules do not all run compiled, unless CCXML_PURE=1 or --allow-pure says so on purpose
(benchmarks/build_check.py).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from build_check import add_argument, announce  # noqa: E402 - benchmarks/build_check.py
from calibration import calibration_line  # noqa: E402 - benchmarks/calibration.py

REPO = os.path.dirname(HERE)
PY = sys.executable
#: every case runs this checkout's ccxml (compiled in place by ``pip install -e .`` or
#: ``python setup.py build_ext --inplace``; run.py refuses to time it pure by mistake)
ENV = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))

RATE_SNIPPET = """
import sys, time
from ccxml.loader import reader as xmlload
from ccxml.algorithms.ring import allreduce
from ccxml.interpreter import verify
text = allreduce(int(sys.argv[1])).to_xml(sys.argv[2])
best = None
for _ in range(5):                       # CPU time of this process: one core, whatever else runs
    schedule = xmlload.loads(text)       # parsing is not verification (1M-step figure: bench_verify)
    t0 = time.process_time()
    rep = verify(schedule, target=sys.argv[2])
    dt = time.process_time() - t0
    best = dt if best is None else min(best, dt)
print(rep.stats.get("steps", 0) / best)
"""


def run(cmd: list[str]) -> tuple[float, float, float, int, str, str]:
    """(wall s, CPU s, peak MB, exit code, stdout, stderr) of one process (rusage from wait4)."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=out, stderr=err, text=True, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, proc.returncode,
                out.read(), err.read())


def case(name: str, cmd: list[str], target_s: float, target_mb: float | None, misses: list[str]):
    wall, cpu, peak, code, out, err = run(cmd)
    ok_t = wall <= target_s
    ok_m = target_mb is None or peak <= target_mb
    mem = f"{peak:7.0f} MB (target ≤ {target_mb:.0f} MB)" if target_mb else f"{peak:7.0f} MB"
    verdict = "ok" if ok_t and ok_m and code == 0 else ("FAILED" if code else "MISSED")
    print(f"{name:<48} {wall:7.2f} s (target ≤ {target_s:g} s; cpu {cpu:.2f} s)  {mem}  {verdict}",
          flush=True)
    if code:
        print("   " + (err.strip().splitlines() or ["(no output)"])[-1])
    if code or wall > 1.5 * target_s or (target_mb and peak > 1.5 * target_mb):
        misses.append(name)
    return err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 1024-rank case")
    add_argument(ap)
    args = ap.parse_args()
    announce(times_native=True, allow_pure=args.allow_pure)      # the checkout the cases run
    misses: list[str] = []
    gen = [PY, "-m", "ccxml", "generate"]
    print(calibration_line(), "(before)", flush=True)
    case("ccxml generate ring --ranks 8", gen + ["ring", "--ranks", "8"], 0.3, None, misses)
    case("ring allreduce, 64 ranks", gen + ["ring", "--ranks", "64"], 0.3, None, misses)
    case("ring allreduce, 256 ranks", gen + ["ring", "--ranks", "256"], 3.0, 300, misses)
    case("pairwise alltoall, 256 ranks", gen + ["pairwise", "--ranks", "256", "--coll", "alltoall"],
         2.0, 300, misses)
    if not args.quick:
        case("ring allreduce, 1024 ranks, generate + verify (legacy)",
             gen + ["ring", "--ranks", "1024", "--target", "legacy", "--verify", "-q", "-o", "r.xml"],
             20.0, 4096, misses)
    rate = subprocess.run([PY, "-c", RATE_SNIPPET, "64", "exec"], capture_output=True, text=True,
                          env=ENV)
    try:
        steps_s = float(rate.stdout.strip())
    except ValueError:
        steps_s = 0.0
    verdict = "ok" if steps_s >= 500_000 else "MISSED"
    print(f"{'verify, ring allreduce 64 ranks (cpu)':<48} {steps_s:9.0f} steps/s (target ≥ 500000)  {verdict}")
    if steps_s < 500_000 / 1.5:
        misses.append("verify rate")
    print(calibration_line(), "(after)")
    if misses:
        print(f"missed by more than 50%: {', '.join(misses)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
