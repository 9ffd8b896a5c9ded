"""Unit tests of the compiler passes on small hand-built programs."""
from __future__ import annotations

import pytest
from conftest import REPO
from lxml import etree

from ccxml.frontend.chunk import Program
from ccxml.ir.nodes import GPU, TB, IRError, Step, dep_count
from ccxml.passes import LimitError
from ccxml.vocab.wire import Buffer, Coll, StepType


def _xml_steps(text: str):
    """{(gpu, tb): [step attrib dicts]} of an exported file."""
    root = etree.fromstring(text.encode())
    return {(int(g.get("id")), int(t.get("id"))): [dict(s.attrib) for s in t]
            for g in root for t in g}, root


def test_cross_gpu_dependency_is_rejected_when_added():
    a = Step(StepType.COPY, 0)
    b = Step(StepType.COPY, 1)
    with pytest.raises(IRError, match="across GPUs"):
        a.add_dep(b)


def test_dependencies_read_back_as_a_tuple_however_they_are_stored():
    # a step stores none, one or several dependencies packed (Step.dep_list); every way of
    # setting them reads back as the tuple, in order, without repeats
    a, b, c = (Step(StepType.COPY, 0) for _ in range(3))
    assert a.dep_list == ()
    a.add_dep(b)
    a.add_dep(b)
    assert a.dep_list == (b,)
    a.add_dep(c)
    assert a.dep_list == (b, c)
    a.remove_dep(b)
    assert a.dep_list == (c,)
    a.remove_dep(c)
    assert a.dep_list == ()
    a.dep_list = [c, b]
    assert a.dep_list == (c, b)
    assert dep_count(a) == 2 and dep_count(b) == 0
    a.dep_list = [b]
    assert a.dep_list == (b,) and dep_count(a) == 1
    a.dep_list = ()
    assert a.dep_list == () and dep_count(a) == 0


def test_channel_conflict_is_detected():
    gpu = GPU(0)
    gpu.add_tb(TB(1, -1, 0))
    with pytest.raises(IRError, match="two TBs send to 1 on channel 0"):
        gpu.add_tb(TB(1, 2, 0))
    gpu.add_tb(TB(1, -1, 1))      # another channel is fine
    with pytest.raises(IRError, match="two TBs receive from 2"):
        gpu.add_tb(TB(3, 2, 1)) if gpu.add_tb(TB(-1, 2, 1)) else None


def _two_source_program():
    """Rank 0 receives from ranks 1 and 2 (two TBs), then sends both chunks on to rank 3."""
    prog = Program("t", Coll.ALLREDUCE, 4, 4, max_bytes=1 << 20)
    prog.input(1, 0).copy(prog.scratch(0, 0))
    prog.input(2, 1).copy(prog.scratch(0, 1))
    prog.input(0, 2).copy(prog.scratch(0, 2))            # a local step in between
    prog.scratch(0, 0, 2).copy(prog.output(3, 0, 2))     # depends on both receives
    return prog


def test_several_dependencies_become_nops_with_fresh_indices():
    prog = _two_source_program()
    text = prog.to_xml()
    steps, root = _xml_steps(text)
    gpu0 = root[0]
    tbs = {int(t.get("id")): t for t in gpu0}
    sender = next(t for t in gpu0 if t.get("send") == "3")
    kinds = [s.get("type") for s in sender]
    first_real = kinds.index("s")
    assert kinds[first_real - 1] == "nop" and kinds.count("nop") == 1
    # every nop carries a dependency, the step right after the nops carries its own
    nop = sender[first_real - 1]
    assert int(nop.get("depid")) >= 0
    assert int(sender[first_real].get("depid")) >= 0
    # each dependency names a real step of another TB at its final index, which publishes
    targets = set()
    for s in (nop, sender[first_real]):
        tb = tbs[int(s.get("depid"))]
        target = tb[int(s.get("deps"))]
        assert target.get("s") == s.get("deps")
        assert target.get("type") == "r" and target.get("hasdep") == "1"
        targets.add(tb.get("recv"))
    assert targets == {"1", "2"}
    # s is the position, nops included
    for t in gpu0:
        assert [int(s.get("s")) for s in t] == list(range(len(t)))


