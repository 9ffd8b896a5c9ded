"""The timeline as one self-contained HTML page: inline CSS and JS, the data as one JSON blob.

The page (``page.html``, ``page.css``, ``page.js`` beside this module) fetches nothing: its
Content-Security-Policy allows no network at all and runs only the page's own script and style
(by their SHA-256), so even text that slipped past the escaping could not run or load anything.
Text from the schedule (names, buffers) travels only inside the JSON blob, with ``<``, ``>`` and
``&`` written as ``\\u003c``-style escapes so that it cannot close the ``<script>`` element, and the
script puts it on the page with ``textContent`` or the canvas, never as HTML.

The blob (``page_data``) is columns rather than objects, to keep a 64-rank page small:
``rows`` are ``[gpu, tb, send, recv, chan, first step, end step]``; ``steps`` holds one list per
field (``s`` position in the TB, ``t`` index into ``types``, ``a``/``b`` start/end in ticks of
``tick`` seconds, ``sb``/``db`` indices into ``bufs``, ``so``/``do`` offsets, ``n`` cnt);
``xdep`` holds (step, depid, deps) for the steps whose depid/deps are not -1/-1 and ``hasdep``
(step, hasdep) for those with hasdep != 0 (most steps have neither); ``dep`` and ``src`` are flat
pairs (step, the step that released one of its dependencies) and (receive, the send whose data it
took); ``links`` are ``[name, kind, capacity GB/s or null, load, utilisation, transfers,
[load percent per slice]]`` (see :class:`~ccxml.show.view.Link`).
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from functools import cache
from importlib import resources

from ccxml.show.view import CATEGORIES, LINK_BINS, View, category
from ccxml.vocab.files import file_text
from ccxml.vocab.wire import StepType

_TYPE_ORDER = {t.value: i for i, t in enumerate(StepType)}


@cache
def _asset(name: str) -> str:
    return resources.files("ccxml.show").joinpath(name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def page_data(view: View) -> dict:
    """The JSON blob the page's script draws (see the module docstring)."""
    steps = view.steps
    xml = [s.xml for s in steps]
    types = sorted({x.type for x in xml}, key=lambda t: (_TYPE_ORDER.get(t, len(_TYPE_ORDER)), t))
    tix = {t: i for i, t in enumerate(types)}
    bufs = sorted({x.srcbuf for x in xml} | {x.dstbuf for x in xml})
    bix = {b: i for i, b in enumerate(bufs)}
    return {
        "title": view.title, "label": view.label, "facts": [list(f) for f in view.facts],
        "notes": list(view.notes), "tick": view.tick, "end": view.makespan,
        "cats": [c[0] for c in CATEGORIES], "cattypes": [list(c[1]) for c in CATEGORIES],
        "colors": [c[2] for c in CATEGORIES],
        "types": types, "typecat": [category(t) for t in types], "bufs": [file_text(b) for b in bufs],
        "rows": [[r.gpu, r.tb, r.send, r.recv, r.chan, r.first, r.end] for r in view.rows],
        "steps": {"s": [s.index for s in steps], "t": [tix[x.type] for x in xml],
                  "a": [s.start for s in steps], "b": [s.end for s in steps],
                  "sb": [bix[x.srcbuf] for x in xml], "so": [x.srcoff for x in xml],
                  "db": [bix[x.dstbuf] for x in xml], "do": [x.dstoff for x in xml],
                  "n": [x.cnt for x in xml]},
        "xdep": [v for k, x in enumerate(xml) if x.depid != -1 or x.deps != -1 for v in (k, x.depid, x.deps)],
        "hasdep": [v for k, x in enumerate(xml) if x.hasdep != 0 for v in (k, x.hasdep)],
        "dep": [x for pair in view.deps for x in pair],
        "src": [x for i, j in enumerate(view.sender) if j >= 0 for x in (i, j)],
        "crit": list(view.critical),
        "bins": LINK_BINS,
        "links": [[ln.name, ln.kind, None if ln.capacity_GBps is None else round(ln.capacity_GBps, 6),
                   round(ln.load, 4), round(ln.utilization, 4), ln.transfers, list(ln.bins)]
                  for ln in view.links],
    }


def script_json(data) -> str:
    """``data`` as JSON that is safe inside an HTML ``<script>`` element (no ``<``, ``>``, ``&``)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(view: View) -> str:
    """The whole page, deterministic (the same view gives the same text)."""
    style, script = _asset("page.css"), _asset("page.js")
    title = f"ccxml show: {view.label}" + (f" ({view.title})" if view.title and view.title != view.label else "")
    parts = {"TITLE": html.escape(title, quote=True), "STYLE": style, "SCRIPT": script,
             "STYLE_HASH": _csp_hash(style), "SCRIPT_HASH": _csp_hash(script),
             "DATA": script_json(page_data(view))}
    # one pass, so that nothing substituted is read again as a placeholder
    return re.sub(r"@([A-Z_]+)@", lambda m: parts[m.group(1)], _asset("page.html"))
