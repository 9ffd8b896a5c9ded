"""The fast loader checker: the exact checker's findings, proven on columns where it can.

Two fast parts, both conservative proofs that a rule cannot fire (a False only means "look
closer"):

* :class:`FastChecker` is :class:`~ccxml.loader.rules_exact.ExactChecker` with its two per-TB
  step loops overridden: :func:`runtime_clean` / :func:`safety_clean` check a TB's columns with
  C-level min/max/set operations and, when they hold, only the rules they leave open (the
  step-index limit; dependencies and link sequences) are checked, on the columns; otherwise the
  exact step loop runs.
* :func:`table_clean` proves with numpy, on the loader's whole-file step table, that the exact
  checker has no finding at all for a profile, so :func:`ccxml.loader.rules.check` can skip it.

Exact twin: :class:`~ccxml.loader.rules_exact.ExactChecker`. FastChecker must give its findings
byte for byte, and table_clean may answer True only where it has none (tests/test_twins.py).
"""
from __future__ import annotations

from itertools import compress

import numpy as np

from ccxml.loader.catalogue import (
    BUFFERS,
    MAX_COUNT,
    MAX_SUBS,
    MAX_TBS_PER_CHAN_DIR,
    RECEIVES,
    SENDS,
    STEP_TYPES,
    buffer_chunks,
    chan_accepted,
    is_legacy,
    profile_of,
)
from ccxml.loader.model import Schedule, ScheduleGPU, StepTable
from ccxml.loader.rules_exact import Cols, ExactChecker, dep_safety, header_findings
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import Profile


class FastChecker(ExactChecker):
    """:class:`~ccxml.loader.rules_exact.ExactChecker` with column proofs per TB (see module)."""

    def tb_runtime(self, g: ScheduleGPU, tb, cols: Cols, miss: dict, pre: str, add) -> None:
        if not runtime_clean(g, cols, miss):
            super().tb_runtime(g, tb, cols, miss, pre, add)
            return
        # only the step index limit can still fire; report its first offender
        r, b = g.id, tb.id
        max_s = self.p.max_steps_per_tb
        if cols.s and (max(cols.s) >= max_s or len(cols.s) > max_s):
            i = next((i for i, x in enumerate(cols.s) if x >= max_s), None)
            if i is not None:
                add(Finding("too-many-steps", f"{pre}too many steps are requested. Max number "
                                              f"of steps: {max_s}, requested: {cols.s[i] + 1}",
                            gpu=r, tb=b, step=i, line=cols.line[i]))
            elif len(cols.s) <= MAX_SUBS:
                add(Finding("too-many-steps", f"{pre}{len(cols.s)} steps in threadblock {b} "
                                              f"(max {max_s})", gpu=r, tb=b, line=tb.line))

    def tb_safety(self, g: ScheduleGPU, tbs: dict, tb, add, sent: dict, recvd: dict) -> None:
        c = self.columns(tb)
        if not (c.s and safety_clean(g, tb, c)):
            super().tb_safety(g, tbs, tb, add, sent, recvd)
            return
        p = self.p
        r = g.id
        if max(c.depid) >= 0:
            # dependencies are the only per-step rule left: check each one in step order
            for i in compress(range(len(c.s)), map((-1).__lt__, c.depid)):
                dep_safety(p, g, tbs, tb, i, c.depid[i], c.deps[i], c.line[i], add)
        if tb.send >= 0:
            sent.setdefault((r, tb.send, tb.chan), []).extend(
                c.cnt if c.types <= SENDS else compress(c.cnt, map(SENDS.__contains__, c.type)))
        if tb.recv >= 0:
            recvd.setdefault((tb.recv, r, tb.chan), []).extend(
                c.cnt if c.types <= RECEIVES else compress(c.cnt, map(RECEIVES.__contains__, c.type)))


