"""The ``chakra`` backend: Chakra execution traces for ASTRA-sim, checked against the loaded
schedule they come from and against the upstream converter's own output (fixtures/upstream)."""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("google.protobuf")

from ccxml.driver import algorithm_schedule  # noqa: E402
from ccxml.export.chakra import PARTS, ExportError, export  # noqa: E402
from ccxml.export.chakra.schema import (  # noqa: E402
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    attr_value,
    decode,
    frame,
    frames,
    messages,
)
from ccxml.loader import load, loads  # noqa: E402
from ccxml.vocab.sizes import chunk_bytes  # noqa: E402

UPSTREAM = Path(__file__).parent / "fixtures" / "upstream"
NAMES = ["ring8_allreduce", "rhd8_allreduce"]


def traces(schedule, nbytes=1 << 20, **kw) -> dict[int, tuple]:
    """{rank: (GlobalMetadata, [Node])} of what the backend writes for ``schedule``."""
    out = {}
    for path, data in export(schedule, "t", nbytes=nbytes, **kw):
        out[int(path.split(".")[-2])] = decode(data)
    return out


def attrs(node) -> dict:
    return {a.name: attr_value(a) for a in node.attr}


def without_comm_size(node):
    keep = [a for a in node.attr if a.name != "comm_size"]
    del node.attr[:]
    node.attr.extend(keep)
    return node


# ---- the upstream converter's output ---------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_node_by_node_as_the_upstream_converter_writes(name):
    """Same node ids, names, types, attributes (in order) and dependencies as
    astra-sim/collectiveapi's mscclang2chakra_converter.py on the same file; and with ccxml's
    comm_size left out, the very same bytes."""
    xml = UPSTREAM / f"{name}.xml"
    files = export(load(xml), "x", nbytes=1 << 20, source_text=xml.read_text())
    assert len(files) == 8
    for path, data in files:
        rank = int(path.split(".")[-2])
        theirs_bytes = (UPSTREAM / f"{name}.{rank}.et").read_bytes()
        meta, mine = decode(data)
        their_meta, theirs = decode(theirs_bytes)
        assert meta == their_meta
        assert len(mine) == len(theirs) > 0
        for a, b in zip(mine, theirs):
            assert (a.id, a.name, a.type, list(a.data_deps)) == (b.id, b.name, b.type, list(b.data_deps))
            got = [(x.name, attr_value(x)) for x in a.attr]
            assert got[:-1] == [(x.name, attr_value(x)) for x in b.attr]
            if a.type == COMP_NODE:
                assert got == [] or got[-1][0] != "comm_size"
        stripped = frame(meta) + b"".join(frame(without_comm_size(n)) for n in mine)
        assert stripped == theirs_bytes


@pytest.mark.parametrize("name", NAMES)
def test_the_schema_reads_and_writes_upstream_files_unchanged(name):
    """The schema built in code is chakra's on the wire: decoding an upstream file and encoding
    it again gives the same bytes."""
    for rank in range(8):
        data = (UPSTREAM / f"{name}.{rank}.et").read_bytes()
        meta, nodes = decode(data)
        assert [a.name for a in meta.attr] == ["schema", "input_file", "collective"]
        assert frame(meta) + b"".join(map(frame, nodes)) == data


def test_truncated_trace_is_a_value_error():
    data = (UPSTREAM / "ring8_allreduce.0.et").read_bytes()
    with pytest.raises(ValueError, match="runs past the end"):
        list(frames(data[:-3]))


# ---- what the trace says about the schedule --------------------------------------------------

CASES = [("ring", "allreduce", 8), ("ring", "allgather", 6), ("rhd", "allreduce", 8),
         ("mesh", "allreduce", 4), ("nb", "allreduce", 5), ("nhr:single-tree", "allreduce", 7),
         ("tree", "broadcast", 6)]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def case(request):
    name, coll, p = request.param
    return algorithm_schedule(name, coll, p)


def _steps(gpu):
    return [(tb, st) for tb in gpu.tbs for st in tb.read_steps()]


