"""Verification speed: steps/s on the largest corpus file and on a ring AllReduce with >= 1M steps.

Run: ``python benchmarks/bench_verify.py [--steps N]``. The ring AllReduce is synthesised as XML
text (one TB per GPU and channel, one step per chunk, in-place, rrcs/rcs chains like RCCL's ring
files): the generator's own ring keeps to the runtimes' 64-step TBs, so it cannot reach 1M steps
on a realistic rank count. Targets (issue 3): >= 500,000 steps/s, 1M steps in <= 2 s with parsing.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from ccxml import xmlload
from ccxml.interpreter import verify

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "xml-corpus"


def ring_allreduce_xml(p: int, channels: int, per: int) -> str:
    """In-place ring allreduce: every (gpu, channel) TB reduces-scatters then all-gathers ``per``
    chunks per block; 2(p-1)·per + per steps per TB."""
    c = p * channels * per
    out = [f'<algo name="bench" proto="LL128" nchannels="{channels}" nchunksperloop="{c}" ngpus="{p}" '
           f'coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">']
    step = ('      <step s="{}" type="{}" srcbuf="i" srcoff="{}" dstbuf="i" dstoff="{}" cnt="1" depid="-1" '
            'deps="-1" hasdep="0"/>')
    for r in range(p):
        out.append(f'  <gpu id="{r}" i_chunks="{c}" o_chunks="0" s_chunks="0">')
        for ch in range(channels):
            out.append(f'    <tb id="{ch}" send="{(r + 1) % p}" recv="{(r - 1) % p}" chan="{ch}">')
            s = 0
            for j in range(per):
                def off(b):
                    return (b % p) * channels * per + ch * per + j
                out.append(step.format(s, "s", off(r - 1), off(r - 1)))
                s += 1
                for k in range(1, p):
                    out.append(step.format(s, "rrcs", off(r - 1 - k), off(r - 1 - k)))
                    s += 1
                for m in range(1, p):
                    out.append(step.format(s, "rcs" if m < p - 1 else "r", off(r - m), off(r - m)))
                    s += 1
            out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"


def measure(label: str, text: str | None = None, path: Path | None = None) -> None:
    t0 = time.perf_counter()
    schedule = xmlload.loads(text) if text is not None else xmlload.load(str(path))
    t1 = time.perf_counter()
    rep = verify(schedule)
    t2 = time.perf_counter()
    n = schedule.nsteps
    print(f"{label}: {n} steps, parse {t1 - t0:.2f} s, verify {t2 - t1:.2f} s "
          f"({n / (t2 - t1):,.0f} steps/s), total {t2 - t0:.2f} s ({n / (t2 - t0):,.0f} steps/s), "
          f"{'PASS' if rep.ok else 'FAIL: ' + str(rep.first_reason)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=1_000_000, help="minimum steps of the ring file")
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--channels", type=int, default=16)
    args = ap.parse_args()
    if CORPUS.is_dir():
        largest = max(CORPUS.glob("*/*.xml"), key=lambda f: f.stat().st_size)
        measure(f"largest corpus file {largest.relative_to(CORPUS)}", path=largest)
    p, k = args.ranks, args.channels
    per_tb = 2 * (p - 1) + 1
    per = max(1, -(-args.steps // (p * k * per_tb)))
    measure(f"ring allreduce p={p} channels={k} chunks/block/channel={per}", text=ring_allreduce_xml(p, k, per))


if __name__ == "__main__":
    main()