def runtime_clean(g: ScheduleGPU, c: Cols, miss) -> bool:
    """True when no per-step runtime rule except the step-index limit can fire for this TB.

    Conservative (False only means "look step by step") and C-speed: min/max/set on columns.
    """
    if not c.s:
        return True
    if miss or not c.types <= STEP_TYPES or min(c.s) < 0:
        return False
    bufs = set(c.srcbuf) | set(c.dstbuf)
    if not bufs <= BUFFERS:
        return False
    if "nop" in c.types:
        t = c.type
        # the real step after a run of nops needs its own dependency
        if any(a == "nop" and b != "nop" and d < 0 for a, b, d in zip(t, t[1:], c.depid[1:])):
            return False
        keep = [x != "nop" for x in t]
        if not any(keep):
            return True
        cnt, hasdep = list(compress(c.cnt, keep)), set(compress(c.hasdep, keep))
        srcoff, dstoff = list(compress(c.srcoff, keep)), list(compress(c.dstoff, keep))
        bufs = set(compress(c.srcbuf, keep)) | set(compress(c.dstbuf, keep))
    else:
        cnt, hasdep, srcoff, dstoff = c.cnt, set(c.hasdep), c.srcoff, c.dstoff
    if not hasdep <= {0, 1} or min(cnt) < 0 or max(cnt) >= MAX_COUNT:
        return False
    smallest = min(buffer_chunks(g, x) for x in bufs)
    return min(srcoff) >= -1 and min(dstoff) >= -1 and max(srcoff) < smallest and \
        max(dstoff) < smallest


def safety_clean(g: ScheduleGPU, tb, c: Cols) -> bool:
    """True when no per-step safety rule can fire for this TB (conservative, C-speed)."""
    if "nop" in c.types or "re" in c.types or min(c.cnt) <= 0:
        return False
    if list(c.s) != list(range(len(c.s))):
        return False
    if (tb.send < 0 and c.types & SENDS) or (tb.recv < 0 and c.types & RECEIVES):
        return False
    bufs = set(c.srcbuf) | set(c.dstbuf)
    if not bufs <= BUFFERS:
        return False
    smallest = min(buffer_chunks(g, x) for x in bufs)
    return (min(c.srcoff) >= 0 and min(c.dstoff) >= 0
            and max(c.srcoff) + max(c.cnt) <= smallest and max(c.dstoff) + max(c.cnt) <= smallest)


# ---------------------------------------------------------------------------------------------
# Whole-file proof that a loaded table has no loader finding at all

_TYPE_BIT = {name: 1 << i for i, name in enumerate(StepTable.TYPES)}


def _type_bits(names) -> int:
    return sum(_TYPE_BIT[t] for t in names if t in _TYPE_BIT)


