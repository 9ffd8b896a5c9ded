"""``ccxml generate ... --coll alltoallv --counts FILE.csv``: the matrix reaches the builder, the
written schedule verifies against the same matrix, and bad files are one clear line + exit 2."""
from __future__ import annotations

import pytest
from in_process import ccxml

from ccxml.interpreter import verify
from ccxml.loader.reader import loads

MATRIX = [[0, 3, 1], [2, 0, 0], [5, 1, 4]]


def run(args):
    return ccxml(*args)


@pytest.mark.parametrize("algorithm", ["pairwise", "mesh"])
def test_counts_file_drives_alltoallv(algorithm, tmp_path):
    csv = tmp_path / "counts.csv"
    csv.write_text("# chunks i -> j\n0, 3, 1\n2 0 0\n5,1,4\n")
    out = tmp_path / "a2av.xml"
    code, _, err = run(["generate", algorithm, "--ranks", 3, "--coll", "alltoallv",
                        "--counts", csv, "--channels", 2, "--verify", "-o", out])
    assert code == 0, err
    text = out.read_text()
    sched = loads(text)
    assert [g.i_chunks for g in sched.gpus] == [sum(row) for row in MATRIX]
    assert [g.o_chunks for g in sched.gpus] == [sum(row[j] for row in MATRIX) for j in range(3)]
    assert verify(text, counts=MATRIX).ok
    other = [[1] * 3] * 3                           # a different matrix must not verify
    assert not verify(text, counts=other).ok


@pytest.mark.parametrize("content, message", [
    ("1,2\n3,4\n", "alltoallv counts must be a 3x3 matrix for --ranks 3"),
    ("1,2,3\n4,5\n6,7,8\n", "counts must be a square matrix"),
    ("1,x,3\n", "expected integers"),
    ("0,0,0\n0,0,0\n0,0,0\n", "all zero"),
    ("1,-1,0\n0,1,0\n0,0,1\n", "must be >= 0"),
])
def test_bad_counts_file_is_one_clear_line(content, message, tmp_path):
    csv = tmp_path / "counts.csv"
    csv.write_text(content)
    code, _, err = run(["generate", "pairwise", "--ranks", 3, "--coll", "alltoallv",
                        "--counts", csv, "-o", tmp_path / "x.xml"])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccxml: ") and message in lines[0], err


def test_missing_counts_and_missing_file_are_named(tmp_path):
    code, _, err = run(["generate", "pairwise", "--ranks", 3, "--coll", "alltoallv"])
    assert code == 2 and "alltoallv needs counts" in err and "--counts FILE.csv" in err
    code, _, err = run(["generate", "pairwise", "--ranks", 3, "--coll", "alltoallv",
                        "--counts", tmp_path / "nope.csv"])
    assert code == 2 and "cannot read --counts" in err
    code, _, err = run(["generate", "pairwise", "--ranks", 3, "--coll", "alltoall",
                        "--counts", tmp_path / "nope.csv"])
    assert code == 2


def test_list_shows_mesh_pairwise_star():
    code, out, _ = run(["list"])
    assert code == 0
    header, *rows = out.split("\n\n")[0].splitlines()
    cols = header.split()
    marks = {r.split()[0]: dict(zip(cols, r.split()[1:])) for r in rows}
    assert all(v == "x" for v in marks["mesh"].values())
    assert [c for c, v in marks["pairwise"].items() if v == "x"] == ["RS", "A2A", "A2AV"]
    assert [c for c, v in marks["star"].items() if v == "x"] == ["BC", "RED", "GA", "SC"]
