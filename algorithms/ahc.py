"""AHC — Asymmetric Hierarchical Concatenate (hccl-algorithms.md §9): groups of any sizes.

Groups G_0 … G_{G−1} are the topology's groups (contiguous rank ranges, ``--groups 2,3``),
first split as HCCL's ``AHCSubGroupInit`` does (with mn the smallest size and g the gcd of the
sizes: if g = mn or ⌊max/mn⌋ > 1, a group of size m is cut into ⌊m/mn⌋ pieces, the last taking
the rest; {1,4} → {1,1,1,1,1}). Equal sizes make this "AHC-broke"; the LCM rule below then
reduces to it exactly.

**Logic cards** (§9.2): L = lcm of the sizes; group i cuts the segment axis [0, L) into m_i equal
ranges, one per member. The boundaries of all groups cut [0, L) into cards [o_k, o_{k+1}); card k's
members are, per group, the rank whose range contains it. Every rank runs its cards in the
order of e_k = o_k − (start of the range of the card's member in the first smallest group),
ties by k; cards with disjoint members run concurrently.

**Data units**: the axis is laid on U units, U = L where that fits (:data:`MOST_UNITS` chunks per
instance); where L is large ({7, 9}: 63, {16, 17}: 272) one-chunk messages would outgrow the
runtimes' steps per thread block, so U is smaller (:func:`ccxml.tables.ahc.axis`, near-even:
{16, 17} AllGather U = 24) and axis position x is unit ⌊x·U/L⌋ (:func:`~ccxml.tables.ahc.scale`),
so that a group's ranges differ by at most one unit. Below, "units" are the L-axis scaled so.

* AllReduce (§9.3): the buffer is L·G units (segment s = units [sG, (s+1)G)). (1) intra-group
  reduce-scatter, block t of group i = segments [t·L/m_i, (t+1)·L/m_i); (2) per card, an
  all-reduce among its members on its segments cut into G sub-blocks; (3) intra-group all-gather.
* ReduceScatter (§9.4): every rank's output block is L units; region R_i = the blocks of group
  i. (1) in every group g, G reduce-scatters, one per region k, block t = region-k units
  [t·(L/m_g)·m_k, (t+1)·(L/m_g)·m_k); (2) per card a reduce-scatter among its members, block i =
  region-i units [o_k·m_i, o_{k+1}·m_i), landing in the owner's output.
* AllGather (§9.4): local copy, (1) per card an all-gather on the same blocks, (2) per group and
  region an all-gather on the blocks of the reduce-scatter's phase 1.

Inner algorithms (``--intra`` / ``--inter``, or the builders' ``intra`` / ``inter``): ``intra`` ∈
{nhr, nb, ring, mesh} (default nhr as HCCL's code; the cost doc assumes nb), ``inter`` ∈ {ring,
nhr, nb, rhd}, default ring when G ≤ 3 else nhr (``AHC_LEVEL0_GROUP_SIZE_THRESHOLD``).

Cost (HCCL doc, intra and inter NB, m = smallest group, m+d = largest, C = β_inter/β_intra):
AR 2(⌈log(m+d)⌉ + ⌈log G⌉)α + 2((m+d−1)/(m+d) + (G−1)C/(G·m))·nβ + ((m+d−1)/(m+d) + (G−1)/(G·m))·nγ.
Steps with the defaults: AR ns(m_g) + 2(G−1)·(cards of the rank) + ns(m_g).
"""
from __future__ import annotations

from ccxml.frontend import levels as lv
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.lanes import Lanes
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables.ahc import Card, axis, logic_cards, scale, split_groups
from ccxml.tables.plan import Space
from ccxml.tables.schemes import INTER
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Buffer, Coll

__all__ = ["Card", "INTER", "INTRA", "allgather", "allreduce", "groups_of", "logic_cards",
           "reducescatter", "split_groups"]

