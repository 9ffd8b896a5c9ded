"""HCCL's published α-β-γ cost formulas (../shared/reference/hccl-algorithms.md, "Cost" paragraphs).

:data:`FORMULAS` holds one :class:`CostFormula` per algorithm × collective (× p range where the
document distinguishes powers of two). ``doc`` is the document's formula; where the schedule ccxml
generates legitimately differs, ``ccxml`` is that schedule's exact time in the same model and
``why`` says why. n is the nccl-tests message size (allreduce: the buffer; allgather: the output;
reducescatter: the input; scatter/gather: the root's whole buffer; alltoall: one rank's send buffer).
The assumptions are the formulas' own: one α, β, γ for every link, and every pair of ranks
connected by its own full-duplex link.

The formula tests (tests/test_simulator_formulas.py) check the simulator against these tables,
``benchmarks/formula_report.py`` prints them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ccxml.topology.model import LinkLevel

Formula = Callable[[int, float, float, float, float], float]   # (p, n, α, β, γ) -> seconds
#: hierarchical formulas: (group sizes, n, intra level, inter level) -> seconds
HierFormula = Callable[[tuple, float, "LinkLevel", "LinkLevel"], float]

#: the p range every formula is stated for here
ALL_P = range(2, 34)


def ns(p: int) -> int:
    """⌈log2 p⌉ as HCCL computes it: the bit length of p − 1."""
    return (p - 1).bit_length()


def flog(p: int) -> int:
    """⌊log2 p⌋."""
    return p.bit_length() - 1


def is_pow2(p: int) -> bool:
    return p & (p - 1) == 0


@dataclass(frozen=True)
class CostFormula:
    """One document formula, and ccxml's own where its schedule differs."""

    algorithm: str              # CLI name (ccxml.algorithms.REGISTRY)
    module: str                 # module in ccxml.algorithms
    coll: str
    doc: Formula                # the HCCL document's formula
    ps: tuple[int, ...] = tuple(ALL_P)
    ccxml: Formula | None = None  # the exact time of ccxml's schedule when it differs from ``doc``
    why: str = ""
    root: int | None = None
    #: hierarchical rows: the group shapes checked, and formulas over (groups, n, intra, inter);
    #: ``doc``/``ccxml`` are then unused and ``ps`` is empty
    shapes: tuple[tuple[int, ...], ...] = ()
    hier_doc: HierFormula | None = None
    hier_ccxml: HierFormula | None = None
    #: (intra, inter) link levels meeting the formula's assumptions
    levels: tuple[LinkLevel, LinkLevel] | None = None

    @property
    def hierarchical(self) -> bool:
        return bool(self.shapes)

    @property
    def id(self) -> str:
        if self.shapes:
            return f"{self.algorithm}-{self.coll}"
        tail = "" if self.ps == tuple(ALL_P) else (
            "-pow2" if all(is_pow2(p) for p in self.ps) else
            "-nonpow2" if not any(is_pow2(p) for p in self.ps) else "")
        return f"{self.algorithm}-{self.coll}{tail}"


POW2 = tuple(p for p in ALL_P if is_pow2(p))
NONPOW2 = tuple(p for p in ALL_P if not is_pow2(p))


def _none(p, n, a, b, g):
    raise TypeError("a hierarchical row has no flat formula")


#: Pipeline's formula has no γ and separate α/β per level
PIPELINE_LEVELS = (LinkLevel(alpha=1e-6, beta=1e-10, gamma=0.0),
                   LinkLevel(alpha=5e-6, beta=1e-9, gamma=0.0))
#: AHC's formula has one α and γ and β_inter = C·β_intra
AHC_LEVELS = (LinkLevel(alpha=1e-6, beta=1e-10, gamma=3e-11),
              LinkLevel(alpha=1e-6, beta=4e-10, gamma=3e-11))

#: server shapes (S servers × m ranks) the Pipeline rows are checked on
PIPELINE_SHAPES = ((2, 2), (2, 2, 2), (4, 4), (2,) * 5, (3, 3, 3), (8, 8, 8, 8))
#: group shapes the AHC rows are checked on (issue 5's list)
AHC_SHAPES = ((2, 3), (1, 4), (3, 3, 2), (4, 4), (2, 2, 2, 2), (5, 7))


