"""Where ``ccxml select`` spends its time and memory, candidate by candidate.

    python benchmarks/profile_select.py [--nodes 16] [--coll allreduce] [--bytes 1G] [--only a,b]

For every candidate ``select --preset dgx-h100 --nodes N --coll C --bytes B`` ranks
(:func:`ccxml.registry.entries`), in a forked child process of its own (so that one candidate's
garbage does not weigh on the next, and its peak memory is its own), the stages of
:func:`ccxml.driver.rank._rank_one` are timed one by one: build (the Chunk API program), compile
(the passes), export (the writer), load (the loader), prove (the interpreter's verify; skipped
past ``MAX_PROVED_BUILT_RANKS``, as select does), simulate (on the preset) and simulate on the
other reading of the NICs (``proxy``). Peak RSS is the child's ``ru_maxrss`` (it starts at the
parent's, about 60 MB). CPU seconds, so that a shared machine's load does not show.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)


def _cpu() -> float:
    return time.process_time()


def _peak() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def profile(name: str, coll: str, ranks: int, nbytes: int, topo, others, prove_limit: int) -> dict:
    from ccxml.driver.source import verification_failure
    from ccxml.driver.spec import AlgorithmSpec, build, compile, export
    from ccxml.loader.reader import loads
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import LimitError
    from ccxml.vocab.wire import UNBOUNDED
    row: dict = {"name": name}
    spec = AlgorithmSpec(name, coll, ranks, options={"max_bytes": int(nbytes)}, topology=topo)
    profile_name = "exec"
    try:
        t = _cpu()
        prog = build(spec)
        row["build"] = _cpu() - t
        row["peaks"] = [_peak()]
        t = _cpu()
        try:
            algo = compile(prog, profile_name)
        except LimitError:
            profile_name = UNBOUNDED.name
            algo = compile(build(spec), profile_name, consume=True)
            row["limit"] = True
        row["compile"] = _cpu() - t
        row["peaks"].append(_peak())
        del prog
        t = _cpu()
        text = export(algo, profile_name)
        row["export"] = _cpu() - t
        del algo
        t = _cpu()
        sched = loads(text)
        row["load"] = _cpu() - t
        row["steps"] = sched.nsteps
        row["chunks"] = sched.nchunksperloop
        del text
        t = _cpu()
        if ranks <= prove_limit:
            why = verification_failure(sched, profile_name)
            if why:
                row["error"] = "fails: " + why[:60]
        row["prove"] = _cpu() - t
        row["peaks"].append(_peak())
        t = _cpu()
        r = simulate_schedule(sched, nbytes, topo)
        row["simulate"] = _cpu() - t
        row["peaks"].append(_peak())
        row["time_us"] = r.time_s * 1e6
        t = _cpu()
        for o in others:
            simulate_schedule(sched, nbytes, o)
        row["sim_other"] = _cpu() - t
    except Exception as e:  # noqa: BLE001 - a profile row, whatever the candidate raises
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:60] if str(e) else ''}"
    row["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--preset", default="dgx-h100")
    ap.add_argument("--coll", default="allreduce")
    ap.add_argument("--bytes", default="1G")
    ap.add_argument("--only", default=None)
    ap.add_argument("--peaks", action="store_true", help="peak RSS after each stage")
    ap.add_argument("--prove-limit", type=int, default=None,
                    help="prove up to this many ranks (default: MAX_PROVED_BUILT_RANKS)")
    a = ap.parse_args()
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from ccxml.algorithms import registry
    from ccxml.driver import TopologyOptions, other_reading, resolve_topology
    from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS
    from ccxml.vocab.sizes import parse_size
    topo, _ = resolve_topology(TopologyOptions(preset=a.preset, nodes=a.nodes))
    ranks = topo.nranks
    nbytes = parse_size(a.bytes)
    other = other_reading(topo)
    others = () if other is None else (other[1],)
    limit = MAX_PROVED_BUILT_RANKS if a.prove_limit is None else a.prove_limit
    names = registry.entries(a.coll)
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    cols = ("build", "compile", "export", "load", "prove", "simulate", "sim_other")
    print(f"# select {a.coll} {a.bytes} on {a.preset} x {a.nodes} ({ranks} ranks); CPU seconds; "
          f"prove up to {limit} ranks")
    print(f"# {'candidate':<22}" + "".join(f"{c:>9}" for c in cols) + f"{'total':>9}{'peak MB':>9}"
          f"{'steps':>9}  note")
    total = dict.fromkeys(cols, 0.0)
    ctx = multiprocessing.get_context("fork")
    for name in names:
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            row = pool.submit(profile, name, a.coll, ranks, nbytes, topo, others, limit).result()
        s = sum(row.get(c, 0.0) for c in cols)
        for c in cols:
            total[c] += row.get(c, 0.0)
        print(f"  {name:<22}" + "".join(f"{row.get(c, 0.0):9.2f}" for c in cols) + f"{s:9.2f}"
              f"{row['rss_mb']:9.0f}{row.get('steps', 0):9d}  "
              f"{'(no limits) ' if row.get('limit') else ''}{row.get('error', '')}"
              f"{' peak MB after build/compile/prove/simulate: ' if a.peaks else ''}"
              f"{'/'.join(f'{x:.0f}' for x in row.get('peaks', [])) if a.peaks else ''}"
              f"{' nchunksperloop ' + str(row.get('chunks')) if a.peaks else ''}", flush=True)
    print(f"  {'total':<22}" + "".join(f"{total[c]:9.2f}" for c in cols) + f"{sum(total.values()):9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
