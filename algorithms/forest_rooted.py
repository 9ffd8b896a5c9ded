"""Forest Broadcast and Reduce from one root: spanning trees of the root packed at its max-flow
bound (:mod:`ccxml.synthesis.rooted`; docs/forest-rooted.md).

* Broadcast: the root's buffer is C chunks shared over its k out-trees in proportion to their
  rates (largest remainders); chunk i of a tree crosses the edge below member u at its pipeline
  time (i + depth(u)) / count, so a thread block meets hops in the order their data become ready
  (the issue order of :func:`ccxml.algorithms.forest.lay_out`, NCCL's pipelined tree); the root
  sends from its input buffer.
* Reduce: the same trees reversed: chunk i crosses the edge above member v at (i + height(v)) /
  count; an inner rank reduces its children's partial sums into its own input (into scratch), the
  root into its output.

Successive chunks of a tree alternate over ``lanes`` channels; thread blocks are one-way. Before
the layout, :mod:`ccxml.synthesis.fit` counts the peers, thread blocks, channels, steps and XML
nodes the packing needs and picks the smallest k within ``tol`` (5%) of the unrestricted rate that
fits the runtime's limits (``--opt limits=exec|rccl|legacy|all``, default: the --target; all: every
runtime's at once);
a topology that cannot be served within them is one plain error naming the limit.

CLI: ``ccxml generate forest --coll broadcast --root 3 --preset dgx-h100 --nodes 2``. The root is
the collective's ``--root`` (``--opt`` takes chunks, lanes, headroom, tol, limits).
"""
from __future__ import annotations

import functools

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm
from ccxml.vocab.errors import AlgorithmError, TopologyError
from ccxml.vocab.wire import Coll

#: channels a tree's successive chunks take in turn (as forest's AllGather)
LANES = 2


def auto_chunks(k: int, depth: int) -> int:
    """Chunks of the root's buffer: every tree's pipeline long against its depth, at most 256.
    (dgx-h100 x 1 Broadcast at 1 GiB, k = 6: 24 chunks gave 66.5% of the bound, 96 83.9%, 256
    87.4%; simulated, 2026-11-29.)"""
    return min(256, max(64, 16 * k, 4 * k * depth))


@functools.lru_cache(maxsize=8)
def _synthesize(spec, coll: str, root: int, tol: float, headroom: float, chunks: int, lanes: int,
                limits: str):
    """One packing per (network, collective, root, options): select and tune build a schedule per
    size, and the trees do not depend on it."""
    from ccxml.synthesis.fit import fit_trees
    from ccxml.synthesis.fit import limits as profile_of
    from ccxml.synthesis.rooted import synthesize_rooted
    from ccxml.topology.model import build_network
    prof = profile_of(limits)
    net = build_network(spec)
    phases = ("down",) if coll == "broadcast" else ("up",)

    def fits(trees):
        depth = max(t.depth() for t in trees)
        return fit_trees(net.nranks, trees, chunks or auto_chunks(len(trees), depth), lanes, phases, prof,
                         extra=1, shrink=True)

    return synthesize_rooted(net, coll, root, tol=tol, headroom=headroom, fits=fits)


def _forest(p: int, coll: str, root: int, topology, tol, headroom, chunks, lanes, limits):
    if topology is None or getattr(topology, "network", None) is None:
        raise AlgorithmError("forest needs a network topology: --preset P --nodes N or --topology FILE")
    if topology.nranks != p:
        raise AlgorithmError(f"forest: the topology has {topology.nranks} ranks, not {p}")
    if not isinstance(chunks, int) or chunks < 0:
        raise AlgorithmError(f"forest: chunks must be an integer >= 0 (0: automatic), got {chunks}")
    if not isinstance(lanes, int) or lanes < 0:
        raise AlgorithmError(f"forest: lanes must be an integer >= 0 (0: automatic), got {lanes}")
    if not 0 <= headroom < 1:
        raise AlgorithmError(f"forest: headroom must be in [0, 1), got {headroom}")
    if not 0 <= tol < 1:
        raise AlgorithmError(f"forest: tol must be in [0, 1), got {tol}")
    try:
        return _synthesize(topology.network, coll, root, float(tol), float(headroom), chunks, lanes or LANES,
                           str(limits))
    except TopologyError as e:
        raise AlgorithmError(str(e)) from None


def _pieces(forest, C: int):
    """(tree, first chunk, count) of the root's trees, C chunks in proportion to their rates."""
    from ccxml.synthesis.fit import split_chunks
    out, at = [], 0
    for t, c in zip(forest.trees, split_chunks([t.rate for t in forest.trees], C)):
        if c:
            out.append((t, at, c))
            at += c
    return out


def _levels(tree):
    edges = tree.edges_down()
    depth = {tree.root: 0}
    for u, v in edges:
        depth[v] = depth[u] + 1
    height = dict.fromkeys(depth, 0)
    for u, v in reversed(edges):
        height[u] = max(height[u], height[v] + 1)
    return edges, depth, height


def _start(p: int, coll: Coll, root: int, topology, options, chunks, lanes, headroom, tol, limits):
    forest = _forest(p, coll.value, root, topology, tol, headroom, chunks, lanes, limits)
    C = forest.fit.chunks
    prog = program("forest", coll, p, C, options, root=root)
    prog.split_directions()
    prog.forest = forest                # the generate summary reads it
    return prog, forest, C, lanes or LANES


@algorithm("forest", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, topology=None, options: Options = Options(), chunks: int = 0,
              lanes: int = 0, headroom: float = 0.0, tol: float = 0.05, limits: str = "exec") -> Program:
    prog, forest, C, lanes = _start(p, Coll.BROADCAST, root, topology, options, chunks, lanes, headroom,
                                    tol, limits)
    prog.input(root, 0, C).copy(prog.output(root, 0, C))
    hops = []
    for t, (tree, first, count) in enumerate(_pieces(forest, C)):
        edges, depth, _ = _levels(tree)
        for i in range(count):
            for n, (u, v) in enumerate(edges):
                hops.append(((i + depth[u]) / count, i, t, n, first + i, u, v))
    for _, i, _, _, idx, u, v in sorted(hops):
        src = prog.input(u, idx) if u == root else prog.output(u, idx)
        src.copy(prog.output(v, idx), chan=i % lanes)
    return prog


@algorithm("forest", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, topology=None, options: Options = Options(), chunks: int = 0,
           lanes: int = 0, headroom: float = 0.0, tol: float = 0.05, limits: str = "exec") -> Program:
    prog, forest, C, lanes = _start(p, Coll.REDUCE, root, topology, options, chunks, lanes, headroom,
                                    tol, limits)

    def acc(v: int, idx: int):
        return prog.output(v, idx) if v == root else prog.scratch(v, idx)

    hops = []
    for t, (tree, first, count) in enumerate(_pieces(forest, C)):
        edges, _, height = _levels(tree)
        inner = {u for u, _ in edges}
        for i in range(count):
            for n, (u, v) in enumerate(reversed(edges)):
                hops.append(((i + height[v]) / count, i, t, n, first + i, u, v, v in inner))
    started: set[tuple[int, int]] = set()
    for _, i, _, _, idx, u, v, v_inner in sorted(hops):
        held = acc(v, idx) if v_inner else prog.input(v, idx)
        if (u, idx) in started:
            held.reduce(acc(u, idx), chan=i % lanes)
        else:
            held.reduce(prog.input(u, idx), chan=i % lanes, out=acc(u, idx))
            started.add((u, idx))
    return prog
