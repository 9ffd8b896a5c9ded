"""Forest — AllGather, ReduceScatter and AllReduce synthesized from the topology graph by packing
spanning trees at the max-flow bound (ForestColl, arXiv 2402.06787; docs/forest.md).

:func:`ccxml.synthesis.forest.synthesize` finds, for every rank r, k out-trees rooted at r whose edges
are rank-to-rank hops on the runtime's routes, with rates that fit every link's capacity and add up
to the bound x* per root (:func:`ccxml.topology.flow.exact_bound`). This script lays them out:

* each rank's block is C chunks, shared out over its trees in proportion to their rates (largest
  remainders); chunk after chunk, a tree's chunks go down its edges breadth-first, so a tree is a
  pipeline C/k chunks deep and its depth costs little at large sizes;
* AllGather: down the out-trees; ReduceScatter: up the same trees reversed (children's partial sums
  reduced into the parent, the root ends with its block); AllReduce: ReduceScatter then AllGather
  on the same trees.

CLI: ``ccxml generate forest --coll allgather --preset dgx-h100 --nodes 4`` (a network topology is
required); options ``--opt chunks=C`` (per rank block, 0: 4·k·depth-ish automatic) and ``tol``.
"""
from __future__ import annotations

import functools

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm, registry
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Coll


def _forest(p: int, topology, coll: str, tol: float, headroom: float, fit=None):
    if topology is None or getattr(topology, "network", None) is None:
        raise AlgorithmError("forest needs a network topology: --preset P --nodes N or --topology FILE")
    net = topology.graph()
    if net.nranks != p:
        raise AlgorithmError(f"forest: the topology has {net.nranks} ranks, not {p}")
    from ccxml.vocab.errors import TopologyError
    try:
        return _synthesize(topology.network, coll, tol, headroom, fit)
    except TopologyError as e:
        raise AlgorithmError(str(e)) from None


@functools.lru_cache(maxsize=8)
def _synthesize(spec, coll: str, tol: float, headroom: float, fit=None):
    """One synthesis per (network, collective, options): select and tune build a schedule per size
    and the trees do not depend on it (the Forest is immutable). ``fit``: (limits, lanes, phases,
    chunks) — the runtime's limits k must fit (synthesis/fit.py), or None."""
    from ccxml.synthesis.forest import synthesize
    from ccxml.topology.model import build_network
    net = build_network(spec)
    return synthesize(net, coll=coll, tol=tol, headroom=headroom,
                      fits=None if fit is None else _fits(net.nranks, *fit))


def _fits(p: int, limits: str, lanes: int, phases: tuple[str, ...], chunks: int):
    """The runtime check of a candidate packing: what this layout of it needs (thread blocks,
    channels, XML nodes at the chunks it would use) against ``limits`` (synthesis/fit.py)."""
    from types import SimpleNamespace

    from ccxml.synthesis.fit import fit_trees
    from ccxml.synthesis.fit import limits as profile_of
    prof = profile_of(limits)

    def fits(trees):
        k = max(sum(t.root == r for t in trees) for r in {t.root for t in trees})
        C = chunks or auto_chunks(SimpleNamespace(trees=trees, k=k))
        return fit_trees(p, trees, C, lanes, phases, prof, extra=1)
    return fits


#: defaults chosen by benchmarks/bench_forest.py (see docs/forest.md)
LANES = 2
#: the runtimes' XML nodes per GPU (ccxml.vocab.wire profiles: max_nodes)
MAX_NODES = 4095
MIN_HEADROOM = 0.3


def shares(forest, r: int, chunks: int) -> list[tuple[object, int, int]]:
    """(tree, first chunk, chunk count) of root r's trees: ``chunks`` shared in proportion to the
    rates by largest remainders, trees that get none left out."""
    trees = forest.of_root(r)
    total = sum(t.rate for t in trees)
    exact = [t.rate / total * chunks for t in trees]
    counts = [int(x) for x in exact]
    for i in sorted(range(len(trees)), key=lambda i: (counts[i] - exact[i], i))[:chunks - sum(counts)]:
        counts[i] += 1
    out, at = [], 0
    for t, c in zip(trees, counts):
        if c:
            out.append((t, at, c))
            at += c
    return out


def auto_chunks(forest) -> int:
    """Chunks per rank block: enough that every tree gets a few and the deepest pipeline is
    short against its length."""
    depth = max(t.depth() for t in forest.trees)
    return max(16, 4 * forest.k, 4 * depth)


