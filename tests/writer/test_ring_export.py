"""Ring, p = 2..16, every collective, every profile: the file validates against the XSD, obeys
the runtime's lexical form and loader rules, and carries every required <algo> attribute."""
from __future__ import annotations

import re

import pytest
from lxml import etree

from ccxml.algorithms import ring
from ccxml.frontend.algorithm import Options
from ccxml.loader.reader import loads
from ccxml.loader.rules import check
from ccxml.passes.splitting import LimitError
from ccxml.vocab.wire import PROFILES

REQUIRED = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
            "outofplace", "minBytes", "maxBytes")
LINE = re.compile(r'^( *)<(/?)(algo|gpu|tb|step)((?: [A-Za-z_]+="[^"\t\n]*")*)(/?)>$')


def _lexical_form(text: str) -> None:
    assert not text.startswith(("<?xml", "\ufeff"))
    assert "\t" not in text and "'" not in text
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, f"not one element per line in runtime form: {line!r}"
        attrs = re.findall(r' ([A-Za-z_]+)="([^"]*)"', m.group(4))
        assert len(attrs) <= 16
        for key, value in attrs:
            if re.fullmatch(r"-?\d+", value):
                assert re.fullmatch(r"0|-?[1-9]\d*", value), f"{key}={value!r} is not plain decimal"


@pytest.mark.parametrize("target", sorted(PROFILES))
@pytest.mark.parametrize("coll", list(ring.COLLECTIVES), ids=lambda c: c.value)
def test_ring_files_load_under_the_runtime_rules(coll, target, xsd):
    written = 0
    for p in range(2, 17):
        kw = {"root": p // 2} if coll.rooted else {}
        try:
            text = ring.COLLECTIVES[coll](p, options=Options(channels=1 + (p % 3 == 0)), **kw).to_xml(target)
        except LimitError as e:
            assert target == "legacy" and coll.value in str(e)
            continue
        written += 1
        doc = etree.fromstring(text.encode())
        assert xsd.validate(doc), xsd.error_log
        assert all(k in doc.attrib for k in REQUIRED)
        if coll.rooted:
            assert doc.get("root") == str(p // 2)
        _lexical_form(text)
        findings = check(loads(text), target)
        assert findings == [], "\n".join(map(str, findings[:5]))
        for gpu in doc:
            assert [int(t.get("id")) for t in gpu] == list(range(len(gpu)))
            for tb in gpu:
                assert len(tb) <= PROFILES[target].max_steps_per_tb
    assert written or (target == "legacy" and coll.value in ("gather", "scatter"))


def test_legacy_spells_reducescatter_its_own_way():
    text = ring.reducescatter(4).to_xml("legacy")
    assert 'coll="reduce_scatter"' in text
    assert 'coll="reducescatter"' in ring.reducescatter(4).to_xml("exec")


def test_same_input_gives_byte_identical_files():
    a = ring.allreduce(9, options=Options(channels=2)).to_xml()
    b = ring.allreduce(9, options=Options(channels=2)).to_xml()
    assert a == b


def test_send_and_receive_carry_each_others_buffers():
    doc = etree.fromstring(ring.allgather(4).to_xml(merge_rcs=False).encode())
    for gpu in doc:
        for tb in gpu:
            for st in tb:
                if st.get("type") == "s":
                    peer = doc[int(tb.get("send"))]
                    rtb = next(t for t in peer if t.get("recv") == gpu.get("id"))
                    # the k-th send matches the k-th receive on the peer
                    k = [s for s in tb if s.get("type") == "s"].index(st)
                    rs = [s for s in rtb if s.get("type") == "r"][k]
                    assert (st.get("dstbuf"), st.get("dstoff")) == (rs.get("dstbuf"), rs.get("dstoff"))
                    assert (rs.get("srcbuf"), rs.get("srcoff")) == (st.get("srcbuf"), st.get("srcoff"))
