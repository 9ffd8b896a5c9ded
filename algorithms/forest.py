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
required); options ``--opt chunks=C`` (per rank block, 0: 4·k·depth-ish automatic), ``tol``,
``lanes``, ``group`` (chunks a NIC step), ``inner=N`` (chunks per step inside a node, 0:
:func:`inner_group`), ``near`` (chunks a step inside a node of partial sums with a NIC ahead;
ReduceScatter and AllReduce), ``headroom``.
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
GROUP = 2
#: chunks per step inside a node of partial sums with a NIC ahead (Steps.up)
NEAR = 2
#: the runtimes' XML nodes per GPU (ccxml.vocab.wire profiles: max_nodes)
MAX_NODES = 4095
MIN_HEADROOM = 0.0
#: XML nodes per counted node: the dependency pass adds nops (dgx-h100 x 4 AllReduce, 32 chunks:
#: 4454 nodes on gpu 0 where the hops and thread blocks count 3929, 13.4% more)
NOP_MARGIN = 1.15
#: a step inside a node lasts at least this many times its route's latency at 1 GiB while a rank
#: forwards to all its node's peers at once (:func:`inner_group`)
STEP_LATENCIES = 8
GIB = 1 << 30


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


def auto_chunks(forest, group: int = 1) -> int:
    """Chunks per rank block: enough that every tree gets a few and the deepest pipeline is
    short against its length; twice as many where steps between nodes carry ``group`` > 1 chunks
    (the NIC's steps stay as large, the NVLink's get finer: dgx-h100 x 4 AllGather at 1 GiB, 16
    → 32 chunks: 93.3% → 95.2% of the bound)."""
    depth = max(t.depth() for t in forest.trees)
    return max(16, 4 * forest.k, 4 * depth) * (2 if group > 1 else 1)


class Steps:
    """Chunks per step on edge (u, v): ``group`` between two nodes (``remote``), ``inner`` inside a
    node (:meth:`__call__`), ``near`` inside a node for partial sums with a NIC ahead (:meth:`up`)
    — or ``group`` on every edge (``every``: one node, where every edge is of the slowest kind
    there is). The default (no topology) is one chunk everywhere and no edge remote.

    On one node too, steps of one chunk in every lane at once leave a link idle while all its
    lanes wait out their step latency together, and move two chunks at half rate where one
    would do (a coarser pipeline); grouped steps out of phase (:func:`groups`) keep it moving.
    At 1 GiB, share of the bound, one chunk per step → ``group`` 2 on every edge: pcie x 1
    AllGather 98.7% → 98.8%, ReduceScatter 91.7% → 93.5%, AllReduce 89.9% → 95.5%; dgx-h100
    x 1 96.0%, 97.2% (from 95.1%, 96.3%), AllReduce 99.8%; mi300x x 1 AllGather 96.4% → 97.3%,
    ReduceScatter 97.2% → 98.1%. The chunk count stays as on one node (doubling it, as off one
    node, gives pcie x 1 AllReduce 91.8%)."""

    def __init__(self, gpus: int = 0, group: int = 1, inner: int = 1, near: int = 1, every: bool = False):
        self.gpus, self.group, self.inner, self.near, self.every = gpus, group, inner, near, every

    def remote(self, u: int, v: int) -> bool:
        return self.gpus > 0 and u // self.gpus != v // self.gpus

    def __call__(self, u: int, v: int) -> int:
        return self.group if self.every or self.remote(u, v) else self.inner

    def up(self, u: int, v: int) -> int:
        """Going up, partial sums that still have a NIC ahead of them: ``near`` chunks a step
        inside a node, lanes out of phase and no draining (:func:`groups`). Those leaves send
        from the start, so with one chunk a step their thread blocks all step together, all
        wait out the NVLink step latency (3.4 µs of 36) at once and the port idles 10% of the
        time; two chunks a step, lane 1 starting with one, the lanes' latencies fall half a step
        apart and one lane moves data while the other waits. Draining one chunk a step would
        bring the lanes back in phase. Sums for a root in the node keep one chunk a step and
        drain: the root's sums then complete chunk by chunk and AllReduce's AllGather follows
        them closely. (dgx-h100 x 4 at 1 GiB, ReduceScatter / AllReduce: one chunk a step 90.0 /
        94.7%; two for every hop inside a node 98.6 / 97.1% — with draining 97.1%, three 94.8%,
        four 90.0% —; two for the sums with a NIC ahead 98.9 / 99.0% of the bound.)"""
        return self.group if self.remote(u, v) else self.near


