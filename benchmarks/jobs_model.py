"""select -j N on an idle machine, modelled from measured task times.

    python benchmarks/jobs_model.py [--nodes 4] [--jobs 2]

On a shared machine the wall time of ``select -j 2`` says more about the other processes than
about select. This runs select's staged tasks (:func:`ccxml.driver.rank._staged`: each
candidate's build, then its proof and simulations) one after the other in this process, timing
each in CPU seconds, then replays the pool's policy (a priority queue, a task handed only to a
free worker, :func:`ccxml.driver.pool.run_ordered`) on N workers with those durations: the
makespan N idle cores would give, beside the sum (``-j 1``'s work) and the same replay in
registry order with one task per candidate (the old pool). Process start-up and the texts'
transfer between processes are not in it (``bench_scale.py`` measures whole processes).
"""
from __future__ import annotations

import argparse
import heapq
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def replay(tasks, then, durations, jobs):
    """Makespan of the pool's list scheduling with ``durations[key]``."""
    queue, seq = [], 0

    def push(items):
        nonlocal seq
        for prio, key, *_ in items:
            heapq.heappush(queue, (prio, seq, key))
            seq += 1
    push(tasks)
    running: list[tuple[float, int, object]] = []     # (end, seq, key)
    now, n = 0.0, 0
    while queue or running:
        while queue and len(running) < jobs:
            _, _, key = heapq.heappop(queue)
            heapq.heappush(running, (now + durations[key][0], n, key))
            n += 1
        now, _, key = heapq.heappop(running)
        push(then(key, durations[key][1]))
    return now


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--coll", default="allreduce")
    a = ap.parse_args()
    import ccxml.driver.pool as pool
    import ccxml.driver.rank as rank
    from ccxml.algorithms import registry
    from ccxml.driver import TopologyOptions, other_reading, resolve_topology
    topo, _ = resolve_topology(TopologyOptions(preset="dgx-h100", nodes=a.nodes))
    names = registry.entries(a.coll)
    durations: dict = {}
    captured: dict = {}
    real = pool.run_ordered

    def timed(fn):
        def run(*args):
            t = time.process_time()
            got = pool.paused_gc(fn, *args)
            return time.process_time() - t, got
        return run

    def spy(tasks, then, jobs):
        tasks = list(tasks)
        captured["first"], captured["then"] = tasks, then

        def then2(key, got):
            durations[key] = got
            return [(p, k, timed(f), args) for p, k, f, args in then(key, got[1])]
        out = real([(p, k, timed(f), args) for p, k, f, args in tasks], then2, 1)
        return {k: v[1] for k, v in out.items()}
    pool.run_ordered = spy
    try:
        rank._staged(names, a.coll, topo.nranks, 1 << 30, topo, None, (other_reading(topo)[1],), a.jobs)
    finally:
        pool.run_ordered = real
    total = sum(d for d, _ in durations.values())
    staged = replay(captured["first"], captured["then"], durations, a.jobs)
    # the old pool: one task per candidate, registry order
    per = {}
    for key, (d, _) in durations.items():
        per[key[0]] = per.get(key[0], 0.0) + d
    old = replay([(i, (i,), None, ()) for i in range(len(names))], lambda k, g: [],
                 {(i,): (per[i], None) for i in per}, a.jobs)
    print(f"# select {a.coll} 1G on dgx-h100 x {a.nodes}: tasks' CPU seconds, replayed on {a.jobs} workers")
    print(f"  sum of the tasks (-j 1's work): {total:7.2f} s")
    print(f"  staged, longest first:          {staged:7.2f} s = {staged / total:.2f}x")
    print(f"  one task per candidate, in registry order: {old:7.2f} s = {old / total:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