def test_dependency_indices_follow_steps_moved_by_nop_insertion():
    """A dependency on a TB that itself received nops points at the shifted position."""
    prog = Program("t", Coll.ALLREDUCE, 4, 4, max_bytes=1 << 20)
    prog.input(1, 0).copy(prog.scratch(0, 0))
    prog.input(2, 1).copy(prog.scratch(0, 1))
    prog.scratch(0, 0, 2).copy(prog.output(3, 0, 2))      # tb(send=3): 1 nop + s
    prog.input(3, 2).copy(prog.scratch(0, 2))             # recv from 3 after the nop'd send
    prog.scratch(0, 2).copy(prog.scratch(0, 3))           # cpy waits for that recv
    steps, root = _xml_steps(prog.to_xml())
    for g in root:
        for t in g:
            for s in t:
                if s.get("depid") != "-1":
                    target = g[int(s.get("depid"))][int(s.get("deps"))]
                    assert target.get("type") != "nop"
                    assert target.get("hasdep") == "1"
                    assert target.get("s") == s.get("deps")


def test_ordering_never_moves_a_send_before_the_receive_that_fills_it():
    """Full-duplex TB: issue order r, s (the s forwards what r got). The key (0,0) < (1,1)
    would put the send first; the data dependency must win."""
    prog = Program("t", Coll.ALLREDUCE, 2, 2, max_bytes=1 << 20)
    prog.input(1, 0).copy(prog.scratch(0, 0))             # r on rank 0 from 1
    prog.scratch(0, 0).copy(prog.scratch(1, 1))           # s on rank 0 to 1 reading it
    algo = prog.compile(merge_rcs=False)
    tb = algo.gpus[0].tbs[0]
    assert [s.type for s in tb.steps] == [StepType.RECV, StepType.SEND]


def test_ordering_interleaves_independent_full_duplex_exchanges():
    """Two ranks each send two chunks to the other: order becomes s0 r0 s1 r1 on both."""
    prog = Program("t", Coll.ALLREDUCE, 2, 2, max_bytes=1 << 20)
    for c in range(2):
        prog.input(0, c).copy(prog.scratch(1, c))
    for c in range(2):
        prog.input(1, c).copy(prog.scratch(0, c))
    algo = prog.compile(merge_rcs=False)
    for gpu in algo.gpus:
        assert [s.type.value for s in gpu.tbs[0].steps] == ["s", "r", "s", "r"]


def _forward(size_recv=1, size_send=1, src_offset=0, extra_dep=False):
    prog = Program("t", Coll.ALLREDUCE, 3, 4, max_bytes=1 << 20)
    prog.input(0, 0, size_recv).copy(prog.scratch(1, 0, size_recv))
    if extra_dep:
        prog.input(1, 3).copy(prog.scratch(1, 3))            # local write the send will read
    prog.scratch(1, src_offset, size_send).copy(prog.scratch(2, 0, size_send))
    if extra_dep:
        pass
    return prog


def test_rcs_merge_when_the_send_forwards_exactly_what_was_received():
    algo = _forward().compile()
    assert [s.type for s in algo.gpus[1].tbs[0].steps] == [StepType.RECV_COPY_SEND]


@pytest.mark.parametrize("kwargs", [dict(size_recv=2, size_send=1),      # cnt differs
                                    dict(src_offset=1, size_recv=2, size_send=1),
                                    dict(src_offset=0, size_recv=1, size_send=1, extra_dep=True)])
def test_rcs_merge_only_under_its_conditions(kwargs):
    if kwargs.get("extra_dep"):
        prog = Program("t", Coll.ALLREDUCE, 3, 4, max_bytes=1 << 20)
        prog.input(0, 0).copy(prog.scratch(1, 0))
        prog.input(1, 3).copy(prog.scratch(1, 1))           # a cpy on another range
        prog.scratch(1, 0, 2).copy(prog.scratch(2, 0, 2))   # reads both: depends on r and cpy
        algo = prog.compile()
    else:
        algo = _forward(**kwargs).compile()
    types = [s.type for tb in algo.gpus[1].tbs for s in tb.steps]
    assert StepType.RECV_COPY_SEND not in types


