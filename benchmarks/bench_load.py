"""Loader speed: steps/s of ccxml.load (and of the loader checks) on real and generated files.

    python benchmarks/bench_load.py [--steps N] [--corpus DIR]

Prints steps/s for the largest corpus file (by step count) and for a generated in-place ring
AllReduce of >= N steps (default 1,000,000: 512 GPUs x 2 channels x 1023 steps per TB; exec
rejects its TB length, but the parse cost is what is measured here).
"""
from __future__ import annotations

import argparse
import os as _os
import sys
import sys as _sys
import tempfile
import time
from pathlib import Path

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import announce  # noqa: E402 - benchmarks/build_check.py

from ccxml.loader.reader import load
from ccxml.loader.rules import check


def ring_allreduce_xml(n: int, nch: int) -> str:
    """In-place ring AllReduce: per channel one TB per GPU, 2n-1 steps (s, rrs.., rrcs, rcs.., r)."""
    chunks = n * nch
    out = [f'<algo name="ring_allreduce_{n}" proto="Simple" nchannels="{nch}" '
           f'nchunksperloop="{chunks}" ngpus="{n}" coll="allreduce" inplace="1" outofplace="0" '
           f'minBytes="0" maxBytes="0">']
    step = ('      <step s="{}" type="{}" srcbuf="i" srcoff="{}" dstbuf="i" dstoff="{}" cnt="1" '
            'depid="-1" deps="-1" hasdep="0"/>')
    for r in range(n):
        out.append(f'  <gpu id="{r}" i_chunks="{chunks}" o_chunks="{chunks}" s_chunks="0">')
        for c in range(nch):
            out.append(f'    <tb id="{c}" send="{(r + 1) % n}" recv="{(r - 1) % n}" chan="{c}">')
            seq = [("s", r)] + [("rrs", r - j) for j in range(1, n - 1)] + [("rrcs", r + 1)]
            seq += [("rcs", r - m + 1) for m in range(1, n - 1)] + [("r", r + 2)]
            for i, (t, k) in enumerate(seq):
                off = c * n + k % n
                out.append(step.format(i, t, off, off))
            out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"


def measure(path: Path, repeat: int) -> tuple[int, float, float]:
    best_load = best_check = float("inf")
    nsteps = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        s = load(path)
        t1 = time.perf_counter()
        check(s, "exec")
        t2 = time.perf_counter()
        best_load, best_check = min(best_load, t1 - t0), min(best_check, t2 - t1)
        nsteps = s.nsteps
        del s
    return nsteps, best_load, best_check


def report(label: str, path: Path, repeat: int) -> None:
    nsteps, t_load, t_check = measure(path, repeat)
    size = path.stat().st_size
    print(f"{label}: {path.name}: {nsteps} steps, {size / 1e6:.1f} MB")
    print(f"  load:  {t_load:.3f} s = {nsteps / t_load:,.0f} steps/s ({size / 1e6 / t_load:.0f} MB/s)")
    print(f"  check: {t_check:.3f} s = {nsteps / t_check:,.0f} steps/s (exec profile, all rules)")
    print(f"  load+check: {nsteps / (t_load + t_check):,.0f} steps/s")


def main() -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--corpus", type=Path, default=here.parent / "shared" / "xml-corpus")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    announce(times_native=False)        # the loader is never compiled: a note, no refusal

    if args.corpus.is_dir():
        files = sorted(args.corpus.glob("*/*.xml"))
        biggest = max(files, key=lambda p: (load(p).nsteps, p.name))
        report("largest corpus file", biggest, args.repeat * 3)
    else:
        print(f"corpus not found at {args.corpus}; skipping")

    n = 4
    while 2 * n * (2 * n - 1) < args.steps and n < 2048:
        n *= 2
    nch = max(1, -(-args.steps // (n * (2 * n - 1))))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"ring_allreduce_{n}x{nch}.xml"
        p.write_text(ring_allreduce_xml(n, nch))
        report("generated ring AllReduce", p, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
