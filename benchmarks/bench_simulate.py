"""How fast the simulator runs: steps simulated per second on large schedules.

    python benchmarks/bench_simulate.py

Prints, for a generated ring allreduce on 32 ranks with 16 channels (legacy limits), and for the
largest corpus files present in ../shared/xml-corpus, the step count, the time of one simulation
and the throughput. The engine is event-driven (one heap entry per transfer), so time grows
about linearly with the step count.
"""
from __future__ import annotations

import os
import os as _os
import sys as _sys
import time
from pathlib import Path

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import announce  # noqa: E402 - benchmarks/build_check.py

from ccxml.driver import algorithm_schedule
from ccxml.simulator import simulate_schedule
from ccxml.topology.model import Topology

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "xml-corpus"
TOPO = Topology.flat(1e-6, 1e-11, 1e-12)


def bench(label: str, sched, repeat: int = 3) -> None:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = simulate_schedule(sched, 64 << 20, TOPO)
        best = min(best, time.perf_counter() - t0)
    n = sched.nsteps
    print(f"{label:<55} {n:>8} steps {r.transfers:>8} transfers {best * 1e3:>9.1f} ms "
          f"{n / best / 1e3:>8.0f} k steps/s")


def main() -> None:
    announce(times_native=False)        # the simulator is never compiled: a note, no refusal
    for p, ch in ((8, 1), (32, 1), (32, 16)):
        sched = algorithm_schedule("ring", "allreduce", p, target="legacy", channels=ch)
        bench(f"ring allreduce p={p} channels={ch}", sched)
    if CORPUS.is_dir():
        from ccxml.loader.reader import load
        files = sorted(CORPUS.glob("*/*.xml"), key=lambda f: -f.stat().st_size)[:3]
        for f in files:
            bench(os.path.relpath(f, CORPUS), load(f))


if __name__ == "__main__":
    main()
