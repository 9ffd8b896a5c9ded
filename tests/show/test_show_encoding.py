"""Names that are not ASCII reach the ``show`` page and picture as the file spells them.

The loader holds a file's bytes one character each (latin-1), so a ``name="café"`` read from a
UTF-8 file was ``cafÃ©`` on the page. Checked here at the byte level (the HTML declares UTF-8
before any other byte that is not ASCII, and holds the name's UTF-8 bytes; the script's JSON blob
is ASCII with escapes that decode to the name); tests/show/test_show_page_browser.py checks what a
browser shows.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from in_process import ccxml
from show_pages import small_xml

NAME = "café ☕ 名前"
MOJIBAKE = "cafÃ©"


def show(tmp_path, xml_bytes: bytes, out: str, file_name: str = "café.xml"):
    src = tmp_path / file_name
    src.write_bytes(xml_bytes)
    code, _, err = ccxml("show", src, "--bytes", "3K", "-o", tmp_path / out, "--unverified")
    assert code == 0, err
    return (tmp_path / out).read_bytes()


def test_html_page_holds_the_name_in_utf8_and_says_so_first(tmp_path):
    page = show(tmp_path, small_xml(name=NAME).encode("utf-8"), "page.html")
    first_non_ascii = re.search(rb"[\x80-\xff]", page).start()
    assert page.index(b'<meta charset="utf-8">') < first_non_ascii
    assert f"<title>ccxml show: café.xml ({NAME})</title>".encode() in page
    assert MOJIBAKE.encode() not in page and b"\xc3\x83" not in page
    blob = re.search(rb'<script type="application/json" id="ccxml-data">(.*?)</script>', page, re.S).group(1)
    assert blob.isascii()                       # escapes only: no charset can misread it
    data = json.loads(blob)
    assert (data["title"], data["label"]) == (NAME, "café.xml")


def test_svg_picture_holds_the_name(tmp_path):
    svg = show(tmp_path, small_xml(name=NAME).encode("utf-8"), "pic.svg")
    assert svg.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(svg)
    title = root.find("{http://www.w3.org/2000/svg}title").text
    assert title == f"ccxml show: café.xml ({NAME})"


def test_simulate_json_gives_the_name_as_text(tmp_path):
    src = tmp_path / "x.xml"
    src.write_bytes(small_xml(name=NAME).encode("utf-8"))
    code, out, err = ccxml("simulate", src, "--json", "--bytes", "3K", "--unverified")
    assert code == 0, err
    assert json.loads(out)["schedule"]["name"] == NAME


def test_bytes_that_are_not_utf8_become_replacement_characters(tmp_path):
    raw = small_xml(name="caf\x00").encode("utf-8").replace(b"caf\x00", b"caf\xe9")   # latin-1 é
    page = show(tmp_path, raw, "page.html", file_name="x.xml")
    assert "<title>ccxml show: x.xml (caf\ufffd)</title>".encode() in page


def test_a_file_name_that_is_not_utf8_does_not_break_the_page(tmp_path):
    import os
    name = os.fsdecode(b"caf\xe9.xml")          # a latin-1 file name: a lone surrogate in Python
    page = show(tmp_path, small_xml(name="x").encode("utf-8"), "page.html", file_name=name)
    assert "<title>ccxml show: caf\ufffd.xml (x)</title>".encode() in page
