"""How fast the shared-link (network) simulator runs, beside the dedicated-link (flat) one.

    python benchmarks/bench_network.py [--repeat 2]

Two schedules, one size each, each simulated on the flat model (today's dedicated links, 1 us,
100 GB/s) and on a dgx-h100 preset (links shared max-min fairly, rates recomputed at every start
and end of a transfer):

* a 256-rank ring AllReduce (131,328 steps, 130,560 transfers) at 256 MiB, on dgx-h100 x 32 nodes
  (8 GPUs each: 256 ranks);
* a 64-rank PairWise AllToAll at 64 MiB on dgx-h100 x 8 nodes.

Prints the CPU seconds of one simulation (best of ``--repeat``; the schedule is generated once,
outside the timing) and the calibration line. Target: <= 5 s each for the network model on the
2-core development machine.
"""
from __future__ import annotations

import argparse
import os as _os
import sys as _sys
import time

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout
_sys.path.insert(0, _os.path.dirname(_os.path.abspath(__file__)))

from build_check import announce  # noqa: E402 - benchmarks/build_check.py
from calibration import calibration_line  # noqa: E402

from ccxml.driver import algorithm_schedule  # noqa: E402
from ccxml.simulator import DEFAULT_TOPOLOGY, simulate_schedule  # noqa: E402
from ccxml.topology import load_preset  # noqa: E402

CASES = [  # label, algorithm, collective, ranks, bytes, preset, nodes, target
    ("ring allreduce, 256 ranks, 256 MiB", "ring", "allreduce", 256, 256 << 20, "dgx-h100", 32, "legacy"),
    ("pairwise alltoall, 64 ranks, 64 MiB", "pairwise", "alltoall", 64, 64 << 20, "dgx-h100", 8, "exec"),
]


def cpu_time(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    announce(times_native=False)        # the simulator is never compiled: a note, no refusal
    print(calibration_line())
    for label, alg, coll, p, n, preset, nodes, target in CASES:
        sched = algorithm_schedule(alg, coll, p, target=target, max_bytes=n)
        topo = load_preset(preset, nodes)
        t_flat, r_flat = cpu_time(lambda: simulate_schedule(sched, n, DEFAULT_TOPOLOGY), args.repeat)
        t_net, r_net = cpu_time(lambda: simulate_schedule(sched, n, topo), args.repeat)
        print(f"{label}: {sched.nsteps} steps, {r_net.transfers} transfers")
        print(f"  flat (dedicated links)          {t_flat:6.2f} s cpu  simulated {r_flat.time_s * 1e3:9.3f} ms "
              f"busbw {r_flat.busbw / 1e9:7.1f} GB/s")
        print(f"  {preset} x {nodes} (shared links) {t_net:6.2f} s cpu  simulated {r_net.time_s * 1e3:9.3f} ms "
              f"busbw {r_net.busbw / 1e9:7.1f} GB/s")
    print(calibration_line())


if __name__ == "__main__":
    main()
