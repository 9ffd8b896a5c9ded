"""Forest Broadcast / Reduce: the max-flow bound from a root, the packing's rate, k, the runtime fit
and the simulated busbw at 1 GiB.

    python benchmarks/bench_forest_rooted.py [--only dgx-h100x1,pciex1] [--root R] [--limits exec]

Per topology of issue 23 (as benchmarks/bench_forest.py) and per collective: the bound (min over
ranks of max-flow from the root; busbw = algbw for both), the LP rate of the trees with and without
the k limit, k, what the layout needs (peers, thread blocks, channels, XML nodes), the synthesis
time, and forest's simulated busbw at 1 GiB as a share of the bound.
"""
from __future__ import annotations

import argparse
import os as _os
import sys as _sys
import time

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from ccxml.algorithms import build  # noqa: E402
from ccxml.loader.reader import loads  # noqa: E402
from ccxml.simulator import simulate_schedule  # noqa: E402
from ccxml.topology import load_preset, load_topology  # noqa: E402

SHARED = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "..", "shared",
                       "topologies")
TOPOLOGIES = [("dgx-h100", 1), ("dgx-h100", 2), ("dgx-h100", 4), ("dgx-a100", 2), ("mi300x", 1), ("mi300x", 2),
              ("pcie", 1), ("ndv4-topo.xml:a100", 2), ("ndv5-topo.xml:h100", 2)]
GIB = 1 << 30


def topology(name: str, nodes: int):
    if ":" in name:
        path, gpu = name.split(":")
        return load_topology(_os.path.join(SHARED, path), gpu=gpu, nodes=nodes)
    return load_preset(name, nodes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="e.g. dgx-h100x1,pciex1")
    ap.add_argument("--root", type=int, default=0)
    ap.add_argument("--limits", default="exec")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    print("| topology | coll | bound (max-flow) | LP rate (k trees) | unrestricted | k | peers / TBs / channels / "
          "nodes | synthesis | busbw 1 GiB | share |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for name, nodes in TOPOLOGIES:
        key = f"{name.split(':')[0].replace('-topo.xml', '')}x{nodes}"
        if only and key not in only:
            continue
        topo = topology(name, nodes)
        for coll in ("broadcast", "reduce"):
            t0 = time.perf_counter()
            try:
                prog = build("forest", coll, topo.nranks, root=args.root, topology=topo, limits=args.limits)
            except ValueError as e:
                print(f"| {key} | {coll} | error: {e} |", flush=True)
                continue
            wall = time.perf_counter() - t0
            f = prog.forest
            d = f.fit.demand
            res = simulate_schedule(loads(prog.to_xml(args.limits if args.limits != "all" else "exec")), GIB, topo)
            bw = GIB / res.time_s
            print(f"| {key} | {coll} | {f.bound.busbw / 1e9:.1f} | {f.rate / 1e9:.1f} | {f.unrestricted / 1e9:.1f} "
                  f"| {f.k} | {d.peers} / {d.tbs} / {d.channels} / {d.nodes} | {f.seconds:.2f} s ({wall:.1f} s) "
                  f"| {bw / 1e9:.1f} | {bw / f.bound.busbw:.1%} |", flush=True)


if __name__ == "__main__":
    main()