def test_one_send_and_one_receive_per_sending_and_receiving_step(case):
    """Per rank and per peer, as many send (receive) nodes as steps that send to (receive
    from) that peer; a comp node per reduction, copy or local reduce."""
    out = traces(case)
    assert sorted(out) == sorted(g.id for g in case.gpus)
    for gpu in case.gpus:
        _, nodes = out[gpu.id]
        sends = Counter(attrs(n)["comm_dst"] for n in nodes if n.type == COMM_SEND_NODE)
        recvs = Counter(attrs(n)["comm_src"] for n in nodes if n.type == COMM_RECV_NODE)
        comps = sum(n.type == COMP_NODE for n in nodes)
        steps = _steps(gpu)
        assert sends == Counter(tb.send for tb, st in steps if "S" in PARTS[st.type])
        assert recvs == Counter(tb.recv for tb, st in steps if "R" in PARTS[st.type])
        assert comps == sum("C" in PARTS[st.type] for _, st in steps)
        assert len(nodes) == sum(len(PARTS[st.type]) for _, st in steps)


def test_dependencies_stay_in_the_rank_and_have_no_cycle(case):
    for _, nodes in traces(case).values():
        ids = [n.id for n in nodes]
        assert len(set(ids)) == len(ids)
        known = set(ids)
        assert all(d in known for n in nodes for d in n.data_deps)
        order = {i: k for k, i in enumerate(ids)}
        # written in an order where every node follows what it waits for, except across TBs:
        # check acyclicity by peeling nodes whose dependencies are done
        waiting = {n.id: set(n.data_deps) for n in nodes}
        done: set[int] = set()
        while waiting:
            free = [i for i, d in waiting.items() if d <= done]
            assert free, "cycle"
            for i in free:
                done.add(i)
                del waiting[i]
        assert len(done) == len(order)


def test_each_step_waits_for_its_dependency_and_the_step_before(case):
    """The first node of step (tb, s) waits for the last node of step (tb, s-1) and of its
    depid/deps step, when those are not nops; the nodes of one step form a chain."""
    for gpu in case.gpus:
        _, nodes = traces(case)[gpu.id]
        by_name = {n.name: n for n in nodes}

        def nodes_of(tb, s):
            return [by_name[f"{k}_tb{tb}_step{s}"] for k in
                    ("COMM_RECV_NODE", "COMP_NODE", "COMM_SEND_NODE") if f"{k}_tb{tb}_step{s}" in by_name]

        tbs = {tb.id: tb.read_steps() for tb in gpu.tbs}
        for tb_id, steps in tbs.items():
            for s, st in enumerate(steps):
                mine = nodes_of(tb_id, s)
                if st.type == "nop":
                    assert mine == []
                    continue
                mine.sort(key=lambda n: n.id)
                first = mine[0]
                if s > 0 and steps[s - 1].type != "nop":
                    assert max(n.id for n in nodes_of(tb_id, s - 1)) in first.data_deps
                if st.depid != -1 and tbs[st.depid][st.deps].type != "nop":
                    assert max(n.id for n in nodes_of(st.depid, st.deps)) in first.data_deps
                for a, b in zip(mine, mine[1:]):
                    assert list(b.data_deps) == [a.id]


@pytest.mark.parametrize("nbytes", [1 << 20, 3 << 20, 1000])
def test_comm_size_is_cnt_chunks_at_the_given_size(case, nbytes):
    chunk = chunk_bytes(case.coll, nbytes, case.nchunksperloop, case.ngpus)
    for gpu in case.gpus:
        _, nodes = traces(case, nbytes)[gpu.id]
        for n in nodes:
            if n.type in (COMM_SEND_NODE, COMM_RECV_NODE):
                a = attrs(n)
                assert a["comm_size"] == math.ceil(a["msg_chunk_cnt"] * chunk)
                assert a["total_chunk_cnt"] == (gpu.i_chunks or gpu.o_chunks)


def test_every_send_meets_a_receive_of_the_same_size_in_order(case):
    """ASTRA-sim pairs a rank's sends to a peer on a tag with that peer's receives in order:
    the sizes must agree one for one."""
    out = traces(case)
    sent, received = {}, {}
    for rank, (_, nodes) in out.items():
        for n in sorted(nodes, key=lambda n: n.id):
            a = attrs(n)
            if n.type == COMM_SEND_NODE:
                sent.setdefault((rank, a["comm_dst"], a["comm_tag"]), []).append(a["comm_size"])
            elif n.type == COMM_RECV_NODE:
                received.setdefault((a["comm_src"], rank, a["comm_tag"]), []).append(a["comm_size"])
    assert sent == received