def table_clean(schedule: Schedule, profile: Profile | str) -> bool:
    """True only if :func:`ccxml.loader.rules.check` returns no finding for ``profile`` (False:
    it may or may not).

    Needs the loader's step table (:meth:`~ccxml.loader.model.Schedule.step_table`); every rule of
    :meth:`~ccxml.loader.rules_exact.ExactChecker.runtime_findings` and
    :meth:`~ccxml.loader.rules_exact.ExactChecker.safety_findings` is checked on whole columns,
    with the same conservative per-TB conditions as :func:`runtime_clean` and :func:`safety_clean`.
    """
    st = schedule.step_table()
    if st is None:
        return False
    tab, bounds = st
    p = profile_of(profile)
    legacy = is_legacy(p)
    s = schedule
    if s.missing or any(issue.fatal for issue in s.lexical):
        return False
    out: list = []
    header_findings(s, p, legacy, out.append)
    if out:
        return False
    ngpus, gpus = s.ngpus, s.gpus
    if ngpus < 1 or len(gpus) != ngpus or sorted(g.id for g in gpus) != list(range(ngpus)):
        return False
    a0 = bounds[0]
    starts = np.asarray(bounds[:-1], np.int64) - a0
    lens = np.diff(np.asarray(bounds, np.int64))
    ntb = len(lens)
    if ntb == 0 or lens.min() <= 0:
        return False
    sl = slice(a0, bounds[-1])
    typ, cnt, hasdep = tab.type[sl], tab.cnt[sl], tab.hasdep[sl]
    srcoff, dstoff, depid = tab.srcoff[sl], tab.dstoff[sl], tab.depid[sl]
    N = len(typ)
    # ---- per-TB aggregates ------------------------------------------------------------------
    tbits = np.bitwise_or.reduceat(np.left_shift(1, typ.astype(np.int64)), starts)
    bbits = np.bitwise_or.reduceat(np.left_shift(1, tab.srcbuf[sl].astype(np.int64))
                                   | np.left_shift(1, tab.dstbuf[sl].astype(np.int64)), starts)
    pos = np.arange(N, dtype=np.int64) - np.repeat(starts, lens)
    if (tab.s[sl] != pos).any():
        return False                               # s must be 0..n-1 in every TB
    if cnt.min() <= 0 or cnt.max() >= MAX_COUNT or hasdep.min() < 0 or hasdep.max() > 1:
        return False
    if srcoff.min() < 0 or dstoff.min() < 0:
        return False
    if int(np.bitwise_or.reduce(tbits)) & (_TYPE_BIT["nop"] | _TYPE_BIT["re"]):
        return False
    cmax = np.maximum.reduceat(cnt, starts)
    somax = np.maximum.reduceat(srcoff, starts) + cmax
    domax = np.maximum.reduceat(dstoff, starts) + cmax
    allowed = _type_bits(t.value for t in p.step_types)
    if int(np.bitwise_or.reduce(tbits)) & ~allowed:
        return False                               # rccl-full-ops
    if int(lens.max()) > min(p.max_steps_per_tb, MAX_SUBS):
        return False
    # ---- TBs, rank by rank (document order) ---------------------------------------------------
    tbs = _tbs_clean(s, p, legacy, tbits.tolist(), bbits.tolist(), lens.tolist(), somax.tolist(),
                     domax.tolist())
    if tbs is None:
        return False
    gpu_of_tb, id_to_doc, link_out, link_in = tbs
    tb_of = np.repeat(np.arange(ntb, dtype=np.int64), lens)
    return (_links_clean(link_out, link_in, tb_of, typ, cnt)
            and _deps_clean(p, tab.deps[sl], depid, hasdep, tb_of, pos, starts, lens, gpu_of_tb, id_to_doc))


def _tbs_clean(s: Schedule, p: Profile, legacy: bool, tbits_l: list, bbits_l: list, lens_l: list,
               somax_l: list, domax_l: list):
    """:func:`table_clean`'s TB rules, rank by rank in document order, on the per-TB aggregates
    (step type bits, buffer bits, lengths, largest src/dst offset + cnt): None when one may fire,
    else (gpu per TB, (gpu, tb id) -> TB index, each TB's send link, each TB's receive link)."""
    ngpus, nch, gpus = s.ngpus, s.nchannels, s.gpus
    sends, recvs = _type_bits(SENDS), _type_bits(RECEIVES)
    chan_max = chan_accepted(p)
    t = 0
    gpu_of_tb = []
    first_tb = {}                                  # gpu id -> doc index of its first TB
    id_to_doc: dict = {}
    link_out: list = []                            # per TB: (r, send, chan) or None
    link_in: list = []
    for g in gpus:
        r = g.id
        if g.s_chunks < 0 or len(g.tbs) > MAX_SUBS:
            return None
        sizes = (g.i_chunks, g.o_chunks, g.s_chunks)
        ids = [tb.id for tb in g.tbs]
        if sorted(ids) != list(range(len(ids))) or len(ids) > p.max_tbs:
            return None
        nodes = 1 + len(gpus)
        nsend: dict = {}
        nrecv: dict = {}
        first_tb[r] = t
        for tb in g.tbs:
            n = lens_l[t]
            nodes += 1 + n
            snd, rcv, ch = tb.send, tb.recv, tb.chan
            if snd == r or rcv == r or snd < -1 or rcv < -1 or snd >= ngpus or rcv >= ngpus:
                return None
            if not (0 <= ch <= chan_max or (legacy and ch == -1 and snd == rcv == -1)):
                return None
            if (snd >= 0 or rcv >= 0) and ch >= nch:
                return None
            if p.max_chan < ch <= chan_max:
                return None
            bits = tbits_l[t]
            if (snd < 0 and bits & sends) or (rcv < 0 and bits & recvs):
                return None
            if snd >= 0:
                if (ch, snd) in nsend:
                    return None                   # two TBs on one connection
                nsend[(ch, snd)] = tb.id
            if rcv >= 0:
                if (ch, rcv) in nrecv:
                    return None
                nrecv[(ch, rcv)] = tb.id
            smallest = min(sizes[k] for k in range(3) if bbits_l[t] >> k & 1)
            if somax_l[t] > smallest or domax_l[t] > smallest:
                return None
            id_to_doc[(r, tb.id)] = t
            gpu_of_tb.append(r)
            link_out.append((r, snd, ch) if snd >= 0 else None)
            link_in.append((rcv, r, ch) if rcv >= 0 else None)
            t += 1
        if nodes > p.max_nodes:
            return None
        per_chan_s: dict = {}
        per_chan_r: dict = {}
        for ch, _ in nsend:
            per_chan_s[ch] = per_chan_s.get(ch, 0) + 1
        for ch, _ in nrecv:
            per_chan_r[ch] = per_chan_r.get(ch, 0) + 1
        if max(per_chan_s.values(), default=0) > MAX_TBS_PER_CHAN_DIR or \
                max(per_chan_r.values(), default=0) > MAX_TBS_PER_CHAN_DIR:
            return None
    return gpu_of_tb, id_to_doc, link_out, link_in


