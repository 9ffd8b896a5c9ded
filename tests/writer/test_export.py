"""The two serialisers agree byte for byte; the output validates against the schema."""
from __future__ import annotations

import os
import stat

import pytest
from lxml import etree

from ccxml.algorithms import build as build_alg
from ccxml.algorithms import ring
from ccxml.frontend.algorithm import Options
from ccxml.passes.splitting import LimitError
from ccxml.writer.files import write_atomic
from ccxml.writer.msccl import to_xml, to_xml_lxml, xml_parts


@pytest.mark.parametrize("target", ["exec", "rccl", "legacy"])
@pytest.mark.parametrize("build", [lambda: ring.allreduce(7, options=Options(channels=2)),
                                   lambda: ring.broadcast(5, root=3, options=Options(inplace=True)),
                                   lambda: ring.reducescatter(34),    # split TBs, nops
                                   lambda: build_alg("rhd", "allreduce", 6),     # fold/unfold, rrs
                                   lambda: build_alg("nhr", "reducescatter", 5),  # scratch
                                   lambda: build_alg("mesh", "allreduce", 5),
                                   lambda: build_alg("pairwise", "alltoall", 4),
                                   lambda: build_alg("star", "reduce", 4, root=2)])
def test_streamed_text_equals_the_lxml_tree(build, target, xsd):
    # the text writer inlines step_values for speed; the lxml tree is built from step_values
    algo = build().compile(target)
    text = to_xml(algo, target)
    assert text == to_xml_lxml(algo, target)
    assert xsd.validate(etree.fromstring(text.encode()))
    parts = list(xml_parts(algo, target))       # what `ccxml generate` streams to the file
    assert len(parts) == len(algo.gpus) + 2 and "".join(parts) == text


def test_attribute_values_are_escaped_like_lxml():
    prog = ring.allgather(3)
    prog.algo.name = 'a<b & "c"'
    algo = prog.compile()
    assert to_xml(algo) == to_xml_lxml(algo)
    assert 'name="a&lt;b &amp; &quot;c&quot;"' in to_xml(algo)


def test_streamed_parts_are_written_whole_or_not_at_all(tmp_path):
    algo = build_alg("rhd", "allreduce", 6).compile("legacy")
    write_atomic(tmp_path / "a.xml", xml_parts(algo, "legacy"))
    assert (tmp_path / "a.xml").read_text() == to_xml(algo, "legacy")
    # the target's refusal comes before any part exists; a failing part leaves no file
    with pytest.raises(LimitError, match="legacy runtime has no gather"):
        xml_parts(build_alg("ring", "gather", 4).compile("exec"), "legacy")

    def failing():
        yield "<algo>\n"
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        write_atomic(tmp_path / "b.xml", failing())
    assert [p.name for p in tmp_path.iterdir()] == ["a.xml"]


def test_written_files_get_normal_permissions_and_no_temporary_is_left(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.xml", "<algo/>\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.xml").read_text() == "<algo/>\n"
    assert stat.S_IMODE((tmp_path / "a.xml").stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.xml"]
