"""Where generation spends its time: CPU seconds of the build and of each pass, one schedule.

    python benchmarks/bench_passes.py ring --ranks 256
    python benchmarks/bench_passes.py pairwise --coll alltoall --ranks 256 --target legacy

Builds the schedule ``--repeat`` times (best CPU time of each stage counts: the machine may be
busy) and prints, per stage — the Chunk API build, every pass ``compile_algo`` runs for the
target (``ccxml.passes.pipeline``), and the XML writer — its CPU seconds and µs per issued step.
The cyclic GC is paused as in ``ccxml generate``.
"""
from __future__ import annotations

import argparse
import gc
import os as _os
import sys as _sys
import time

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from ccxml.algorithms import build
from ccxml.frontend.algorithm import Options
from ccxml.passes import pipeline
from ccxml.vocab.wire import profile
from ccxml.writer.msccl import to_xml


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithm")
    ap.add_argument("--coll", default="allreduce")
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--target", default="exec")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    prof = profile(args.target)
    gc.disable()
    best: dict[str, float] = {}
    issued = 0

    def timed(name, fn):
        t0 = time.process_time()
        out = fn()
        best[name] = min(best.get(name, float("inf")), time.process_time() - t0)
        return out

    for _ in range(args.repeat):
        prog = timed("build (Chunk API)",
                     lambda: build(args.algorithm, args.coll, args.ranks, options=Options()))
        algo = prog.algo
        issued = sum(len(g.pending) for g in algo.gpus)
        for ps in pipeline(prof):
            timed(ps.name, lambda: ps.run(algo))  # noqa: F821 - run at once, before the del below
        timed("writer", lambda: to_xml(algo, args.target))  # noqa: F821
        del prog, algo
        gc.collect()
    print(f"{args.algorithm} {args.coll}, {args.ranks} ranks, target {args.target}: "
          f"{issued} issued steps (best of {args.repeat}, CPU)")
    for name, sec in best.items():
        print(f"  {name:<20} {sec:7.3f} s  {sec / max(issued, 1) * 1e6:6.2f} µs/step")
    total = sum(best.values())
    print(f"  {'total':<20} {total:7.3f} s  {total / max(issued, 1) * 1e6:6.2f} µs/step")


if __name__ == "__main__":
    main()
