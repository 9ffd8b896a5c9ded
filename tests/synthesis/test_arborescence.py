"""min_arborescence (ccxml/synthesis/forest.py): Chu–Liu/Edmonds on a dense cost matrix.

* The fast expansion (whole-array steps) and the loop over components are exact twins: the same
  parents on random matrices full of ties and missing edges.
* The cost equals networkx's minimum spanning arborescence (an independent implementation).
"""
from __future__ import annotations

import math

import pytest

np = pytest.importorskip("numpy")
nx = pytest.importorskip("networkx")

from ccxml.synthesis.forest import min_arborescence  # noqa: E402


def _random(rng, n, values, missing):
    W = rng.choice(values, size=(n, n)).astype(float)
    W[rng.random((n, n)) < missing] = math.inf
    for v in range(1, n):                   # every vertex reachable: a path 0 -> 1 -> ... -> n-1
        W[v - 1, v] = min(W[v - 1, v], float(values[-1]))
    return W


def _cost(W, par, root):
    return sum(W[par[v], v] for v in range(len(par)) if v != root)


@pytest.mark.parametrize("seed", range(40))
def test_fast_expansion_is_the_loops_twin(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    W = _random(rng, n, [1, 2, 3] if seed % 2 else list(range(1, 50)), missing=0.3 * (seed % 3 == 0))
    root = int(rng.integers(n))
    fast, loop = min_arborescence(W, root), min_arborescence(W, root, fast=False)
    assert fast.tolist() == loop.tolist()
    assert fast[root] == -1 and all(fast[v] >= 0 for v in range(n) if v != root)


@pytest.mark.parametrize("seed", range(12))
def test_cost_is_networkx_minimum(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 25))
    W = _random(rng, n, list(range(1, 9)), missing=0.2)
    root = int(rng.integers(n))
    par = min_arborescence(W, root)
    seen, v = set(), None                   # a tree: every vertex's parent chain reaches the root
    for s in range(n):
        v, seen = s, set()
        while v != root:
            assert v not in seen
            seen.add(v)
            v = int(par[v])
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from((i, j, W[i, j]) for i in range(n) for j in range(n)
                              if i != j and j != root and math.isfinite(W[i, j]))
    best = nx.minimum_spanning_arborescence(G)
    assert _cost(W, par, root) == pytest.approx(best.size(weight="weight"))