def test_receive_reduce_then_send_fuses_to_rrs_only_when_the_store_is_dead():
    # partial sums in scratch that nobody reads later: rrs
    prog = Program("t", Coll.REDUCE, 3, 1, root=2)
    acc = prog.input(0, 0).reduce(prog.input(1, 0), out=prog.scratch(1, 0))
    acc.reduce(prog.input(2, 0), out=prog.output(2, 0))
    types = [s.type for s in prog.compile().gpus[1].tbs[0].steps]
    assert types == [StepType.RECV_REDUCE_SEND]
    # the same but the partial lands in the output: the store is the final value -> rrcs
    prog = Program("t", Coll.REDUCE, 3, 1, root=2)
    acc = prog.input(0, 0).reduce(prog.input(1, 0), out=prog.output(1, 0))
    acc.reduce(prog.input(2, 0), out=prog.output(2, 0))
    types = [s.type for s in prog.compile().gpus[1].tbs[0].steps]
    assert types == [StepType.RECV_REDUCE_COPY_SEND]


def test_rccl_target_lowers_fused_and_reduce_receives():
    from ccxml.algorithms.ring import allreduce
    algo = allreduce(5).compile("rccl")
    kinds = {s.type for s in algo.steps()}
    assert kinds <= {StepType.SEND, StepType.RECV, StepType.COPY, StepType.REDUCE, StepType.NOP}
    assert StepType.REDUCE in kinds


def test_long_thread_blocks_are_split_across_channels_with_links_intact():
    from ccxml.algorithms.ring import allreduce
    algo = allreduce(40).compile("exec")      # 79 steps per TB before splitting
    assert algo.nchannels == 2
    for gpu in algo.gpus:
        assert len(gpu.tbs) == 2
        for tb in gpu.tbs:
            assert len(tb.steps) <= 64
        first_of_second = next(tb for tb in gpu.tbs if tb.chan == 1).steps
        real = [s for s in first_of_second if s.type is not StepType.NOP]
        assert real[0].dep is not None and real[0].dep.tb.chan == 0


def test_split_that_needs_too_many_channels_names_the_limit():
    from ccxml.algorithms.ring import allreduce
    from ccxml.frontend.algorithm import Options
    # 65 steps per TB on 17 channels: the second piece would need channel 33 > 31
    with pytest.raises(LimitError, match=r"limit is 64 per TB.*--target legacy"):
        allreduce(33, options=Options(channels=17)).compile("exec")
    with pytest.raises(LimitError, match=r"channel 32 exceeds the exec limit of 31"):
        allreduce(2, options=Options(channels=33)).compile("exec")


def test_compile_is_deterministic():
    from ccxml.algorithms.ring import allgather
    assert allgather(7).to_xml() == allgather(7).to_xml()


def test_long_ranges_become_several_messages_and_steps():
    """Without a size bound a call moves one chunk and a link buffers two calls: a 3-chunk
    message could wedge a link, so it goes as three; a local copy over 71 chunks is cut too."""
    prog = Program("t", Coll.ALLREDUCE, 2, 200)
    prog.input(0, 0, 3).copy(prog.scratch(1, 0, 3))
    prog.input(0, 0, 150).copy(prog.output(0, 0, 150))
    algo = prog.compile()
    sends = [s for tb in algo.gpus[0].tbs for s in tb.steps if s.type is StepType.SEND]
    copies = [s for tb in algo.gpus[0].tbs for s in tb.steps if s.type is StepType.COPY]
    assert [s.cnt for s in sends] == [1, 1, 1]
    assert sorted(s.cnt for s in copies) == [8, 71, 71]
    # with a size window the call moves more chunks, and the message can be longer
    prog = Program("t", Coll.ALLREDUCE, 2, 200, max_bytes=1 << 20)
    prog.input(0, 0, 3).copy(prog.scratch(1, 0, 3))
    assert [s.cnt for s in prog.compile().gpus[0].tbs[0].steps] == [3]


