"""Verification speed: steps/s on the largest corpus file and on a ring AllReduce with >= 1M steps.

    python benchmarks/bench_verify.py [--ranks P] [--synthesize] [--repeat N]

Targets (issue 3, issue 7): verify >= 500,000 steps/s on one core, and a 1,000,000-step schedule
verified in <= 2 s including parsing. For each file it prints the parse time, the verify time
(loader checks + interpreter, every call form the file declares) and steps/s for verify alone
and for parse + verify, as CPU time of this process (what one core delivers, whatever else the
machine runs) and as wall time. A calibration line times a plain Python loop so that figures from
a loaded or slow machine can be compared with a typical one. Like ``ccxml verify``, the benchmark
keeps freed memory for reuse (:func:`ccxml.cli.app.keep_freed_memory`);
``--default-malloc`` measures without that.

The ring AllReduce is ccxml's own (``ccxml.algorithms.ring.allreduce(p).to_xml("legacy")``,
p = 708: 1,005,360 steps, TBs split at legacy's 256 steps). The generator needs minutes at that
size, so its output is cached in the temp directory (generated on the first run). With
``--synthesize`` the file is written as text instead: the same ring, one TB per GPU (``2p - 1``
steps, beyond legacy's 256-step TB limit, so the loader check reports ``too-many-steps`` and
takes its step-by-step path; the interpreter still runs every step). The synthesis is
byte-identical to the generator's output where the generator does not split TBs (checked here
for p = 16).
"""
from __future__ import annotations

import argparse
import os
import os as _os
import sys as _sys
import tempfile
import time
from pathlib import Path

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import announce  # noqa: E402 - benchmarks/build_check.py
from calibration import calibration_line  # noqa: E402 - benchmarks/calibration.py

from ccxml.interpreter import verify
from ccxml.loader import reader as xmlload

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "xml-corpus"
TARGET_RATE = 500_000
TARGET_1M_S = 2.0


def ring_allreduce_xml(p: int) -> str:
    """Out-of-place ring AllReduce on p ranks, one chunk per rank, one TB per GPU: ``s``, p-2
    ``rrs``, ``rrcs``, p-2 ``rcs``, ``r`` — the text ccxml writes for the legacy profile."""
    head = (f'<algo name="ring_allreduce" proto="Simple" nchannels="1" nchunksperloop="{p}" '
            f'ngpus="{p}" coll="allreduce" inplace="0" outofplace="1" minBytes="0" '
            f'maxBytes="2147483647">')
    out = [head]
    step = ('      <step s="{}" type="{}" srcbuf="{}" srcoff="{}" dstbuf="o" dstoff="{}" cnt="1" '
            'depid="-1" deps="-1" hasdep="0"/>')
    for r in range(p):
        out.append(f'  <gpu id="{r}" i_chunks="{p}" o_chunks="{p}" s_chunks="0">')
        out.append(f'    <tb id="0" send="{(r + 1) % p}" recv="{(r - 1) % p}" chan="0">')
        seq = [("s", "i", r - 1)] + [("rrs", "i", r - 1 - k) for k in range(1, p - 1)]
        seq += [("rrcs", "i", r)] + [("rcs", "o", r - m) for m in range(1, p - 1)]
        seq += [("r", "o", r + 1)]
        for i, (t, buf, off) in enumerate(seq):
            off %= p
            out.append(step.format(i, t, buf, off, off))
        out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"


def generated_ring(p: int) -> Path:
    """ccxml's own legacy ring AllReduce for p ranks, cached in the temp directory."""
    path = Path(tempfile.gettempdir()) / f"ccxml-bench-ring-allreduce-{p}-legacy.xml"
    if not path.exists():
        from ccxml.algorithms.ring import allreduce
        print(f"generating the ring AllReduce for p={p} with ccxml (slow; cached at {path}) ...",
              flush=True)
        t0 = time.perf_counter()
        text = allreduce(p).to_xml("legacy")
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        print(f"  generated in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def measure(label: str, *, text: str | None = None, path: Path | None = None, target: str = "exec",
            repeat: int = 1) -> None:
    best = None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        schedule = xmlload.loads(text) if text is not None else xmlload.load(str(path))
        c1, w1 = time.process_time(), time.perf_counter()
        rep = verify(schedule, target=target)
        c2, w2 = time.process_time(), time.perf_counter()
        run = (c1 - c0, c2 - c1, w1 - w0, w2 - w1)
        if best is None or run[0] + run[1] < best[0] + best[1]:
            best = run
        n = schedule.nsteps
        del schedule
    cp, cv, wp, wv = best
    interp = [f for f in rep.interpreter_findings if f.severity == "error"]
    loader = [f for f in rep.loader_findings if f.severity == "error"]
    verdict = "PASS" if rep.ok else ("interpreter PASS, loader: " + loader[0].code if not interp and loader
                                     else "FAIL: " + str(rep.first_reason))
    print(f"{label}: {n:,} steps, {verdict}")
    print(f"  cpu : parse {cp:.2f} s, verify {cv:.2f} s = {n / cv:,.0f} steps/s "
          f"(target {TARGET_RATE:,}); parse+verify {cp + cv:.2f} s = {n / (cp + cv):,.0f} steps/s")
    print(f"  wall: parse {wp:.2f} s, verify {wv:.2f} s = {n / wv:,.0f} steps/s; "
          f"parse+verify {wp + wv:.2f} s")
    if n >= 1_000_000:
        per_m = (cp + cv) * 1_000_000 / n
        print(f"  1M steps with parsing: {per_m:.2f} s cpu (target {TARGET_1M_S} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--default-malloc", action="store_true",
                    help="leave glibc's allocator as it is (ccxml verify tunes it)")
    ap.add_argument("--ranks", type=int, default=708, help="ring size (708 gives >= 1M steps)")
    ap.add_argument("--generate", action="store_true",
                    help="(default) ccxml's own generator output, minutes the first time, then cached")
    ap.add_argument("--synthesize", action="store_true",
                    help="a one-TB-per-GPU ring written as text instead of the generator's file")
    ap.add_argument("--repeat", type=int, default=1, help="runs per file; the fastest is shown")
    args = ap.parse_args()
    announce(times_native=False)        # the interpreter is never compiled: a note, no refusal
    if not args.default_malloc:
        from ccxml.cli.app import keep_freed_memory
        tuned = keep_freed_memory()
        print("allocator: freed memory kept for reuse, as `ccxml verify` does" if tuned else
              "allocator: default (not glibc)")
    print(calibration_line())
    if CORPUS.is_dir():
        largest = max(CORPUS.glob("*/*.xml"), key=lambda f: f.stat().st_size)
        measure(f"largest corpus file {largest.relative_to(CORPUS)}", path=largest,
                repeat=max(3, args.repeat))
    else:
        print(f"corpus not found at {CORPUS}; skipping")
    p = args.ranks
    if not args.synthesize:
        measure(f"ring AllReduce p={p} (ccxml generator, legacy)", path=generated_ring(p),
                target="legacy", repeat=args.repeat)
        return
    from ccxml.algorithms.ring import allreduce
    check = 16
    same = allreduce(check).to_xml("legacy") == ring_allreduce_xml(check)
    print(f"synthesised ring text identical to ccxml's generator at p={check}: {same}")
    measure(f"ring AllReduce p={p} (synthesised, one TB per GPU)", text=ring_allreduce_xml(p),
            target="legacy", repeat=args.repeat)


if __name__ == "__main__":
    main()
