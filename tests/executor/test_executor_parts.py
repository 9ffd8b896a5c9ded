"""The executor's parts that need no MPI: a rank's plan, sizes, inputs, the comparison, and that
ccxml works without mpi4py."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from handbuilt import algo, split_allgather, tbs
from mpirun import REPO

from ccxml.algorithms import ring
from ccxml.executor.data import chunk_elems, compare, make_input, size_of, tolerance
from ccxml.executor.plan import lower_for_run, rank_plan
from ccxml.frontend.algorithm import Options
from ccxml.interpreter import collective_for
from ccxml.interpreter.program import K_CPY, K_RE, K_SEND
from ccxml.loader.reader import loads
from ccxml.vocab.collectives import Collective
from ccxml.vocab.wire import Coll


def plan_of(xml: str, rank: int, inplace: bool = False):
    schedule = loads(xml)
    collective, why = collective_for(schedule)
    assert collective is not None, why
    prog, bad = lower_for_run(schedule, collective, inplace)
    return rank_plan(prog, rank), bad


def test_in_place_reducescatter_output_lies_inside_the_input_at_the_rank_block():
    xml = ring.reducescatter(4, options=Options(inplace=True)).to_xml("exec")
    for r in range(4):
        plan, bad = plan_of(xml, r, inplace=True)
        assert not bad
        assert plan.input == (0, 4)                 # the whole buffer, C = 4 chunks
        assert plan.output == (r, 1)                # NCCL: recvbuff = sendbuff + rank·count
    plan, _ = plan_of(xml, 2, inplace=False)
    assert plan.input == (0, 4) and plan.output == (4, 1)   # out-of-place: separate buffers


def test_nop_dependencies_move_to_the_next_step_and_re_chains_fuse():
    # tb 0 copies two chunks (publishing), tb 1 waits through a nop and then reduces both into o[2]
    g0 = [tbs(0, -1, -1, 0, ("cpy", "i", 0, "o", 0, 2, -1, -1, 1)),
          tbs(1, -1, -1, 0, ("nop", "i", -1, "o", -1, 0, 0, 0, 0), ("re", "o", 0, "o", 2, 1, 0, 0, 0),
              ("re", "o", 1, "o", 2, 1, -1, -1, 1))]
    xml = algo("allreduce", 1, 3, {0: (3, 3, 0, g0)})
    plan, bad = plan_of(xml, 0)
    assert not bad
    copy, = plan.tbs[0].instrs
    fused, = plan.tbs[1].instrs
    assert copy.kind == K_CPY and copy.pub == 0
    assert fused.kind == K_RE and fused.deps == ((0, 0), (0, 0))   # the nop's and its own
    out = plan.output[0]
    assert fused.dst == out + 2 and fused.srcs == (out + 0, out + 1)
    assert fused.pub == 2                    # the step counter after the nop and the chain


def test_send_offsets_are_chunks_of_the_rank_block():
    plan, _ = plan_of(split_allgather(), 1)
    send = plan.tbs[0].instrs[0]
    assert send.kind == K_SEND and send.src == plan.output[0] + 1 and send.deps == ((plan.tbs[1].t, 0),)
    assert plan.tbs[0].send_peer == 0 and plan.tbs[1].recv_peer == 0


def test_out_of_bounds_steps_make_the_schedule_unrunnable():
    bad_xml = split_allgather().replace('type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1"',
                                        'type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="5"')
    _, bad = plan_of(bad_xml, 0)
    assert [f.code for f in bad] == ["out-of-bounds"] and bad[0].gpu == 0


def test_channels_that_are_no_message_tag_make_the_schedule_unrunnable():
    _, bad = plan_of(split_allgather().replace('chan="0"', 'chan="-1"'), 0)
    assert [f.code for f in bad] == ["bad-channel"] * 4
    assert str(bad[0]).startswith("bad-channel: chan -1 is not in 0..32767 (gpu 0, tb 0")


@pytest.mark.parametrize("coll, nbytes, c, p, ce, size", [
    ("allreduce", 1024, 8, 8, 32, 1024),       # 256 floats in 8 chunks
    ("allreduce", 1024, 3, 3, 85, 1020),       # rounded down to whole chunks
    ("allgather", 4096, 4, 4, 256, 4096),      # the output
    ("gather", 4096, 1, 4, 256, 4096),         # the root's whole buffer: p × C chunks
    ("allreduce", 4, 8, 8, 1, 32),             # at least one element per chunk
])
def test_sizes_round_to_whole_chunks_of_whole_elements(coll, nbytes, c, p, ce, size):
    root = 0 if Coll(coll).rooted else None
    col = Collective(Coll(coll), p, c, root=root)
    f32 = np.dtype("float32")
    assert chunk_elems(col, nbytes, f32) == ce
    assert size_of(col, ce, f32) == size


def test_inputs_are_repeatable_per_rank_and_in_range():
    for name in ("float16", "float32", "int32", "uint8", "int64"):
        dt = np.dtype(name)
        a, b, c = make_input(dt, 1000, 3), make_input(dt, 1000, 3), make_input(dt, 1000, 4)
        assert a.dtype == dt and np.array_equal(a, b) and not np.array_equal(a, c)
        if dt.kind == "f":
            assert np.abs(a).max() <= 1     # [-1, 1) rounded to the type
        else:
            assert a.min() >= (0 if dt.kind == "u" or dt.itemsize == 1 else -100) and a.max() < 100


def test_tolerance_only_for_reductions_of_floats():
    assert tolerance("allreduce", np.dtype("float32"), 8) == 2 * 7 * 8 * np.finfo(np.float32).eps
    assert tolerance("allgather", np.dtype("float32"), 8) == 0
    assert tolerance("allreduce", np.dtype("int32"), 8) == 0


def test_compare_names_the_first_wrong_chunk_and_counts_the_rest():
    ref = np.arange(32, dtype=np.int32)
    out = ref.copy()
    assert compare(out, ref, 8, 0.0, 3) is None
    out[9] += 1
    out[30] = 0
    m = compare(out, ref, 8, 0.0, 3)
    assert m.rank == 3 and m.chunks == (1, 3) and m.first == 9 and m.wrong == 1
    assert m.describe().startswith("rank 3, output chunk 1 (elements 8..15): 1 of 8 elements differ; element 9 "
                                   "holds 10, expected 9; and 1 more chunk(s): 3")


def test_compare_floats_within_tolerance_and_unwritten_memory_fails():
    ref = np.linspace(-1, 1, 16).astype(np.float32)
    out = ref + np.float32(1e-6)
    assert compare(out, ref, 4, 1e-5, 0) is None
    assert compare(out, ref, 4, 0.0, 0) is not None
    out[5] = np.nan
    m = compare(out, ref, 4, 1e-5, 0)
    assert m.chunks == (1,) and "(memory no step wrote)" in m.describe()


def test_ccxml_imports_no_mpi4py():
    code = ("import sys, ccxml.cli.app, ccxml.cli.run, ccxml.executor.session, ccxml.executor.mpi; "
            "assert 'mpi4py' not in sys.modules, 'mpi4py imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr


def test_run_without_mpi4py_says_how_to_install_it(tmp_path):
    blocker = tmp_path / "block"
    (blocker / "mpi4py").mkdir(parents=True)
    (blocker / "mpi4py" / "__init__.py").write_text("raise ImportError('no mpi4py here')\n")
    xml = tmp_path / "ag.xml"
    xml.write_text(split_allgather())
    env = {"PYTHONPATH": f"{blocker}:{REPO}", "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-m", "ccxml", "run", str(xml)], capture_output=True, text=True,
                       cwd=tmp_path, env=env)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "pip install 'ccxml[mpi]'" in p.stderr, p.stderr


def test_steps_on_a_missing_peer_make_the_schedule_unrunnable_by_the_loaders_rules():
    """The peer rules are the loader's (docs/findings.md): a send in a TB with send=-1 is its
    step-without-peer, a peer to the rank itself its peer-is-self."""
    xml = split_allgather()
    no_peer = xml.replace('<tb id="0" send="1" recv="-1"', '<tb id="0" send="-1" recv="-1"', 1)
    _, bad = plan_of(no_peer, 0)
    assert [f.code for f in bad] == ["step-without-peer"] and (bad[0].gpu, bad[0].tb) == (0, 0)
    _, bad = plan_of(xml.replace('<tb id="0" send="1" recv="-1"', '<tb id="0" send="0" recv="-1"', 1), 0)
    assert "peer-is-self" in [f.code for f in bad]
    _, bad = plan_of(xml, 0)
    assert bad == []
