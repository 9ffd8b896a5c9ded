"""docs/extending.md's recipes work as written: each module is copied out of the page into a
temporary directory (under another name, outside the package), registered with the page's one
line, and run through the command line and the driver; the tree is left as it was."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from in_process import ccxml

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def recipe(name: str) -> str:
    """The fenced block after ``<!-- recipe: NAME -->``."""
    m = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```[a-z]*\n(.*?)```", DOC.read_text(), re.S)
    assert m, f"docs/extending.md has no '{name}' recipe"
    return m.group(1)


def test_every_recipe_is_one_module_and_at_most_one_line():
    """What the page promises: each registration is a single entry (the preset needs none)."""
    for entry in ("algorithm-entry", "backend-entry"):
        text = recipe(entry).strip()
        assert text.endswith("),") and text.count("(") - text.count(")") == 0, text
        assert text.count("\n") <= 1, text          # one entry, wrapped at most once
    assert "## Adding a pass" in DOC.read_text()


@pytest.fixture
def fresh_registry():
    """The algorithm registry; the names the test adds are forgotten after it (the built-ins it
    imports meanwhile stay registered: their modules stay imported)."""
    from ccxml.algorithms import registry
    before = set(registry._declared)
    yield registry
    for name in set(registry._declared) - before:
        del registry._declared[name]
        registry._algorithms.pop(name, None)


def test_the_algorithm_recipe_adds_an_algorithm(tmp_path, monkeypatch, fresh_registry):
    (tmp_path / "recipe_direct.py").write_text(recipe("algorithm"))
    monkeypatch.syspath_prepend(str(tmp_path))
    name, module = eval(recipe("algorithm-entry").strip().rstrip(","))
    assert (name, module) == ("direct", "direct")
    # the line of BUILT_IN, as ccxml/algorithms/__init__.py reads it (module outside the package)
    fresh_registry.declare(name, "recipe_direct")
    code, out, err = ccxml("list")
    assert code == 0 and any(line.split()[:1] == ["direct"] for line in out.splitlines()), out
    code, out, err = ccxml("generate", "direct", "--ranks", "5", "--coll", "allgather", "--channels", "2",
                           "--verify", "-o", tmp_path / "direct.xml")
    assert code == 0, err
    assert "PASS" in out + err
    from ccxml.driver import AlgorithmSpec, schedule, verification_failure
    sch = schedule(AlgorithmSpec("direct", "allgather", 4))
    assert verification_failure(sch) is None
    # one step: every rank sends its block to each of the p-1 others
    from ccxml.vocab.wire import StepType
    sending = {t.value for t in StepType if t.sends}
    sends = sum(1 for g in sch.gpus for tb in g.tbs for st in tb.read_steps() if st.type in sending)
    assert sends == 4 * 3
    code, out, err = ccxml("select", "-n", "4", "-c", "allgather", "--bytes", "1M", "--jobs", "1")
    assert code == 0 and re.search(r"^\s+\d+\s+direct\s", out, re.M), out


def test_the_preset_recipe_adds_a_preset(tmp_path, monkeypatch):
    import ccxml.topology.model as model
    presets = tmp_path / "presets"
    shutil.copytree(model.PRESET_DIR, presets)
    (presets / "quad.toml").write_text(recipe("preset"))
    monkeypatch.setattr(model, "PRESET_DIR", presets)
    model._preset.cache_clear()
    try:
        code, out, err = ccxml("simulate", "ring", "--coll", "allreduce", "--preset", "quad", "--nodes", "2",
                               "--bytes", "1M", "--json")
        assert code == 0, err
        import json
        doc = json.loads(out)
        assert doc["schedule"]["ngpus"] == 8                # 2 nodes of 4 ranks
        assert doc["topology"] == {"groups": [4, 4], "intra": {"alpha": 2e-6, "beta": 2e-11, "gamma": 1e-12}}
        code, out, err = ccxml("generate", "2d-torus", "--preset", "quad", "--nodes", "2", "-o", tmp_path / "t.xml")
        assert code == 0 and "8 ranks" in out + err, err
    finally:
        model._preset.cache_clear()


def test_the_backend_recipe_adds_an_output_format(tmp_path, monkeypatch):
    from ccxml.export import BACKENDS, Backend
    (tmp_path / "recipe_send_matrix.py").write_text(recipe("backend"))
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = recipe("backend-entry").strip().rstrip(",").replace("ccxml.export.send_matrix", "recipe_send_matrix")
    backend = eval(entry, {"Backend": Backend})
    assert isinstance(backend, Backend) and backend.name == "send-matrix"
    monkeypatch.setitem(BACKENDS, backend.name, backend)
    out_csv = tmp_path / "ring.csv"
    code, out, err = ccxml("export", "send-matrix", "ring", "--ranks", "4", "--coll", "allreduce", "--bytes", "1M",
                           "-o", out_csv)
    assert code == 0, err
    rows = [line.split(",") for line in out_csv.read_text().splitlines()]
    assert rows[0] == ["from/to", "0", "1", "2", "3"]
    matrix = [[int(x) for x in row[1:]] for row in rows[1:]]
    # a ring: each rank sends to one neighbour only, the same amount as every other rank
    for r, row in enumerate(matrix):
        peers = [q for q, n in enumerate(row) if n]
        assert len(peers) == 1 and peers[0] in ((r + 1) % 4, (r - 1) % 4), matrix
    totals = {sum(row) for row in matrix}
    assert len(totals) == 1 and totals.pop() > 0, matrix
