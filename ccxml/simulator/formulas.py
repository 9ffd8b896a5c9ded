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
    # ---- Star (§6): root-side serialisation ignored ---------------------------------------------
    CostFormula("star", "star", "broadcast", lambda p, n, a, b, g: a + n * b, root=0),
    CostFormula("star", "star", "gather", lambda p, n, a, b, g: a + n / p * b, root=0),
    # ---- NHR (§7), NB (§8): the same doc formulas --------------------------------------------
    *_nonuniform_rows("nhr"),
    *_nonuniform_rows("nb"),
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
