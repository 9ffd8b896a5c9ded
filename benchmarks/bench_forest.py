"""Forest: the exact bound, forest's simulated busbw at 1 GiB as a share of it, and synthesis time.

    python benchmarks/bench_forest.py [--quick] [--growth] [--colls allgather,reducescatter,allreduce]

For every topology of issue 23 (dgx-h100 x 1, 2, 4, 8; dgx-a100 x 2, 4; mi300x x 1, 2; pcie x 1;
../shared/topologies ndv4-topo.xml --gpu a100 and ndv5-topo.xml --gpu h100, 2 nodes each) it prints
the exact bound (busbw, max-flow, route rule) with its binding cut, then per collective forest's
busbw at 1 GiB (the simulator, same topology), its share of the bound, k and the synthesis time.
``--growth`` times the synthesis alone on dgx-h100 x 8, 32 and 128 (64, 256, 1,024 GPUs), each
under a 600 s limit. ``--quick``: dgx-h100 x 1 and 2 only.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os as _os
import sys as _sys
import time

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from ccxml.driver import algorithm_schedule  # noqa: E402
from ccxml.simulator import simulate_schedule  # noqa: E402
from ccxml.topology import load_preset, load_topology  # noqa: E402
from ccxml.topology.flow import RULE, exact_bound  # noqa: E402

SHARED = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "..", "shared",
                       "topologies")
TOPOLOGIES = [("dgx-h100", 1), ("dgx-h100", 2), ("dgx-h100", 4), ("dgx-h100", 8), ("dgx-a100", 2),
              ("dgx-a100", 4), ("mi300x", 1), ("mi300x", 2), ("pcie", 1),
              ("ndv4-topo.xml:a100", 2), ("ndv5-topo.xml:h100", 2)]
GIB = 1 << 30


def topology(name: str, nodes: int):
    if name.endswith((".xml:a100", ".xml:h100")):
        path, gpu = name.split(":")
        return load_topology(_os.path.join(SHARED, path), gpu=gpu, nodes=nodes)
    return load_preset(name, nodes)


def _busbw(res, coll, topo) -> float:
    from ccxml.vocab.sizes import busbw_factor
    return GIB / res.time_s * busbw_factor(coll, topo.nranks)


def _synth(nodes: int, q) -> None:
    from ccxml.synthesis.forest import synthesize
    net = load_preset("dgx-h100", nodes).graph()
    t0 = time.perf_counter()
    f = synthesize(net)
    q.put((time.perf_counter() - t0, f.seconds, f.k, f.busbw / f.bound.busbw))


def growth(limit: float = 600.0) -> None:
    print("# synthesis time (AllGather trees, bound included), dgx-h100:")
    for nodes in (8, 32, 128):
        q = multiprocessing.Queue()
        proc = multiprocessing.Process(target=_synth, args=(nodes, q))
        t0 = time.perf_counter()
        proc.start()
        proc.join(limit)
        if proc.is_alive():
            proc.terminate()
            proc.join()
            print(f"  {nodes * 8:5d} GPUs: > {limit:.0f} s (stopped)", flush=True)
            continue
        wall, synth, k, share = q.get() if not q.empty() else (time.perf_counter() - t0, float("nan"), 0, 0)
        print(f"  {nodes * 8:5d} GPUs: {synth:7.2f} s synthesis ({wall:.2f} s with imports), k = {k}, "
              f"LP rate {share:.1%} of the bound", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--growth", action="store_true")
    ap.add_argument("--colls", default="allgather,reducescatter,allreduce")
    ap.add_argument("--only", default="", help="e.g. dgx-h100x8,pciex1")
    args = ap.parse_args()
    colls = args.colls.split(",")
    print(f"# {RULE}")
    print("# AllReduce bound = ReduceScatter + AllGather at their bounds")
    print(f"# {'topology':22s} {'coll':14s} {'bound GB/s':>10s} {'forest GB/s':>11s} {'share':>7s} "
          f"{'build s':>8s}  binding cut")
    rows = TOPOLOGIES[:2] if args.quick else TOPOLOGIES
    if args.only:
        rows = [t for t in rows if f"{t[0]}x{t[1]}" in args.only.split(",")]
    for name, nodes in rows:
        try:
            topo = topology(name, nodes)
        except Exception as e:  # noqa: BLE001 - a missing shared file is one line, not a traceback
            print(f"  {name} x{nodes}: unavailable ({e})")
            continue
        for coll in colls:
            bound = exact_bound(topo.graph(), coll)
            t0 = time.perf_counter()
            try:
                sched = algorithm_schedule("forest", coll, topo.nranks, topology=topo)
            except ValueError as e:         # a limit the layout cannot fit: one line
                print(f"  {name + ' x' + str(nodes):22s} {coll:14s} {bound.busbw / 1e9:10.1f}  cannot be "
                      f"served: {e}", flush=True)
                continue
            build = time.perf_counter() - t0
            res = simulate_schedule(sched, GIB, topo)
            got = _busbw(res, coll, topo)
            print(f"  {name + ' x' + str(nodes):22s} {coll:14s} {bound.busbw / 1e9:10.1f} {got / 1e9:11.1f} "
                  f"{got / bound.busbw:7.1%} {build:8.2f}  {bound.describe_cut()}", flush=True)
    if args.growth:
        growth()


if __name__ == "__main__":
    main()
