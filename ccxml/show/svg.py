"""The timeline as a static SVG picture, for papers and reviews.

The same picture as the HTML page without its interaction: a time axis, one row per (rank,
thread block) with each step a bar coloured by its kind (legend), the critical path outlined and
joined, and under it the busiest links' utilisation over the run (:data:`SVG_LINKS` of them, darker
is busier). Numbers are written with fixed decimals and text is XML-escaped (characters XML
cannot hold are dropped), so the same view always gives the same bytes.
"""
from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape, quoteattr

from ccxml.show.view import CATEGORIES, View, category

CRITICAL = "#d62728"
#: links drawn under the thread blocks (the busiest)
SVG_LINKS = 16

WIDTH, GUTTER, RIGHT = 1200, 120, 16
ROW_H, BAR_H, LINK_H = 8, 6, 8
FONT = "font-family:sans-serif"

# characters XML 1.0 cannot hold at all (and so no SVG reader accepts, escaped or not)
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def text(s: str) -> str:
    """``s`` as XML character data."""
    return escape(_NOT_XML.sub("", str(s)))


def attr(s: str) -> str:
    """``s`` as a quoted XML attribute value."""
    return quoteattr(_NOT_XML.sub("", str(s)))


def _f(x: float) -> str:
    """A coordinate: one decimal, no ``-0.0``."""
    s = f"{x:.1f}"
    return "0.0" if s == "-0.0" else s


def _nice_step(span_s: float, width_px: float) -> float:
    raw = span_s / max(1.0, width_px / 110)
    p = 10.0 ** math.floor(math.log10(raw))
    m = raw / p
    return (1 if m < 1.5 else 2 if m < 3.5 else 5 if m < 7.5 else 10) * p


def _shade(percent: int) -> str:
    f = percent / 100
    return "#%02x%02x%02x" % (round(247 - 239 * f), round(251 - 203 * f), round(255 - 148 * f))


