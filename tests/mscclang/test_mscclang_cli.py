"""``ccxml mscclang``: MSCCLang scripts run unchanged, their XML loads and proves."""
from __future__ import annotations

import pytest
from mscclang_cli import EXAMPLES, PROGRAMS, run

from ccxml import verify
from ccxml.loader import loads


def _compile(tmp_path, script, *args, target="exec"):
    out_path = tmp_path / "out.xml"
    code, out, err = run(["mscclang", "--target", target, "-o", out_path, script, *args])
    assert code == 0, err
    text = out_path.read_text()
    report = verify(text, target=target)
    assert report.ok, report.first_reason
    return loads(text), out, err


def test_ring_allreduce_keeps_its_thread_block_hints(tmp_path):
    sched, out, err = _compile(tmp_path, EXAMPLES / "ring_allreduce.py", 8, 1)
    assert "wrote" in out and "ring_allreduce_8 (allreduce), 8 ranks" in out and err == ""
    assert (sched.coll, sched.inplace, sched.outofplace, sched.nchunksperloop) == ("allreduce", 1, 0, 8)
    for g in sched.gpus:                    # sendtb=0/recvtb=0: one TB, next and previous rank
        assert [(tb.send, tb.recv, tb.chan) for tb in g.tbs] == [((g.id + 1) % 8, (g.id - 1) % 8, 0)]
    types = {st.type for g in sched.gpus for tb in g.tbs for st in tb.steps}
    assert types == {"s", "rrs", "rrcs", "rcs", "r"}          # fused as msccl-tools fuses


def test_instances_replicate_onto_their_own_channels(tmp_path):
    sched, _, _ = _compile(tmp_path, EXAMPLES / "ring_allreduce.py", 4, 3)
    assert (sched.nchunksperloop, sched.nchannels) == (12, 3)
    assert sorted(tb.chan for tb in sched.gpus[0].tbs) == [0, 1, 2]


def test_a_64_rank_ring_is_split_to_fit_and_says_so_once(tmp_path):
    sched, _, err = _compile(tmp_path, EXAMPLES / "ring_allreduce.py", 64, 1)
    assert max(len(tb.steps) for g in sched.gpus for tb in g.tbs) <= 64
    assert err.count("\n") == 1 and "went onto extra channels" in err


def test_allpairs_alltoall_spreads_over_channels_past_32_peers(tmp_path):
    sched, _, err = _compile(tmp_path, EXAMPLES / "alltoall_allpairs.py", 34, 1)
    assert sched.nchannels == 2 and "spread its transfers over 2 channels" in err
    for g in sched.gpus:
        for chan in (0, 1):
            assert sum(1 for tb in g.tbs if tb.chan == chan and tb.send >= 0) <= 32


def test_hierarchical_allreduce(tmp_path):
    sched, _, _ = _compile(tmp_path, EXAMPLES / "hierarchical_allreduce.py", 4, 2, 1)
    assert (sched.ngpus, sched.nchunksperloop) == (8, 8)


def test_named_scratch_group_split_and_provenance(tmp_path):
    sched, _, _ = _compile(tmp_path, PROGRAMS / "two_step_alltoall.py", 3, 2)
    assert sched.coll == "alltoall" and max(g.s_chunks for g in sched.gpus) > 0


def test_the_forms_before_2022_05(tmp_path):
    _compile(tmp_path, PROGRAMS / "old_forms.py")


def test_a_custom_collective_runs_for_legacy(tmp_path):
    sched, out, _ = _compile(tmp_path, PROGRAMS / "custom_neighbour.py", 4, target="legacy")
    assert sched.coll == "custom" and "(custom)" in out


@pytest.mark.parametrize("target", ["rccl", "legacy"])
def test_targets_and_size_window(tmp_path, target):
    out_path = tmp_path / "r.xml"
    code, _, err = run(["mscclang", "--target", target, "--min-bytes", "1024", "--max-bytes", "1048576",
                        "-o", out_path, EXAMPLES / "ring_allreduce.py", 4, 1])
    assert code == 0, err
    sched = loads(out_path.read_text())
    assert (sched.min_bytes, sched.max_bytes) == (1024, 1048576)
    if target == "rccl":        # RCCL runs s r cpy re nop only
        assert {st.type for g in sched.gpus for tb in g.tbs for st in tb.steps} <= {"s", "r", "cpy", "re", "nop"}
    assert verify(out_path.read_text(), target=target).ok


def test_output_is_byte_reproducible(tmp_path):
    texts = []
    for n in range(2):
        out_path = tmp_path / f"{n}.xml"
        code, _, err = run(["mscclang", "-o", out_path, PROGRAMS / "two_step_alltoall.py", 2, 3])
        assert code == 0, err
        texts.append(out_path.read_bytes())
    assert texts[0] == texts[1]


def test_stdout_and_default_paths(tmp_path, monkeypatch):
    code, out, err = run(["mscclang", "-o", "-", EXAMPLES / "ring_allreduce.py", 4, 1])
    assert code == 0 and out.startswith("<algo ") and "wrote stdout" in err
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["mscclang", "--verify", EXAMPLES / "ring_allreduce.py", 4, 1])
    assert code == 0 and (tmp_path / "out" / "ring_allreduce_4_4.xml").is_file()
    assert "PASS out/ring_allreduce_4_4.xml" in out


def test_script_options_after_the_script_are_the_scripts(tmp_path):
    out_path = tmp_path / "ll.xml"
    code, _, err = run(["mscclang", "-o", out_path, EXAMPLES / "ring_allreduce.py", 4, 1,
                        "--protocol", "LL"])
    assert code == 0, err
    assert loads(out_path.read_text()).proto == "LL"
