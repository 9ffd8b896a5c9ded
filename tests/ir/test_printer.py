"""The IR printer (``ccxml generate --dump-after``): one line per step, naming where it is, what
it does, what it waits on and its links."""
from __future__ import annotations

from ccxml.frontend.chunk import Program
from ccxml.ir.printer import format_ir
from ccxml.vocab.wire import Coll


def _two_sources():
    """Rank 0 receives a chunk from ranks 1 and 2 (two TBs), then sends both on to rank 3."""
    prog = Program("t", Coll.ALLREDUCE, 4, 4, max_bytes=1 << 20)
    prog.input(1, 0).copy(prog.scratch(0, 0))
    prog.input(2, 1).copy(prog.scratch(0, 1))
    prog.input(0, 2).copy(prog.scratch(0, 2))
    prog.scratch(0, 0, 2).copy(prog.output(3, 0, 2))
    return prog


def test_a_dump_shows_dependencies_nops_and_links():
    dumps = {}
    _two_sources().compile("exec", hook=lambda ps, algo: dumps.setdefault(
        ps.name, list(format_ir(algo, f"after {ps.name}"))))
    assert dumps["threadblocks"][:3] == [
        "# t: allreduce, 4 gpus, 4 chunks per loop, proto Simple (after threadblocks)",
        "gpu 0 tb s3/r-1/c0 #0 cpy src i[2] dst s[2] cnt 1 deps []",
        "gpu 0 tb s3/r-1/c0 #1 s src s[0] dst - cnt 2 deps [s-1/r1/c0#0,s-1/r2/c0#0] peer >3#0"]
    assert dumps["dependencies"] == [
        "# t: allreduce, 4 gpus, 4 chunks per loop, proto Simple (after dependencies)",
        "gpu 0 tb s3/r-1/c0 #0 cpy src i[2] dst s[2] cnt 1 deps []",
        "gpu 0 tb s3/r-1/c0 #1 nop src - dst - cnt 0 deps [] dep s-1/r1/c0#0",
        "gpu 0 tb s3/r-1/c0 #2 s src s[0] dst - cnt 2 deps [s-1/r1/c0#0,s-1/r2/c0#0] "
        "dep s-1/r2/c0#0 peer >3#0",
        "gpu 0 tb s-1/r1/c0 #0 r src - dst s[0] cnt 1 deps [] hasdep peer <1#0",
        "gpu 0 tb s-1/r2/c0 #0 r src - dst s[1] cnt 1 deps [] hasdep peer <2#0",
        "gpu 1 tb s0/r-1/c0 #0 s src i[0] dst - cnt 1 deps [] peer >0#0",
        "gpu 2 tb s0/r-1/c0 #0 s src i[1] dst - cnt 1 deps [] peer >0#0",
        "gpu 3 tb s-1/r0/c0 #0 r src - dst o[0] cnt 2 deps [] peer <0#0"]


def test_a_fused_step_shows_both_links_and_folded_dependencies():
    from ccxml.algorithms.ring import allreduce
    prog = allreduce(3)
    lines = []
    prog.compile("exec", hook=lambda ps, algo: lines.extend(format_ir(algo))
                 if ps.name == "fusion" else None)
    rcs = [ln for ln in lines if " rcs " in ln]
    assert rcs and all(" peer <" in ln and ln.split(" peer ")[1].count(">") == 1 for ln in rcs)
    assert any("folded:" in ln for ln in lines)


def test_steps_not_yet_placed_are_listed_per_gpu():
    lines = list(format_ir(_two_sources().algo))
    assert lines[3:5] == ["gpu 0 pending #2 cpy src i[2] dst s[2] cnt 1 deps [] chan 0",
                          "gpu 0 pending #3 s src s[0] dst - cnt 2 deps [pending#0,pending#1] peer >3 chan 0"]