def inner_group(topology, p: int, C: int, lanes: int) -> int:
    """Chunks per step inside a node (``--opt inner=0``, automatic): the fewest whose step, at
    1 GiB, lasts STEP_LATENCIES times its route's latency while a rank sends to every peer of
    its node at once, ``lanes`` steps each (the max-min share of the busiest link on the way).
    A step waits out its latency before it moves data, and a gateway's steps to its peers go in
    phase (they forward the same chunk), so short steps leave the link idle that share of the
    time. dgx-h100 x 8 AllGather at 1 GiB, 32 chunks of 512 KiB per block: NVLink steps of one
    chunk (16 µs at 32 GB/s against 3.4 µs) 87.8% of the bound, of two 94.7%, of three 89.7%.
    On the other topologies of docs/forest.md a chunk already lasts 8 latencies: 1."""
    spec = getattr(topology, "network", None)
    if spec is None or spec.gpus < 2:
        return 1
    net = topology.graph()
    chunk = GIB / (p * C)
    need = 1
    for u in range(spec.gpus):
        routes = [net.route(u, v) for v in range(spec.gpus) if v != u]
        use: dict[int, int] = {}
        for r in routes:
            for x in r.resources:
                use[x] = use.get(x, 0) + 1
        for r in routes:
            if r.resources:
                flow = min(net.link_cap[x] / (use[x] * lanes) for x in r.resources)
                need = max(need, -(-int(STEP_LATENCIES * r.latency * flow) // int(chunk)))
    return need


def groups(count: int, size: int, lanes: int, drain: bool = True) -> list[tuple[int, int, int]]:
    """(first chunk, chunks, lane) of the steps that move a tree's ``count`` chunks over one edge:
    ``size`` chunks per step, steps taking the lanes in turn, except that lane ℓ's first step
    carries ⌈size·ℓ/lanes⌉ chunks and the second half of the chunks go one per step. The lanes'
    steps are then out of phase: when one lane's step waits out its latency another's is moving
    data (lanes in phase would all wait at once, a NIC port idle for 14 µs every step). And the
    pipeline drains in small steps: what the last step brings must still be forwarded, at the
    end, by the links behind it. (dgx-h100 x 4 AllGather at 1 GiB, 32 chunks: one per step
    88.4%, two 91.5%, two then one 96.2% of the bound.) size 1: one chunk per step, lane i mod
    lanes. ``drain`` False: no single-chunk second half (the lanes stay out of phase to the
    end; :meth:`Steps.up`)."""
    out, i, j = [], 0, 0
    while i < count:
        lane = j % lanes
        n = size if j >= lanes or lane == 0 else max(1, -(-size * lane // lanes))
        if drain and 2 * (count - i) <= count:
            n = 1
        n = min(n, count - i)
        out.append((i, n, lane))
        i, j = i + n, j + 1
    return out


def _up_steps(step: Steps, u: int, v: int, far: bool) -> tuple[int, bool]:
    """(chunks a step, drain?) of the up hop v → u: partial sums with a NIC ahead (``far``) move
    ``step.near`` chunks a step inside a node without draining (:meth:`Steps.up`); the others
    as down, draining."""
    if far:
        return step.up(v, u), step.remote(v, u)
    return step(v, u), True


def plan(forest, C: int, lanes: int, step: Steps = Steps()) -> tuple[list, list]:
    """The hops of every tree, each issued at its pipeline time: (down, up), sorted.

    Chunk number i of a tree crosses the edge below member u at i + depth(u) going down (NCCL's
    pipelined tree, :mod:`ccxml.tables.tree`), so a thread block meets its hops in the order
    their data become ready, whichever tree they belong to. Going up, the time is the mirror
    image of going down inside the root's node: chunk i crosses the edge above v at
    i + D − depth(v) (D: the depth of the tree's part in the root's node, at least v's height)
    and reaches the root at i + D, so a leaf above the tree's deepest level sends as late as its
    parent needs the sum, not at once: sent at once, its hops take their share of the links
    while the deeper leaves' hops, on the same links, fall behind, and the root waits for them
    (pcie x 1 ReduceScatter at 1 GiB: 83.3% → 91.7% of the bound; AllReduce 87.2% → 89.9%).
    Over edge (u, v) a step carries ``step(u, v)`` chunks, in lanes out of phase
    (:func:`groups`), and is issued when its last chunk's data are ready.
    Going up, hops whose partial sums still have an edge between nodes (a NIC) ahead of them
    go a whole pipeline earlier: the slow hop then runs while the fast links reduce the
    rest, instead of after them (dgx-h100 x 4 ReduceScatter at 1 GiB: 84% → 90% of the bound).

    Channels: a phase has ``2·lanes``: the first half for hops whose data are there from the
    start (down: from the root; up: from a leaf), the second for hops that forward what another
    hop brought, so that a thread block never holds ready data behind data still on their way.
    (dgx-h100 x 4 AllGather at 1 GiB: a GPU's NVLink moves its own block while the first blocks
    from other nodes cross the NICs.)

    A down hop: (time, level, root, chunk, edge, first chunk index, chunks, u, v, lane); an up
    hop adds, before the lane, whether v forwards partial sums it received. A hop's (time,
    level) is at least one level above those of the hops that bring it its data."""
    up, down = [], []
    for r in range(forest.p):
        for tree, first, count in shares(forest, r, C):
            edges = tree.edges_down()
            depth, far = {tree.root: 0}, {tree.root: False}
            for u, v in edges:
                depth[v] = depth[u] + 1
                far[v] = far[u] or step.remote(u, v)
            # going up, the mirror image of going down inside the root's node: chunk i leaves v at
            # i + D - depth(v) (D: the depth of the tree's part in the root's node) and reaches the
            # root at i + D, as late as the root's pipeline allows; hops beyond a NIC keep their
            # height (they go a pipeline earlier, below)
            height = dict.fromkeys(depth, 0)
            for u, v in reversed(edges):
                height[u] = max(height[u], height[v] + 1)
            D = max(d for v, d in depth.items() if not far[v])
            late = {v: max(height[v], D - d) for v, d in depth.items()}
            inner = {u for u, _ in edges}
            # key of a hop: (time, level); a hop comes after those that bring it its data
            # (their key with level + 1), whatever the grouping of chunks upstream
            ready: dict[tuple[int, int], tuple[float, int]] = {}
            for n, (u, v) in enumerate(edges):
                for i, size, lane in groups(count, step(u, v), lanes):
                    last = i + size - 1
                    key = ((last + depth[u]) / count, depth[u])
                    for j in range(i, i + size):
                        if (u, j) in ready:
                            t, lv = ready[(u, j)]
                            key = max(key, (t, lv + 1))
                    for j in range(i, i + size):
                        ready[(v, j)] = key
                    down.append((*key, r, last, n, r * C + first + i, size, u, v,
                                 lane + lanes * (depth[u] > 0)))
            ready = {}
            for n, (u, v) in enumerate(reversed(edges)):
                per, drain = _up_steps(step, u, v, far[v])
                for i, size, lane in groups(count, per, lanes, drain=drain):
                    last = i + size - 1
                    key = ((last + late[v]) / count - far[v], late[v])
                    for j in range(i, i + size):
                        if (v, j) in ready:
                            t, lv = ready[(v, j)]
                            key = max(key, (t, lv + 1))
                    for j in range(i, i + size):
                        ready[(u, j)] = max(ready.get((u, j), key), key)
                    up.append((*key, r, last, n, r * C + first + i, size, u, v, v in inner,
                               lane + lanes * (v in inner)))
    # ties go by the root's and the peer's offsets from the sender, not by rank numbers: shifting
    # every rank by a node then maps each thread block's sequence onto its image's, so the
    # simulator finds the node-shift symmetry and runs one node's ranks (ccxml.simulator.symmetry)
    p = forest.p
    down.sort(key=lambda h: (h[0], h[1], (h[2] - h[7]) % p, h[3], (h[8] - h[7]) % p))
    up.sort(key=lambda h: (h[0], h[1], (h[2] - h[8]) % p, h[3], (h[7] - h[8]) % p))
    return down, up


def lay_out(prog: Program, forest, C: int, lanes: int, *, gather: bool, reduce: bool, src, acc,
            step: Steps = Steps()) -> None:
    """Move root r's chunks r·C … r·C + C − 1 up its trees (``reduce``: children's partial sums
    into the parent, ``src(v, idx, n)`` a rank's own data, ``acc(v, idx, n)`` where it sums)
    and/or down them (``gather``), in the order and on the channels of :func:`plan`; the gather
    takes the channels after the reduction's."""
    down, up = plan(forest, C, lanes, step)
    if reduce:
        started: set[tuple[int, int]] = set()    # (rank, chunk) whose sum has begun
        for *_, idx, size, u, v, v_inner, ch in up:
            # a run of chunks whose sums at u have all begun, or none: one step each
            at = idx
            while at < idx + size:
                first = (u, at) in started
                end = at + 1
                while end < idx + size and ((u, end) in started) == first:
                    end += 1
                held = acc(v, at, end - at) if v_inner else src(v, at, end - at)
                if first:
                    held.reduce(acc(u, at, end - at), chan=ch)
                else:
                    held.reduce(src(u, at, end - at), chan=ch, out=acc(u, at, end - at))
                    started.update((u, j) for j in range(at, end))
                at = end
    if gather:
        base = 2 * lanes if reduce else 0
        for *_, idx, size, u, v, ch in down:
            prog.output(u, idx, size).copy(prog.output(v, idx, size), chan=base + ch)


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


def fit_chunks(forest, C: int, lanes: int, phases: int, step: Steps = Steps(), limit: int = MAX_NODES) -> int:
    """The largest chunk count <= C whose every rank stays within the runtimes' ``limit`` XML
    nodes (1 + ranks + thread blocks + steps; ccxml.vocab.wire), counted on :func:`plan`'s hops
    (a send and a receive step each; one thread block per rank, peer, channel and direction),
    with NOP_MARGIN for the nops that carry a step's second and later dependencies.
    AlgorithmError when even 1 chunk per block does not fit: the topology cannot be served by
    this layout within the limits."""
    p = forest.p
    edges: dict[int, tuple] = {}            # id(tree) -> (edges down, inner members): once
    sizes: dict[tuple, tuple] = {}          # (count, size) -> (steps, lanes used): groups()
    for c in range(C, 0, -1):
        if max(_fit_steps(forest, c, lanes, phases, step, edges, sizes)) * NOP_MARGIN <= limit:
            return c
    raise AlgorithmError(f"forest: {p} ranks cannot be served within the runtimes' {limit} XML nodes per "
                         f"GPU, even with one chunk per block")


def _fit_steps(forest, c: int, lanes: int, phases: int, step: Steps, edges: dict | None = None,
               sizes: dict | None = None) -> list[int]:
    """The XML nodes of every rank that :func:`fit_chunks` counts at ``c`` chunks, from the
    trees' edges and :func:`groups` alone: the hops of :func:`plan`, without their times and
    their sort, which the count does not read (plan's hop at ``groups``' lane ℓ over (u, v) is
    on channel ℓ + lanes·(u below the root) down, ℓ + lanes·(v inner) up, + 2·lanes in the
    second phase). :func:`_fit_steps_plan` is its exact twin, counting plan()'s hops (tests
    compare them): at 128 ranks on dgx-h100 plan() takes seconds a call, this a fraction.
    ``edges`` and ``sizes`` are caches a caller keeps across counts."""
    edges = {} if edges is None else edges
    sizes = {} if sizes is None else sizes
    p = forest.p
    steps = [1 + p + (c if x else 0) for x in range(p)]
    tbs: set[tuple] = set()

    def grouped(count: int, size: int, drain: bool = True) -> tuple[int, tuple[int, ...]]:
        got = sizes.get((count, size, drain))
        if got is None:
            gs = groups(count, size, lanes, drain)
            got = sizes[(count, size, drain)] = (len(gs), tuple(sorted({g[2] for g in gs})))
        return got
    for r in range(p):
        for tree, _, count in shares(forest, r, c):
            got = edges.get(id(tree))
            if got is None:
                down = tree.edges_down()
                far = {tree.root: False}
                for u, v in down:
                    far[v] = far[u] or step.remote(u, v)
                got = edges[id(tree)] = (tree, down, {u for u, _ in down}, far)
            _, down, inner, far = got
            for u, v in down:
                n, used = grouped(count, step(u, v))
                steps[u] += n
                steps[v] += n
                base = lanes * (u != tree.root)
                for lane in used:
                    tbs.add((u, v, lane + base, 0))
                    tbs.add((v, u, lane + base, 1))
                if phases > 1:
                    n, used = grouped(count, *_up_steps(step, u, v, far[v]))
                    steps[u] += n
                    steps[v] += n
                    base = lanes * (v in inner) + 2 * lanes
                    for lane in used:
                        tbs.add((u, v, lane + base, 0))
                        tbs.add((v, u, lane + base, 1))
    for x, _, _, _ in tbs:
        steps[x] += 1
    return steps


def _fit_steps_plan(forest, c: int, lanes: int, phases: int, step: Steps) -> list[int]:
    """:func:`_fit_steps` counted on :func:`plan`'s hops (the reference, for the tests)."""
    p = forest.p
    steps = [1 + p + (c if x else 0) for x in range(p)]
    tbs: set[tuple] = set()
    down, up = plan(forest, c, lanes, step)
    for phase, hops in enumerate((down, up)[:phases]):
        for h in hops:
            u, v, ch = h[7], h[8], h[-1] + 2 * lanes * phase
            steps[u] += 1
            steps[v] += 1
            tbs.add((u, v, ch, 0))
            tbs.add((v, u, ch, 1))
    for x, _, _, _ in tbs:
        steps[x] += 1
    return steps


def _chunks(forest, chunks: int, group: int) -> int:
    if not isinstance(chunks, int) or chunks < 0:
        raise AlgorithmError(f"forest: chunks must be an integer >= 0 (0: automatic), got {chunks}")
    return chunks or auto_chunks(forest, group)


def _step(topology, group: int, near: int = 0, inner: int = 1) -> Steps:
    """The :class:`Steps` of ``--opt group`` and ``near`` (0: automatic, GROUP and NEAR) on this
    topology's nodes, with ``inner`` chunks per step inside a node; on one node ``group`` on
    every edge."""
    for name, value in (("group", group), ("near", near)):
        if not isinstance(value, int) or value < 0:
            raise AlgorithmError(f"forest: {name} must be an integer >= 0 (0: automatic), got {value}")
    return Steps(topology.network.gpus, group or GROUP, inner, near or NEAR,
                 every=topology.network.nodes == 1)


def _start(p: int, coll: Coll, trees: str, topology, options: Options, chunks: int, lanes: int,
           headroom: float, tol: float, phases: int, group: int, limits: str = "exec", near: int = 0,
           inner: int = 0):
    """The forest packed for ``trees`` (allgather or reducescatter) within the limits of
    ``limits``, its channels, the chunks per rank block that fit the runtime (``phases`` passes
    over the trees), and the program over p·C chunks with one-way thread blocks: (program,
    forest, C, lanes, step)."""
    ways = ("up", "down") if phases == 2 else ("down",) if trees == "allgather" else ("up",)
    # the fit counts 2·lanes channels a phase: plan() gives forwarding hops lanes of their own
    fit = (str(limits), 2 * _lanes(None, lanes), ways, _chunks(None, chunks, 1) if chunks else 0)
    try:
        forest = _forest(p, topology, trees, tol, _headroom(topology, headroom), fit)
    except AlgorithmError as e:         # automatic lanes: one lane halves the thread blocks
        if lanes or fit[1] == 2 or "cannot be served" not in str(e):
            raise
        lanes = 1
        forest = _forest(p, topology, trees, tol, _headroom(topology, headroom), (fit[0], 2, *fit[2:]))
    lanes = _lanes(forest, lanes)
    multi = topology.network.nodes > 1
    C = _chunks(forest, chunks, (group or GROUP) if multi else 1)
    if not isinstance(inner, int) or inner < 0:
        raise AlgorithmError(f"forest: inner must be an integer >= 0 (0: automatic), got {inner}")
    step = _step(topology, group, near, inner or inner_group(topology, p, C, lanes))
    C = fit_chunks(forest, C, lanes, phases, step)
    prog = program("forest", coll, p, p * C, options)
    prog.split_directions()
    prog.forest = forest                # the generate summary reads it
    return prog, forest, C, lanes, step


@algorithm("forest", Coll.ALLGATHER)
def allgather(p: int, *, topology=None, options: Options = Options(), chunks: int = 0,
              lanes: int = 0, headroom: float = -1.0, tol: float = 0.02, group: int = 0,
              limits: str = "exec", inner: int = 0) -> Program:
    prog, forest, C, lanes, step = _start(p, Coll.ALLGATHER, "allgather", topology, options, chunks, lanes,
                                          headroom, tol, phases=1, group=group, limits=limits,
                                          inner=inner)
    for r in range(p):
        prog.input(r, 0, C).copy(prog.output(r, r * C, C))
    lay_out(prog, forest, C, lanes, gather=True, reduce=False, src=None, acc=None, step=step)
    return prog


@algorithm("forest", Coll.REDUCESCATTER)
def reducescatter(p: int, *, topology=None, options: Options = Options(), chunks: int = 0,
                  lanes: int = 0, headroom: float = -1.0, tol: float = 0.02, group: int = 0,
                  limits: str = "exec", near: int = 0, inner: int = 0) -> Program:
    prog, forest, C, lanes, step = _start(p, Coll.REDUCESCATTER, "reducescatter", topology, options, chunks,
                                          lanes, headroom, tol, phases=1, group=group, limits=limits,
                                          near=near, inner=inner)

    def acc(v, idx, size):
        r = idx // C
        return prog.output(v, idx - r * C, size) if v == r else prog.scratch(v, idx, size)

    lay_out(prog, forest, C, lanes, gather=False, reduce=True, src=lambda v, idx, size: prog.input(v, idx, size),
            acc=acc, step=step)
    return prog


@algorithm("forest", Coll.ALLREDUCE)
def allreduce(p: int, *, topology=None, options: Options = Options(), chunks: int = 0,
              lanes: int = 0, headroom: float = -1.0, tol: float = 0.02, group: int = 0,
              limits: str = "exec", near: int = 0, inner: int = 0) -> Program:
    prog, forest, C, lanes, step = _start(p, Coll.ALLREDUCE, "allgather", topology, options, chunks, lanes,
                                          headroom, tol, phases=2, group=group, limits=limits,
                                          near=near, inner=inner)
    lay_out(prog, forest, C, lanes, gather=True, reduce=True, src=lambda v, idx, size: prog.input(v, idx, size),
            acc=lambda v, idx, size: prog.output(v, idx, size), step=step)
    return prog


from ccxml.algorithms import forest_rooted  # noqa: E402,F401  (registers forest Broadcast and Reduce)

COLLECTIVES = registry.get("forest").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("forest")
