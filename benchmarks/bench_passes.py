"""Where generation spends its time: CPU seconds of the build and of each pass, one schedule.

    python benchmarks/bench_passes.py ring --ranks 256
    python benchmarks/bench_passes.py pairwise --coll alltoall --ranks 256 --target legacy

Builds the schedule ``--repeat`` times (best CPU time of each stage counts: the machine may be
busy) and prints, per stage — the Chunk API build, every pass of the target's pipeline
(``ccxml.passes.pipeline``, timed by its hook, :class:`ccxml.passes.timing.PassTimer`), and the
XML writer — its CPU seconds and µs per issued step, after the build it runs (refusing pure
Python by mistake: see benchmarks/build_check.py) and beside the calibration line. The cyclic
GC is paused as in ``ccxml generate``.
"""
from __future__ import annotations

import argparse
import gc
import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import add_argument, announce  # noqa: E402 - benchmarks/build_check.py
from calibration import calibration_line  # noqa: E402 - benchmarks/calibration.py

from ccxml.algorithms import build
from ccxml.frontend.algorithm import Options
from ccxml.passes import pipeline
from ccxml.passes.timing import PassTimer
from ccxml.vocab.wire import profile
from ccxml.writer.msccl import to_xml


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithm")
    ap.add_argument("--coll", default="allreduce")
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--target", default="exec")
    ap.add_argument("--repeat", type=int, default=2)
    add_argument(ap)
    args = ap.parse_args()
    announce(times_native=True, allow_pure=args.allow_pure)
    prof = profile(args.target)
    passes = pipeline(prof)
    gc.disable()
    best: dict[str, float] = {}
    issued = 0
    for _ in range(args.repeat):
        timer = PassTimer()
        prog = build(args.algorithm, args.coll, args.ranks, options=Options())
        timer.lap("build (Chunk API)")
        algo = prog.algo
        issued = sum(len(g.pending) for g in algo.gpus)
        timer.restart()
        passes.run(algo, prof, hook=timer)
        to_xml(algo, args.target)
        timer.lap("writer")
        for lap in timer.laps:
            best[lap.name] = min(best.get(lap.name, float("inf")), lap.cpu)
        del prog, algo
        gc.collect()
    print(f"{args.algorithm} {args.coll}, {args.ranks} ranks, target {args.target}: "
          f"{issued} issued steps (best of {args.repeat}, CPU)")
    for name, sec in best.items():
        print(f"  {name:<20} {sec:7.3f} s  {sec / max(issued, 1) * 1e6:6.2f} µs/step")
    total = sum(best.values())
    print(f"  {'total':<20} {total:7.3f} s  {total / max(issued, 1) * 1e6:6.2f} µs/step")
    print(calibration_line())


if __name__ == "__main__":
    main()
