"""Fit a packing of trees to the runtime's limits before it is laid out.

A layout of trees (:mod:`ccxml.algorithms.forest`, :mod:`ccxml.algorithms.forest_rooted`) sends
each tree's chunks down (or up) its edges, chunk i on channel ``phase·lanes + i % lanes``, with
one-way thread blocks: one TB per (rank, peer, direction, channel) that carries anything. So the
packing alone, with the chunk count C, the lanes and the phases, tells what every rank will need:

* **peers**: the ranks it sends to or receives from;
* **steps** per TB: the chunks crossing that (peer, direction, channel);
* **thread blocks**: one per such TB, times the pieces a TB longer than ``max_steps_per_tb`` is
  cut into (:mod:`ccxml.passes.splitting` puts piece j on channel ``chan + j·width``);
* **channels**: width (lanes × phases) × the most pieces;
* **XML nodes**: 1 + ranks + TBs + steps (the runtime's per-rank node array).

:func:`demand` counts them; :meth:`Demand.broken` names the first limit of a
:class:`~ccxml.vocab.wire.Profile` they break; :func:`fit_trees` finds the most chunks (≤ C, ≥
one per tree) whose layout fits; :func:`choose_k` picks the smallest k whose LP rate is within
``tol`` of the unrestricted one and whose trees fit, or raises one plain TopologyError naming the
limit when no k within ``tol`` fits. The counts are upper bounds of what the compiler emits (it
may fuse or merge steps, never adds TBs beyond these).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ccxml.vocab.errors import TopologyError
from ccxml.vocab.wire import PROFILES, Profile

#: the runtimes' limits at once: a schedule within them loads under every --target
EVERY = replace(PROFILES["exec"], name="every runtime", description="the tightest limit of each runtime",
                step_types=frozenset.intersection(*(q.step_types for q in PROFILES.values())),
                **{f: min(getattr(q, f) for q in PROFILES.values())
                   for f in ("max_steps_per_tb", "max_tbs", "max_dep_tb", "max_chan", "max_cnt", "max_nodes",
                             "max_tbs_per_chan_dir")})


def limits(target: str) -> Profile:
    """The profile a forest is fitted to: a runtime of :data:`~ccxml.vocab.wire.PROFILES`, or
    ``all`` (:data:`EVERY`); TopologyError otherwise."""
    if target == "all":
        return EVERY
    if target not in PROFILES:
        raise TopologyError(f"forest: unknown runtime {target!r} for the limits; choose all, "
                            f"{', '.join(PROFILES)}")
    return PROFILES[target]


def split_chunks(rates: list[float], chunks: int) -> list[int]:
    """``chunks`` shared over trees in proportion to ``rates`` by largest remainders."""
    total = sum(rates)
    if not rates or total <= 0:
        return [0] * len(rates)
    exact = [r / total * chunks for r in rates]
    counts = [int(x) for x in exact]
    for i in sorted(range(len(rates)), key=lambda i: (counts[i] - exact[i], i))[:chunks - sum(counts)]:
        counts[i] += 1
    return counts


@dataclass(frozen=True)
class Demand:
    """What a layout needs, per rank at its worst: ``peers``, ``tbs``, ``steps_per_tb`` (longest
    TB before splitting), ``tbs_per_chan_dir``, ``nodes``; ``channels`` in all; ``rank``: the
    rank of the worst TB count; ``chunks``: the C it was counted for."""
    peers: int
    tbs: int
    steps_per_tb: int
    tbs_per_chan_dir: int
    channels: int
    nodes: int
    rank: int
    chunks: int

    def broken(self, prof: Profile, nodes: bool = True) -> str:
        """The first limit of ``prof`` this demand breaks, in words ("" if none); ``nodes``:
        the XML nodes too."""
        who = f"the {prof.name}" if prof.name == "every runtime" else f"the {prof.name} runtime"
        if self.channels > prof.max_chan + 1:
            return (f"needs {self.channels} channels (longest thread block {self.steps_per_tb} steps, "
                    f"cut at {prof.max_steps_per_tb}); {who} allows {prof.max_chan + 1} (max_chan)")
        if self.tbs > prof.max_tbs:
            return (f"rank {self.rank} needs {self.tbs} thread blocks for its peers ({self.peers} at most "
                    f"per rank); {who} allows {prof.max_tbs} (max_tbs)")
        if self.tbs_per_chan_dir > prof.max_tbs_per_chan_dir:
            return (f"a rank has {self.tbs_per_chan_dir} peers on one channel and direction; {who} "
                    f"allows {prof.max_tbs_per_chan_dir} (max_tbs_per_chan_dir)")
        if nodes and self.nodes > prof.max_nodes:
            return (f"a rank needs {self.nodes} XML nodes; {who} keeps {prof.max_nodes} per rank "
                    f"(max_nodes)")
        return ""


def demand(p: int, trees, chunks: int, lanes: int, phases, prof: Profile, extra: int = 0) -> Demand:
    """Count what laying ``trees`` (objects with ``root``, ``parent``, ``rate``) out in ``chunks``
    per root's buffer needs (module docstring). ``phases``: per phase, "down" (parent → child) or
    "up" (child → parent); phase j takes channels j·lanes … j·lanes + lanes − 1. ``extra``: local
    steps per rank (copies) to add to its XML nodes."""
    by_root: dict[int, list] = {}
    for t in trees:
        by_root.setdefault(t.root, []).append(t)
    steps: dict[tuple[int, int, int, int], int] = {}      # (rank, peer, send 1 / recv 0, chan)
    for mine in by_root.values():
        for t, c in zip(mine, split_chunks([t.rate for t in mine], chunks)):
            if not c:
                continue
            per_lane = [len(range(lane, c, lanes)) for lane in range(lanes)]
            for v, u in enumerate(t.parent):
                if u < 0:
                    continue
                for j, way in enumerate(phases):
                    a, b = (u, v) if way == "down" else (v, u)
                    for lane, n in enumerate(per_lane):
                        if n:
                            ch = j * lanes + lane
                            steps[a, b, 1, ch] = steps.get((a, b, 1, ch), 0) + n
                            steps[b, a, 0, ch] = steps.get((b, a, 0, ch), 0) + n
    cap = prof.max_steps_per_tb
    peers = [set() for _ in range(p)]
    tbs = [0] * p
    total = [extra] * p
    per_cd: dict[tuple[int, int, int], int] = {}
    longest = 0
    for (a, b, way, ch), n in steps.items():
        peers[a].add(b)
        pieces = -(-n // cap)
        tbs[a] += pieces
        total[a] += n
        longest = max(longest, n)
        per_cd[a, way, ch] = per_cd.get((a, way, ch), 0) + 1
    worst = max(range(p), key=lambda x: (tbs[x], -x))
    width = lanes * len(phases)
    return Demand(max(len(s) for s in peers), tbs[worst], longest, max(per_cd.values(), default=0),
                  width * max(1, -(-longest // cap)), max(1 + p + tbs[x] + total[x] for x in range(p)),
                  worst, chunks)


@dataclass(frozen=True)
class Fit:
    """The runtime check of one packing: ``demand`` at the chunk count chosen, ``why`` the limit
    broken ("" when it fits), ``profile`` the limits."""
    demand: Demand
    why: str
    profile: Profile

    @property
    def ok(self) -> bool:
        return not self.why

    @property
    def chunks(self) -> int:
        return self.demand.chunks


def fit_trees(p: int, trees, chunks: int, lanes: int, phases, prof: Profile, extra: int = 0,
              shrink: bool = False) -> Fit:
    """The layout of ``trees`` in ``chunks`` against ``prof``; the Fit names the limit broken
    when it cannot fit. ``shrink`` (a layout that uses the Fit's chunk count): the most chunks ≤
    ``chunks`` (at least one per tree of the root with the most) whose every count fits. Else (a
    layout that picks its chunks ≤ ``chunks`` itself): thread blocks, their peers per channel and
    the channels must fit at ``chunks`` (fewer chunks may leave lanes empty, but the layout may use
    them all), and the XML nodes at some count ≤ ``chunks``, the most such."""
    per_root: dict[int, int] = {}
    for t in trees:
        per_root[t.root] = per_root.get(t.root, 0) + 1
    least = max(per_root.values(), default=1)
    top = max(chunks, least)
    d = demand(p, trees, top, lanes, phases, prof, extra)
    why = d.broken(prof, nodes=shrink)
    if why and not shrink or not d.broken(prof):
        return Fit(d, why, prof)
    lo_d = demand(p, trees, least, lanes, phases, prof, extra)
    if lo_d.broken(prof):
        return Fit(lo_d, lo_d.broken(prof), prof)
    lo, hi = least, top                             # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        dm = demand(p, trees, mid, lanes, phases, prof, extra)
        if dm.broken(prof):
            hi = mid
        else:
            lo, lo_d = mid, dm
    return Fit(lo_d, "", prof)


def choose_k(prob, cands, loads, rankings, best: float, tol: float, max_k: int, fits, make_trees, lp):
    """(k, rate, [(candidate, rate)], Fit or None): the smallest k whose LP rate over each root's
    k heaviest trees is within ``tol`` of ``best`` and whose trees (``make_trees``) pass ``fits``
    (None: no limits). ``rankings``: alternative rankings, each per root a list of candidate
    indices heaviest first; per k the one with the best rate is taken. TopologyError naming the
    limit when no k within ``tol`` fits. ``lp``: the rate LP (ccxml.synthesis.forest._lp)."""
    _lp = lp
    failed = None
    most = max(len(o) for orders in rankings for o in orders)
    for k in range(1, max_k + 1):
        x, keep = -1.0, []
        for orders in rankings:
            sel = sorted({i for order in orders for i in order[:k]})
            if sel != keep:
                xs, _, _ = _lp(prob, [cands[i] for i in sel], [loads[i] for i in sel])
                if xs > x * (1 + 1e-9):
                    x, keep = xs, sel
        if x < (1 - tol) * best and k < max_k and k < most:
            continue
        sub_c, sub_l = [cands[i] for i in keep], [loads[i] for i in keep]
        _, w, _ = _lp(prob, sub_c, sub_l, at_least=x * (1 - 1e-6))
        chosen = [(cands[i], wi) for i, wi in zip(keep, w) if wi > 1e-9 * x]
        if fits is None:
            return k, x, chosen, None
        fit = fits(make_trees(chosen))
        if fit.ok:
            return k, x, chosen, fit
        failed = failed or (k, fit)
        if k >= most:
            break
    k, fit = failed
    raise TopologyError(f"forest: this topology cannot be served within {fit.profile.name}'s limits: at k = "
                        f"{k} tree{'s' if k > 1 else ''} per root, {fit.why} (fewer --opt lanes, or "
                        f"another --target / --opt limits=)")


__all__ = ["EVERY", "Demand", "Fit", "choose_k", "demand", "fit_trees", "limits", "split_chunks"]
