"""Level-synchronous replay: prove a clean schedule correct in bulk, or hand it back.

:func:`prove` runs a placed :class:`~ccxml.interpreter.program.Program` as a dependency graph
instead of TB by TB. Nodes are instructions; a node waits for its TB predecessor, the send its
message comes from (the k-th receive on a link gets the k-th send), the instructions releasing
its dependencies (:func:`~ccxml.interpreter.program.dep_sources`) and, with bounded links, the
receive that frees room for it (the m-th send on a link needs the (m - cap)-th receive). Nodes
are grouped by level (longest path from a source, computed with numpy), and each level's data
actions run, kind by kind, as array operations on the simple form of the exact replay's
symbolic values (:class:`~ccxml.interpreter.values.Values`), split in two: the chunk index
(numpy ints) and the rank mask (Python ints in an object array; a reduction is one OR, a
double count a non-zero AND).

Guarantee: when :func:`prove` returns an :class:`~ccxml.interpreter.execute.ExecResult`, the
exact engine (:func:`~ccxml.interpreter.execute.run` with the bounded links, then
:func:`~ccxml.interpreter.execute.replay`) completes with no finding and the same final memory
and leftover messages. This holds because the prover only answers when

* the graph with capacity edges is acyclic and every wait has a provider (a system of
  deterministic TBs with monotone flags and FIFO links is confluent, so the bounded run
  completes), every step takes at most one primitive call and moves at most one chunk, no
  ``re`` chain is fused, every link has one sending and one receiving TB, nothing is out of
  bounds;
* no read sees unwritten memory, every reduction combines values of one chunk index with
  disjoint contributions (no double count, no mixed value);
* every pair of accesses the exact race check compares (per shared location in a topological
  order: each access against the last write of another TB, each write against the latest reads
  of other TBs since) is ordered by happens-before (program order, dependency and message
  edges, not capacity): by vector clocks of program order and dependencies (one GPU's TBs),
  else by a bounded backward search over all edges. Without races the final memory is the same
  in every topological order, so level order gives the exact engine's memory.

Otherwise it returns None and the caller runs the exact engine, which also words every finding.

Exact twin: :func:`~ccxml.interpreter.execute.run` + :func:`~ccxml.interpreter.execute.replay`
(tests/test_twins.py).
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ccxml.interpreter.execute import ExecResult, input_ranges
from ccxml.interpreter.program import (
    IS_READ,
    IS_WRITE,
    K_CPY,
    K_NONE,
    K_RCS,
    K_RE,
    K_RECV,
    K_RRC,
    K_RRS,
    K_SEND,
    Program,
    dep_sources,
)
from ccxml.interpreter.values import Values

#: nodes a race proof may visit, per instruction of the program (then the exact engine runs)
SEARCH_BUDGET_PER_NODE = 0.5
#: levels allowed per instruction: beyond this the graph is a few long chains, where the exact
#: engine's TB-by-TB loop is the faster one
MAX_LEVEL_FRACTION = 0.25

#: most dependency waiters one instruction may release for the level computation to take it
MAX_DEP_FANOUT = 8

_IS_READ = np.array(IS_READ, dtype=bool)
_IS_WRITE = np.array(IS_WRITE, dtype=bool)


class _Graph:
    """The form-independent part: levels and message sources (memoised on the Program)."""

    __slots__ = ("order", "bounds", "level", "src_of", "leftover", "dsrc")

    def __init__(self, order, bounds, level, src_of, leftover, dsrc):
        self.order, self.bounds, self.level = order, bounds, level
        self.src_of, self.leftover, self.dsrc = src_of, leftover, dsrc


def _graph(prog: Program) -> _Graph | None:
    """The levels of ``prog`` with bounded links (None: not provable this way), memoised."""
    memo = prog.control.get("levels", False)
    if memo is not False:
        return memo
    g = _build_graph(prog)
    prog.control["levels"] = g
    return g


def _small_int(n: int):
    """The smallest unsigned integer type holding 0..n-1."""
    return np.uint16 if n <= 1 << 16 else np.uint32 if n <= 1 << 32 else np.uint64


def _build_graph(prog: Program) -> _Graph | None:
    """The happens-before graph of ``prog`` (program order, messages, link room, dependencies)
    cut into levels; None when the schedule is not of the shape this proof takes."""
    N = prog.ninstr
    A = prog.arrays
    if N == 0 or prog.fused or (A["calls_max"] if A is not None else max(prog.calls)) > 1:
        return None
    for ln in prog.links:
        if len(ln.senders) > 1 or len(ln.receivers) > 1:
            return None
    tbs = prog.tbs
    ntb = len(tbs)
    starts = np.fromiter((tb.start for tb in tbs), np.int64, ntb)
    ends = np.fromiter((tb.end for tb in tbs), np.int64, ntb)
    lens = ends - starts
    if lens.max() > MAX_LEVEL_FRACTION * N + 64:
        return None
    tb_of = A["tb_of"] if A is not None else np.repeat(np.arange(ntb, dtype=np.int64), lens)
    op = A["op"] if A is not None else np.array(prog.op, dtype=np.int8)

    # ---- messages: the k-th receive on a link gets the k-th send -----------------------------
    found = _messages(prog, A, op, tb_of)
    if found is None:
        return None
    snd, rcv, matched, src_of, cap_pred, cap_succ_of, cs, cr = found

    # ---- dependencies -------------------------------------------------------------------------
    if A is not None:
        du, dv = A["dep_u"].tolist(), A["dep_v"].tolist()
        dsrc = {}
        for x, w in zip(du, dv):
            dsrc[w] = dsrc.get(w, ()) + (x,)
    else:
        dsrc = dep_sources(prog) if any(d is not None for d in prog.deps) else {}
        du, dv = [], []
        for w, srcs in dsrc.items():
            for x in srcs:
                if x < 0:
                    return None
                du.append(x)
                dv.append(w)

    # ---- predecessor counts and successors -------------------------------------------------------
    indeg = np.ones(N, np.int64)
    indeg[starts[lens > 0]] = 0
    indeg[rcv] += 1
    np.add.at(indeg, cap_succ_of, 1)
    # successors per node, one column each: next in the TB, the receive of its message, the send
    # it makes room for, then its dependency waiters (as many columns as the most any node has)
    dep_deg = 0
    if du:
        du_a = np.array(du, np.int64)
        dv_a = np.array(dv, np.int64)
        np.add.at(indeg, dv_a, 1)
        o = np.argsort(du_a, kind="stable")
        du_a, dv_a = du_a[o], dv_a[o]
        first = np.searchsorted(du_a, du_a, "left")
        rank = np.arange(len(du_a)) - first
        dep_deg = int(rank.max()) + 1
        if dep_deg > MAX_DEP_FANOUT:
            return None
    # "no successor" points at a sink node N whose count never reaches 0 (no filtering)
    succ = np.full((N, 3 + dep_deg), N, np.int64)
    succ[:-1, 0] = np.arange(1, N, dtype=np.int64)
    succ[ends[lens > 0] - 1, 0] = N
    succ[matched, 1] = rcv
    succ[cap_pred, 2] = cap_succ_of
    if dep_deg:
        succ[du_a, 3 + rank] = dv_a
    indeg = np.append(indeg, 1 << 62)

    fronts = _levels(succ, indeg, N)
    if fronts is None:
        return None                      # a cycle, or a wait nothing provides: not complete
    order = np.concatenate(fronts)
    sizes = [f.size for f in fronts]
    bounds = np.cumsum([0] + sizes)
    level = np.empty(N, np.int64)
    level[order] = np.repeat(np.arange(len(fronts), dtype=np.int64), sizes)
    leftover = [(int(k), int(n)) for k, n in enumerate((cs - cr).tolist()) if n > 0]
    return _Graph(order, bounds, level, src_of, leftover, dsrc)


def _messages(prog: Program, A: dict | None, op, tb_of):
    """Message matching on every link, the k-th receive getting the k-th send: (sends, receives,
    the send each receive gets, src_of per instruction, receive freeing room -> the send it lets
    go with links of ``prog.cap`` calls, sends and receives per link), or None when a receive has
    no send or a send never gets room."""
    tbs = prog.tbs
    ntb, nlinks = len(tbs), len(prog.links)
    out_link = np.fromiter((tb.out_link for tb in tbs), np.int64, ntb)
    in_link = np.fromiter((tb.in_link for tb in tbs), np.int64, ntb)
    if A is not None and A["calls_max"] == 1:
        # every send/receive step is one call: the table's link order is the message order
        snd, slink, rcv, rlink = A["links_sorted"]
    else:
        snd = np.flatnonzero(op & 1)
        rcv = np.flatnonzero(op & 2)
        slink = out_link[tb_of[snd]]
        rlink = in_link[tb_of[rcv]]
        if (slink < 0).any() or (rlink < 0).any():
            return None
        small = _small_int(nlinks)           # stable argsort of 16-bit keys is a radix sort
        ps = np.argsort(slink.astype(small), kind="stable")
        pr = np.argsort(rlink.astype(small), kind="stable")
        snd, slink = snd[ps], slink[ps]
        rcv, rlink = rcv[pr], rlink[pr]
    cs = np.bincount(slink, minlength=nlinks)
    cr = np.bincount(rlink, minlength=nlinks)
    cap = prog.cap
    if (cr > cs).any() or (cs > cr + cap).any():
        return None                      # a receive without a send, or a send that never has room
    s_start = np.cumsum(cs) - cs
    r_start = np.cumsum(cr) - cr
    r_rank = np.arange(len(rcv)) - r_start[rlink]
    matched = snd[s_start[rlink] + r_rank]
    src_of = np.full(prog.ninstr, -1, np.int64)
    src_of[rcv] = matched
    s_rank = np.arange(len(snd)) - s_start[slink]
    need = s_rank >= cap
    cap_pred = rcv[r_start[slink[need]] + s_rank[need] - cap]     # receive freeing room
    cap_succ_of = snd[need]
    return snd, rcv, matched, src_of, cap_pred, cap_succ_of, cs, cr


def _levels(succ, indeg, N: int) -> list | None:
    """Kahn's algorithm a level at a time on the successor table: the fronts of instructions
    whose predecessors all came before (None: some never run, or too many levels)."""
    frontier = np.flatnonzero(indeg == 0)
    fronts = []
    done = 0
    max_levels = MAX_LEVEL_FRACTION * N + 64
    while frontier.size:
        fronts.append(frontier)
        done += frontier.size
        if len(fronts) > max_levels:
            return None
        cand = succ.take(frontier, 0).ravel()    # take: a row gather several times faster
        np.subtract.at(indeg, cand, 1)
        frontier = cand[indeg[cand] == 0]
        if frontier.size > 1:
            frontier.sort()
            dup = frontier[1:] == frontier[:-1]
            if dup.any():
                frontier = frontier[np.concatenate(([True], ~dup))]
    if done != N:
        return None
    return fronts


def prove(prog: Program) -> ExecResult | None:
    """Replay the placed call form of ``prog`` by levels; None unless it is clean (see module).

    The result's ``memory`` is None: the final memory is held as ``index`` (chunk index per
    location, -1 never written) and ``masks`` (rank mask per location) — the simple form of
    :class:`~ccxml.interpreter.values.Values` split in two; :func:`memory_list` joins them.
    """
    gr = _graph(prog)
    if gr is None:
        return None
    A = prog.arrays
    if A is not None:
        dk, cnt, src, dst = A["dkind"], A["cnt"], A["src_loc"], A["dst_loc"]
    else:
        dk = np.array(prog.dkind, dtype=np.int64)
        cnt = np.array(prog.cnt, dtype=np.int64)
        src = np.array(prog.src_loc, dtype=np.int64)
        dst = np.array(prog.dst_loc, dtype=np.int64)
    if A is None or not A.get("in_bounds"):
        moving = dk != K_NONE
        if (cnt[moving] != 1).any():
            return None
        if ((src < 0) & _IS_READ[dk] & moving).any() or ((dst < 0) & _IS_WRITE[dk] & moving).any():
            return None
    if prog.ntracked and not _races_ruled_out(prog, gr):
        return None
    V = Values(prog)
    index = np.full(prog.nloc, -1, np.int64)
    masks = np.empty(prog.nloc, dtype=object)
    pos = prog.gpu_pos
    for r, a, n_in in input_ranges(prog):
        index[a:a + n_in] = np.arange(n_in)
        masks[a:a + n_in] = 1 << pos[r]
    if not _replay_levels(prog, gr, dk, src, dst, index, masks):
        return None
    res = ExecResult(completed=True, cap=prog.cap, memory=None, values=V,
                     flag_bits=(V.UNINIT, V.DUP))
    res.index, res.masks = index, masks
    res.leftover = list(gr.leftover)
    return res


def memory_list(res: ExecResult) -> list:
    """The flat symbolic memory of a :func:`prove` result as the exact replay holds it."""
    SH = res.values.SH
    mem: list = [None] * len(res.index)
    written = np.flatnonzero(res.index >= 0)
    for loc, j, m in zip(written.tolist(), res.index[written].tolist(), res.masks[written].tolist()):
        mem[loc] = (j << SH) | m
    return mem


def _replay_levels(prog, gr, dk, src, dst, index, masks) -> bool:
    """Data actions level by level, kind by kind; False at the first thing that is not clean.

    ``index``/``masks`` (numpy arrays over locations) receive the final memory; message
    values are kept per sending instruction. All per-node work is numpy indexing, and
    object-array ufuncs for the rank masks.
    """
    order, level = gr.order, gr.level
    key = level[order] * 16 + dk[order]
    perm = np.argsort(key.astype(_small_int(int(key.max()) + 1 if len(key) else 1)), kind="stable")
    G = order[perm]
    keys = key[perm]
    cut = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = [0] + cut.tolist()
    stops = cut.tolist() + [len(G)]
    kinds = (keys[starts] & 15).tolist() if len(G) else []
    SRC = src[G]
    DST = dst[G]
    FROM = gr.src_of[G]
    N = prog.ninstr
    msg_j = np.full(N, -1, np.int64)
    msg_m = np.empty(N, dtype=object)
    band, bor = np.bitwise_and, np.bitwise_or
    for a, b, kd in zip(starts, stops, kinds):
        if kd == K_NONE:
            continue
        if kd == K_SEND or kd == K_CPY:
            s = SRC[a:b]
            j = index[s]
            if j.min() < 0:
                return False
            if kd == K_SEND:
                g = G[a:b]
                msg_j[g] = j
                msg_m[g] = masks[s]
            else:
                d = DST[a:b]
                index[d] = j
                masks[d] = masks[s]
        elif kd == K_RECV or kd == K_RCS:
            f = FROM[a:b]
            d = DST[a:b]
            j = msg_j[f]
            m = msg_m[f]
            index[d] = j
            masks[d] = m
            if kd == K_RCS:
                g = G[a:b]
                msg_j[g] = j
                msg_m[g] = m
        else:
            s = SRC[a:b]
            jy = index[s]
            if kd == K_RE:
                d = DST[a:b]
                jx = index[d]
                mx = masks[d]
            else:
                f = FROM[a:b]
                jx = msg_j[f]
                mx = msg_m[f]
            if jy.min() < 0 or (jx != jy).any():
                return False
            my = masks[s]
            if band(mx, my).any():
                return False                   # a contribution reduced twice
            m = bor(mx, my)
            if kd != K_RRS:
                d = DST[a:b]
                index[d] = jx
                masks[d] = m
            if kd != K_RRC and kd != K_RE:
                g = G[a:b]
                msg_j[g] = jx
                msg_m[g] = m
    return True


def _races_ruled_out(prog: Program, gr: _Graph) -> bool:
    """True when every pair of accesses the exact race check compares is ordered (see module)."""
    level = gr.level
    TR = prog.tracked
    tb_of = prog.arrays["tb_of"] if prog.arrays is not None else np.asarray(prog.tb_of)
    # TB and level of the few instructions looked at here (tracked ones, dependency ends)
    some = np.array(sorted(set(TR) | set(gr.dsrc) | {x for v in gr.dsrc.values() for x in v}),
                    np.int64)
    TBOF = dict(zip(some.tolist(), tb_of[some].tolist()))
    LV = dict(zip(some.tolist(), level[some].tolist()))
    acc = []
    for g, lst in TR.items():
        lv = LV[g]
        for l, w in lst:
            acc.append((l, lv, g, w))
    acc.sort()
    pairs = set()
    cur = None
    lastw = None
    reads: dict = {}
    for l, _lv, g, w in acc:
        if l != cur:
            cur, lastw = l, None
            reads = {}
        t = TBOF[g]
        if lastw is not None and TBOF[lastw] != t:
            pairs.add((lastw, g))
        if w:
            for t2, g2 in reads.items():
                if t2 != t:
                    pairs.add((g2, g))
            reads = {}
            lastw = g
        else:
            reads[t] = g
    if not pairs:
        return True
    clock = _local_clocks(TBOF, LV, gr)
    rest = []
    for a, b in sorted(pairs):
        if LV[b] <= LV[a]:
            return False                 # same level: neither can reach the other
        if clock(b).get(TBOF[a], -1) < a:
            rest.append((a, b))
    if not rest:
        return True
    budget = [int(SEARCH_BUDGET_PER_NODE * prog.ninstr) + 10_000]
    lv = level.tolist()
    TBOF = tb_of.tolist()
    src_of = gr.src_of.tolist()
    starts = [tb.start for tb in prog.tbs]
    dsrc = gr.dsrc
    for a, b in rest:
        if not _reaches(a, b, lv, TBOF, starts, src_of, dsrc, budget):
            return False
    return True


def _local_clocks(TBOF, LV, gr: _Graph):
    """Vector clocks of the order program order and dependencies (no messages) impose.

    Returns ``clock(g)``: {tb: latest instruction of that TB ordered before or at g}, own TB
    excluded. Dependencies stay on one GPU, so these clocks are small; they are a subset of
    happens-before, enough for the orderings schedules make with ``depid``/``deps``.
    """
    dsrc = gr.dsrc
    waiters = sorted(dsrc, key=lambda w: (LV[w], w))
    at: dict = {}          # tb -> ([g of change points], [clock dicts])
    empty: dict = {}

    def clock(g: int) -> dict:
        ch = at.get(TBOF[g])
        if ch is None:
            return empty
        i = bisect_right(ch[0], g)
        return ch[1][i - 1] if i else empty

    for w in waiters:
        t = TBOF[w]
        vc = dict(clock(w))
        for x in dsrc[w]:
            tx = TBOF[x]
            if tx == t:
                continue
            for k, v in clock(x).items():
                if v > vc.get(k, -1):
                    vc[k] = v
            if x > vc.get(tx, -1):
                vc[tx] = x
        vc.pop(t, None)
        ch = at.setdefault(t, ([], []))
        ch[0].append(w)
        ch[1].append(vc)
    return clock


def _reaches(a, b, lv, TBOF, starts, src_of, dsrc, budget) -> bool:
    """Does ``a`` happen before ``b`` (program order, messages, dependencies)? False also when
    the search budget runs out."""
    ta, la = TBOF[a], lv[a]
    if lv[b] <= la:
        return False
    stack = [b]
    seen = {b}
    while stack:
        p = stack.pop()
        # walk p's TB backwards: every earlier node there is a predecessor
        t = TBOF[p]
        if t == ta:
            if p >= a:
                return True
            continue
        lo = starts[t]
        q = p
        while q >= lo and lv[q] > la:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            x = src_of[q]
            if x >= 0 and x not in seen and (lv[x] > la or x == a):
                seen.add(x)
                stack.append(x)
            ds = dsrc.get(q)
            if ds:
                for x in ds:
                    if x not in seen and (lv[x] > la or x == a):
                        seen.add(x)
                        stack.append(x)
            q -= 1
            if q in seen:
                break
            seen.add(q)
    return False
