"""Lowering and placement straight from the loader's step table, for the level prover.

:func:`lower_table` and :func:`place_table` do what :func:`~ccxml.interpreter.program.lower`
and :func:`~ccxml.interpreter.program.place` do, on numpy columns of the whole file
(:meth:`~ccxml.loader.model.Schedule.step_table`), for the schedules where that is simple: no
``nop`` and no ``re`` (one instruction per step, the step counter is the position), every
dependency names a step of an existing TB that publishes (``hasdep=1``), every link has one
sending and one receiving TB with equal ``cnt`` sequences, every peer is another GPU, every
step moves one chunk inside its buffers. They return None otherwise, and for anything that
would make :func:`~ccxml.interpreter.program.lower` or ``place`` report a finding, so the
caller falls back to the exact path, which words every finding.

Guarantee: when they return a Program, its arrays (``Program.arrays``) hold the instruction
columns ``lower``/``place`` would build as lists (same order: TBs in document order), its
``links``, ``tbs``, ``layout``, ``buffers`` and ``tracked`` are equal to theirs, and it has
no static finding. Only :func:`ccxml.interpreter.levels.prove` and the postcondition check
read it.

Exact twin: :func:`~ccxml.interpreter.program.lower` and :func:`~ccxml.interpreter.program.place`
(tests/test_twins.py checks that a report through this path equals the exact one).
"""
from __future__ import annotations

import numpy as np

from ccxml.interpreter.program import (
    IS_READ,
    IS_WRITE,
    LINK_OP,
    RECEIVES,
    SENDS,
    Link,
    Program,
    TBProg,
    connect,
    layout_memory,
    link_capacity,
    max_allowed_count,
)
from ccxml.loader.model import Schedule, StepTable
from ccxml.vocab.collectives import Collective

_NOP = StepTable.TYPES.index("nop")
_RE = StepTable.TYPES.index("re")
_IS_SEND = np.array([k in SENDS for k in range(len(StepTable.TYPES))])
_IS_RECV = np.array([k in RECEIVES for k in range(len(StepTable.TYPES))])
_LINK_OP = np.array(LINK_OP[:len(StepTable.TYPES)], np.int8)
_READS = np.array(IS_READ[:len(StepTable.TYPES)])
_WRITES = np.array(IS_WRITE[:len(StepTable.TYPES)])


