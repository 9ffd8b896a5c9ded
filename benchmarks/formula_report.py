"""Print, for every HCCL cost formula, how ccxml's generated schedule compares in the simulator.

    python benchmarks/formula_report.py [--p 2-33] [--alpha 1e-6 --beta 1e-9 --gamma 3e-10]

One line per algorithm × collective: the range of the relative deviation of the simulated time
from the document's formula over the p range (negative: ccxml's schedule is faster), the largest
deviation from ccxml's own formula where it has one, and the reason.
Flat rows are generated for a window whose largest size is the simulated one (maxBytes = n), as
the formula tests do.
Algorithms whose module is not present are listed as missing.
"""
from __future__ import annotations

import argparse
import importlib
import math
import os as _os
import sys as _sys
import time

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import announce  # noqa: E402 - benchmarks/build_check.py

from ccxml.algorithms import build, registry
from ccxml.driver import algorithm_schedule
from ccxml.simulator import simulate_schedule
from ccxml.simulator.formulas import FORMULAS
from ccxml.topology.model import Topology


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--p", default="2-33", help="rank range, e.g. 2-33")
    ap.add_argument("--alpha", type=float, default=1e-6)
    ap.add_argument("--beta", type=float, default=1e-9)
    ap.add_argument("--gamma", type=float, default=3e-10)
    args = ap.parse_args()
    announce(times_native=False)        # figures of the simulator, not times
    lo, _, hi = args.p.partition("-")
    prange = range(int(lo), int(hi or lo) + 1)
    topo = Topology.flat(args.alpha, args.beta, args.gamma)
    print(f"# alpha={args.alpha:g} s, beta={args.beta:g} s/B, gamma={args.gamma:g} s/B, p in {args.p}")
    print(f"# {'row':<26} {'sim/doc-1 from':>15} {'to':>10} {'max |sim/ccxml-1|':>18} {'p range':>8}  why")
    for f in FORMULAS:
        row = f"{f.algorithm}-{f.coll}" + ("" if len(f.ps) in (0, 32) else f"[{len(f.ps)} p]")
        try:
            importlib.import_module(f"ccxml.algorithms.{f.module}")
        except ModuleNotFoundError:
            print(f"  {row:<26} {'missing':>16}")
            continue
        lo_doc, hi_doc, dev_own = math.inf, -math.inf, 0.0
        t0 = time.perf_counter()
        if f.hierarchical:
            for groups in f.shapes:
                topo2 = Topology.from_groups(groups, intra=f.levels[0], inter=f.levels[1])
                try:
                    s = algorithm_schedule(f.algorithm, f.coll, sum(groups), topology=topo2,
                                           target="exec" if f.coll == "alltoall" else "legacy")
                except ValueError as e:
                    print(f"  {row:<26} groups {list(groups)}: cannot build: {e}")
                    break
                n = float(s.nchunksperloop * 4 * max(1, math.ceil((1 << 20) / (s.nchunksperloop * 4))))
                t = simulate_schedule(s, n, topo2).time_s
                d = t / f.hier_doc(groups, n, *f.levels) - 1
                lo_doc, hi_doc = min(lo_doc, d), max(hi_doc, d)
                dev_own = max(dev_own, abs(t / (f.hier_ccxml or f.hier_doc)(groups, n, *f.levels) - 1))
            else:
                print(f"  {row:<26} {lo_doc:>+15.3e} {hi_doc:>+10.3e} {dev_own:>18.3e} {len(f.shapes):>6} sh  {f.why}"
                      f"   [{time.perf_counter() - t0:.1f}s]")
            continue
        ps = [p for p in f.ps if p in prange]
        for p in ps:
            target = "exec" if f.coll in ("gather", "scatter", "alltoall") else "legacy"
            mult = p if f.coll in ("gather", "scatter") else 1
            try:
                name, variant = registry.entry(f.algorithm)       # NAME or NAME:VARIANT
                per = build(name, f.coll, p, root=f.root, **variant).algo.nchunksperloop * mult
                n = float(per * 4 * max(1, math.ceil((1 << 20) / (per * 4))))
                # generated for a window whose largest size is n (as tests/test_simulator_formulas.py)
                s = algorithm_schedule(f.algorithm, f.coll, p, root=f.root, target=target,
                                       max_bytes=int(n / mult))
            except ValueError as e:
                print(f"  {row:<26} p={p}: cannot build: {e}")
                break
            t = simulate_schedule(s, n, topo).time_s
            a = (p, n, args.alpha, args.beta, args.gamma)
            d = t / f.doc(*a) - 1
            lo_doc, hi_doc = min(lo_doc, d), max(hi_doc, d)
            dev_own = max(dev_own, abs(t / (f.ccxml or f.doc)(*a) - 1))
        else:
            print(f"  {row:<26} {lo_doc:>+15.3e} {hi_doc:>+10.3e} {dev_own:>18.3e} {len(ps):>8}  {f.why}"
                  f"   [{time.perf_counter() - t0:.1f}s]")


if __name__ == "__main__":
    main()
