"""Temporary XML reader used only while ccxml.xmlload is not available (to be removed)."""
from __future__ import annotations

from lxml import etree

from ccxml.schedule import Schedule, ScheduleGPU, ScheduleStep, ScheduleTB, strtol0


def loads(text: str, path: str = "") -> Schedule:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    root = etree.fromstring(text.encode(), parser)
    sch = Schedule(attrs=dict(root.attrib), path=path)
    I = lambda e, k, d=0: strtol0(e.get(k)) if e.get(k) is not None else d
    for g in root.iter("gpu"):
        gpu = ScheduleGPU(I(g, "id"), I(g, "i_chunks"), I(g, "o_chunks"), I(g, "s_chunks"), line=g.sourceline or 0)
        for tb in g.iter("tb"):
            t = ScheduleTB(I(tb, "id"), I(tb, "send", -1), I(tb, "recv", -1), I(tb, "chan"), line=tb.sourceline or 0)
            for st in tb.iter("step"):
                t.steps.append(ScheduleStep(I(st, "s"), st.get("type", ""), st.get("srcbuf", ""), I(st, "srcoff"),
                                            st.get("dstbuf", ""), I(st, "dstoff"), I(st, "cnt"), I(st, "depid", -1),
                                            I(st, "deps", -1), I(st, "hasdep"), line=st.sourceline or 0))
            gpu.tbs.append(t)
        sch.gpus.append(gpu)
    return sch


def load(path: str) -> Schedule:
    with open(path, encoding="utf-8", errors="replace") as f:
        return loads(f.read(), path)
