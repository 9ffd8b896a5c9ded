"""``select -j N`` and ``tune -j N``: candidates in worker processes, the same output as ``-j 1``.

What a user relies on: the ranking, the unavailable candidates with their reasons, the files, the
manifest and the messages do not depend on how many processes ran them."""
from __future__ import annotations

import os

import pytest
from in_process import ccxml

from ccxml.driver.pool import Pool, default_jobs, run_all, run_ordered


def _square_or_fail(x):
    if x < 0:
        raise ValueError(f"negative {x}")
    return x * x


def test_run_all_keeps_the_order_of_the_inputs():
    items = [(x,) for x in range(9, -1, -1)]
    assert run_all(_square_or_fail, items, 3) == [x * x for x in range(9, -1, -1)]
    assert run_all(_square_or_fail, items, 1) == run_all(_square_or_fail, items, 2)


def test_an_unexpected_error_in_a_worker_is_raised_as_in_the_loop():
    for jobs in (1, 2):
        with pytest.raises(ValueError, match="negative -1"):
            run_all(_square_or_fail, [(1,), (-1,)], jobs)


def test_a_pool_serves_several_maps_in_order():
    with Pool(2) as pool:
        assert pool.parallel
        assert pool.map(_square_or_fail, [(1,), (2,), (3,)]) == [1, 4, 9]
        assert pool.map(_square_or_fail, [(4,), (5,)]) == [16, 25]
    assert not Pool(1).parallel


def test_default_jobs_is_the_machine_s_cores():
    assert 1 <= default_jobs() <= (os.cpu_count() or 1)


@pytest.mark.parametrize("args", [
    # a cluster: links shared, every candidate ranked
    ["-c", "allreduce", "--bytes", "1M", "--preset", "dgx-h100", "--nodes", "1"],
    # 6 ranks: several candidates cannot build this shape (their reasons must not change)
    ["-c", "allgather", "--bytes", "64K", "-n", "6"],
])
def test_select_output_is_the_same_with_any_jobs(args):
    outs = []
    for jobs in ("1", "2"):
        for fmt in ([], ["--json"]):
            code, out, err = ccxml("select", *args, *fmt, "-j", jobs)
            assert code == 0, err
            outs.append(out)
    assert outs[0::2] == [outs[0]] * 2 and outs[1::2] == [outs[1]] * 2
    assert "n/a:" in outs[0] or "allreduce" in args


def test_select_rejects_zero_jobs():
    code, _, err = ccxml("select", "-c", "allreduce", "--bytes", "1M", "-n", "4", "-j", "0")
    assert code == 2 and "jobs" in err


def _tree(path):
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


def test_tune_writes_the_same_directory_and_manifest_with_any_jobs(tmp_path):
    got = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}" / "algos"
        code, stdout, err = ccxml("tune", "-n", "8", "-a", "ring,rhd,mesh", "-c",
                                  "allreduce", "--max-bytes", "16M",
                                  "-q", "-o", out, "-j", jobs)
        assert code == 0, err
        manifest = (tmp_path / f"j{jobs}" / "algos.manifest.json").read_bytes()
        got.append((_tree(out), manifest, stdout.replace(f"j{jobs}", "jX"), err))
    assert got[0] == got[1]
    assert len(got[0][0]) >= 2


def _stage(x):
    return x + 1


def _log_then(key, got):
    # a second stage for the odd keys: the graph of tasks grows as results come in
    return [(0, ("more", key), _stage, (got * 10,))] if isinstance(key, int) and key % 2 else []


def test_run_ordered_gives_the_same_results_with_any_jobs():
    tasks = [(-x, x, _stage, (x,)) for x in range(7)]
    one = run_ordered(tasks, _log_then, 1)
    assert one == run_ordered(tasks, _log_then, 2) == run_ordered(tasks, _log_then, 3)
    assert one[3] == 4 and one[("more", 3)] == 41 and ("more", 2) not in one


def test_run_ordered_starts_the_lowest_priority_first():
    order = []

    def then(key, got):
        order.append(key)
        return []
    run_ordered([(5, "late", _stage, (0,)), (1, "first", _stage, (0,)), (1, "second", _stage, (0,))],
                then, 1)
    assert order == ["first", "second", "late"]


def test_select_staged_candidates_equal_the_sequential_ones():
    """-j N runs a candidate's build, proof and simulations as separate tasks (longest first):
    every candidate's answer is the one the sequential path gives, unavailable ones included."""
    from ccxml.algorithms import registry
    from ccxml.driver import other_reading
    from ccxml.driver.rank import _rank_one, _staged
    from ccxml.simulator import DEFAULT_TOPOLOGY
    from ccxml.topology import load_preset
    cluster = load_preset("dgx-h100", 1)
    for coll, ranks, nbytes, topo, others in (
            ("allreduce", 8, 1 << 20, cluster, (other_reading(cluster)[1],)),
            ("allgather", 6, 1 << 16, DEFAULT_TOPOLOGY, ())):     # 6: some cannot build it
        names = registry.entries(coll)
        seq = [_rank_one(n, coll, ranks, nbytes, topo, None, others) for n in names]
        par = _staged(names, coll, ranks, nbytes, topo, None, others, 2)
        assert [c[0] for c in par] == names
        for a, b in zip(seq, par):
            assert a[0] == b[0] and a[2:4] == b[2:4]
            assert (a[1] is None) == (b[1] is None)
            if a[1] is not None:
                assert a[1].time_s == b[1].time_s and [r.time_s for r in a[4]] == [r.time_s for r in b[4]]
        assert any(c[1] is not None for c in seq)
        assert coll == "allreduce" or any(c[1] is None for c in seq)


def test_paused_gc_restores_the_collector_and_frees_cycles():
    import gc
    import weakref

    from ccxml.driver.pool import paused_gc

    class Node:
        pass

    def make():
        a, b = Node(), Node()
        a.other, b.other = b, a             # a cycle: only the collector frees it
        assert not gc.isenabled()
        return weakref.ref(a)
    assert gc.isenabled()
    ref = paused_gc(make)
    assert gc.isenabled() and ref() is None


def test_a_pool_map_with_costs_keeps_the_order_of_the_inputs():
    with Pool(2) as pool:
        got = pool.map(_square_or_fail, [(x,) for x in range(6)], cost=lambda args: args[0] % 3)
    assert got == [x * x for x in range(6)]
