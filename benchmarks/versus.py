"""Print an algorithm beside a reference one: its critical path in messages and its busbw.

    python benchmarks/versus.py ALG COLL REF P[,P...] [SIZE,SIZE]

Per p: the simulated time with α = 1, β = γ = 0 on the flat model (the critical path in
messages), both built for a 64 KiB window; then per size (default 64 KiB and 1 GiB) the busbw on
the flat model with 1 µs per transfer and 100 GB/s links, each built for a window ending at that
size (``ccxml select``'s way). AllToAll is built for exec, the rest for legacy (256 steps a TB).
The figures in the commit bodies of issue 17's algorithms come from this script.
"""
from __future__ import annotations

import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import announce  # noqa: E402 - benchmarks/build_check.py

from ccxml.driver import algorithm_schedule  # noqa: E402
from ccxml.simulator import simulate_schedule  # noqa: E402
from ccxml.topology.model import Topology  # noqa: E402

UNIT = Topology.flat(1.0, 0.0, 0.0)
FLAT = Topology.flat(1e-6, 1e-11, 1e-12)


def main() -> None:
    if len(_sys.argv) not in (5, 6):
        _sys.exit(__doc__.split("\n\n")[1].strip())
    alg, coll, ref = _sys.argv[1:4]
    ps = [int(x) for x in _sys.argv[4].split(",")]
    sizes = [int(float(x)) for x in _sys.argv[5].split(",")] if len(_sys.argv) > 5 else [1 << 16, 1 << 30]
    announce(times_native=False, stream=_sys.stderr)
    target = "exec" if coll == "alltoall" else "legacy"
    for p in ps:
        row = [f"p={p}"]
        for name in (alg, ref):
            s = algorithm_schedule(name, coll, p, target=target, max_bytes=1 << 16)
            row.append(f"{name} path={simulate_schedule(s, 1 << 16, UNIT).time_s:g}")
        for n in sizes:
            bws = [simulate_schedule(algorithm_schedule(name, coll, p, target=target, max_bytes=n), n,
                                     FLAT).busbw / 1e9 for name in (alg, ref)]
            row.append(f"{n}B busbw {bws[0]:.2f} vs {bws[1]:.2f} GB/s")
        print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()