def test_next_round_orders_independent_transfers_like_one_stream():
    """PairWise-style: rank r sends to r+k in round k; rounds run one after another per rank."""
    prog = Program("t", Coll.ALLTOALL, 3, 3)
    for r in range(3):
        prog.input(r, r).copy(prog.output(r, r))
    prog.next_round()
    for k in (1, 2):
        for r in range(3):
            prog.input(r, (r + k) % 3).copy(prog.output((r + k) % 3, r))
        prog.next_round()
    steps = [st for st in prog.algo.gpus[0].pending if st.send_peer >= 0 or st.recv_peer >= 0]
    first_round, second_round = steps[:2], steps[2:]
    for st in second_round:                      # both transfers of round 2 wait for round 1
        assert set(map(id, st.dep_list)) >= set(map(id, first_round))
    for st in first_round:
        assert st.dep_list == ()
    from ccxml.interpreter import verify
    assert verify(prog.to_xml()).ok


def test_the_threadblocks_pass_keeps_independent_lane_streams_apart():
    """Steps issued on lanes get their channels in the threadblocks pass: a chain reduce
    1 -> 2 -> 0 and then a chain broadcast 0 -> 1 -> 2 are two streams; sharing one thread block
    per rank they could be reordered into a wait cycle, so the second goes on another channel
    (lane 1 of the one instance), while the hops of one stream stay on one channel."""
    from ccxml.frontend.lanes import Lanes
    from ccxml.interpreter import verify
    prog = Program("lanes", Coll.ALLREDUCE, 3, 1)
    lanes = Lanes(1, 0)
    reduce_phase, bcast_phase = lanes.phase(), lanes.phase()
    prog.input(1, 0).reduce(prog.input(2, 0), out=prog.scratch(2, 0),
                            lane=reduce_phase.place(prog, [(1, 2)]))
    prog.scratch(2, 0).reduce(prog.input(0, 0), out=prog.output(0, 0),
                              lane=reduce_phase.place(prog, [(2, 0)]))
    prog.output(0, 0).copy(prog.output(1, 0), lane=bcast_phase.place(prog, [(0, 1)]))
    prog.output(1, 0).copy(prog.output(2, 0), lane=bcast_phase.place(prog, [(1, 2)]))
    assert [g[2:] for g in prog.algo.lane_groups] == [(0, ((1, 2),)), (0, ((2, 0),)),
                                                      (1, ((0, 1),)), (1, ((1, 2),))]
    algo = prog.compile()
    chans = {(tb.gpu, tb.send, tb.recv): tb.chan for g in algo.gpus for tb in g.tbs}
    assert chans[(1, 2, -1)] == chans[(2, 0, 1)] == chans[(0, -1, 2)] == 0     # the reduce
    assert chans[(0, 1, -1)] == chans[(1, 2, 0)] == chans[(2, -1, 1)] == 1     # the broadcast
    assert verify(prog.to_xml()).ok


def test_reordering_one_compiled_tb_keeps_its_step_numbers():
    """Ordering one TB uses the pass's scratch numbers; it must not wipe the exported ones."""
    from ccxml.algorithms import ring
    from ccxml.passes.ordering import order_tb
    tb = ring.allreduce(4).compile("exec").gpus[0].tbs[0]
    before = sorted(st.s for st in tb.steps)
    order_tb(tb)
    assert sorted(st.s for st in tb.steps) == before == list(range(len(tb.steps)))


def _compiled_ring(p: int = 4):
    from ccxml.algorithms.ring import allreduce
    return allreduce(p).compile("exec")


@pytest.mark.parametrize("breakage, reason", [
    ("cnt", r"link 0->1 chan 0: .* differ at message 0 \(cnt \[1\] vs \[2\]\)"),
    ("one-sided", r"gpu 0 tb 0 chan 0 sends to 1, but gpu 1 has no TB receiving from 0"),
    ("own peer", r"gpu 0 tb 0 chan 0: send peer 0 is not another rank of 0..3"),
    ("extra receive", r"link 0->1 chan 0: gpu 0 tb 0 sends 6 messages, gpu 1 tb 0 receives 7"),
])
def test_check_links_rejects_a_broken_link_naming_it(breakage, reason):
    from ccxml.passes import LinkError, check_links
    algo = _compiled_ring()
    check_links(algo)                               # the compiled schedule holds
    rx = next(tb for tb in algo.gpus[1].tbs if tb.recv == 0)
    first_recv = next(st for st in rx.steps if st.type.receives)
    if breakage == "cnt":
        first_recv.cnt = 2
    elif breakage == "one-sided":
        rx.recv = -1
    elif breakage == "own peer":
        algo.gpus[0].tbs[0].send = 0
    else:
        rx.steps.append(Step(StepType.RECV, 1, dst=first_recv.dst, recv_peer=0))
    with pytest.raises(LinkError, match=reason):
        check_links(algo)


