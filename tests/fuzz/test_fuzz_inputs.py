"""Property tests (hypothesis) that corrupt real inputs and drive the commands with them:
schedules (verify, simulate, show, run's parsing), counts files, topologies (TOML, JSON, NCCL
XML: topology show). Properties: tests/helpers/fuzzing.py (exit code 0/1/2, a refusal in one
line, no traceback, bounded time). The default suite runs the ``fuzz-short`` profile; the slow
twins at the end run ``fuzz-long``."""
from __future__ import annotations

import pytest
from fuzzing import TOPOLOGIES, check, corrupted, long, seed, short
from hypothesis import given
from hypothesis import strategies as st

SCHEDULES = ["ring4_allreduce.xml", "ring3_broadcast.xml", "pairwise3_alltoallv.xml"]


def _write(tmp_path, name: str, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _schedule_case(draw_data):
    name = draw_data.draw(st.sampled_from(SCHEDULES))
    return name, draw_data.draw(corrupted(seed(name)))


def _verify(tmp_path, data):
    name, xml = _schedule_case(data)
    p = _write(tmp_path, "case.xml", xml)
    counts = ["--counts", str(tmp_path / "counts.csv")] if "alltoallv" in name else []
    (tmp_path / "counts.csv").write_bytes(seed("counts3.csv"))
    check("verify", "-q", p, *counts)


def _simulate(tmp_path, data):
    _, xml = _schedule_case(data)
    p = _write(tmp_path, "case.xml", xml)
    check("simulate", p, "--bytes", "64K")
    check("simulate", p, "--bytes", "64K", "--unverified")


def _show(tmp_path, data):
    _, xml = _schedule_case(data)
    p = _write(tmp_path, "case.xml", xml)
    check("show", p, "--unverified", "-o", tmp_path / "case.svg")


def _run_parsing(tmp_path, data):
    """``ccxml run``'s parsing, in-process (no MPI): load, check against the process count,
    counts, lowering for the executor. Bad input raises one-line ValueError/OSError only."""
    from ccxml.cli.run import _load
    name, xml = _schedule_case(data)
    p = _write(tmp_path, "case.xml", xml)
    counts = None
    if "alltoallv" in name:
        counts = _write(tmp_path, "counts.csv", data.draw(corrupted(seed("counts3.csv"),
                                                                    values=["-1", "2147483647", "x"])))
    nprocs = data.draw(st.sampled_from([3, 4]))
    try:
        _load(str(p), nprocs, 32767, None, None, None if counts is None else str(counts))
    except (ValueError, OSError) as e:
        assert "\n" not in str(e).strip(), str(e)


def _counts(tmp_path, data):
    counts = data.draw(corrupted(seed("counts3.csv"), values=["-1", "2147483647", "1e9", "", "x"],
                                 injected=[b"\xff\xfe", b"\x00", b"9" * 400, b"\n1,2\n", b"#"]))
    c = _write(tmp_path, "counts.csv", counts)
    p = _write(tmp_path, "a2av.xml", seed("pairwise3_alltoallv.xml"))
    check("verify", "-q", p, "--counts", c)


def _topology_seeds():
    seeds = [("two_levels.toml", seed("two_levels.toml")), ("network.json", seed("network.json")),
             ("two_gpus_topo.xml", seed("two_gpus_topo.xml"))]
    if TOPOLOGIES.is_dir():
        seeds += [(p.name, p.read_bytes()) for p in sorted(TOPOLOGIES.glob("*.xml"))]
    return seeds


TOPOLOGY_VALUES = ["-16", "0", "nan", "inf", "1e400", "9" * 5000, "-7", "2147483648", "\"", "[[[[",
                   "{", "gpu0", "x" * 300]


def _topology(tmp_path, data):
    name, raw = data.draw(st.sampled_from(_topology_seeds()))
    bad = data.draw(corrupted(raw, values=TOPOLOGY_VALUES,
                              injected=[b"[" * 2000, b"{" * 2000, b"<a>" * 100, b"9" * 5000,
                                        b"<!DOCTYPE x>", b"\x00", b"\xff"]))
    p = _write(tmp_path, "topo" + name[name.rindex("."):], bad)
    extra = ["--gpu", data.draw(st.sampled_from(["h100", "v100"]))] if name.endswith(".xml") else []
    check("topology", "show", "--topology", p, *extra)


CASES = {"verify": _verify, "simulate": _simulate, "show": _show, "run-parsing": _run_parsing,
         "counts": _counts, "topology": _topology}


@pytest.mark.parametrize("case", list(CASES))
def test_corrupted_inputs_are_answered_in_one_line(case, tmp_path):
    @short()
    @given(st.data())
    def prop(data):
        CASES[case](tmp_path, data)
    prop()


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_corrupted_inputs_long(case, tmp_path):
    @long()
    @given(st.data())
    def prop(data):
        CASES[case](tmp_path, data)
    prop()