def _links_clean(link_out: list, link_in: list, tb_of, typ, cnt) -> bool:
    """:func:`table_clean`'s link rules: every link declared at both ends, and the k-th send and
    the k-th receive on it carry the same cnt."""
    sends, recvs = _type_bits(SENDS), _type_bits(RECEIVES)
    outs = {k: i for i, k in enumerate(link_out) if k is not None}
    ins = {k: i for i, k in enumerate(link_in) if k is not None}
    if outs.keys() != ins.keys():
        return False
    lid = {k: i for i, k in enumerate(outs)}
    out_id = np.array([lid[k] if k is not None else -1 for k in link_out], np.int64)
    in_id = np.array([lid[k] if k is not None else -1 for k in link_in], np.int64)
    sends_mask = np.array([bool(_TYPE_BIT[x] & sends) for x in StepTable.TYPES])[typ]
    recvs_mask = np.array([bool(_TYPE_BIT[x] & recvs) for x in StepTable.TYPES])[typ]
    sl_ = out_id[tb_of[sends_mask]]
    rl_ = in_id[tb_of[recvs_mask]]
    if len(sl_) != len(rl_):
        return False
    os_ = np.argsort(sl_, kind="stable")
    or_ = np.argsort(rl_, kind="stable")
    if not np.array_equal(sl_[os_], rl_[or_]) or \
            not np.array_equal(cnt[sends_mask][os_], cnt[recvs_mask][or_]):
        return False
    return True


def _deps_clean(p: Profile, deps, depid, hasdep, tb_of, pos, starts, lens, gpu_of_tb: list,
                id_to_doc: dict) -> bool:
    """:func:`table_clean`'s dependency rules: every depid names a TB of its GPU that publishes
    (hasdep=1) at exactly the step waited for, and no TB waits on itself."""
    dep_rows = np.flatnonzero(depid >= 0)
    if len(dep_rows):
        di = depid[dep_rows].astype(np.int64)
        if di.max() > p.max_dep_tb:
            return False
        own = tb_of[dep_rows]
        gpu_rank = np.array(gpu_of_tb, np.int64)[own]
        tgt = []
        for r_, d_ in zip(gpu_rank.tolist(), di.tolist()):
            x = id_to_doc.get((r_, d_))
            if x is None:
                return False
            tgt.append(x)
        tgt = np.array(tgt, np.int64)
        ds = deps[dep_rows].astype(np.int64)
        if ds.min() < 0 or (ds >= lens[tgt]).any():
            return False
        if ((tgt == own) & (ds >= pos[dep_rows])).any():
            return False
        if (hasdep[starts[tgt] + ds] != 1).any():
            return False
    return True
