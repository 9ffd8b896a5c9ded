"""The best fixed algorithm's busbw at 1 GiB per topology of issue 23 (the "best fixed" column).

    python benchmarks/bench_fixed.py [--colls allgather,allreduce] [--only dgx-h100x4,pciex1]
                                     [--out DIR] [--summary]

For every topology of issue 23 (dgx-h100 x 1, 2, 4, 8; dgx-a100 x 2, 4; mi300x x 1, 2; pcie x 1;
../shared/topologies ndv4-topo.xml --gpu a100 and ndv5-topo.xml --gpu h100, 2 nodes each) and every
collective it runs, one after the other and once each,

    ccxml select -c COLL --bytes 1G -j 1 --json (--preset P | --topology FILE --gpu G) --nodes N

keeps the JSON in DIR (default $TMPDIR/ccxml-bench-fixed/, one file per run, reused when present), and
prints per topology and collective: the bound select prints, the first algorithm of the ranking
that is not ``forest`` (the best fixed algorithm) with its busbw, and forest's own rank and busbw.
``--summary`` prints the table from DIR without running anything. Each select simulates every
algorithm (a minute or more on a busy 2-core machine), so this is meant to run in the background.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "topologies")
TOPOLOGIES = [("dgx-h100", 1), ("dgx-h100", 2), ("dgx-h100", 4), ("dgx-h100", 8), ("dgx-a100", 2),
              ("dgx-a100", 4), ("mi300x", 1), ("mi300x", 2), ("pcie", 1),
              ("ndv4-topo.xml:a100", 2), ("ndv5-topo.xml:h100", 2)]
SHORT = {"allgather": "AG", "reducescatter": "RS", "allreduce": "AR"}


def label(name: str, nodes: int) -> str:
    if ":" in name:
        path, gpu = name.split(":")
        return f"{path} --gpu {gpu} x{nodes}"
    return f"{name} x {nodes}"


def key(name: str, nodes: int) -> str:
    return f"{name.split(':')[0].replace('-topo.xml', '')}x{nodes}"


def topology_args(name: str, nodes: int) -> list[str]:
    if ":" in name:
        path, gpu = name.split(":")
        return ["--topology", os.path.join(SHARED, path), "--gpu", gpu, "--nodes", str(nodes)]
    return ["--preset", name, "--nodes", str(nodes)]


def run_one(name: str, nodes: int, coll: str, out: str) -> str:
    path = os.path.join(out, f"{key(name, nodes)}-{coll}.json")
    if os.path.exists(path):
        return path
    cmd = [sys.executable, "-m", "ccxml", "select", "-c", coll, "--bytes", "1G", "-j", "1", "--json",
           *topology_args(name, nodes)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"# {label(name, nodes)} {coll}: select exited {proc.returncode}: "
              f"{proc.stderr.strip().splitlines()[-1:] or ''}", flush=True)
        return ""
    data = json.loads(proc.stdout)
    data["_wall_s"] = wall
    data["_command"] = " ".join(["ccxml", *cmd[3:]])
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)
    return path


def row(name: str, nodes: int, coll: str, path: str) -> str:
    with open(path) as f:
        data = json.load(f)
    ranking = data["ranking"]
    fixed = next((r for r in ranking if r["algorithm"].split(":")[0] != "forest"), None)
    forest = next(((i, r) for i, r in enumerate(ranking, 1) if r["algorithm"].split(":")[0] == "forest"),
                  None)
    fx = f"{fixed['busbw_GBps']:.1f} ({fixed['algorithm']})" if fixed else "–"
    fo = f"{forest[1]['busbw_GBps']:.1f} (rank {forest[0]})" if forest else "–"
    return (f"| {label(name, nodes)} | {SHORT.get(coll, coll)} | {data['bound']['busbw_GBps']:.1f} "
            f"| {fx} | {fo} | {data.get('_wall_s', float('nan')):.0f} s |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--colls", default="allgather,allreduce")
    ap.add_argument("--only", default="", help="e.g. dgx-h100x8,pciex1,ndv4x2")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "ccxml-bench-fixed"))
    ap.add_argument("--summary", action="store_true", help="print the table from --out only")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    os.makedirs(args.out, exist_ok=True)
    print("| topology | coll | select's bound | best fixed (select) | forest in select | wall |")
    print("|---|---|---|---|---|---|", flush=True)
    for name, nodes in TOPOLOGIES:
        if only and key(name, nodes) not in only:
            continue
        for coll in args.colls.split(","):
            path = os.path.join(args.out, f"{key(name, nodes)}-{coll}.json")
            if not args.summary:
                path = run_one(name, nodes, coll, args.out)
            if path and os.path.exists(path):
                print(row(name, nodes, coll, path), flush=True)


if __name__ == "__main__":
    main()
