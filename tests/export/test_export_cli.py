"""``ccxml export FORMAT SOURCE``: the command line, the registry, and the recipe of
docs/export.md for adding a format."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from in_process import ccxml

from ccxml.export import BACKENDS, Backend

DOCS = Path(__file__).resolve().parents[2] / "docs" / "export.md"
UPSTREAM = Path(__file__).parent / "fixtures" / "upstream"


def one_line_exit_2(code, out, err, *needles):
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccxml: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


# ---- chakra ----------------------------------------------------------------------------------

def test_chakra_from_a_file_writes_one_trace_per_rank(tmp_path):
    pytest.importorskip("google.protobuf")
    from ccxml.export.chakra.schema import decode
    code, out, err = ccxml("export", "chakra", UPSTREAM / "ring8_allreduce.xml", "--bytes", "1M",
                           "-o", tmp_path / "t" / "ring")
    assert code == 0, err
    assert "wrote 8 files" in out
    files = sorted((tmp_path / "t").iterdir())
    assert [f.name for f in files] == [f"ring.{r}.et" for r in range(8)]
    meta, nodes = decode(files[3].read_bytes())
    assert {a.name: a.string_val for a in meta.attr}["input_file"] == (UPSTREAM / "ring8_allreduce.xml").read_text()
    assert len(nodes) == 35


def test_chakra_from_an_algorithm_is_the_schedule_simulate_builds(tmp_path):
    pytest.importorskip("google.protobuf")
    from ccxml.driver import algorithm_schedules
    from ccxml.export.chakra import export
    code, out, err = ccxml("export", "chakra", "rhd", "--ranks", "8", "--coll", "allreduce", "--bytes", "2M",
                           "-o", tmp_path / "rhd")
    assert code == 0, err
    want = export(algorithm_schedules("rhd", "allreduce", 8, [2 << 20])[0], str(tmp_path / "rhd"), nbytes=2 << 20)
    for path, data in want:
        assert Path(path).read_bytes() == data


def test_chakra_twice_gives_the_same_bytes(tmp_path):
    pytest.importorskip("google.protobuf")
    for d in ("a", "b"):
        code, _, err = ccxml("export", "chakra", "ring", "-n", "4", "-c", "allgather", "--bytes", "64K",
                             "-o", tmp_path / d / "x")
        assert code == 0, err
    for r in range(4):
        assert (tmp_path / "a" / f"x.{r}.et").read_bytes() == (tmp_path / "b" / f"x.{r}.et").read_bytes()


def test_chakra_without_protobuf_says_which_extra(tmp_path, monkeypatch):
    from ccxml.export.chakra import schema
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    schema.messages.cache_clear()
    try:
        code, out, err = ccxml("export", "chakra", "ring", "-n", "4", "-c", "allreduce", "--bytes", "1M",
                               "-o", tmp_path / "x")
    finally:
        monkeypatch.undo()
        schema.messages.cache_clear()
    one_line_exit_2(code, out, err, "pip install 'ccxml[chakra]'")
    assert not list(tmp_path.iterdir())


# ---- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["chakra", "missing.xml", "--bytes", "1M"], "no such file"),
    (["chakra", "nosuchalgo", "-n", "4", "-c", "allreduce", "--bytes", "1M"], "nosuchalgo"),
    (["chakra", "ring", "--bytes", "1M"], "--ranks and --coll"),
    (["chakra", "ring", "-n", "4", "-c", "allreduce"], "needs --bytes"),
    (["chakra", "ring", "-n", "4", "-c", "allreduce", "--bytes", "lots"], "lots"),
    (["nosuchformat", "ring", "-n", "4", "-c", "allreduce"], "unknown FORMAT 'nosuchformat'"),
    (["msccl-exec", "x.xml"], "names an XML file"),
    (["msccl-exec", "ring", "-n", "4"], "--ranks and --coll"),
    (["msccl-rccl", "ring", "-n", "1", "-c", "allreduce"], ""),
])
def test_bad_source_is_one_line_exit_2(tmp_path, argv, needle):
    code, out, err = ccxml("export", *argv, "-o", tmp_path / "out")
    one_line_exit_2(code, out, err, needle)


def test_a_file_that_is_not_xml_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<algo name='x'><gpu")
    code, out, err = ccxml("export", "chakra", bad, "--bytes", "1M", "-o", tmp_path / "t")
    one_line_exit_2(code, out, err)


def test_a_schedule_with_a_missing_dependency_is_one_line_exit_2(tmp_path):
    pytest.importorskip("google.protobuf")
    text = (UPSTREAM / "ring8_allreduce.xml").read_text()
    text = text.replace('s="3" type="rrc" srcbuf="i" srcoff="5" dstbuf="o" dstoff="5" cnt="1" depid="-1" deps="-1"',
                        's="3" type="rrc" srcbuf="i" srcoff="5" dstbuf="o" dstoff="5" cnt="1" depid="0" deps="99"', 1)
    bad = tmp_path / "bad.xml"
    bad.write_text(text)
    code, out, err = ccxml("export", "chakra", bad, "--bytes", "1M", "-o", tmp_path / "t")
    assert code == 1 and "fails verification" in err and len(err.strip().splitlines()) == 1, err
    code, out, err = ccxml("export", "chakra", bad, "--bytes", "1M", "-o", tmp_path / "t", "--unverified")
    one_line_exit_2(code, out, err, "does not exist")


# ---- the MSCCL XML formats -------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["exec", "rccl", "legacy"])
def test_msccl_formats_write_what_generate_writes(tmp_path, profile):
    code, _, err = ccxml("export", f"msccl-{profile}", "ring", "-n", "8", "-c", "allreduce", "-o", tmp_path / "e.xml")
    assert code == 0, err
    code, _, err = ccxml("generate", "ring", "-n", "8", "-c", "allreduce", "--target", profile, "-q",
                         "-o", tmp_path / "g.xml")
    assert code == 0, err
    assert (tmp_path / "e.xml").read_bytes() == (tmp_path / "g.xml").read_bytes()


def test_every_registered_backend_module_has_export():
    for b in BACKENDS.values():
        if b.name == "chakra":
            pytest.importorskip("google.protobuf")
        assert callable(b.load().export), b.name
        assert b.takes in ("schedule", "program")
        assert (b.profile is not None) == (b.takes == "program")


def test_help_lists_the_formats():
    code, out, _ = ccxml("export", "--help")
    assert code == 0
    for name in BACKENDS:
        assert name in out


# ---- the recipe of docs/export.md ------------------------------------------------------------

def _recipe(name: str) -> str:
    text = DOCS.read_text()
    m = re.search(rf"<!-- recipe: {name} -->\n```python\n(.*?)```", text, re.S)
    assert m, f"docs/export.md has no '{name}' recipe"
    return m.group(1)


def test_the_docs_recipe_adds_a_format(tmp_path, monkeypatch):
    """docs/export.md's module and registry line, as written there, make a working format (the
    module is put under another name, outside ccxml)."""
    (tmp_path / "recipe_steps_csv.py").write_text(_recipe("module"))
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = _recipe("entry").strip().rstrip(",").replace("ccxml.export.steps_csv", "recipe_steps_csv")
    backend = eval(entry, {"Backend": Backend})
    assert isinstance(backend, Backend) and backend.name == "steps-csv"
    monkeypatch.setitem(BACKENDS, backend.name, backend)
    code, out, err = ccxml("export", "steps-csv", "ring", "--ranks", "4", "--coll", "allreduce", "--bytes", "1M",
                           "-o", tmp_path / "ring.csv")
    assert code == 0, err
    rows = (tmp_path / "ring.csv").read_text().splitlines()
    from ccxml.driver import algorithm_schedules
    s = algorithm_schedules("ring", "allreduce", 4, [1 << 20])[0]
    assert rows[0] == "rank,tb,step,type,send,recv,cnt"
    assert len(rows) == 1 + s.nsteps


def test_a_large_file_is_not_repeated_in_every_trace(tmp_path, monkeypatch):
    """GlobalMetadata's input_file holds the XML text as upstream does, but not past a limit:
    every rank's file would repeat it."""
    pytest.importorskip("google.protobuf")
    from ccxml.cli import export as cli_export
    from ccxml.export.chakra.schema import decode
    monkeypatch.setattr(cli_export, "EMBED_LIMIT", 1000)
    code, out, err = ccxml("export", "chakra", UPSTREAM / "ring8_allreduce.xml", "--bytes", "1M",
                           "-o", tmp_path / "r")
    assert code == 0, err
    assert "input_file is left empty" in err
    meta, _ = decode((tmp_path / "r.0.et").read_bytes())
    assert {a.name: a.string_val for a in meta.attr}["input_file"] == ""