def lower_table(schedule: Schedule) -> Program | None:
    """The Program of ``schedule`` from its step table, or None (see module)."""
    st = schedule.step_table()
    if st is None:
        return None
    tab, bounds = st
    gpus = schedule.gpus
    gpu_ids = [g.id for g in gpus]
    if not gpus or len(set(gpu_ids)) != len(gpu_ids):
        return None
    sl = slice(bounds[0], bounds[-1])
    kind = tab.type[sl]
    N = len(kind)
    kinds = np.bincount(kind, minlength=len(StepTable.TYPES))
    if N == 0 or kinds[_NOP] or kinds[_RE]:
        return None
    cnt = tab.cnt[sl]
    if cnt.min() < 1:
        return None
    starts = np.asarray(bounds[:-1], np.int64) - bounds[0]
    lens = np.diff(np.asarray(bounds, np.int64))

    tbs: list[TBProg] = []
    tb_index: dict = {}
    gpu_set = set(gpu_ids)
    ngpus = schedule.ngpus
    links: list[Link] = []
    link_index: dict = {}
    t = 0
    st_l = starts.tolist()
    ln_l = lens.tolist()
    for g in gpus:
        for tb in g.tbs:
            if (g.id, tb.id) in tb_index:
                return None
            tb_index[(g.id, tb.id)] = t
            tp = TBProg(g.id, tb.id, tb.send, tb.recv, tb.chan, start=st_l[t],
                        end=st_l[t] + ln_l[t], line=tb.line)
            tbs.append(tp)
            for peer in (tb.send, tb.recv):
                if peer >= 0 and (peer not in gpu_set or peer == g.id or (ngpus and peer >= ngpus)):
                    return None                    # a peer rule (loader: peer-*)
            connect(tp, t, links, link_index)
            t += 1
    for ln in links:
        if len(ln.senders) != 1 or len(ln.receivers) != 1:
            return None                            # two-tbs-one-connection / link-undeclared
    ntb = len(tbs)
    tb_of = np.repeat(np.arange(ntb, dtype=np.int64), lens)
    out_link = np.array([x.out_link for x in tbs], np.int64)
    in_link = np.array([x.in_link for x in tbs], np.int64)
    is_send = _IS_SEND[kind]
    is_recv = _IS_RECV[kind]
    if (out_link[tb_of[is_send]] < 0).any() or (in_link[tb_of[is_recv]] < 0).any():
        return None                                # step-without-peer
    # cnt sequences per link: the k-th send and the k-th receive carry the same cnt
    sl_ = out_link[tb_of[is_send]]
    rl_ = in_link[tb_of[is_recv]]
    if len(sl_) != len(rl_):
        return None
    small = np.uint16 if len(links) <= 1 << 16 else np.int64   # 16-bit keys: radix sort
    os_ = np.argsort(sl_.astype(small), kind="stable")
    or_ = np.argsort(rl_.astype(small), kind="stable")
    if not np.array_equal(sl_[os_], rl_[or_]) or not np.array_equal(cnt[is_send][os_],
                                                                    cnt[is_recv][or_]):
        return None
    max_allowed = max_allowed_count(schedule)
    is_link = is_send | is_recv
    calls = np.where(is_link, -(-cnt.astype(np.int64) // max_allowed), 0)
    op = _LINK_OP[kind] * (calls > 0)

    # ---- dependencies: each one names a publishing step of an existing TB --------------------
    pos = np.arange(N, dtype=np.int64) - np.repeat(starts, lens)
    hasdep = tab.hasdep[sl]
    pub = np.where(hasdep != 0, pos, -1)
    depid = tab.depid[sl]
    dep_rows = np.flatnonzero(depid >= 0)
    du = dv = np.zeros(0, np.int64)
    if len(dep_rows):
        gid_of_tb = np.array([x.gpu for x in tbs], np.int64)
        tgt = []
        for r, d in zip(gid_of_tb[tb_of[dep_rows]].tolist(), depid[dep_rows].tolist()):
            x = tb_index.get((r, d))
            if x is None:
                return None                        # dep-target-missing
            tgt.append(x)
        tgt = np.array(tgt, np.int64)
        dval = tab.deps[sl][dep_rows].astype(np.int64)
        if dval.min() < 0 or (dval >= lens[tgt]).any():
            return None                            # dep-never-released
        rel = starts[tgt] + dval
        if (hasdep[rel] != 1).any():
            return None                            # released late or never
        du, dv = rel, dep_rows.astype(np.int64)

    prog = Program(ngpus=ngpus, gpu_ids=gpu_ids, tbs=tbs, tb_index=tb_index, links=links,
                   cap=link_capacity(schedule), max_allowed=max_allowed, findings=[], nsteps=N,
                   schedule=schedule)
    prog.arrays = {"kind": kind.astype(np.int64), "cnt": cnt.astype(np.int64), "op": op,
                   "calls_max": int(calls.max()), "pub": pub, "dep_u": du, "dep_v": dv,
                   "tb_of": tb_of, "srcbuf": tab.srcbuf[sl], "dstbuf": tab.dstbuf[sl],
                   "srcoff": tab.srcoff[sl].astype(np.int64),
                   "dstoff": tab.dstoff[sl].astype(np.int64),
                   # sending / receiving steps in link order (each link: program order)
                   "links_sorted": (np.flatnonzero(is_send)[os_], sl_[os_],
                                    np.flatnonzero(is_recv)[or_], rl_[or_])}
    return prog


def _unique(a):
    """Sorted distinct values of ``a`` (sort-based: numpy's hashing ``unique`` is slower here)."""
    a = np.sort(a)
    if len(a) < 2:
        return a
    keep = np.empty(len(a), bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def place_table(prog: Program, collective: Collective | None, inplace: bool) -> bool:
    """Lay out memory for one call form on a :func:`lower_table` Program; False when some
    access is out of bounds or moves more than one chunk (then the exact path reports it)."""
    A = prog.arrays
    buffers, layout, input_bits, nloc = layout_memory(prog.schedule.gpus, collective, inplace)
    ntb = len(prog.tbs)
    lo = np.zeros((ntb, 3), np.int64)
    hi = np.zeros((ntb, 3), np.int64)
    for t, tb in enumerate(prog.tbs):
        lay = layout[tb.gpu]
        for j, letter in enumerate(StepTable.BUFS):
            k, base = lay[letter]
            b = buffers[k]
            lo[t, j] = b.loc_base + base
            hi[t, j] = b.loc_base + b.size
    kind, cnt, tb_of = A["kind"], A["cnt"], A["tb_of"]
    if cnt.max() != 1:
        return False
    reads = _READS[kind]
    writes = _WRITES[kind]
    sb, db = A["srcbuf"], A["dstbuf"]
    so, do = A["srcoff"], A["dstoff"]
    s_loc = lo[tb_of, sb] + so
    d_loc = lo[tb_of, db] + do
    if ((reads & ((so < 0) | (s_loc >= hi[tb_of, sb]))).any()
            or (writes & ((do < 0) | (d_loc >= hi[tb_of, db]))).any()):
        return False                               # out-of-bounds
    src_loc = np.where(reads, s_loc, -1)
    dst_loc = np.where(writes, d_loc, -1)
    # shared locations: touched by two TBs of one GPU (locations are per GPU), written by one
    rg = np.flatnonzero(reads)
    wg = np.flatnonzero(writes)
    locs = np.concatenate([src_loc[rg], dst_loc[wg]])
    who = np.concatenate([tb_of[rg], tb_of[wg]])
    pairs = _unique(locs * ntb + who)
    ploc = pairs // ntb
    multi = ploc[1:][ploc[1:] == ploc[:-1]]
    tracked: dict = {}
    if len(multi):
        written = np.zeros(nloc, bool)
        written[dst_loc[wg]] = True
        shared = multi[written[multi]]
        if len(shared):
            r_hit = rg[np.isin(src_loc[rg], shared)]
            w_hit = wg[np.isin(dst_loc[wg], shared)]
            acc: dict = {}
            for g, l in zip(r_hit.tolist(), src_loc[r_hit].tolist()):
                acc.setdefault(g, []).append((l, False))
            for g, l in zip(w_hit.tolist(), dst_loc[w_hit].tolist()):
                acc.setdefault(g, []).append((l, True))
            for g in sorted(acc):
                tracked[g] = tuple(sorted(acc[g]))
    A["src_loc"], A["dst_loc"], A["dkind"] = src_loc, dst_loc, kind
    A["in_bounds"] = True          # one chunk per step, every access inside its buffer
    prog.buffers, prog.layout, prog.input_bits = buffers, layout, input_bits
    prog.nloc = nloc
    prog.tracked, prog.bit = tracked, {}
    prog.ntracked, prog.inplace, prog.collective = len(tracked), inplace, collective
    prog.gpu_pos = {r: i for i, r in enumerate(prog.gpu_ids)}
    return True