#: intra-group choices: NHR (HCCL's code) and NB (the cost doc, §9.5), or a level-0 algorithm of
#: §11; inter-group: a level-1 algorithm of §11 (§9.1 names ring and NHR)
INTRA = ("nhr", "nb", "ring", "mesh")
#: the most data units (chunks) per instance: the segment axis is laid on fewer than L units
#: (:func:`ccxml.tables.ahc.axis`) where L units would exceed it, because with one-chunk messages
#: ({7, 9}: L = 63, {16, 17}: L = 272) the steps per thread block then outgrow the runtimes'
#: limits (exec 64 per TB, 32 channels; RCCL 64 TBs). The largest that fit every target on the
#: shapes of tests/algorithms/test_alg_ahc.py.
MOST_UNITS = {Coll.ALLREDUCE: 320, Coll.REDUCESCATTER: 800, Coll.ALLGATHER: 800}


def groups_of(p: int, topology) -> list[list[int]]:
    """The (split) groups as lists of ranks."""
    if topology is None:
        raise AlgorithmError("ahc needs a topology: give --groups 2,3 or --servers S "
                             "--ranks-per-server M (or --topology FILE)")
    try:
        topology.check_ranks(p)
    except ValueError as e:
        raise AlgorithmError(str(e)) from None
    sizes = split_groups([len(g) for g in topology.group_ranks(p)])
    out, r = [], 0
    for m in sizes:
        out.append(list(range(r, r + m)))
        r += m
    return out