def lay_out(prog: Program, forest, C: int, lanes: int, *, gather: bool, reduce: bool, src, acc) -> None:
    """Move root r's chunks r·C … r·C + C − 1 up (reduce) and/or down (gather) its trees, every
    hop issued at its pipeline time: chunk number i of a tree crosses the edge below member u at
    i + depth(u) going down, the edge above member v at i + height(v) going up (NCCL's pipelined
    tree, :mod:`ccxml.tables.tree`). A thread block then meets its hops in the order their data
    become ready, whichever tree they belong to. Each phase has its own channels."""
    p = forest.p
    up, down = [], []
    for r in range(p):
        for tree, first, count in shares(forest, r, C):
            edges = tree.edges_down()
            depth = {tree.root: 0}
            for u, v in edges:
                depth[v] = depth[u] + 1
            height = dict.fromkeys(depth, 0)
            for u, v in reversed(edges):
                height[u] = max(height[u], height[v] + 1)
            inner = {u for u, _ in edges}
            for i in range(count):
                idx = r * C + first + i
                for n, (u, v) in enumerate(edges):
                    down.append(((i + depth[u]) / count, r, i, n, idx, u, v))
                for n, (u, v) in enumerate(reversed(edges)):
                    up.append(((i + height[v]) / count, r, i, n, idx, u, v, v in inner))
    if reduce:
        started: set[tuple[int, int]] = set()
        for _, _, i, _, idx, u, v, v_inner in sorted(up):
            held = acc(v, idx) if v_inner else src(v, idx)
            ch = i % lanes
            if (u, idx) in started:
                held.reduce(acc(u, idx), chan=ch)
            else:
                held.reduce(src(u, idx), chan=ch, out=acc(u, idx))
                started.add((u, idx))
    if gather:
        base = lanes if reduce else 0
        for _, _, i, _, idx, u, v in sorted(down):
            prog.output(u, idx).copy(prog.output(v, idx), chan=base + i % lanes)


def _headroom(topology, headroom: float) -> float:
    """The share of a NIC port's bandwidth kept free for its per-message work. -1 (automatic): the
    share that work takes of a port moving this layout's chunks at 1 GiB (16 chunks per rank
    block), overhead / (overhead + chunk / bandwidth), but at least MIN_HEADROOM and at most 0.5;
    0 on one node. (A saturated NIC stalls every tree: on dgx-h100 x 4 AllGather at 1 GiB, with
    NCCL's reading of the NIC, 0 gives 68.2% of the bound, 0.1 62.4%, 0.3 72.0%; docs/forest.md.)"""
    if headroom >= 0:
        if not headroom < 1:
            raise AlgorithmError(f"forest: headroom must be in [0, 1) or -1 (automatic), got {headroom}")
        return headroom
    spec = getattr(topology, "network", None)
    if spec is None:
        return 0.0                      # (no network: _forest says so)
    nics = [d for d in spec.devices if d.kind == "nic" and d.bandwidth]
    if spec.nodes < 2 or not nics:
        return 0.0
    nic = max(nics, key=lambda d: d.overhead)
    chunk = (1 << 30) / (spec.gpus * spec.nodes * 16)
    share = nic.overhead / (nic.overhead + chunk / nic.bandwidth)
    return round(min(0.5, max(MIN_HEADROOM, share)), 3)


def _lanes(forest, lanes: int) -> int:
    """Channels per phase: a tree's successive chunks take them in turn (0: automatic)."""
    if not isinstance(lanes, int) or lanes < 0:
        raise AlgorithmError(f"forest: lanes must be an integer >= 0 (0: automatic), got {lanes}")
    return lanes or LANES


def fit_chunks(forest, C: int, lanes: int, phases: int, limit: int = MAX_NODES) -> int:
    """The largest chunk count <= C whose every rank stays within the runtimes' ``limit`` XML
    nodes (1 + ranks + thread blocks + steps; ccxml.vocab.wire): steps counted per tree hop and
    chunk, thread blocks bounded by 2 per peer, lane and phase. AlgorithmError when even 1 chunk
    per block does not fit: the topology cannot be served by this layout within the limits."""
    p = forest.p
    peers = [set() for _ in range(p)]
    for t in forest.trees:
        for v, u in enumerate(t.parent):
            if u >= 0:
                peers[u].add(v)
                peers[v].add(u)
    for c in range(C, 0, -1):
        steps = [0] * p
        for r in range(p):
            for tree, _, count in shares(forest, r, c):
                for v, u in enumerate(tree.parent):
                    if u >= 0:
                        steps[u] += count * phases
                        steps[v] += count * phases
        worst = max(1 + p + 2 * len(peers[x]) * lanes * phases + steps[x] + (c if x else 0) for x in range(p))
        if worst <= limit:
            return c
    raise AlgorithmError(f"forest: {p} ranks cannot be served within the runtimes' {limit} XML nodes per "
                         f"GPU, even with one chunk per block")