def render_svg(view: View) -> str:
    """The picture as SVG text (UTF-8, standalone)."""
    plot_w = WIDTH - GUTTER - RIGHT
    end = max(view.makespan, 1)

    def x(t: int) -> float:
        return GUTTER + t * plot_w / end

    out: list[str] = []
    y = 18
    head = f"ccxml show: {view.label}" + (f" ({view.title})" if view.title and view.title != view.label else "")
    body: list[str] = [f'<text x="8" y="{y}" style="{FONT};font-size:14px;font-weight:bold">{text(head)}</text>']
    y += 16
    facts = " \u00b7 ".join(f"{k}: {v}" for k, v in view.facts)
    body.append(f'<text x="8" y="{y}" style="{FONT};font-size:10px" fill="#555">{text(facts)}</text>')
    for note in view.notes:
        y += 13
        body.append(f'<text x="8" y="{y}" style="{FONT};font-size:10px" fill="#8a5a00">note: {text(note)}</text>')
    y += 16
    lx = 8
    for name, types, color in CATEGORIES:
        label = f"{name} ({' '.join(types)})"
        body.append(f'<rect x="{lx}" y="{y - 8}" width="12" height="8" fill="{color}"/>'
                    f'<text x="{lx + 16}" y="{y}" style="{FONT};font-size:10px">{text(label)}</text>')
        lx += 24 + 6 * len(label)
    body.append(f'<rect x="{lx}" y="{y - 9}" width="12" height="9" fill="none" stroke="{CRITICAL}" '
                f'stroke-width="1.5"/><text x="{lx + 16}" y="{y}" style="{FONT};font-size:10px">critical path</text>')
    y += 10

    def axis(top: int) -> None:
        secs = end * view.tick
        step = _nice_step(secs, plot_w)
        scale, unit = (1e3, "ms") if step >= 1e-3 else (1e6, "us") if step >= 1e-6 else (1e9, "ns")
        digits = max(0, -math.floor(math.log10(step * scale) + 1e-9))
        body.append(f'<line x1="{GUTTER}" y1="{top + 14}" x2="{WIDTH - RIGHT}" y2="{top + 14}" stroke="#999"/>')
        k = 0
        while k * step <= secs * (1 + 1e-12):
            tx = _f(GUTTER + k * step / secs * plot_w) if secs > 0 else _f(GUTTER)
            body.append(f'<line x1="{tx}" y1="{top + 10}" x2="{tx}" y2="{top + 14}" stroke="#999"/>'
                        f'<text x="{tx}" y="{top + 8}" style="{FONT};font-size:9px" text-anchor="middle">'
                        f'{k * step * scale:.{digits}f} {unit}</text>')
            k += 1
            if secs <= 0:
                break

    axis(y)
    y += 18
    top_rows = y
    row_y = {}
    for i, r in enumerate(view.rows):
        ry = top_rows + i * ROW_H
        row_y[i] = ry
        if i > 0 and view.rows[i - 1].gpu != r.gpu:
            body.append(f'<line x1="0" y1="{ry}" x2="{WIDTH}" y2="{ry}" stroke="#ddd" stroke-width="0.5"/>')
        body.append(f'<text x="{GUTTER - 6}" y="{ry + BAR_H}" style="{FONT};font-size:{ROW_H - 1}px" '
                    f'text-anchor="end">{text(r.label)}</text>')
    def bar(s) -> str:
        x0 = x(s.start)
        return f'<rect x="{_f(x0)}" y="{row_y[s.row] + 1}" width="{_f(max(0.5, x(s.end) - x0))}" height="{BAR_H}"/>'

    for cat in range(len(CATEGORIES)):
        bars = []
        for s in view.steps:
            if category(s.type) != cat:
                continue
            bars.append(bar(s))
        if bars:
            body.append(f'<g fill="{CATEGORIES[cat][2]}" stroke="#fff" stroke-width="0.3">' + "".join(bars) + "</g>")
    if view.critical:
        pts, rects = [], []
        for k in view.critical:
            s = view.steps[k]
            x0, x1 = x(s.start), x(s.end)
            cy = row_y[s.row] + 1 + BAR_H / 2
            pts.append(f"{_f(x0)},{_f(cy)} {_f(x1)},{_f(cy)}")
            rects.append(bar(s))
        body.append(f'<g fill="none" stroke="{CRITICAL}"><polyline points="{" ".join(pts)}" stroke-width="0.8" '
                    f'stroke-opacity="0.6"/><g stroke-width="1.2">' + "".join(rects) + "</g></g>")
    y = top_rows + len(view.rows) * ROW_H + 14
    links = view.links[:SVG_LINKS]
    if links:
        more = f", busiest {len(links)} of {len(view.links)}" if len(view.links) > len(links) else ""
        body.append(f'<text x="8" y="{y}" style="{FONT};font-size:11px;font-weight:bold">Link utilisation'
                    f'<tspan style="font-weight:normal" fill="#555"> (share of the bandwidth in use, darker is '
                    f'busier{text(more)})</tspan></text>')
        y += 4
        axis(y)
        y += 18
        nb = len(links[0].bins)
        for i, ln in enumerate(links):
            ly = y + i * LINK_H
            body.append(f'<text x="{GUTTER - 6}" y="{ly + BAR_H}" style="{FONT};font-size:{LINK_H - 1}px" '
                        f'text-anchor="end">{text(ln.name)} {round(ln.load * 100)}%</text>')
            b = 0
            while b < nb:                       # one rect per run of equal shade
                level = round(ln.bins[b] / 10)
                e = b + 1
                while e < nb and round(ln.bins[e] / 10) == level:
                    e += 1
                if level:
                    x0 = GUTTER + b * plot_w / nb
                    body.append(f'<rect x="{_f(x0)}" y="{ly + 1}" width="{_f((e - b) * plot_w / nb)}" '
                                f'height="{BAR_H}" fill="{_shade(level * 10)}"/>')
                b = e
            body.append(f'<rect x="{GUTTER}" y="{ly + 1}" width="{plot_w}" height="{BAR_H}" fill="none" '
                        f'stroke="#ddd" stroke-width="0.5"/>')
        y += len(links) * LINK_H
    height = y + 10
    out.append('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
               f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label={attr(head)}>\n')
    out.append(f"<title>{text(head)}</title>\n")
    out.append(f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fff"/>\n')
    out.append("\n".join(body))
    out.append("\n</svg>\n")
    return "".join(out)