def _pipeline_half(gs, n, lo, hi):
    """RS = AG = max(s/p·β_inter + α_inter, s/p·β_intra + α_intra)·(S − 1) + s/p·β_intra + α_intra."""
    p, servers = sum(gs), len(gs)
    b = n / p
    return max(hi.transfer(b), lo.transfer(b)) * (servers - 1) + lo.transfer(b)


def _ahc_allreduce(gs, n, lo, hi):
    """2(⌈log(m+d)⌉ + ⌈log G⌉)α + 2((m+d−1)/(m+d) + (G−1)C/(G·m))·nβ
    + ((m+d−1)/(m+d) + (G−1)/(G·m))·nγ, with m the smallest group, m+d the largest, G groups,
    α and γ the intra level's, β = β_intra and C = β_inter / β_intra (intra and inter both NB)."""
    m, big, G = min(gs), max(gs), len(gs)
    a, b, g = lo.alpha, lo.beta, lo.gamma
    C = hi.beta / b if b else 0.0
    return (2 * (ns(big) + ns(G)) * a + 2 * ((big - 1) / big + (G - 1) * C / (G * m)) * n * b
            + ((big - 1) / big + (G - 1) / (G * m)) * n * g)


def _rhd_nonpow2_ar(p, n, a, b, g):
    q = 2 ** flog(p)
    return (2 * flog(p) + 2) * a + (2 * (q - 1) / q + 2) * n * b + ((q - 1) / q + 1) * n * g


def _rhd_nonpow2_rd(p, n, a, b, g):
    q = 2 ** flog(p)
    return (2 * flog(p) + 1) * a + (2 * (q - 1) / q + 1) * n * b + ((q - 1) / q + 1) * n * g


def step_time(steps, p: int, block: float, a: float, b: float, g: float) -> float:
    """The α-β-γ model evaluated HCCL step by step (hccl-algorithms.md §0.3) on a list of steps,
    each a list of (sender, receiver, [blocks per message], reduces): a rank starts a step when
    it has finished its previous one; it sends its messages to its peer back to back (α + bytes·β
    each); it takes its peer's messages as they arrive, reducing each (bytes·γ) before the next;
    the step ends for it when both are done. ``block`` is the bytes of one block."""
    free = [0.0] * p
    for moves in steps:
        end: dict[int, float] = {}
        for s, d, sizes, reduces in moves:
            t, u = free[s], free[d]
            for m in sizes:
                t += a + m * block * b
                u = max(u, t) + (m * block * g if reduces else 0.0)
            end[s] = max(end.get(s, 0.0), t)
            end[d] = max(end.get(d, 0.0), u)
        for r, e in end.items():
            free[r] = e
    return max(free)


_WHY_BIDIR = ("not in HCCL's catalogue: ccxml's formula. Ring (§3) on each half of the data, the two "
               "rings in opposite directions at once; with full-duplex links they share no link "
               "direction, so the time is Ring's with n/2. At p = 2 the two rings are the same "
               "link (r+1 = r−1) and the halves share it: no row.")
#: the p of the bidirectional ring's rows (at p = 2 both rings are one link)
BIDIR_P = tuple(p for p in ALL_P if p >= 3)


def _bruck_alltoall(p, n, a, b, g):
    """Σ_k (α + s_k·n/p·β), s_k = #{i < p : bit k of i set}, k < ⌈log2 p⌉."""
    return sum(a + sum(i >> k & 1 for i in range(p)) * n / p * b for k in range(ns(p)))


