"""NHR's single-tree mode (``nhr --variant single-tree``; hccl-algorithms.md §7.2 one-shot).

* The tables are §7.2's one-shot Reduce and Broadcast (the p = 5 worked tables).
* Every schedule verifies (postcondition, deadlock with unbounded and bounded links, races, loader
  rules) on every target, both call forms, 1 and 2 channels; every Broadcast root at p ≤ 9.
* Its critical path (α = 1, β = γ = 0) is at most 2⌈log2 p⌉ messages for AllReduce, ⌈log2 p⌉
  for Broadcast (exactly that for p a power of two; otherwise a rank idle in a step goes on, and
  AllReduce takes one message less).
* ``ccxml select`` ranks it (``nhr:single-tree``) beside the other algorithms and the trees, and
  ranks it above the block mode where it wins (small messages, p not a power of two).
"""
from __future__ import annotations

import json

import pytest
from in_process import ccxml
from test_alg_mesh import CONFIGS, assert_verifies

from ccxml.algorithms import build
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.loader.reader import loads
from ccxml.simulator import simulate_schedule
from ccxml.tables import nhr_tree
from ccxml.topology.model import Topology

UNIT = Topology.flat(1.0, 0.0, 0.0)


def test_tables_are_the_reference_one_shot_tables():
    assert nhr_tree.reduce(5) == [[(1, 0, [0]), (3, 2, [0])], [(2, 0, [0])], [(4, 0, [0])]]
    assert nhr_tree.broadcast(5) == [[(0, 4, [0])], [(0, 2, [0])], [(0, 1, [0]), (2, 3, [0])]]


def _xml(coll, p, target="exec", k=1, inplace=False, root=None):
    prog = build("nhr", coll, p, options=Options(channels=k, inplace=inplace), root=root,
                 variant="single-tree")
    return prog.to_xml(target)


@pytest.mark.parametrize("coll", ["allreduce", "broadcast"])
def test_every_configuration_verifies(coll):
    for p in (2, 3, 5, 8, 12, 33):
        for target, k, inplace in CONFIGS:
            root = p - 1 if coll == "broadcast" else None
            assert_verifies(_xml(coll, p, target, k, inplace, root), target, None,
                            f"{coll} p={p} {target} k={k} inplace={inplace}")


def test_every_broadcast_root_verifies():
    for p in range(2, 10):
        for root in range(p):
            assert_verifies(_xml("broadcast", p, k=1 + root % 2, root=root), "exec", None, f"p={p} root={root}")


def test_critical_path_is_one_message_per_tree_level():
    for p in (2, 5, 8, 12, 16, 33, 64):
        ns = (p - 1).bit_length()
        ar = simulate_schedule(loads(_xml("allreduce", p)), 1 << 16, UNIT).time_s
        bc = simulate_schedule(loads(_xml("broadcast", p, root=0)), 1 << 16, UNIT).time_s
        pow2 = p & (p - 1) == 0
        assert (ar, bc) == (2 * ns - (not pow2), ns), p


def test_variant_is_checked():
    with pytest.raises(AlgorithmError, match="nhr: --variant must be one of blocks, single-tree"):
        build("nhr", "allreduce", 4, variant="two-trees")
    with pytest.raises(AlgorithmError, match="nhr allgather takes no --variant"):
        build("nhr", "allgather", 4, variant="single-tree")


def test_select_ranks_the_new_algorithms_beside_the_nine():
    # 1 KiB, p = 12: the single tree's 2⌈log2 p⌉ − 1 = 7 messages (an idle rank goes on) against
    # at least the 8 rounds of the block mode; Broadcast: 4 rounds against 8
    code, out, _ = ccxml("select", "-c", "allreduce", "--bytes", "1K", "--ranks", "12", "--json")
    assert code == 0
    ranking = [r["algorithm"] for r in json.loads(out)["ranking"]]
    assert {"ring", "mesh", "rhd", "nhr", "nb", "tree", "double-tree", "nhr:single-tree"} <= set(ranking)
    assert ranking.index("nhr:single-tree") < ranking.index("nhr")       # it wins here
    code, out, _ = ccxml("select", "-c", "broadcast", "--bytes", "1K", "--ranks", "12", "--json")
    ranking = [r["algorithm"] for r in json.loads(out)["ranking"]]
    assert ranking.index("nhr:single-tree") < ranking.index("nhr")
    code, out, _ = ccxml("select", "-c", "allreduce", "--bytes", "1G", "--ranks", "12", "--json")
    ranking = [r["algorithm"] for r in json.loads(out)["ranking"]]
    assert ranking.index("nhr") < ranking.index("nhr:single-tree")       # and not here
    assert ranking.index("double-tree") < ranking.index("ring")
    code, out, _ = ccxml("select", "-c", "broadcast", "--bytes", "16K", "--ranks", "12")
    assert code == 0 and "nhr:single-tree" in out and "double-tree" in out


def test_list_shows_the_trees_with_their_collectives():
    code, out, _ = ccxml("list")
    matrix = out.split("\n\n")[0]
    rows = {line.split()[0]: line.split()[1:] for line in matrix.splitlines()[1:]}
    header = out.splitlines()[0].split()
    for name in ("tree", "double-tree"):
        have = {h for h, x in zip(header, rows[name]) if x == "x"}
        assert have == {"AR", "BC", "RED"}, name


def test_tune_picks_the_single_tree_for_small_messages(tmp_path):
    code, out, err = ccxml("tune", "--ranks", "12", "-c", "allreduce", "--forms", "outofplace",
                           "--algorithms", "nhr,nhr:single-tree,double-tree", "-o", tmp_path / "algos")
    assert code == 0, err
    manifest = json.loads((tmp_path / "algos.manifest.json").read_text())
    picked = [(f["algorithm"], f["file"]) for f in manifest["files"]]
    assert picked[0] == ("nhr:single-tree", "allreduce-outofplace-00-nhr-single-tree.xml")
    assert picked[-1][0] == "double-tree"
    code, _, err = ccxml("tune", "--ranks", "12", "--algorithms", "nhr:two", "-o", tmp_path / "x")
    assert code == 2 and "unknown algorithm 'nhr:two'" in err