def _setup(coll: Coll, p: int, topology, options: Options, intra: str, inter: str | None,
           units) -> tuple[Program, list[list[int]], str, str, int, int, list[Card]]:
    """(Program, groups, intra, inter, L, U, cards in execution order) for ``coll``, with
    ``units(U, G)`` units per instance (U: :func:`~ccxml.tables.ahc.axis`) and the topology
    recorded; inter by default ring for up to 3 groups, else nhr (HCCL's
    ``AHC_LEVEL0_GROUP_SIZE_THRESHOLD``)."""
    groups = groups_of(p, topology)
    inter = inter or ("ring" if len(groups) <= 3 else "nhr")
    big_l, cards = logic_cards(groups)
    u = axis([len(g) for g in groups], MOST_UNITS[coll] // units(1, len(groups)))
    prog = program("ahc", coll, p, options.channels * units(u, len(groups)), options,
                   extra_attrs=lv.topology_attrs(topology))
    return prog, groups, intra, inter, big_l, u, cards


@algorithm("ahc", Coll.ALLREDUCE, intra=INTRA, inter=INTER)
def allreduce(p: int, *, topology=None, options: Options = Options(), intra: str = "nhr",
              inter: str | None = None) -> Program:
    prog, groups, intra, inter, big_l, u, cards = _setup(Coll.ALLREDUCE, p, topology, options, intra,
                                                         inter, lambda u, big_g: u * big_g)
    big_g = len(groups)
    units = u * big_g
    k_ = options.channels
    for c in range(k_):
        inp = Space(Buffer.INPUT, units, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, units, instances=k_, instance=c)
        lanes = Lanes(k_, c)

        def intra_block(g, space):
            w = big_l // len(g)
            return lambda r, t, c: space(scale(t * w, u, big_l) * big_g, scale((t + 1) * w, u, big_l) * big_g)

        for g in groups:
            lv.reduce_scatter(prog, g, intra, lanes, src=intra_block(g, inp), acc=intra_block(g, out))
        for card in cards:
            lo = scale(card.lo, u, big_l)
            n = scale(card.hi, u, big_l) - lo
            if n == 0:              # a card narrower than a unit (U < L) carries no data
                continue
            loc = lambda r, i, c, lo=lo, n=n: out(lo * big_g + i * n, lo * big_g + (i + 1) * n)  # noqa: E731
            lv.allreduce(prog, card.members, inter, lanes, src=loc, loc=loc)
        for g in groups:
            lv.all_gather(prog, g, intra, lanes, loc=intra_block(g, out))
    return prog


@algorithm("ahc", Coll.REDUCESCATTER, intra=INTRA, inter=INTER)
def reducescatter(p: int, *, topology=None, options: Options = Options(), intra: str = "nhr",
                  inter: str | None = None) -> Program:
    prog, groups, intra, inter, big_l, u, cards = _setup(Coll.REDUCESCATTER, p, topology, options,
                                                         intra, inter, lambda u, big_g: p * u)
    k_ = options.channels
    block, card_block, own_block = _region_blocks(groups, big_l, u)
    for c in range(k_):
        inp = Space(Buffer.INPUT, p * u, block=u, instances=k_, instance=c)
        scr = Space(Buffer.SCRATCH, p * u, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, u, instances=k_, instance=c)
        lanes = Lanes(k_, c)
        for k in range(len(groups)):
            for g in groups:
                at = lambda space, g=g, k=k: (lambda r, t, c: space(*block(g, k, t)))  # noqa: E731
                lv.reduce_scatter(prog, g, intra, lanes, src=at(inp), acc=at(scr))
        for card in cards:
            own = lambda r, i, c, card=card: out(*own_block(r, card, i))  # noqa: E731
            held = lambda r, i, c, card=card: scr(*card_block(card, i))  # noqa: E731
            lv.reduce_scatter(prog, card.members, inter, lanes, src=held, acc=held, final=own)
    return prog


@algorithm("ahc", Coll.ALLGATHER, intra=INTRA, inter=INTER)
def allgather(p: int, *, topology=None, options: Options = Options(), intra: str = "nhr",
              inter: str | None = None) -> Program:
    prog, groups, intra, inter, big_l, u, cards = _setup(Coll.ALLGATHER, p, topology, options,
                                                         intra, inter, lambda u, big_g: p * u)
    k_ = options.channels
    block, card_block, own_block = _region_blocks(groups, big_l, u)
    for c in range(k_):
        inp = Space(Buffer.INPUT, u, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, p * u, block=u, instances=k_, instance=c)
        lanes = Lanes(k_, c)
        for r in range(p):
            lv.copy(prog, r, inp(0, u), r, out(r * u, (r + 1) * u), c)
        for card in cards:
            own = lambda r, i, c, card=card: inp(*own_block(r, card, i))  # noqa: E731
            lv.all_gather(prog, card.members, inter, lanes, first=own,
                          loc=lambda r, i, c, card=card: out(*card_block(card, i)))
        for k in range(len(groups)):
            for g in groups:
                lv.all_gather(prog, g, intra, lanes, loc=lambda r, t, c, g=g, k=k: out(*block(g, k, t)))
    return prog


def _region_blocks(groups, big_l, u):
    """Phase-1 blocks of RS/AG: group g's block t of region k, and card blocks, as unit ranges.
    Region k is m_k rank blocks of U units; axis position x ∈ [0, L] is its unit
    ``scale(x·m_k, U, L)`` (x·m_k when U = L)."""
    offs = [0]
    for g in groups:
        offs.append(offs[-1] + len(g))

    def span(k: int, a: int, b: int) -> tuple[int, int]:
        """Axis range [a, b) in region k."""
        m = len(groups[k])
        return offs[k] * u + scale(a * m, u, big_l), offs[k] * u + scale(b * m, u, big_l)

    def block(g: list[int], k: int, t: int) -> tuple[int, int]:
        w = big_l // len(g)
        return span(k, t * w, (t + 1) * w)

    def card_block(card: Card, i: int) -> tuple[int, int]:
        return span(i, card.lo, card.hi)

    def own_block(rank: int, card: Card, i: int) -> tuple[int, int]:
        """Card block i as offsets in ``rank``'s own block (its RS output, AG input)."""
        lo, hi = card_block(card, i)
        return lo - rank * u, hi - rank * u

    return block, card_block, own_block


COLLECTIVES = registry.get("ahc").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("ahc")