def _chunks(forest, chunks: int) -> int:
    if not isinstance(chunks, int) or chunks < 0:
        raise AlgorithmError(f"forest: chunks must be an integer >= 0 (0: automatic), got {chunks}")
    return chunks or auto_chunks(forest)


def _start(p: int, coll: Coll, trees: str, topology, options: Options, chunks: int, lanes: int,
           headroom: float, tol: float, phases: int, limits: str = "exec"):
    """The forest packed for ``trees`` (allgather or reducescatter), its channels, the chunks per
    rank block that fit the runtime (``phases`` passes over the trees), and the program over
    p·C chunks with one-way thread blocks: (program, forest, C, lanes)."""
    ways = ("up", "down") if phases == 2 else ("down",) if trees == "allgather" else ("up",)
    fit = (str(limits), _lanes(None, lanes), ways, _chunks(None, chunks) if chunks else 0)
    try:
        forest = _forest(p, topology, trees, tol, _headroom(topology, headroom), fit)
    except AlgorithmError as e:         # automatic lanes: one lane halves the thread blocks
        if lanes or fit[1] == 1 or "cannot be served" not in str(e):
            raise
        lanes = 1
        forest = _forest(p, topology, trees, tol, _headroom(topology, headroom), (fit[0], 1, *fit[2:]))
    lanes = _lanes(forest, lanes)
    C = fit_chunks(forest, _chunks(forest, chunks), lanes, phases)
    prog = program("forest", coll, p, p * C, options)
    prog.split_directions()
    prog.forest = forest                # the generate summary reads it
    return prog, forest, C, lanes


@algorithm("forest", Coll.ALLGATHER)
def allgather(p: int, *, topology=None, options: Options = Options(), chunks: int = 0,
              lanes: int = 0, headroom: float = -1.0, tol: float = 0.02,
              limits: str = "exec") -> Program:
    prog, forest, C, lanes = _start(p, Coll.ALLGATHER, "allgather", topology, options, chunks, lanes,
                                    headroom, tol, phases=1, limits=limits)
    for r in range(p):
        prog.input(r, 0, C).copy(prog.output(r, r * C, C))
    lay_out(prog, forest, C, lanes, gather=True, reduce=False, src=None, acc=None)
    return prog


@algorithm("forest", Coll.REDUCESCATTER)
def reducescatter(p: int, *, topology=None, options: Options = Options(), chunks: int = 0,
                  lanes: int = 0, headroom: float = -1.0, tol: float = 0.02,
                  limits: str = "exec") -> Program:
    prog, forest, C, lanes = _start(p, Coll.REDUCESCATTER, "reducescatter", topology, options, chunks,
                                    lanes, headroom, tol, phases=1, limits=limits)

    def acc(v, idx):
        r = idx // C
        return prog.output(v, idx - r * C) if v == r else prog.scratch(v, idx)

    lay_out(prog, forest, C, lanes, gather=False, reduce=True, src=lambda v, idx: prog.input(v, idx), acc=acc)
    return prog


@algorithm("forest", Coll.ALLREDUCE)
def allreduce(p: int, *, topology=None, options: Options = Options(), chunks: int = 0,
              lanes: int = 0, headroom: float = -1.0, tol: float = 0.02,
              limits: str = "exec") -> Program:
    prog, forest, C, lanes = _start(p, Coll.ALLREDUCE, "allgather", topology, options, chunks, lanes,
                                    headroom, tol, phases=2, limits=limits)
    lay_out(prog, forest, C, lanes, gather=True, reduce=True, src=lambda v, idx: prog.input(v, idx),
            acc=lambda v, idx: prog.output(v, idx))
    return prog


from ccxml.algorithms import forest_rooted  # noqa: E402,F401  (registers forest Broadcast and Reduce)

COLLECTIVES = registry.get("forest").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("forest")
