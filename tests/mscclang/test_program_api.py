"""The MSCCLang API used directly: its current program, XML(), Check(), hints, collectives."""
from __future__ import annotations

import threading

import pytest
from mscclang_cli import run

from ccxml import verify
from ccxml.loader import loads
from ccxml.mscclang import (
    XML,
    AllGather,
    AllReduce,
    Broadcast,
    Buffer,
    Check,
    MSCCLProgram,
    ReduceScatter,
    Session,
    ThreadblockPolicy,
    chunk,
    fully_connected,
    session,
)
from ccxml.vocab.errors import MSCCLangError


def _ring_allgather(n, inplace, **kw):
    with MSCCLProgram("ag", fully_connected(n), AllGather(n, 1, inplace), 1, **kw) as prog:
        for r in range(n):
            c = chunk(r, Buffer.input, 0)
            if not inplace:
                c = c.copy(r, Buffer.output, r)
            for hop in range(1, n):
                c = c.copy((r + hop) % n, Buffer.output, r)
        return prog, Check()


def test_without_a_session_xml_prints_and_check_answers(capsys):
    with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 2, True), 1):
        chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.input, 0))
        chunk(0, Buffer.input, 1).reduce(chunk(1, Buffer.input, 1))
        chunk(1, Buffer.input, 0).copy(0, Buffer.input, 0)
        chunk(0, Buffer.input, 1).copy(1, Buffer.input, 1)
        XML()
        assert Check() is True
    out = capsys.readouterr().out
    assert out.startswith('<algo name="ar"') and verify(out).ok


def test_a_failed_check_answers_false():
    with MSCCLProgram("ar", fully_connected(2), AllReduce(2, 1, True), 1):
        chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.input, 0))
        assert Check() is False


@pytest.mark.parametrize("inplace", [False, True])
def test_allgather_in_and_out_of_place(inplace):
    prog, ok = _ring_allgather(4, inplace)
    assert ok and loads(prog.generate_xml()).inplace == int(inplace)


@pytest.mark.parametrize("inplace", [False, True])
def test_reduce_scatter_in_and_out_of_place(inplace):
    n = 3
    with MSCCLProgram("rs", fully_connected(n), ReduceScatter(n, 1, inplace), 1):
        for r in range(n):                       # block r travels the ring, ends reduced on rank r
            for hop in range(1, n):
                src, dst = (r + hop) % n, (r + hop + 1) % n
                chunk(dst, Buffer.input, r).reduce(chunk(src, Buffer.input, r))
            if not inplace:
                chunk(r, Buffer.input, r).copy(r, Buffer.output, 0)
        assert Check()


def test_broadcast():
    with MSCCLProgram("bc", fully_connected(3), Broadcast(3, 1, False, 1), 1):
        c = chunk(1, Buffer.input, 0)
        for r in range(3):
            c.copy(r, Buffer.output, 0)
        assert Check()


def test_the_current_program_is_reset_when_the_block_raises():
    with pytest.raises(ZeroDivisionError):
        with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):
            raise ZeroDivisionError("in the block")
    with pytest.raises(MSCCLangError, match="No Program in context"):
        chunk(0, Buffer.input, 0)


def test_each_thread_has_its_own_current_program():
    seen = []

    def other():
        try:
            chunk(0, Buffer.input, 0)
        except MSCCLangError as e:
            seen.append(str(e))

    with MSCCLProgram("p", fully_connected(2), AllReduce(2, 1, True), 1):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert chunk(0, Buffer.input, 0) is not None
    assert seen and "No Program in context" in seen[0]


def test_manual_hints_that_break_a_runtime_rule_are_overridden_once(capsys):
    s = Session()
    with session(s):
        with MSCCLProgram("two_tbs_one_link", fully_connected(2), AllReduce(2, 2, True), 1,
                          threadblock_policy=ThreadblockPolicy.manual) as prog:
            chunk(0, Buffer.input, 0).copy(1, Buffer.input, 0, sendtb=0, recvtb=0)
            chunk(0, Buffer.input, 1).copy(1, Buffer.input, 1, sendtb=1, recvtb=1)
            XML()
            XML()
    err = capsys.readouterr().err
    assert err.count("sendtb/recvtb not used") == 1
    assert "two thread blocks would send to rank 1 on channel 0" in err
    sched = loads(prog.generate_xml())
    assert [(tb.send, tb.recv) for tb in sched.gpus[0].tbs] == [(1, -1)]


def test_manual_hints_group_local_steps_as_written():
    with MSCCLProgram("spread", fully_connected(2), AllReduce(2, 4, True), 1,
                      threadblock_policy=ThreadblockPolicy.manual) as prog:
        for i in range(4):                       # rank 0's reductions in TBs 0..3, as the hints say
            chunk(1, Buffer.input, i).copy(0, "scratch", i, sendtb=0, recvtb=0)
            chunk(0, Buffer.input, i).reduce(chunk(0, "scratch", i), sendtb=i)
        for i in range(4):
            chunk(0, Buffer.input, i).copy(1, Buffer.input, i, sendtb=0, recvtb=0)
        assert Check()
    sched = loads(prog.generate_xml())
    assert sorted((tb.send, tb.recv) for tb in sched.gpus[0].tbs) == [(-1, -1)] * 3 + [(1, 1)]


def test_several_programs_of_one_script_get_numbered_files(tmp_path):
    script = tmp_path / "two.py"
    script.write_text(
        "from msccl.language import *\nfrom msccl.language.collectives import AllReduce\n"
        "from msccl.topologies import fully_connected\n"
        "for name in ('a', 'a'):\n"
        "    with MSCCLProgram(name, fully_connected(2), AllReduce(2, 1, True), 1):\n"
        "        chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.input, 0))\n"
        "        chunk(1, Buffer.input, 0).copy(0, Buffer.input, 0)\n"
        "        XML()\n")
    code, out, err = run(["mscclang", "-o", tmp_path / "x.xml", script])
    assert code == 0, err
    assert (tmp_path / "x.xml").is_file() and (tmp_path / "x-2.xml").is_file()
