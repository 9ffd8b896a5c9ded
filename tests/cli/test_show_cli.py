"""``ccxml show`` from the command line, in process (click's CliRunner): files and algorithms, HTML
and SVG, bad input."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from in_process import ccxml as run  # (exit code, stdout, stderr) as the program exits
from show_pages import small_xml


def page_data(path):
    m = re.search(r'id="ccxml-data">(.*?)</script>', path.read_text(encoding="utf-8"), re.S)
    return json.loads(m.group(1))


def test_show_a_file_as_a_page(tmp_path):
    xml = tmp_path / "small.xml"
    xml.write_text(small_xml())
    out = tmp_path / "pages" / "small.html"            # the folder is made
    code, stdout, err = run("show", str(xml), "--bytes", "3K", "--alpha", "1e-6", "--beta", "1e-9", "-o", str(out))
    assert code == 0, err
    # a 1 KiB chunk takes 1 us + 1.024 us a hop; the rcs forwards rank 0's second send, which
    # arrives at 4.048 us: 6.072 us
    assert stdout.startswith(f"wrote {out}: small.xml, 3 ranks, 5 thread blocks, 6 steps, 6.07 us at 3K")
    data = page_data(out)
    assert [r[:2] for r in data["rows"]] == [[0, 0], [1, 0], [1, 1], [1, 2], [2, 0]]
    assert [f for f in data["facts"] if f[0] == "message"] == [["message", "3K (3072 B)"]]
    assert [p.name for p in out.parent.iterdir()] == ["small.html"]      # no temporary file left
    # the same command writes the same bytes
    first = out.read_bytes()
    assert run("show", str(xml), "--bytes", "3K", "--alpha", "1e-6", "--beta", "1e-9", "-o", str(out))[0] == 0
    assert out.read_bytes() == first


def test_show_an_algorithm_on_a_preset_as_svg_like_simulate_builds_it(tmp_path):
    out = tmp_path / "ring.svg"
    code, stdout, err = run("show", "ring", "--coll", "allreduce", "--preset", "dgx-h100", "--nodes", "2",
                            "--bytes", "16M", "-o", str(out))
    assert code == 0, err
    assert "ring allreduce, 16 ranks, 16 thread blocks" in stdout
    root = ET.parse(out).getroot()
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("text-anchor") == "end"]
    assert labels[:16] == [f"r{r} tb0" for r in range(16)]
    # the time is simulate's at that size and topology
    code, sim, _ = run("simulate", "ring", "--coll", "allreduce", "--preset", "dgx-h100", "--nodes", "2",
                       "--bytes", "16M", "--json")
    assert code == 0
    t_us = json.loads(sim)["rows"][0]["time_s"] * 1e6
    assert f"{t_us:.2f} us at 16M" in stdout


def test_show_notes_a_size_outside_the_files_window(tmp_path):
    xml = tmp_path / "w.xml"
    xml.write_text(small_xml().replace('maxBytes="0"', 'maxBytes="1024"'))
    code, _, err = run("show", str(xml), "--bytes", "1M", "-o", str(tmp_path / "w.html"))
    assert code == 0
    assert "outside the file's minBytes..maxBytes window" in err
    assert any("outside" in n for n in page_data(tmp_path / "w.html")["notes"])


@pytest.mark.parametrize("args, message", [
    (["ring", "--coll", "allreduce", "-n", "4", "-o", "OUT.pdf"], "use a .html or .svg file name"),
    (["missing.xml", "-o", "OUT.html"], "missing.xml: no such file"),
    (["ring", "-o", "OUT.html"], "give --ranks and --coll (e.g. ccxml show ring"),
    (["no-such-algo", "-n", "4", "-c", "allreduce", "-o", "OUT.html"], "no-such-algo"),
    (["ring", "-n", "4", "-c", "allreduce", "--bytes", "lots", "-o", "OUT.html"], "lots"),
    (["ring", "-n", "4", "-c", "allreduce", "--preset", "nope", "-o", "OUT.html"], "nope"),
    (["ring", "-n", "4", "-c", "allreduce"], "Missing option '-o'"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, message):
    args = [str(tmp_path / a) if a.startswith("OUT.") else a for a in args]
    code, out, err = run("show", *args)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_schedule_that_cannot_run_exits_2_naming_the_step(tmp_path):
    xml = tmp_path / "stuck.xml"
    # rank 2 waits for a second receive from rank 1 that is never sent
    xml.write_text(small_xml().replace('<step s="0" type="r" srcbuf="i" srcoff="1"',
                                       '<step s="0" type="r" srcbuf="i" srcoff="9"').replace(
        '      <step s="0" type="r" srcbuf="i" srcoff="9" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
        '      <step s="0" type="r" srcbuf="i" srcoff="9" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n'
        '      <step s="1" type="r" srcbuf="i" srcoff="2" dstbuf="o" dstoff="2" cnt="1" depid="-1" deps="-1" hasdep="0"/>'))
    code, _, err = run("show", str(xml), "-o", str(tmp_path / "stuck.html"))
    assert code == 2
    assert "deadlock" in err and "gpu 2 tb 0 step 1" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "stuck.html").exists()


def test_unwritable_output_exits_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run("show", "ring", "-n", "4", "-c", "allreduce", "-o", str(blocker / "x.html"))
    assert code == 2 and err.startswith(f"ccxml: cannot write {blocker / 'x.html'}")
