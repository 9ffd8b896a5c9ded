"""The Chunk API's single message ends: send, recv, rcs, and their matching at compile time."""
from __future__ import annotations

import pytest

from ccxml import Program, verify
from ccxml.loader import loads
from ccxml.vocab.errors import ChunkError, LimitError, LinkError


def _allgather_by_ends(p: int) -> Program:
    """An AllGather written with explicit ends: rank r sends its block to every other rank."""
    prog = Program("ends", "allgather", p, p)
    for r in range(p):
        prog.chunk(r, "input", 0).copy(prog.chunk(r, "output", r))
    for r in range(p):
        for q in range(p):
            if q != r:
                prog.chunk(r, "output", r).send(q)
    for q in range(p):
        for r in range(p):
            if q != r:
                prog.chunk(q, "output", r).recv(r)
    return prog


def test_send_and_recv_are_one_step_each_and_prove():
    prog = _allgather_by_ends(4)
    xml = prog.to_xml()
    assert verify(xml).ok
    steps = [st.type for g in loads(xml).gpus for tb in g.tbs for st in tb.steps]
    assert steps.count("s") == 12 and steps.count("r") == 12


def test_send_returns_the_s_step_on_the_chunks_rank():
    prog = Program("one", "allgather", 2, 2)
    st = prog.chunk(0, "i", 0).send(1)
    assert (st.type.value, st.gpu, st.send_peer, st.cnt) == ("s", 0, 1, 1)
    st = prog.chunk(1, "o", 0).recv(0)
    assert (st.type.value, st.gpu, st.recv_peer) == ("r", 1, 0)


def test_ends_match_in_issue_order_per_link_and_channel():
    prog = Program("fifo", "allreduce", 2, 2)
    a0 = prog.chunk(0, "i", 0).send(1)
    a1 = prog.chunk(0, "i", 1).send(1)
    b0 = prog.chunk(1, "s", 5).recv(0)
    b1 = prog.chunk(1, "s", 6).recv(0)
    prog.compile()
    assert a0.send_to is b0 and a1.send_to is b1
    assert b0.recv_from is a0 and b1.recv_from is a1


@pytest.mark.parametrize("missing", ["recv", "send"])
def test_an_unmatched_end_names_both_ranks(missing):
    prog = Program("lonely", "allgather", 3, 3)
    if missing == "recv":
        prog.chunk(0, "i", 0).send(2)
        want = "rank 0 sends 1 message(s) to rank 2 on channel 0, but rank 2 receives only 0"
    else:
        prog.chunk(2, "o", 0).recv(0, chan=1)
        want = "rank 2 receives 1 message(s) from rank 0 on channel 1, but rank 0 sends only 0"
    with pytest.raises(LinkError, match=want.replace("(", r"\(").replace(")", r"\)")):
        prog.compile()


def test_a_count_mismatch_names_both_ranks():
    prog = Program("sizes", "allreduce", 2, 4)
    prog.chunk(0, "i", 0, 2).send(1)
    prog.chunk(1, "s", 0, 1).recv(0)
    with pytest.raises(LinkError, match="rank 0 sends 2 chunk.s. to rank 1 on channel 0 where rank 1 receives 1"):
        prog.compile()


def test_send_takes_a_rank_not_a_chunk():
    prog = Program("old", "allgather", 2, 2)
    with pytest.raises(ChunkError, match="copy_diff"):
        prog.chunk(0, "i", 0).send(prog.chunk(1, "o", 0))
    with pytest.raises(ChunkError, match="ranks are 0..1"):
        prog.chunk(0, "i", 0).send(5)
    with pytest.raises(ChunkError, match="itself"):
        prog.chunk(0, "i", 0).recv(0)


def test_rcs_forwards_through_the_middle_rank_and_fuses_in_a_chain():
    # a 3-rank chain 0 -> 1 -> 2 broadcasting rank 0's chunk; rank 1 forwards with rcs
    prog = Program("chain", "broadcast", 3, 1, root=0)
    src = prog.chunk(0, "i", 0)
    src.copy(prog.chunk(0, "o", 0))
    src.send(1)
    src.rcs(prog.chunk(2, "o", 0), via=1)
    prog.chunk(2, "o", 0).recv(1)
    xml = prog.to_xml()
    assert verify(xml).ok
    types = [st.type for tb in loads(xml).gpus[1].tbs for st in tb.steps]
    assert types == ["rcs"]


def test_rcs_needs_three_ranks():
    prog = Program("chain", "broadcast", 3, 1, root=0)
    with pytest.raises(ChunkError, match="three different ranks"):
        prog.chunk(0, "i", 0).rcs(prog.chunk(1, "o", 0), via=1)


@pytest.mark.parametrize("name,wire", [("input", "i"), ("output", "o"), ("scratch", "s"),
                                       ("i", "i"), ("o", "o"), ("s", "s")])
def test_buffers_go_by_the_design_names_too(name, wire):
    prog = Program("names", "allreduce", 2, 2)
    assert prog.chunk(1, name, 1).chunk_type.value == wire


def test_an_unknown_buffer_name_says_which_exist():
    prog = Program("names", "allreduce", 2, 2)
    with pytest.raises(ChunkError, match="use input, output or scratch"):
        prog.chunk(0, "inbox", 0)


def test_a_custom_collective_is_written_for_legacy_only():
    prog = Program("hop", "custom", 2, 2, buffers=[(2, 0), (0, 2)], inplace=False)
    prog.chunk(0, "input", 0, 2).copy(prog.chunk(1, "output", 0, 2))
    xml = prog.to_xml("legacy")
    algo = loads(xml)
    assert algo.coll == "custom"
    assert [(g.i_chunks, g.o_chunks) for g in algo.gpus] == [(2, 0), (0, 2)]
    report = verify(xml, target="legacy")
    assert report.ok and "no-postcondition" in report.codes()
    with pytest.raises(LimitError, match="only in the legacy runtime"):
        Program("hop", "custom", 2, 2, buffers=[(2, 0), (0, 2)]).to_xml("exec")


def test_a_custom_collective_needs_its_buffer_sizes():
    with pytest.raises(ChunkError, match="chunk counts of each of its 2 ranks"):
        Program("hop", "custom", 2, 2)
    with pytest.raises(ChunkError, match="custom collectives"):
        Program("ar", "allreduce", 2, 2, buffers=[(2, 2), (2, 2)])
