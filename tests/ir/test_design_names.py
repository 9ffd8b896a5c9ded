"""The framework design's data names on the IR: they read what the file says and stay cheap."""
from __future__ import annotations

import pytest

from ccxml import Program
from ccxml.ir import GPU, TB, IRError, Step, link_steps
from ccxml.loader import loads
from ccxml.vocab.wire import INPUT, OUTPUT, StepType


def _compiled_ring(p=4):
    from ccxml.algorithms import ring
    prog = ring.allreduce(p)
    return prog.to_xml(), prog.algo


def test_step_operands_are_what_the_file_says():
    xml, algo = _compiled_ring()
    loaded = loads(xml)
    for g, lg in zip(algo.gpus, loaded.gpus):
        for tb, ltb in zip(g.tbs, lg.tbs):
            for st, lst in zip(tb.steps, ltb.steps):
                assert (st.srcbuf, st.srcoff, st.dstbuf, st.dstoff) == \
                       (lst.srcbuf, lst.srcoff, lst.dstbuf, lst.dstoff)


def test_a_send_names_the_receivers_place_and_a_receive_the_senders():
    prog = Program("pair", "allgather", 2, 2)
    send = prog.chunk(0, "input", 0).send(1)
    recv = prog.chunk(1, "output", 0).recv(0)
    assert (send.srcbuf, send.srcoff, send.dstbuf, send.dstoff) == ("i", 0, "i", 0)   # unmatched
    recv.peer_step = send                                                             # the design's binding
    assert send.peer_step is recv and recv.peer_step is send
    assert (send.dstbuf, send.dstoff) == ("o", 0) and (recv.srcbuf, recv.srcoff) == ("i", 0)


def test_peer_step_refuses_two_steps_that_are_not_one_message():
    a = Step(StepType.SEND, 0, (INPUT, 0), None, 1, send_peer=1)
    b = Step(StepType.RECV, 2, None, (OUTPUT, 0), 1, recv_peer=0)
    with pytest.raises(IRError, match="not the two ends of one message between gpu 0 and gpu 2"):
        a.peer_step = b


def test_relinking_a_step_frees_its_old_partner():
    s1 = Step(StepType.SEND, 0, (INPUT, 0), None, 1, send_peer=1)
    r1 = Step(StepType.RECV, 1, None, (OUTPUT, 0), 1, recv_peer=0)
    r2 = Step(StepType.RECV, 1, None, (OUTPUT, 1), 1, recv_peer=0)
    link_steps(s1, r1)
    link_steps(r2, s1)
    assert s1.send_to is r2 and r1.recv_from is None


def test_channel_usage_is_the_designs_view_in_tb_order():
    gpu = GPU(0)
    gpu.add_tb(TB(1, 3, 0))
    gpu.add_tb(TB(2, -1, 0))
    gpu.add_tb(TB(-1, -1, 1))
    assert gpu.channel_usage == {0: {"send": [1, 2], "recv": [3]}, 1: {"send": [], "recv": []}}
    with pytest.raises(IRError, match="two TBs send to 2 on channel 0"):
        gpu.add_tb(TB(2, 5, 0))


def test_find_tb_matches_the_fields_given():
    gpu = GPU(0)
    a, b = gpu.add_tb(TB(1, 3, 0)), gpu.add_tb(TB(2, -1, 1))
    assert gpu.find_tb(1, 3, 0) is a and gpu.find_tb(send=2) is b
    assert gpu.find_tb(recv=3, chan=0) is a and gpu.find_tb(chan=1) is b
    assert gpu.find_tb(send=1, chan=1) is None and gpu.find_tb(1, 3, 1) is None


def test_tb_send_and_recv_index_count_its_link_steps():
    tb = TB(1, 1, 0)
    tb.add_step(Step(StepType.SEND, 0, (INPUT, 0), None, 1, send_peer=1))
    tb.add_step(Step(StepType.RECV, 0, None, (OUTPUT, 0), 1, recv_peer=1))
    tb.add_step(Step(StepType.SEND, 0, (INPUT, 1), None, 1, send_peer=1))
    assert (tb.send_index, tb.recv_index) == (2, 1)
    assert [st.send_index for st in tb.steps] == [0, -1, 1]
