"""Tree and double binary tree (algorithms/tree.py, algorithms/double_tree.py; NCCL trees.cc).

* NCCL's trees: the parents of ``ncclGetBtree`` / ``ncclGetDtree`` (its comment's pictures), and
  in the double tree every rank but the first tree's top is a node (has children) in at most one
  of the two trees.
* Every schedule verifies (postcondition, deadlock with unbounded and bounded links, races, loader
  rules) on every target, both call forms, 1 and 2 channels, at small p; every root at p ≤ 9;
  p up to 33 and 64 in the ``slow`` sweep.
* On the flat model (1 µs, 100 GB/s): the double tree's AllReduce at 1 GiB takes at most 1.1×
  Ring's time for p = 8…64 (with a dedicated link per pair it takes about half: each tree carries
  half the data), and the critical path in messages (α = 1, β = γ = 0, depth 8) of both trees
  grows by at most 2 per doubling of p (8 + 2h − 3 for h levels) while Ring's doubles.
"""
from __future__ import annotations

import pytest
from test_alg_mesh import CONFIGS, assert_verifies, generate

from ccxml.algorithms import build, double_tree, tree
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.loader.reader import loads
from ccxml.simulator import simulate_schedule
from ccxml.tables.tree import btree, dtree, heights
from ccxml.topology.model import Topology

FLAT = Topology.flat(1e-6, 1e-11, 1e-12)
UNIT = Topology.flat(1.0, 0.0, 0.0)
CASES = [(name, coll) for name, mod in (("tree", tree), ("double-tree", double_tree))
         for coll in mod.COLLECTIVES]
IDS = [f"{n}-{c.value}" for n, c in CASES]


def test_nccl_trees():
    # ncclGetBtree's picture for 14 ranks; ncclGetDtree's mirror (even) and shift (odd) pictures
    assert btree(14) == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12]
    first, second = dtree(12)
    assert second == [11 - q if q >= 0 else -1 for q in btree(12)][::-1]
    first, second = dtree(13)
    assert second[1] == -1 and second[9] == 1 and second[0] == 9 and second[11] == 0
    for p in range(2, 70):
        first, second = dtree(p)
        inner = [{q for q in t if q >= 0} for t in (first, second)]
        assert inner[0] & inner[1] <= {0}, p       # the first tree's top, with one child


def _sched(name, coll, p, topo=None, **kw):
    prog = build(name, coll, p, **kw)
    return loads(prog.to_xml("exec"))


@pytest.mark.parametrize("name, coll", CASES, ids=IDS)
def test_every_configuration_verifies_at_small_rank_counts(name, coll):
    for p in (2, 3, 5, 8):
        for target, k, inplace in CONFIGS:
            xml, _ = generate(name, coll, p, target, k, inplace)
            assert_verifies(xml, target, None, f"{name} {coll.value} p={p} {target} k={k} inplace={inplace}")


@pytest.mark.parametrize("name, coll", [c for c in CASES if c[1].rooted], ids=[i for c, i in zip(CASES, IDS) if c[1].rooted])
def test_every_root_verifies(name, coll):
    for p in range(2, 10):
        for root in range(p):
            xml, _ = generate(name, coll, p, k=1 + root % 2, inplace=p % 2 == 0, root=root, depth=3)
            assert_verifies(xml, "exec", None, f"p={p} root={root}")


@pytest.mark.slow
@pytest.mark.parametrize("name, coll", CASES, ids=IDS)
def test_sweep_to_33_and_64_ranks(name, coll):
    for p in [*range(9, 34), 64]:
        target = ("exec", "rccl", "legacy")[p % 3]
        xml, _ = generate(name, coll, p, target, root=p // 2 if coll.rooted else None)
        assert_verifies(xml, target, None, f"{name} p={p} {target}")


def test_double_tree_allreduce_keeps_up_with_ring_at_1gib():
    for p in (8, 16, 32, 64):
        dt = simulate_schedule(_sched("double-tree", "allreduce", p), 1 << 30, FLAT).time_s
        ring = simulate_schedule(_sched("ring", "allreduce", p), 1 << 30, FLAT).time_s
        assert dt <= 1.1 * ring, f"p={p}: double tree {dt:.4g} s, ring {ring:.4g} s"


def test_tree_critical_path_grows_as_log_p():
    """α = 1, β = γ = 0: the time is the number of messages on the critical path. The binary tree
    takes exactly D + 2h − 3 (h = ⌈log2 p⌉ + 1 levels); the double tree at most 3 more where both
    trees use one link direction (small p), and both grow by at most 2 per doubling of p."""
    for name in ("tree", "double-tree"):
        crit = {p: simulate_schedule(_sched(name, "allreduce", p, depth=8), 1 << 20, UNIT).time_s
                for p in (8, 16, 32, 64)}
        for p, t in crit.items():
            levels = max(heights(btree(p))) + 1
            assert levels == (p - 1).bit_length() + 1
            if name == "tree":
                assert t == 8 + 2 * levels - 3, (name, p, t)
            else:
                assert 8 + 2 * levels - 3 <= t <= 8 + 2 * levels, (name, p, t)
        assert crit[64] - crit[8] <= 2 * 3, (name, crit)
    ring = [simulate_schedule(_sched("ring", "allreduce", p), 1 << 20, UNIT).time_s for p in (8, 64)]
    assert ring == [14, 126]


def test_bad_parameters_are_one_line_errors():
    with pytest.raises(AlgorithmError, match="--depth must be an integer >= 0"):
        build("tree", "allreduce", 4, depth=-1)
    with pytest.raises(AlgorithmError, match="needs 36 channels; at most 32"):
        build("double-tree", "allreduce", 4, options=Options(channels=9))
