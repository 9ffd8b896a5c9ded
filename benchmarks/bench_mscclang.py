"""The same MSCCLang script through msccl-tools and through ``ccxml mscclang``, side by side.

    python benchmarks/bench_mscclang.py --msccl-python /tmp/msccl/bin/python
    python benchmarks/bench_mscclang.py --msccl-python microsoft=/tmp/ms/bin/python \\
                                        --msccl-python azure=/tmp/az/bin/python

``--msccl-python`` (repeatable, ``LABEL=PATH``; or ``MSCCL_TOOLS_PYTHON``) names a Python with
msccl-tools installed — ccxml ships none of its code; e.g. ``python -m venv /tmp/msccl &&
/tmp/msccl/bin/pip install PATH/TO/msccl-tools``. Without one, its column is skipped with a
message. The scripts are ccxml's MSCCLang examples (examples/mscclang/): ring AllReduce at 8,
64 and 256 ranks, all-pairs AllToAll at 64 ranks, a hierarchical AllReduce of 8 nodes x 8.
Each run is a whole process (start-up counts) writing its XML (msccl-tools: to stdout, discarded;
ccxml: to a file); the best of ``--repeat`` runs is shown, wall time and CPU time (user + system),
beside the calibration line of benchmarks/calibration.py. Both tools run with their bytecode
caches (one warm-up run each first), as installed packages do. A run longer than ``--timeout``
is stopped and shown as "> T". The issue's target: the 64-rank ring at least 10x faster, judged
on CPU time (both tools run one thread; wall time also counts whatever else the cores run).
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
EXAMPLES = os.path.join(REPO, "examples", "mscclang")
CASES = [("ring AllReduce", "ring_allreduce.py", ["8", "1"], 8),
         ("ring AllReduce", "ring_allreduce.py", ["64", "1"], 64),
         ("ring AllReduce", "ring_allreduce.py", ["256", "1"], 256),
         ("all-pairs AllToAll", "alltoall_allpairs.py", ["64", "1"], 64),
         ("hierarchical AllReduce 8x8", "hierarchical_allreduce.py", ["8", "8", "1"], 64)]
TARGET_CASE, TARGET = ("ring AllReduce", 64), 10.0


def environment(pythonpath: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    return env


def timed(cmd: list[str], env: dict, cwd: str, timeout: float) -> tuple[float, float, int] | None:
    """(wall s, CPU s, exit code) of one process, or None when it ran past ``timeout``."""
    with open(os.devnull, "w") as sink, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=sink, stderr=err, text=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                return None
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code:
            err.seek(0)
            lines = err.read().strip().splitlines()
            print(f"  ! {' '.join(cmd[-3:])}: exit {code}: {lines[-1] if lines else ''}", file=sys.stderr)
        return wall, usage.ru_utime + usage.ru_stime, code


def best(cmd, env, cwd, timeout, repeat):
    runs = []
    for _ in range(repeat):
        r = timed(cmd, env, cwd, timeout)
        if r is None:
            return None
        runs.append(r)
        if r[2]:
            break
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)


def tools(args) -> list[tuple[str, str]]:
    given = args.msccl_python or ([os.environ["MSCCL_TOOLS_PYTHON"]] if os.environ.get("MSCCL_TOOLS_PYTHON") else [])
    out = []
    for spec in given:
        label, _, path = spec.rpartition("=")
        label = label or "msccl-tools"
        probe = subprocess.run([path, "-c", "import msccl.language"], capture_output=True, text=True,
                               env=environment(None)) if os.path.exists(path) else None
        if probe is None or probe.returncode:
            print(f"{label}: skipped, {path} cannot import msccl.language "
                  f"(install msccl-tools into a virtual environment and pass its python)")
            continue
        out.append((label, path))
    if not given:
        print("msccl-tools: skipped, not installed (give --msccl-python PATH or MSCCL_TOOLS_PYTHON; "
              "e.g. python -m venv /tmp/msccl && /tmp/msccl/bin/pip install PATH/TO/msccl-tools)")
    return out


def fmt(r) -> str:
    if r is None:
        return "stopped"
    wall, cpu, code = r
    return f"{wall:7.2f} s ({cpu:6.2f} cpu)" + ("" if not code else f" exit {code}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--msccl-python", action="append", default=[], metavar="[LABEL=]PATH")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case up to 64 ranks (best shown)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is stopped")
    add_argument(ap)
    args = ap.parse_args()
    announce(times_native=True, allow_pure=args.allow_pure)      # the ccxml its runs time
    print(calibration_line() + " (before)", flush=True)
    others = tools(args)
    ccxml_env = environment(REPO)
    ccxml_cmd = [sys.executable, "-m", "ccxml", "mscclang", "-o"]
    with tempfile.TemporaryDirectory(prefix="ccxml-bench-mscclang-") as tmp:
        # warm-up: bytecode caches of both tools (not timed)
        timed(ccxml_cmd + [os.path.join(tmp, "w.xml"), "ring_allreduce.py", "4", "1"], ccxml_env, EXAMPLES, 120)
        for _, py in others:
            timed([py, "ring_allreduce.py", "4", "1"], environment(None), EXAMPLES, 120)
        head = f"{'case':<28} {'ranks':>5}  {'ccxml mscclang':>24}"
        head += "".join(f"  {label:>24}  {'x (cpu)':>8}" for label, _ in others)
        print(head, flush=True)
        verdicts = []
        for label, script, sargs, ranks in CASES:
            repeat = args.repeat if ranks <= 64 else 1
            mine = best(ccxml_cmd + [os.path.join(tmp, script + ".xml"), script, *sargs], ccxml_env,
                        EXAMPLES, args.timeout, repeat)
            line = f"{label:<28} {ranks:>5}  {fmt(mine):>24}"
            for tool, py in others:
                theirs = best([py, script, *sargs], environment(None), EXAMPLES, args.timeout, repeat)
                if theirs is None:          # its CPU time is unknown: the ratio is of wall times
                    ratio = f"> {args.timeout / mine[0]:.0f}x wall" if mine else "-"
                    line += f"  {'> %.0f s (stopped)' % args.timeout:>24}  {ratio:>8}"
                    continue
                ratio = theirs[1] / mine[1] if mine and mine[1] > 0 else float("nan")
                line += f"  {fmt(theirs):>24}  {ratio:7.1f}x"
                if (label, ranks) == TARGET_CASE:
                    wall_ratio = theirs[0] / mine[0]
                    verdicts.append(f"target: {label} at {ranks} ranks >= {TARGET:.0f}x faster than "
                                    f"{tool} (CPU time; wall time moves with the other load on "
                                    f"the machine): {ratio:.1f}x cpu, {wall_ratio:.1f}x wall -> "
                                    f"{'ok' if ratio >= TARGET else 'MISSED'}")
            print(line, flush=True)
    for v in verdicts:
        print(v)
    print(calibration_line() + " (after)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
