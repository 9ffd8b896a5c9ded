"""``mpiexec -n P ccxml run FILE --check``: real processes, real data, MPI's collective as the
reference. Skipped with the install command where mpi4py or mpiexec is missing."""
from __future__ import annotations

import re

import pytest
from handbuilt import direct_alltoall, split_allgather
from mpirun import ccxml_run

from ccxml.algorithms import available, build
from ccxml.executor.reference import MPI_NAMES
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.topology.model import Topology
from ccxml.vocab.wire import Coll


def counts_for(p: int) -> tuple:
    """An uneven alltoallv matrix with some empty pairs."""
    return tuple(tuple((i + 2 * j) % 3 for j in range(p)) for i in range(p))


def shapes(p: int):
    """Topologies to try for algorithms that need one, most regular first."""
    if p % 2 == 0 and p > 2:
        yield Topology.uniform(2, p // 2)
    yield Topology.uniform(p, 1)
    yield Topology.uniform(1, p)
    if p > 2:
        yield Topology.from_groups([1, p - 1])
    yield network(p)


def network(p: int) -> Topology:
    """A network for algorithms that take only one (forest): p GPUs on one PCIe switch with a
    NIC, one node, or two nodes of p/2 when p is even."""
    from ccxml.topology.network import NetworkSpec
    nodes = 2 if p % 2 == 0 else 1
    return Topology(network=NetworkSpec.model_validate({
        "name": "mpi-sweep", "gpus": p // nodes, "nodes": nodes,
        "fabric": {"kind": "switch" if nodes > 1 else "none"},
        "devices": [{"name": "sw", "kind": "pcie-switch"}, {"name": "nic0", "kind": "nic", "bandwidth": 10e9}],
        "links": [{"a": "gpu{g}", "b": "sw", "bandwidth": 30e9}, {"a": "nic0", "b": "sw", "bandwidth": 30e9}]}))


def write_schedule(tmp_path, name: str, coll: Coll, p: int, inplace: bool = False) -> list:
    """Generate ``name``'s ``coll`` for ``p`` ranks; the ``ccxml run`` arguments that run it (file
    and --counts). Algorithms that need a topology get the first shape they accept."""
    kw = {}
    if coll.rooted:
        kw["root"] = p - 1
    if coll is Coll.ALLTOALLV:
        kw["counts"] = counts_for(p)
    opts = Options(inplace=inplace)
    try:
        prog = build(name, coll, p, options=opts, **kw)
    except AlgorithmError as e:
        if "topology" not in str(e):
            raise
        for topo in shapes(p):
            try:
                prog = build(name, coll, p, options=opts, topology=topo, **kw)
                break
            except AlgorithmError:
                continue
        else:
            raise
    path = tmp_path / f"{name}_{coll.value}_{p}.xml"
    path.write_text(prog.to_xml("exec"))
    args = [path]
    if coll is Coll.ALLTOALLV:
        csv = tmp_path / f"counts_{p}.csv"
        csv.write_text("\n".join(",".join(map(str, row)) for row in kw["counts"]) + "\n")
        args += ["--counts", csv]
    return args


def assert_checked(res, nsizes: int = 1):
    assert res.code == 0, res.err + res.out
    rows = res.rows()
    assert len(rows) == nsizes, res.out
    for row in rows:
        assert row[6] == "0", row          # the #wrong column
    return rows


# ---- a representative set: several algorithms x collectives at 2, 4 and 8 processes ---------

CASES = [
    ("ring", "allreduce", 2, "float32"),
    ("pairwise", "alltoall", 2, "int32"),
    ("star", "broadcast", 2, "float64"),
    ("mesh", "allreduce", 4, "float16"),
    ("ring", "allgather", 4, "int8"),
    ("rhd", "reducescatter", 4, "float32"),
    ("pairwise", "alltoallv", 4, "int64"),
    ("ring", "gather", 4, "float32"),
    ("star", "scatter", 4, "uint8"),
    ("ring", "reduce", 4, "float32"),
    ("ring", "allreduce", 8, "float32"),
    ("mesh", "alltoall", 8, "int32"),
]


@pytest.mark.parametrize("name, coll, p, dtype", CASES, ids=[f"{a}-{c}-{p}" for a, c, p, _ in CASES])
def test_schedule_matches_mpi(tmp_path, name, coll, p, dtype):
    args = write_schedule(tmp_path, name, Coll(coll), p)
    res = ccxml_run(p, *args, "--check", "--dtype", dtype, "--bytes", "4K", "--iters", "1", "-w", "0")
    row, = assert_checked(res)
    assert row[2] == dtype
    assert f"checked against {MPI_NAMES[Coll(coll)]}" in res.out


def test_in_place_call_form_matches_mpi(tmp_path):
    args = write_schedule(tmp_path, "ring", Coll.REDUCESCATTER, 4, inplace=True)
    res = ccxml_run(4, *args, "--check", "--bytes", "4K", "--iters", "1", "-w", "0")
    assert_checked(res)
    assert "reducescatter, 4 ranks" in res.out and "in-place" in res.out


def test_sweep_prints_an_nccl_tests_table_beside_mpi(tmp_path):
    args = write_schedule(tmp_path, "ring", Coll.ALLREDUCE, 2)
    res = ccxml_run(2, *args, "--check", "-b", "1K", "-e", "4K", "-f", "2", "--iters", "2", "--dtype", "int32")
    rows = assert_checked(res, nsizes=3)
    assert [int(r[0]) for r in rows] == [1024, 2048, 4096]          # size (B)
    assert [int(r[1]) for r in rows] == [256, 512, 1024]            # count (elements)
    for r in rows:
        t, algbw, busbw, mpi_t, mpi_algbw, mpi_busbw = map(float, (r[3], r[4], r[5], r[7], r[8], r[9]))
        assert t > 0 and mpi_t > 0
        assert algbw == pytest.approx(int(r[0]) / t / 1e3, rel=0.01, abs=0.002)   # B/us = 1e-3 GB/s
        assert busbw == pytest.approx(algbw, abs=0.002)        # allreduce busbw factor 2(p-1)/p = 1
        assert mpi_busbw == pytest.approx(mpi_algbw, abs=0.002)
    head = [ln for ln in res.out.splitlines() if ln.startswith("#")]
    assert any("MPI_Allreduce" in ln for ln in head) and any("(exact)" in ln for ln in head)
    assert re.search(r"# +size +count +type +time +algbw +busbw +#wrong +time +algbw +busbw", res.out)


# ---- broken schedules: named rank and chunk, or the blocked steps within the timeout --------

def test_wrong_offset_fails_naming_rank_and_chunk(tmp_path):
    path, = write_schedule(tmp_path, "ring", Coll.ALLGATHER, 4)
    text = path.read_text()
    # rank 2 receives block 1 and forwards it (rcs): store it at chunk 3 instead of chunk 1
    step = text.index('type="rcs" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1"', text.index('<gpu id="2"'))
    broken = tmp_path / "broken.xml"
    broken.write_text(text[:step] + text[step:].replace('dstoff="1"', 'dstoff="3"', 1))
    res = ccxml_run(4, broken, "--check", "--bytes", "4K", "--iters", "1", "-w", "0")
    assert res.code == 1, res.out + res.err
    assert "the result differs from MPI_Allgather" in res.err
    # chunk 1 is never written (chunk 3 is overwritten later by the right block): one line
    assert "rank 2, output chunk 1 (elements 256..511): 256 of 256 elements differ" in res.err
    assert "memory no step wrote" in res.err and res.err.count("rank ") == 1
    assert not res.rows()


def test_removed_dependency_fails_naming_rank_and_chunk(tmp_path):
    good, broken = tmp_path / "good.xml", tmp_path / "nodep.xml"
    good.write_text(split_allgather())
    broken.write_text(split_allgather(dep=False))
    assert_checked(ccxml_run(2, good, "--check", "--bytes", "1K", "--iters", "1", "-w", "0"))
    res = ccxml_run(2, broken, "--check", "--bytes", "1K", "--iters", "1", "-w", "0")
    assert res.code == 1, res.out + res.err
    # each rank's TB 0 sends its output block before TB 1 has copied the input there
    assert "rank 0, output chunk 1 (elements 128..255)" in res.err
    assert "rank 1, output chunk 0 (elements 0..127)" in res.err


def test_deadlock_ends_within_the_timeout_with_the_blocked_steps(tmp_path):
    path = tmp_path / "recv_first.xml"
    path.write_text(direct_alltoall(2, recv_first=True))
    res = ccxml_run(2, path, "--bytes", "1K", "--timeout", "2", timeout=60)
    assert res.code == 1
    assert res.seconds < 2 + 15                    # the timeout, plus starting 2 Pythons under load
    assert "hangs (no progress for 2 s)" in res.err
    assert ("hang: cycle of 2 TBs: gpu 0 tb 1 step 0 (r) waits for a message on link 1->0 chan 0 -> "
            "gpu 1 tb 1 step 0 (r) waits for a message on link 0->1 chan 0 -> back to gpu 0 tb 1") in res.err


def test_unpublished_dependency_hangs_and_says_which(tmp_path):
    path = tmp_path / "nopub.xml"
    path.write_text(split_allgather(hasdep=0))
    res = ccxml_run(2, path, "--check", "--bytes", "1K", "--timeout", "2", timeout=60)
    assert res.code == 1
    assert "gpu 0 tb 0 step 0 (s) waits for tb 1 to publish step 0" in res.err
    assert "gpu 1 tb 1 step 1 (r) waits for a message on link 0->1 chan 0" in res.err


def test_a_message_nobody_receives_is_reported(tmp_path):
    text = split_allgather()
    send = '<step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="1" deps="0" hasdep="0"/>'
    extra = '<step s="1" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>'
    path = tmp_path / "extra_send.xml"
    path.write_text(text.replace(send, f"{send}\n      {extra}"))          # on rank 1 only
    res = ccxml_run(2, path, "--bytes", "1K", "--timeout", "2", timeout=60)
    assert res.code == 1
    assert ("leftover-message: 1 message(s) left on link 1->0 chan 0 at the end: sent but never received"
            in res.err), res.err


def test_links_are_unbounded(tmp_path):
    """Each side sends 3 calls before it receives: verify says deadlock-fifo (a Simple link
    buffers 2 calls), the executor's links buffer without bound, so the run completes."""
    path = tmp_path / "fifo.xml"
    path.write_text(direct_alltoall(2, per=3, proto="Simple", max_bytes=1 << 20))
    assert_checked(ccxml_run(2, path, "--check", "--bytes", "4K", "--iters", "1", "-w", "0"))


# ---- unusable input: one line, exit 2, printed once -----------------------------------------

def test_process_count_must_match_the_file(tmp_path):
    args = write_schedule(tmp_path, "ring", Coll.ALLREDUCE, 4)
    res = ccxml_run(2, *args, "--bytes", "1K")
    assert res.code == 2 and res.out == ""
    assert res.err.count("\n") == 1 and "is for 4 ranks but this run has 2 process(es)" in res.err


@pytest.mark.parametrize("bad", [["--dtype", "complex64"], ["--bytes", "lots"]])
def test_bad_options_are_reported_once(tmp_path, bad):
    path = tmp_path / "ag.xml"
    path.write_text(split_allgather())
    res = ccxml_run(2, path, *bad)
    assert res.code == 2 and res.err.count("\n") == 1 and res.err.startswith("ccxml: "), res.err


def test_alltoallv_needs_counts(tmp_path):
    path, _, _ = write_schedule(tmp_path, "pairwise", Coll.ALLTOALLV, 2)
    res = ccxml_run(2, path, "--bytes", "1K")
    assert res.code == 2 and res.err.count("\n") == 1 and "--counts" in res.err, res.err


# ---- the full sweep ------------------------------------------------------------------------

SWEEP = [pytest.param(name, coll, p, id=f"{name}-{coll.value}-{p}")
         for p in (2, 3, 4, 8) for name, alg in available().items() for coll in alg.builders]


@pytest.mark.slow
@pytest.mark.parametrize("name, coll, p", SWEEP)
def test_every_algorithm_and_collective_matches_mpi(tmp_path, name, coll, p):
    try:
        args = write_schedule(tmp_path, name, coll, p)
    except AlgorithmError as e:
        pytest.skip(f"{name} cannot build {coll.value} on {p} ranks: {e}")
    assert_checked(ccxml_run(p, *args, "--check", "--bytes", "4K", "--iters", "1", "-w", "0"))
