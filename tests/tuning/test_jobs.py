"""``select -j N`` and ``tune -j N``: candidates in worker processes, the same output as ``-j 1``.

What a user relies on: the ranking, the unavailable candidates with their reasons, the files, the
manifest and the messages do not depend on how many processes ran them."""
from __future__ import annotations

import os

import pytest
from in_process import ccxml

from ccxml.driver.pool import Pool, default_jobs, run_all


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
