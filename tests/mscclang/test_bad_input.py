"""Bad input to ``ccxml mscclang``: one clear line on stderr, exit 2 (1 for a failed Check())."""
from __future__ import annotations

import textwrap

import pytest
from mscclang_cli import EXAMPLES, PROGRAMS, run

HEAD = """\
from msccl.language import *
from msccl.language.collectives import AllReduce, AllGather
from msccl.topologies import *
"""

CASES = {
    "raises": ("raise ValueError('bad shape')", "prog.py:4: ValueError: bad shape"),
    "syntax": ("def broken(:\n    pass", "prog.py:4: SyntaxError"),
    "synthesis": ("import msccl.autosynth", "prog.py:4: ModuleNotFoundError: msccl.autosynth is not served"),
    "print": ("with MSCCLProgram('p', fully_connected(2), AllReduce(2, 2, True), 1):\n    Print()",
              "Print() (msccl-tools' chunk-DAG viewer) is not supported"),
    "no program": ("chunk(0, Buffer.input, 0)", "prog.py:4: No Program in context"),
    "index": ("with MSCCLProgram('p', fully_connected(2), AllReduce(2, 2, True), 1):\n"
              "    chunk(0, Buffer.input, 5)",
              "prog.py:5: chunk(0, input, 5): that buffer holds 2 chunk(s) on rank 0"),
    "rank": ("with MSCCLProgram('p', fully_connected(2), AllReduce(2, 2, True), 1):\n"
             "    chunk(0, Buffer.input, 0).copy(7, Buffer.input, 0)", "rank 7 is out of range 0..1"),
    "copy beyond": ("with MSCCLProgram('p', fully_connected(2), AllGather(2, 1, False), 1):\n"
                    "    chunk(0, Buffer.input, 0).copy(1, Buffer.output, 2)",
                    "copy to rank 1 output[2:+1]: that buffer holds 2 chunk(s)"),
    "reduce empty": ("with MSCCLProgram('p', fully_connected(2), AllGather(2, 1, False), 1):\n"
                     "    chunk(0, Buffer.input, 0).reduce(1, Buffer.output, 0)",
                     "reduce into rank 1 output[0], which holds no data yet"),
    "no link": ("with MSCCLProgram('p', line(3), AllReduce(3, 1, True), 1):\n"
                "    chunk(0, Buffer.input, 0).copy(2, Buffer.input, 0)", "No link from 0 to 2"),
    "ranks": ("with MSCCLProgram('p', fully_connected(3), AllReduce(2, 1, True), 1):\n    pass",
              "the collective is for 2 ranks, the topology FullyConnected(n=3) has 3"),
    "protocol": ("MSCCLProgram('p', fully_connected(2), AllReduce(2, 1, True), 1, protocol='LL64')",
                 "Given protocol: LL64. Must be either Simple, LL, LL128"),
    "hint": ("with MSCCLProgram('p', fully_connected(2), AllReduce(2, 1, True), 1):\n"
             "    chunk(0, Buffer.input, 0).copy(1, Buffer.input, 0, ch='fast')", "ch='fast'"),
    "nested": ("p = MSCCLProgram('p', fully_connected(2), AllReduce(2, 1, True), 1)\n"
               "with p:\n    with MSCCLProgram('q', fully_connected(2), AllReduce(2, 1, True), 1):\n        pass",
               "There is already a MSCCL Program in context"),
    "no xml": ("with MSCCLProgram('p', fully_connected(2), AllReduce(2, 1, True), 1):\n    pass",
               "produced no XML (it never called XML())"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_line_exit_2(case, tmp_path):
    body, want = CASES[case]
    script = tmp_path / "prog.py"
    script.write_text(HEAD + body + "\n")
    code, out, err = run(["mscclang", "-o", tmp_path / "x.xml", script])
    assert code == 2
    assert want in err
    assert err.count("\n") == 1 and "Traceback" not in err + out
    assert not (tmp_path / "x.xml").exists()


def test_a_failed_check_exits_1_and_writes_nothing(tmp_path):
    script = tmp_path / "half.py"
    script.write_text(HEAD + textwrap.dedent("""\
        with MSCCLProgram('half', fully_connected(2), AllReduce(2, 1, True), 1):
            chunk(1, Buffer.input, 0).reduce(chunk(0, Buffer.input, 0))   # rank 0 never gets the sum
            XML()
            Check()
    """))
    code, out, err = run(["mscclang", "-o", tmp_path / "x.xml", script])
    assert code == 1 and "Check() failed: half: missing-contribution: rank 0 output chunk 0" in err
    assert err.count("\n") == 1 and not (tmp_path / "x.xml").exists()


def test_a_custom_check_that_fails_exits_1(tmp_path):
    code, out, err = run(["mscclang", "--target", "legacy", "-o", tmp_path / "x.xml",
                          PROGRAMS / "custom_neighbour.py", 4, "broken"])
    assert code == 1 and "to_next: the collective's check() found wrong chunks" in err
    assert "rank 1 chunk 0: None" in out                # the collective's own report


def test_a_custom_collective_for_exec_says_use_legacy(tmp_path):
    code, _, err = run(["mscclang", "-o", tmp_path / "x.xml", PROGRAMS / "custom_neighbour.py", 4])
    assert code == 2 and 'coll="custom"' in err and "use --target legacy" in err


def test_the_scripts_argument_errors_are_its_own(tmp_path):
    code, _, err = run(["mscclang", EXAMPLES / "ring_allreduce.py"])
    assert code == 2 and "the following arguments are required: num_gpus" in err


def test_a_missing_script(tmp_path):
    code, _, err = run(["mscclang", tmp_path / "nope.py"])
    assert code == 2 and "no such script" in err


def test_bad_byte_window(tmp_path):
    code, _, err = run(["mscclang", "--min-bytes", "10", "--max-bytes", "5", EXAMPLES / "ring_allreduce.py", 4, 1])
    assert code == 2 and "--min-bytes 10 / --max-bytes 5" in err


def test_a_limit_the_target_cannot_meet(tmp_path):
    script = tmp_path / "wide.py"
    script.write_text(HEAD + textwrap.dedent("""\
        with MSCCLProgram('wide', fully_connected(2), AllReduce(2, 1, True), 1):
            chunk(0, Buffer.input, 0).copy(1, Buffer.input, 0, ch=40)
            XML()
    """))
    code, _, err = run(["mscclang", "-o", tmp_path / "x.xml", script])
    assert code == 2 and "channel 40 exceeds the exec limit of 31" in err and "Traceback" not in err