def _nonuniform_rows(algorithm: str) -> list[CostFormula]:
    """NHR's and NB's rows (§7, §8 give both the same formulas). ccxml's schedules send each
    step's blocks as one message (adjacent in memory, or packed through scratch: copies are free
    in this model) and reduce it as it arrives, so they take the doc's time exactly."""
    doc = {
        "allreduce": lambda p, n, a, b, g: 2 * ns(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g,
        "reducescatter": lambda p, n, a, b, g: ns(p) * a + (p - 1) / p * n * (b + g),
        "allgather": lambda p, n, a, b, g: ns(p) * a + (p - 1) / p * n * b,
        "scatter": lambda p, n, a, b, g: ns(p) * a + (p - 1) / p * n * b,
        "broadcast": lambda p, n, a, b, g: 2 * ns(p) * a + 2 * (p - 1) / p * n * b,
    }
    return [CostFormula(algorithm, algorithm, coll, f, root=0 if coll in ("scatter", "broadcast") else None)
            for coll, f in doc.items()]


def _one_shot_plan(p: int, allreduce: bool) -> list[list[tuple]]:
    """NHR single-tree's messages step by step (root 0; one block, the whole buffer): the one-shot
    reduce (AllReduce) then the one-shot broadcast, from :mod:`ccxml.tables.nhr_tree`."""
    from ccxml.tables import nhr_tree
    steps = [[(s, d, [1], True) for s, d, _ in step] for step in nhr_tree.reduce(p)] if allreduce else []
    return steps + [[(s, d, [1], False) for s, d, _ in step] for step in nhr_tree.broadcast(p)]


_WHY_ONE_SHOT = ("HCCL publishes no one-shot formula; the doc column is the binomial tree's, ns steps "
                 "each way. A rank idle in a step goes on (HCCL has no barrier, §0.3), so for p not a "
                 "power of two a reduce's transfer overlaps the root's previous step and only its γ "
                 "stays on the critical path; the ccxml formula is step_time on the tables' messages.")


def _tree_depth(p: int) -> int:
    """The tree scripts' default pipeline depth D: 2⌈log2 p⌉, at least 2."""
    return max(2, 2 * ns(p))


def _tree_row(algorithm: str, coll: str, trees: int) -> CostFormula:
    """ccxml's own formulas for the pipelined trees (NCCL publishes none): h = ⌈log2 p⌉ + 1
    levels, D blocks per tree of n/(trees·D) bytes; a block takes one step per level and the
    pipeline adds one step per block."""
    def cost(p, n, a, b, g):
        d, h = _tree_depth(p), ns(p) + 1
        blk = n / (trees * d)
        if coll == "broadcast":
            return (d + h - 2) * (a + blk * b)
        if coll == "reduce":
            return (d + h - 2) * (a + blk * (b + g))
        return (d + 2 * h - 3) * (a + blk * (b + g))
    exact = coll == "broadcast"
    return CostFormula(
        algorithm, algorithm.replace("-", "_"), coll, cost, root=None if coll == "allreduce" else 0,
        ps=tuple(ALL_P) if trees == 1 else tuple(range(3 if exact else 4, 34)),   # p = 2: trees share a link
        why="" if exact else (
            "an estimate, not exact: a node with two children reduces both copies of a block in turn, "
            "which puts one to two γ per level on the critical path where the formula charges one "
            "(and, in the double tree for p ≤ 3, both trees share links); simulated / formula = "
            "0.85-1.06 for p = 4..33 (tests/simulator/test_simulator_formulas.py)."))


FORMULAS = [
    # ---- Ring (§3) ----------------------------------------------------------------------------
    CostFormula("ring", "ring", "allreduce", lambda p, n, a, b, g: 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g),
    CostFormula("ring", "ring", "reducescatter", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n * (b + g)),
    CostFormula("ring", "ring", "allgather", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n * b),
    CostFormula("ring", "ring", "scatter", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n * b, root=0),
    CostFormula("ring", "ring", "gather", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n * b, root=0),
    CostFormula("ring", "ring", "reduce", lambda p, n, a, b, g: (p - 1) * (a + n * b + n * g), root=0),
    CostFormula("ring", "ring", "broadcast", lambda p, n, a, b, g: (p - 1) * (a + n * b), root=0,
        ccxml=lambda p, n, a, b, g: (2 * p - 2) * (a + n / p * b),
        why="HCCL's broadcast_ring.cc pipelines p chunks over 2p-2 slots (§3, §12.6); the doc "
            "formula describes an unchunked chain. ccxml generates the template's schedule."),
    # ---- Mesh (§2) ----------------------------------------------------------------------------
    CostFormula("mesh", "mesh", "allreduce", lambda p, n, a, b, g: 2 * a + 2 * n / p * b + (p - 1) / p * n * g),
    CostFormula("mesh", "mesh", "reducescatter", lambda p, n, a, b, g: a + n / p * b + (p - 1) / p * n * g),
    CostFormula("mesh", "mesh", "allgather", lambda p, n, a, b, g: a + n / p * b),
    CostFormula("mesh", "mesh", "scatter", lambda p, n, a, b, g: a + n / p * b, root=0),
    CostFormula("mesh", "mesh", "gather", lambda p, n, a, b, g: a + n / p * b, root=0),
    CostFormula("mesh", "mesh", "broadcast", lambda p, n, a, b, g: 2 * a + 2 * n / p * b, root=0),
    CostFormula("mesh", "mesh", "reduce", lambda p, n, a, b, g: 2 * a + 2 * n / p * b + (p - 1) / p * n * g, root=0),
    CostFormula("mesh", "mesh", "alltoall", lambda p, n, a, b, g: a + n / p * b),
    # ---- RHD (§4) -----------------------------------------------------------------------------
    CostFormula("rhd", "rhd", "allreduce", lambda p, n, a, b, g: 2 * flog(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, ps=POW2),
    CostFormula("rhd", "rhd", "allreduce", _rhd_nonpow2_ar, ps=NONPOW2),
    CostFormula("rhd", "rhd", "reducescatter", lambda p, n, a, b, g: flog(p) * a + (p - 1) / p * n * (b + g), ps=POW2),
    CostFormula("rhd", "rhd", "allgather", lambda p, n, a, b, g: flog(p) * a + (p - 1) / p * n * b, ps=POW2),
    CostFormula("rhd", "rhd", "broadcast", lambda p, n, a, b, g: ns(p) * (a + n * b), root=0),
    CostFormula("rhd", "rhd", "reduce", lambda p, n, a, b, g: 2 * flog(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, ps=POW2, root=0),
    CostFormula("rhd", "rhd", "reduce", _rhd_nonpow2_rd, ps=NONPOW2, root=0),
    # ---- PairWise (§5): uniform all-to-all, n_ij = n/p -----------------------------------------
    CostFormula("pairwise", "pairwise", "alltoall", lambda p, n, a, b, g: (p - 1) * a + (p - 1) * n / p * b),
    # pairwise-exchange ReduceScatter (Thakur, Rabenseifner & Gropp 2005, §4.5; not HCCL's)
    CostFormula("pairwise", "pairwise", "reducescatter", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n * (b + g)),
    # ---- Star (§6): root-side serialisation ignored ---------------------------------------------
    CostFormula("star", "star", "broadcast", lambda p, n, a, b, g: a + n * b, root=0),
    CostFormula("star", "star", "gather", lambda p, n, a, b, g: a + n / p * b, root=0),
    # ---- NHR (§7), NB (§8): the same doc formulas --------------------------------------------
    *_nonuniform_rows("nhr"),
    *_nonuniform_rows("nb"),
    # ---- NHR single-tree (§7.2 one-shot), tree, double binary tree (NCCL trees.cc) -----------
    CostFormula("nhr:single-tree", "nhr", "allreduce",
                lambda p, n, a, b, g: 2 * ns(p) * (a + n * b) + ns(p) * n * g,
                ccxml=lambda p, n, a, b, g: step_time(_one_shot_plan(p, True), p, n, a, b, g),
                why=_WHY_ONE_SHOT),
    CostFormula("nhr:single-tree", "nhr", "broadcast", lambda p, n, a, b, g: ns(p) * (a + n * b), root=0),
    *(_tree_row(name, coll, trees) for name, trees in (("tree", 1), ("double-tree", 2))
      for coll in ("allreduce", "reduce", "broadcast")),
    # ---- Bidirectional ring (ccxml's, §3's ring twice): half the data each way ------------------
    CostFormula("bidir-ring", "bidir_ring", "allreduce", lambda p, n, a, b, g: 2 * (p - 1) * a + (p - 1) / p * n * b + (p - 1) / p * n / 2 * g, ps=BIDIR_P, why=_WHY_BIDIR),
    CostFormula("bidir-ring", "bidir_ring", "reducescatter", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n / 2 * (b + g), ps=BIDIR_P, why=_WHY_BIDIR),
    CostFormula("bidir-ring", "bidir_ring", "allgather", lambda p, n, a, b, g: (p - 1) * a + (p - 1) / p * n / 2 * b, ps=BIDIR_P, why=_WHY_BIDIR),
    # ---- Recursive doubling (Thakur, Rabenseifner & Gropp 2005, §4.1), any p ---------------------
    CostFormula("recursive-doubling", "doubling", "allgather", lambda p, n, a, b, g: ns(p) * a + ((1 << ns(p)) - 1) / p * n * b,
                why="the paper's formula for p a power of two, lg p·α + (p−1)/p·nβ; for other p ccxml "
                    "keeps ⌈lg p⌉ steps (a cut partner group serves several ranks) where MPICH adds up "
                    "to ⌊lg p⌋ steps: the ranks of a full group then receive a whole full group in the "
                    "last step, (2^⌈lg p⌉ − 1)/p·nβ in all."),
    # ---- Bruck (Bruck et al., IEEE TPDS 1997; index algorithm, radix 2) --------------------------
    CostFormula("bruck", "bruck", "alltoall", _bruck_alltoall,
                why="not in HCCL's catalogue: the paper's formula, Σ_k (α + s_k·n/p·β) with s_k the "
                    "slots whose index has bit k set (p/2 each for p a power of two); its local "
                    "rotations and packing are cpy steps, which the model does not charge."),
    # ---- Pipeline (§10): S servers × m ranks, intra full mesh ∥ inter ring ---------------------
    CostFormula("pipeline", "pipeline", "allgather", _none, ps=(), shapes=PIPELINE_SHAPES, levels=PIPELINE_LEVELS,
                hier_doc=lambda gs, n, lo, hi: _pipeline_half(gs, n, lo, hi)),
    CostFormula("pipeline", "pipeline", "reducescatter", _none, ps=(), shapes=PIPELINE_SHAPES, levels=PIPELINE_LEVELS,
                hier_doc=lambda gs, n, lo, hi: _pipeline_half(gs, n, lo, hi)),
    CostFormula("pipeline", "pipeline", "allreduce", _none, ps=(), shapes=PIPELINE_SHAPES, levels=PIPELINE_LEVELS,
                hier_doc=lambda gs, n, lo, hi: 2 * _pipeline_half(gs, n, lo, hi)),
    # ---- AHC (§9): the doc's AllReduce row (its label says ReduceScatter, §12.7) -------------
    CostFormula("ahc", "ahc", "allreduce", _none, ps=(), shapes=AHC_SHAPES, levels=AHC_LEVELS,
                hier_doc=_ahc_allreduce,
                why="no exact formula: the doc row assumes NB inside and between groups, one "
                    "message per step and phases one after the other; ccxml builds HCCL's code "
                    "defaults (NHR intra, ring/NHR inter, §9.1), and its phases, logic cards and "
                    "the two directions of an exchange overlap (§12.8). Simulated / doc = "
                    "0.68-0.89 on the issue's shapes at ~1 MiB, built for that window "
                    "(tests/test_simulator_formulas.py); at a few KiB the doc's fewer NB steps "
                    "win (ratio 1.1-1.3)."),
]


def lookup(algorithm: str, coll: str, p: int) -> CostFormula | None:
    """The formula for ``algorithm`` × ``coll`` that covers ``p`` ranks, if the document has one."""
    for f in FORMULAS:
        if f.algorithm == algorithm and f.coll == coll and (p in f.ps or f.shapes):
            return f
    return None
