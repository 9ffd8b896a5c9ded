"""The SVG picture and the HTML page of a view: well-formed, deterministic, escaped, offline."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import xml.etree.ElementTree as ET

import pytest
from show_pages import HOSTILE_BUF, HOSTILE_NAME, small_xml

from ccxml.driver import algorithm_schedule
from ccxml.loader.reader import loads
from ccxml.show import build_view, render_html, render_svg
from ccxml.show.html import page_data
from ccxml.show.view import CATEGORIES
from ccxml.simulator import simulate
from ccxml.topology.model import Topology, load_preset

SVG = "{http://www.w3.org/2000/svg}"


def view_of(xml_text, nbytes=3000, topo=None, label="small.xml"):
    sched = loads(xml_text)
    topo = topo or Topology.flat(1e-6, 1e-9, 0.0)
    return build_view(sched, simulate(sched, nbytes, topo, record=True), label=label, topology=topo.describe())


@pytest.fixture(scope="module")
def ring_view():
    topo = load_preset("dgx-h100", 2)
    sched = algorithm_schedule("ring", "allreduce", 16, max_bytes=1 << 22)
    return build_view(sched, simulate(sched, 1 << 22, topo, record=True), label="ring allreduce",
                      topology=topo.describe())


# ---- SVG ----------------------------------------------------------------------------------------

def svg_rows(root) -> list[str]:
    """The row labels (the text anchored at the gutter's right edge, before the links)."""
    return [t.text for t in root.iter(SVG + "text") if t.get("text-anchor") == "end"]


def test_svg_is_well_formed_with_one_row_per_thread_block(ring_view):
    root = ET.fromstring(render_svg(ring_view).encode("utf-8"))
    assert root.tag == SVG + "svg"
    labels = svg_rows(root)
    assert labels[:len(ring_view.rows)] == [f"r{r.gpu} tb{r.tb}" for r in ring_view.rows]
    # every step is one bar, in its kind's colour
    fills = {g.get("fill"): len(g) for g in root.iter(SVG + "g") if g.get("fill") not in (None, "none")}
    by_kind = {c[2]: sum(1 for s in ring_view.steps if s.type in c[1]) for c in CATEGORIES}
    assert fills == {color: n for color, n in by_kind.items() if n}
    assert sum(fills.values()) == len(ring_view.steps)


def test_svg_is_the_same_bytes_for_the_same_input(ring_view):
    topo = load_preset("dgx-h100", 2)
    again = algorithm_schedule("ring", "allreduce", 16, max_bytes=1 << 22)
    other = build_view(again, simulate(again, 1 << 22, topo, record=True), label="ring allreduce",
                       topology=topo.describe())
    assert render_svg(ring_view) == render_svg(other)
    assert render_html(ring_view) == render_html(other)


def test_svg_escapes_hostile_names_and_drops_what_xml_cannot_hold():
    view = view_of(small_xml())
    view.notes.append("a note with \x01 a control character")
    text = render_svg(view)
    root = ET.fromstring(text.encode("utf-8"))             # still well-formed
    assert root.find(SVG + "title").text == f"ccxml show: small.xml ({HOSTILE_NAME})"
    assert "<script" not in text and "<img" not in text and "\x01" not in text
    assert [el.tag for el in root.iter()] == [el.tag for el in root.iter() if el.tag.startswith(SVG)]


# ---- HTML ---------------------------------------------------------------------------------------

def blob(page: str) -> str:
    m = re.search(r'<script type="application/json" id="ccxml-data">(.*?)</script>', page, re.S)
    assert m, "no data blob"
    return m.group(1)


def test_page_carries_the_view_as_one_json_blob_that_cannot_close_its_script(ring_view):
    page = render_html(ring_view)
    text = blob(page)
    assert json.loads(text) == json.loads(json.dumps(page_data(ring_view)))
    assert not set("<>&") & set(text)
    data = json.loads(text)
    assert len(data["rows"]) == len(ring_view.rows) and len(data["steps"]["a"]) == len(ring_view.steps)


def test_page_escapes_hostile_names_everywhere():
    view = view_of(small_xml())
    page = render_html(view)
    # the name is text inside <title>, and JSON escapes inside the blob; no new element appears
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1)
    assert "<" not in title and "&lt;/script&gt;&lt;script&gt;window.pwned=1" in title
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert page.count("<img") == 0 and page.count("<!--") == 0
    data = json.loads(blob(page))
    assert data["title"] == HOSTILE_NAME and HOSTILE_BUF in data["bufs"]


def test_page_is_self_contained_and_runs_only_its_own_script_and_style():
    page = render_html(view_of(small_xml()))
    # nothing to fetch: no src/href but the empty data: icon, no URL in the CSS or JS
    assert re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', page) == ["data:,"]
    assert not re.search(r"https?://|url\(|@import|fetch\(|XMLHttpRequest|import\(", page)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp

    def sha(text):
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    style = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(script) == 1 and len(style) == 1
    assert f"script-src '{sha(script[0])}'" in csp and f"style-src '{sha(style[0])}'" in csp
