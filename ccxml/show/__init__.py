"""Pictures of a simulated schedule: the timeline of ``ccxml show`` as an HTML page or an SVG.

A consumer of the loader and the simulator: :func:`build_view` joins a loaded
:class:`~ccxml.loader.model.Schedule` and its ``simulate(..., record=True)`` result into a
:class:`View`; :func:`render_html` (one self-contained page: zoom, rank filter, a step's details,
dependencies and peer on click) and :func:`render_svg` (a static picture for papers and reviews)
draw it. Both return text, the same for the same input; writing the file is the caller's.
"""
from __future__ import annotations

from ccxml.show.html import render_html
from ccxml.show.svg import render_svg
from ccxml.show.view import CATEGORIES, LINK_BINS, View, build_view

__all__ = ["build_view", "render_html", "render_svg", "View", "CATEGORIES", "LINK_BINS"]
