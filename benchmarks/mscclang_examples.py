"""Run msccl-tools' own MSCCLang examples through ``ccxml mscclang`` and verify their XML.

    python benchmarks/mscclang_examples.py --examples PATH/TO/msccl-tools/examples/mscclang

PATH is the ``examples/mscclang`` folder of a microsoft/msccl-tools or Azure/msccl-tools checkout
(neither is part of ccxml). Each script runs unchanged, in a process of its own, with the
arguments Azure/msccl-tools' CI uses (tests/configs/test-config.json) or, for the scripts that
list has not, those its comments and argument help give; then ``ccxml verify`` proves every file
it wrote. Prints one Markdown row per script (the table in docs/benchmarks.md) and a summary; a script
that is not in the list below runs without arguments. MSCCL++ programs (``mscclpp/``) are a
different language (JSON execution plans, not MSCCL XML) and are listed apart.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_check import announce  # noqa: E402 - benchmarks/build_check.py

#: script -> (arguments, target): custom collectives load only in the legacy runtime
EXAMPLES = {
    "allgather_a100_pcie.py": ("4 2", "exec"),
    "allgather_allpairs.py": ("8 2", "exec"),
    "allgather_recursive_doubling.py": ("2 4", "exec"),
    "allgather_ring.py": ("8 8 4", "exec"),
    "allreduce_1step.py": ("2 1", "exec"),
    "allreduce_a100_allpairs.py": ("2 4", "exec"),
    "allreduce_a100_allpairs_v2.py": ("8 1", "exec"),
    "allreduce_a100_multinode_allpairs.py": ("8 1", "exec"),
    "allreduce_a100_ncv4.py": ("4 2", "exec"),
    "allreduce_a100_ncv4_v2.py": ("4 2", "exec"),
    "allreduce_a100_pcie_hierarchical.py": ("8 1", "exec"),
    "allreduce_a100_recursive_doubling_halving.py": ("2 1", "exec"),
    "allreduce_a100_ring.py": ("8 8 4", "exec"),
    "allreduce_binomial_tree.py": ("8 2 1", "exec"),
    "allreduce_dgx1.py": ("2 1", "exec"),
    "allreduce_ndv2.py": ("1", "exec"),
    "allreduce_recursive_doubling_halving.py": ("8 4", "exec"),
    "alltoall_a100_three_step.py": ("2 8 2", "exec"),
    "alltoall_a100_two_step.py": ("8 2", "exec"),
    "alltoall_allpairs.py": ("8 2", "exec"),
    "alltonext_backward.py": ("8 2", "legacy"),
    "alltonext_forward.py": ("8 2", "legacy"),
    "hierarchical_allreduce.py": ("8 2 2", "exec"),
    "pipeline_a100_allpairs.py": ("8 1", "exec"),
    "pipeline_a100_ring.py": ("8 4 2", "exec"),
    "reducegather.py": ("4 2", "legacy"),
    "reducescatter_allpairs.py": ("8", "exec"),
    "simple/allgather_ring.py": ("", "exec"),
    "simple/allreduce_ring.py": ("8 1", "exec"),
    "simple/custom_collective.py": ("", "legacy"),
}


def ccxml(*args: str, cwd: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ccxml", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)


def last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_one(folder: str, script: str, args: str, target: str, out: str) -> dict:
    stem = script.replace("/", "_")[:-3]
    dest = os.path.join(out, stem + ".xml")
    t0 = time.perf_counter()
    p = ccxml("mscclang", "--target", target, "-o", dest, os.path.join(folder, script),
              *args.split(), cwd=os.path.dirname(os.path.join(folder, script)))
    row = {"script": script, "args": args, "target": target, "seconds": time.perf_counter() - t0,
           "ran": p.returncode == 0, "verified": False, "why": "", "files": 0}
    if p.returncode != 0:
        row["why"] = last_line(p.stderr).removeprefix("ccxml: ")
        return row
    files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.startswith(stem) and f.endswith(".xml"))
    row["files"] = len(files)
    v = ccxml("verify", "--target", target, *files)
    row["verified"] = v.returncode == 0
    if v.returncode != 0:
        row["why"] = last_line(v.stdout + "\n" + v.stderr)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", required=True, help="msccl-tools' examples/mscclang folder")
    ap.add_argument("--only", default=None, help="comma-separated scripts to run")
    args = ap.parse_args()
    announce(times_native=False)        # it proves files; its times are only for information
    folder = os.path.abspath(args.examples)
    if not os.path.isdir(folder):
        print(f"mscclang_examples: {folder} is not a folder", file=sys.stderr)
        return 2
    scripts = sorted(os.path.relpath(os.path.join(d, f), folder)
                     for d, _, fs in os.walk(folder) for f in fs if f.endswith(".py"))
    mscclpp = [s for s in scripts if s.startswith("mscclpp" + os.sep)]
    scripts = [s for s in scripts if s not in mscclpp]
    if args.only:
        scripts = [s for s in scripts if s in args.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ccxml-mscclang-") as out:
        for s in scripts:
            a, target = EXAMPLES.get(s, ("", "exec"))
            rows.append(run_one(folder, s, a, target, out))
            r = rows[-1]
            print(f"| `{s}` | `{a}` | {target} | {'yes' if r['ran'] else 'no'} | "
                  f"{'yes' if r['verified'] else 'no'} | {r['seconds']:.2f} s | {r['why']} |",
                  flush=True)
    good = sum(r["verified"] for r in rows)
    print(f"\n{good} of {len(rows)} MSCCLang scripts run unchanged and verify "
          f"({100 * good / max(1, len(rows)):.0f}%); {sum(r['ran'] for r in rows)} run")
    if mscclpp:
        print(f"not run: {len(mscclpp)} MSCCL++ programs in mscclpp/ (MSCCLPPProgram, JSON plans for "
              f"the MSCCL++ runtime, not MSCCL XML)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
