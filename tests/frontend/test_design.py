"""The framework design's names (Algo → GPU → TB → Step, Chunk) run as written, on ccxml."""
from __future__ import annotations

import re

import pytest
from conftest import REPO

from ccxml import verify
from ccxml.frontend.design import GPU, TB, Algo, Chunk, Step
from ccxml.loader import load, loads
from ccxml.vocab.errors import ChunkError, IRError, LinkError


def _readme_block() -> str:
    text = (REPO / "docs" / "algorithms.md").read_text(encoding="utf-8")
    section = text.split("## Written to the framework design", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_and_its_file_proves(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_readme_block(), "docs/algorithms.md", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "{0: {'send': [1], 'recv': [3]}}" in out
    assert verify(str(tmp_path / "ring_allgather.xml")).ok


def _builder_example(tmp_path) -> Algo:
    """MSCCL-XML-Builder's own examples/example.py, as its README writes it (import changed)."""
    ngpus = 2
    chunk = ngpus
    algo = Algo(name="ag_test", proto="Simple", nchannels=1, nchunksperloop=chunk, ngpus=ngpus,
                coll="allgather", inplace=1, outofplace=1, minBytes=0, maxBytes=0)
    local_tbs = {}
    for rank in range(ngpus):
        local_tb = TB(send=-1, recv=-1, chan=0)
        gpu = algo.get_gpu(rank)
        gpu.add_tb(local_tb)
        local_tbs[rank] = local_tb
    copy_steps = []
    for rank in range(ngpus):
        src_chunk = Chunk(gpu_id=rank, chunk_type="i", index=0, size=1, algo=algo)
        dest_chunk = Chunk(gpu_id=rank, chunk_type="o", index=rank, size=1, algo=algo)
        copy_steps.append(src_chunk.copy(dest_chunk, channel_id=0))
    rank, peer_rank = 0, 1
    gpu, peer_gpu = algo.get_gpu(rank), algo.get_gpu(peer_rank)
    tb, peer_tb = TB(send=peer_rank, recv=peer_rank, chan=0), TB(send=rank, recv=rank, chan=0)
    gpu.add_tb(tb)
    peer_gpu.add_tb(peer_tb)
    src_chunk = Chunk(gpu_id=rank, chunk_type="o", index=rank, size=1, algo=algo)
    dest_chunk = Chunk(gpu_id=peer_rank, chunk_type="o", index=rank, size=1, algo=algo)
    send_step = src_chunk.send(dest_rank=peer_rank, channel_id=0, dep_steps=[copy_steps[rank]])
    recv_step = dest_chunk.recv(src_rank=rank, channel_id=0)
    send_step.peer_step = recv_step
    recv_step.peer_step = send_step
    recv_step.add_dep(copy_steps[peer_rank])
    src_chunk = Chunk(gpu_id=peer_rank, chunk_type="o", index=peer_rank, size=1, algo=algo)
    dest_chunk = Chunk(gpu_id=rank, chunk_type="o", index=peer_rank, size=1, algo=algo)
    src_chunk.copy_diff(dest_chunk, channel_id=0, dep_steps=[copy_steps[peer_rank]])
    algo.build_all_dependencies()
    algo.save_xml(str(tmp_path / "output.xml"))
    return algo


def test_the_builders_own_example_runs_as_written(tmp_path):
    algo = _builder_example(tmp_path)
    sched = load(str(tmp_path / "output.xml"))
    assert (sched.inplace, sched.outofplace, sched.coll) == (1, 1, "allgather")
    assert verify(str(tmp_path / "output.xml")).ok
    gpu0 = algo.get_gpu(0)
    assert gpu0.channel_usage == {0: {"send": [1], "recv": [1]}}
    assert [tb.id for tb in gpu0.tbs] == [0, 1]             # renumbered: dependency targets first
    assert isinstance(gpu0, GPU) and gpu0.tbs[0] is gpu0.tbs[0]


def test_steps_answer_the_designs_names(tmp_path):
    algo = Algo("pair", ngpus=2, nchunksperloop=2, coll="allgather", inplace=0)
    cpy = Chunk(0, "input", 0, 1, algo).copy(Chunk(0, "output", 0, 1, algo))
    send, recv = Chunk(0, "output", 0, 1, algo).copy_diff(Chunk(1, "output", 0, 1, algo))
    back = Chunk(1, "input", 0, 1, algo).copy(Chunk(1, "output", 1, 1, algo))
    Chunk(1, "output", 1, 1, algo).copy_diff(Chunk(0, "output", 1, 1, algo))
    assert send.depended_by_list == [] and send in cpy.depended_by_list    # a data dependency
    algo.build_all_dependencies(merge_rcs=False, sort=False)
    assert (send.type, send.srcbuf, send.srcoff, send.dstbuf, send.dstoff, send.cnt) == ("s", "o", 0, "o", 0, 1)
    assert (recv.type, recv.srcbuf, recv.srcoff) == ("r", "o", 0)
    assert send.peer_step is recv and recv.peer_step is send
    assert (send.depid, send.deps) == (cpy.ir.tb.id, cpy.s) and cpy.hasdep == 1
    assert send.send_index == 0 and recv.recv_index == 0 and back.type == "cpy"
    assert verify(_text(algo)).ok


def _text(algo) -> str:
    from lxml import etree
    return etree.tostring(algo.to_xml(), pretty_print=True, encoding="unicode")


def test_explicit_rcs_is_one_step_on_the_middle_rank(tmp_path):
    algo = Algo("chain", ngpus=3, nchunksperloop=1, coll="broadcast", inplace=0, root=0)
    src = Chunk(0, "input", 0, 1, algo)
    src.copy(Chunk(0, "output", 0, 1, algo))
    src.send(1, bidirectional=False)
    mid = src.rcs(Chunk(2, "output", 0, 1, algo), intermediate_rank=1)
    Chunk(2, "output", 0, 1, algo).recv(1, bidirectional=False)
    algo.build_all_dependencies()
    assert mid.type == "rcs" and [s.type for tb in algo.get_gpu(1).tbs for s in tb.steps] == ["rcs"]
    algo.save_xml(str(tmp_path / "bc.xml"))
    assert verify(str(tmp_path / "bc.xml")).ok


def test_an_unmatched_send_is_an_error_naming_both_ranks():
    algo = Algo("lonely", ngpus=3, nchunksperloop=3, coll="allgather", inplace=0)
    Chunk(0, "input", 0, 1, algo).send(2)
    with pytest.raises(LinkError, match="rank 0 sends 1 message.s. to rank 2 on channel 0, but rank 2 receives only 0"):
        algo.build_all_dependencies()


def test_a_raw_step_through_add_step():
    algo = Algo("raw", ngpus=2, nchunksperloop=2, coll="allgather", inplace=0)
    tb = TB(send=-1, recv=-1, chan=0)
    algo.get_gpu(0).add_tb(tb)
    st = tb.add_step(Step(type="cpy", srcbuf="i", srcoff=0, dstbuf="o", dstoff=0, cnt=1))
    assert st.s == 0 and tb.steps == [st] and (tb.send_index, tb.recv_index) == (0, 0)
    with pytest.raises(IRError, match="needs a TB with a send peer"):
        tb.add_step(Step(type="s", srcbuf="i", srcoff=0, cnt=1))


def test_the_designs_tb_rules():
    algo = Algo("rules", ngpus=3, nchunksperloop=3, coll="allgather", inplace=0)
    gpu = algo.get_gpu(0)
    gpu.add_tb(TB(id=0, send=1, recv=2, chan=0))
    with pytest.raises(IRError, match="TB id=5 is not continuous. Expected 1"):
        gpu.add_tb(TB(id=5, send=2, recv=1, chan=0))
    with pytest.raises(IRError, match="two TBs send to 1 on channel 0"):
        gpu.add_tb(TB(send=1, recv=-1, chan=0))
    with pytest.raises(IRError, match="Channel 0 already has send to rank 1"):
        Chunk(0, "input", 0, 1, algo).recv(1)             # bidirectional: would need send 1 too
    assert gpu.find_tb(send=1).send == 1 and gpu.find_tb(chan=3) is None
    with pytest.raises(IRError, match="GPU 7 not found"):
        algo.get_gpu(7)
    with pytest.raises(ChunkError, match="same GPU"):
        Chunk(0, "input", 0, 1, algo).copy(Chunk(1, "output", 0, 1, algo))
    with pytest.raises(ChunkError, match="unknown buffer"):
        Chunk(0, "inbox", 0, 1, algo)


def test_tb_and_gpu_to_xml_are_the_files_elements(tmp_path):
    algo = _builder_example(tmp_path)
    text = (tmp_path / "output.xml").read_text()
    from lxml import etree
    root = etree.fromstring(text, etree.XMLParser(remove_blank_text=True))
    gpus = [etree.tostring(g.to_xml(), encoding="unicode") for g in algo.gpus]
    assert [etree.tostring(e, encoding="unicode") for e in root] == gpus
    tb = algo.get_gpu(0).tbs[1]
    assert etree.tostring(tb.to_xml(), encoding="unicode") == etree.tostring(root[0][1], encoding="unicode")
    assert loads(text).gpus[0].tbs[1].send == tb.send