def test_metadata_names_the_schema_and_collective(case):
    for meta, _ in traces(case, source_text="<algo/>").values():
        assert {a.name: attr_value(a) for a in meta.attr} == {
            "schema": "1.0.2-chakra.0.0.4", "input_file": "<algo/>", "collective": case.coll}


def test_output_is_deterministic():
    s = algorithm_schedule("rhd", "allreduce", 8)
    assert export(s, "p", nbytes=4096) == export(algorithm_schedule("rhd", "allreduce", 8), "p", nbytes=4096)


# ---- schedules that have no trace ------------------------------------------------------------

HEAD = ('<algo name="x" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" '
        'inplace="0" outofplace="1" minBytes="0" maxBytes="0">\n')


def _two_ranks(steps0: str, tbs0: str = "") -> str:
    return (HEAD + '  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">\n'
            '    <tb id="0" send="1" recv="-1" chan="0">\n' + steps0 + "    </tb>\n" + tbs0 +
            '  </gpu>\n  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">\n'
            '    <tb id="0" send="-1" recv="0" chan="0">\n'
            '      <step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n'
            "    </tb>\n  </gpu>\n</algo>\n")


def _step(s, t="s", depid=-1, deps=-1):
    return (f'      <step s="{s}" type="{t}" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" '
            f'depid="{depid}" deps="{deps}" hasdep="0"/>\n')


def test_a_dependency_on_a_missing_step_is_an_export_error():
    bad = loads(_two_ranks(_step(0, depid=0, deps=5)))
    with pytest.raises(ExportError, match="depends on tb 0 step 5, which does not exist"):
        export(bad, "x", nbytes=1024)


def test_dependencies_in_a_cycle_are_an_export_error():
    tb1 = ('    <tb id="1" send="-1" recv="-1" chan="0">\n' + _step(0, "nop", depid=0, deps=0) + "    </tb>\n")
    bad = loads(_two_ranks(_step(0, depid=1, deps=0), tb1))
    with pytest.raises(ExportError, match="cycle|wait for each other"):
        export(bad, "x", nbytes=1024)


def test_a_nop_stands_for_what_it_waits_for():
    tb1 = ('    <tb id="1" send="-1" recv="-1" chan="0">\n' + _step(0, "nop", depid=0, deps=0) +
           _step(1, "cpy", depid=-1) + "    </tb>\n")
    s = loads(_two_ranks(_step(0), tb1))
    _, nodes = traces(s)[0]
    by_name = {n.name: n for n in nodes}
    assert list(by_name["COMP_NODE_tb1_step1"].data_deps) == [by_name["COMM_SEND_NODE_tb0_step0"].id]
    assert by_name["COMP_NODE_tb1_step1"].id == 2      # the nop took id 1, as upstream


def test_a_send_on_a_tb_without_send_peer_is_an_export_error():
    text = _two_ranks(_step(0)).replace('send="1" recv="-1"', 'send="-1" recv="-1"')
    with pytest.raises(ExportError, match="sends but the TB has no send peer"):
        export(loads(text), "x", nbytes=1024)


def test_without_protobuf_one_line_names_the_extra(monkeypatch):
    import sys

    from ccxml.export.chakra import schema
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    schema.messages.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install 'ccxml\[chakra\]'"):
            schema.messages()
    finally:
        monkeypatch.undo()
        schema.messages.cache_clear()
    assert messages().Node().DESCRIPTOR.full_name == "ChakraProtoMsg.Node"


def test_a_value_outside_int32_is_an_export_error():
    s = loads(_two_ranks(_step(0)))          # the loader refuses such a channel; a model built
    s.gpus[0].tbs[0].chan = 3_000_000_000    # in memory may hold one
    with pytest.raises(ExportError, match="int32"):
        export(s, "x", nbytes=1024)


def test_comm_size_past_int64_is_an_export_error():
    with pytest.raises(ExportError, match="int64"):
        export(loads(_two_ranks(_step(0))), "x", nbytes=1 << 70)


def test_a_schedule_without_gpus_is_an_export_error():
    with pytest.raises(ExportError, match="no <gpu>"):
        export(loads(HEAD + "</algo>\n"), "x", nbytes=1024)