@pytest.mark.parametrize("chan, reason", [(-1, "channel must be >= 0"), (2**40, "out of range")])
def test_a_channel_no_runtime_has_is_refused_when_issued(chan, reason):
    from ccxml.frontend.chunk import ChunkError
    prog = Program("x", Coll.ALLGATHER, 2, 2)
    with pytest.raises(ChunkError, match=reason):
        prog.input(0, 0).copy(prog.output(1, 0), chan=chan)


def test_scratch_beyond_the_limit_is_refused_and_high_scratch_below_it_works():
    from ccxml.frontend.chunk import SCRATCH_LIMIT, Chunk, ChunkError
    from ccxml.interpreter import verify
    prog = Program("x", Coll.ALLGATHER, 2, 2)
    with pytest.raises(ChunkError, match="beyond the 16777216 scratch chunks"):
        prog.scratch(0, SCRATCH_LIMIT - 1, 2)
    # a Chunk made directly (not through Program.chunk) is refused when a step would use it
    far = Chunk(prog, 1, Buffer.SCRATCH, SCRATCH_LIMIT, 1)
    with pytest.raises(ChunkError, match="out of range"):
        prog.input(0, 0).copy(far)
    # a scratch index past the tables grows them; the dependencies through it still hold
    prog = Program("x", Coll.ALLGATHER, 2, 2)
    for r in range(2):
        prog.input(r, 0).copy(prog.output(r, r))
        via = prog.input(r, 0).copy(prog.scratch(1 - r, 5000 + r))
        via.copy(prog.output(1 - r, r))
    assert verify(prog.to_xml("exec"), target="exec").ok


def test_ordering_keeps_its_order_when_heap_entries_would_not_fit_64_bits():
    """Entries too large for int64 become ranks (same order). Only a pathological schedule gets
    there, so the pure module is made to take that path (a compiled one cannot be patched)."""
    import os
    import subprocess
    import sys
    script = (
        "from ccxml.algorithms import build\n"
        "from ccxml.frontend.algorithm import Options\n"
        "import ccxml.passes.ordering as o\n"
        "texts = []\n"
        "for fits in (o._fits_int64, lambda *a: False):\n"
        "    o._fits_int64 = fits\n"
        "    for alg, coll in (('rhd', 'allreduce'), ('pairwise', 'alltoall'), ('ring', 'allreduce')):\n"
        "        texts.append(build(alg, coll, 6, options=Options()).to_xml('exec'))\n"
        "print(texts[:3] == texts[3:], len(set(texts)))\n")
    repo = str(REPO)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=repo,
                         env=dict(os.environ, CCXML_PURE="1", PYTHONPATH=repo), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "3"]


@pytest.mark.parametrize("alg, coll, p", [("ring", "allreduce", 5), ("ring", "broadcast", 5),
                                          ("ring", "reduce", 4), ("ring", "scatter", 5)])
def test_fusion_keeps_every_send_and_receive_index(alg, coll, p):
    """Fusion sets the fused step's send index instead of renumbering the TB: the indices it
    leaves are the ones a fresh numbering gives, and steps did fuse."""
    from ccxml.algorithms import build
    from ccxml.frontend.algorithm import Options
    from ccxml.passes import pipeline
    from ccxml.vocab.wire import profile
    algo = build(alg, coll, p, options=Options()).algo
    for ps in pipeline(profile("exec")):
        ps.run(algo, profile("exec"))
        if ps.name == "fusion":
            break
    tbs = [tb for gpu in algo.gpus for tb in gpu.tbs]
    assert any(st.type.sends and st.type.receives for tb in tbs for st in tb.steps)
    for tb in tbs:
        kept = [(st.send_index, st.recv_index) for st in tb.steps], tb.send_count, tb.recv_count
        tb.number_links()
        assert kept == ([(st.send_index, st.recv_index) for st in tb.steps], tb.send_count,
                        tb.recv_count)
