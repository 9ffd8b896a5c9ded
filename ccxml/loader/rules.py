"""Loader checks: what each MSCCL runtime does with a loaded :class:`~ccxml.loader.model.Schedule`.

Two kinds of findings, kept apart because only the first decides the loader verdict:

(a) **Runtime verdict** — what makes the runtime's loader reject the file (msccl-runtime.md §2-§5,
    §8 rule 3, §10) or its first launch fail (RCCL without full ops, §4). These reproduce the
    ``exec``/``rccl``/``legacy`` columns of the corpus INDEX.md. :func:`verdict` returns the first.
(b) **Schedule safety** — what the parser lets through but makes the schedule hang, corrupt data or
    write out of bounds (§5 "practical limits", §8 generator rules, §9 rules 1-3, §13). The
    reference interpreter adds deadlocks, races and postconditions on top (it simulates; this
    module only inspects).

Every finding is a :class:`ccxml.vocab.findings.Finding`; its ``code`` is one of the tables below.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from itertools import compress

import numpy as np

from ccxml.loader.model import Schedule, ScheduleGPU, StepTable
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import MAX_REDUCE_FUSION, PROFILES, Profile, StepType

#: (a) codes: the runtime refuses to load the file
REJECT_CODES = {
    "lexical": "the runtime's tokenizer fails on the text (tab, declaration, quotes, ...)",
    "missing-attribute": "a required attribute is absent (or beyond the 16 attribute slots)",
    "bad-coll": "coll is not a collective this runtime knows",
    "bad-proto": "proto is not Simple, LL or LL128",
    "bad-nthreads": "legacy nthreads is not a multiple of 32",
    "nchannels-too-large": "nchannels exceeds the runtime's MAXCHANNELS",
    "negative-scratch": "s_chunks < 0",
    "too-many-children": "more than 1024 <gpu> elements, or <tb>/<step> children of one element",
    "tb-id-range": "TB id negative or not below the runtime's TB limit",
    "tb-id-duplicate": "two TBs of one GPU share an id",
    "tb-id-gap": "TB ids are not exactly 0..n-1",
    "peer-is-self": "a TB's send or recv peer is its own GPU",
    "peer-invalid": "a peer below -1 (legacy: or not below ngpus)",
    "chan-invalid": "chan outside what the runtime accepts",
    "too-many-tbs-per-channel": "more than 32 TBs with a send (recv) peer on one channel",
    "too-many-steps": "a step index s, or the number of steps, over the per-TB limit",
    "step-index-negative": "s < 0",
    "bad-step-type": "type is not a step type the runtime parses",
    "bad-buffer": "srcbuf/dstbuf not i, o or s",
    "offset-out-of-range": "an offset the runtime bounds-checks is not in -1..nchunks-1",
    "cnt-out-of-range": "cnt not in 0..71",
    "hasdep-invalid": "hasdep not 0 or 1",
    "nop-chain-no-dep": "the step after a run of nops has no depid of its own",
    "node-budget": "1 + gpus + tbs + steps of one rank over the 4095 XML nodes",
}
#: (a) codes: the file loads, but its first launch fails
LAUNCH_CODES = {
    "rccl-full-ops": "uses rcs/rrs/rrc/rrcs, which RCCL's reduced-ops kernels refuse at launch",
}
#: (b) codes: loads, but the schedule is unsafe (severity "error") or suspicious ("warning")
SAFETY_CODES = {
    "gpu-missing": "a rank has no <gpu> element: it runs an empty program",
    "gpu-duplicate": "two <gpu> elements with one id",
    "gpu-id-out-of-range": "a <gpu> id not in 0..ngpus-1: no rank reads it",
    "ngpus-invalid": "ngpus < 1",
    "peer-out-of-range": "a send/recv peer >= ngpus: the connection is silently skipped",
    "chan-not-connected": "chan >= nchannels: only channels below nchannels get connections",
    "chan-out-of-bounds": "chan equals MAXCHANNELS: accepted, but written out of bounds",
    "step-without-peer": "a sending (receiving) step in a TB with send=-1 (recv=-1)",
    "step-index": "s is not the step's position 0..n-1 (dependency flags use positions)",
    "nop-without-dep": "a nop with depid=-1 is dropped uncounted and shifts every later flag",
    "depid-too-large": "depid over the int8 the kernel stores it in",
    "dep-target-missing": "depid/deps name no step of this GPU",
    "dep-self-wait": "a TB waits on its own step at or after the waiting one: hangs",
    "dep-never-released": "neither the target step nor a later one of its TB publishes (hasdep=1)",
    "dep-released-late": "the target has hasdep=0; a later step of its TB releases the waiter",
    "two-tbs-one-connection": "two TBs of one GPU on one (chan, send peer) or (chan, recv peer)",
    "link-undeclared": "a connection is declared at only one end",
    "link-cnt-mismatch": "send and receive cnt sequences differ on a (sender, receiver, chan)",
    "re-chain-too-long": "more than 16 fused re steps (kernel array overflow)",
    "re-chain-cnt-mismatch": "fused re steps with different cnt (the last cnt is used for all)",
    "offset-past-buffer": "off..off+cnt of a buffer a step touches is outside the buffer",
    "cnt-zero": "a data step with cnt=0 moves nothing (legacy indexes chunk -1)",
}
ALL_CODES = {**REJECT_CODES, **LAUNCH_CODES, **SAFETY_CODES}

EXEC_COLLS = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "alltoallv",
                        "broadcast", "reduce", "send", "recv", "gather", "scatter"})
LEGACY_COLLS = frozenset({"allreduce", "allgather", "reduce", "broadcast", "alltoall",
                          "reduce_scatter", "custom"})
PROTOS = frozenset({"Simple", "LL", "LL128"})
STEP_TYPES = frozenset(t.value for t in StepType)
BUFFERS = frozenset({"i", "o", "s"})
MAX_SUBS = 1024
MAX_COUNT = 72
MAX_TBS_PER_CHAN_DIR = 32
#: per type: (runtime bounds-checks src, runtime bounds-checks dst), §4
_BOUNDS_CHECKED = {"s": (True, False), "r": (False, True), "rcs": (False, True),
                   "rrs": (True, False), "rrc": (False, False), "rrcs": (True, True),
                   "cpy": (True, True), "re": (True, True), "nop": (False, False)}
_SENDS = frozenset(t.value for t in StepType if t.sends)
_RECEIVES = frozenset(t.value for t in StepType if t.receives)
_READS = frozenset(t.value for t in StepType if t.reads_src)
_WRITES = frozenset(t.value for t in StepType if t.writes_dst)


def _profile(profile: Profile | str) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        raise ValueError(f"unknown target {profile!r}; choose one of {', '.join(PROFILES)}") from None


def _is_legacy(p: Profile) -> bool:
    return p.name.startswith("legacy")


def _chan_accepted(p: Profile) -> int:
    """Largest chan the loader accepts: exec/RCCL test ``chan > MAXCHANNELS`` (off by one)."""
    return p.max_chan if _is_legacy(p) else p.max_chan + 1


def _buffer_chunks(g: ScheduleGPU, buf: str) -> int:
    return g.i_chunks if buf == "i" else g.o_chunks if buf == "o" else g.s_chunks


def runtime_findings(s: Schedule, profile: Profile | str, _cache: dict | None = None) -> list[Finding]:
    """(a): every reason the runtime of ``profile`` rejects the file or fails its first launch.

    Ordered as the runtime meets them (lexical, header, then rank by rank in document order),
    so the first one is the runtime's own first complaint; launch failures come last.
    """
    p = _profile(profile)
    legacy = _is_legacy(p)
    out: list[Finding] = []
    add = out.append
    for issue in s.lexical:
        if issue.fatal:
            add(Finding("lexical", issue.message, line=issue.line))
    _header_findings(s, p, legacy, add)

    ngpus = s.ngpus
    miss: dict[tuple, list] = {}
    for m in s.missing:
        miss.setdefault((m.element, m.line), []).append(m)
    used_types: set[str] = set()
    ranks = sorted((g for g in s.gpus if 0 <= g.id < ngpus), key=lambda g: g.id)
    for g in ranks:
        _rank_findings(s, g, p, legacy, ngpus, miss, used_types, add, _cache)
    if not any(f.code not in LAUNCH_CODES for f in out):
        bad = sorted(t for t in used_types if t in STEP_TYPES and StepType(t) not in p.step_types)
        if bad:
            add(Finding("rccl-full-ops", f"uses {'/'.join(bad)}: this version of MSCCL build "
                                         f"doesn't support full Ops"))
    return out


def _header_findings(s: Schedule, p: Profile, legacy: bool, add) -> None:
    """The runtime's checks of the ``<algo>`` attributes and the number of ``<gpu>`` elements."""
    a = s.attrs
    algo_line = s.line or None

    def need(key: str) -> bool:
        if key in a:
            return True
        add(Finding("missing-attribute", f"Attribute {key} of node algo not found", line=algo_line))
        return False

    if legacy:
        for key in ("name", "nchunksperloop", "nchannels", "ngpus", "proto", "coll", "inplace"):
            need(key)
        if "coll" in a and s.coll not in LEGACY_COLLS:
            add(Finding("bad-coll", f"unsupported collective {s.coll}", line=algo_line))
        if "nthreads" in a and s._int("nthreads") % 32:
            add(Finding("bad-nthreads", f"nthreads={a['nthreads']} is not a multiple of 32",
                        line=algo_line))
    else:
        for key in ("nchunksperloop", "nchannels", "ngpus"):
            need(key)
        if need("coll") and s.coll not in EXEC_COLLS:
            add(Finding("bad-coll", f"unsupported collective {s.coll} (meta loader returns "
                                    f"ncclInvalidUsage)", line=algo_line))
        for key in ("minBytes", "maxBytes", "inplace", "outofplace", "proto"):
            need(key)
    if "proto" in a and s.proto not in PROTOS:
        add(Finding("bad-proto", f"MSCCL: protocol {s.proto} is not supported", line=algo_line))
    if s.nchannels > p.max_chan + 1:
        add(Finding("nchannels-too-large", f"nchannels={s.nchannels} exceeds the "
                                           f"{p.max_chan + 1} channels of {p.name}",
                    line=algo_line))
    if len(s.gpus) > MAX_SUBS:
        add(Finding("too-many-children", f"{len(s.gpus)} <gpu> elements (max {MAX_SUBS})"))


def _rank_findings(s, g, p, legacy, ngpus, miss, used_types, add, cache) -> None:
    r = g.id
    pre = f"rank {r}: MSCCL: "
    for m in miss.get(("gpu", g.line), ()):
        if m.attr != "id":
            add(Finding("missing-attribute", f"{pre}Attribute {m.attr} of node gpu not found",
                        gpu=r, line=g.line))
    if g.s_chunks < 0:
        add(Finding("negative-scratch", f"{pre}nScratchChunks must be not negative. "
                                        f"nScratchChunks: {g.s_chunks}", gpu=r, line=g.line))
    if len(g.tbs) > MAX_SUBS:
        add(Finding("too-many-children", f"{pre}{len(g.tbs)} <tb> elements (max {MAX_SUBS})",
                    gpu=r, line=g.line))
    seen: set[int] = set()
    nsend: dict[int, int] = {}
    nrecv: dict[int, int] = {}
    chan_max = _chan_accepted(p)
    nodes = 1 + len(s.gpus)
    for tb in g.tbs:
        nodes += 1 + tb.nsteps
        b = tb.id
        for m in miss.get(("tb", tb.line), ()):
            add(Finding("missing-attribute", f"{pre}Attribute {m.attr} of node tb not found",
                        gpu=r, tb=b, line=tb.line))
        if not 0 <= b < p.max_tbs:
            add(Finding("tb-id-range", f"{pre}thread block id {b} not in [0,{p.max_tbs})",
                        gpu=r, tb=b, line=tb.line))
        elif b in seen:
            add(Finding("tb-id-duplicate", f"{pre}duplicate thread block id {b}", gpu=r, tb=b,
                        line=tb.line))
        seen.add(b)
        if tb.send == r or tb.recv == r:
            add(Finding("peer-is-self", f"{pre}peer ({tb.recv},{tb.send}) and gpu id ({r}) must "
                                        f"be different", gpu=r, tb=b, line=tb.line))
        if tb.send < -1 or tb.recv < -1 or (legacy and (tb.send >= ngpus or tb.recv >= ngpus)):
            add(Finding("peer-invalid", f"{pre}wrong recvPeer ({tb.recv}) or sendPeer ({tb.send}) "
                                        f"in threadblock {b} on gpu {r}", gpu=r, tb=b, line=tb.line))
        chan_ok = 0 <= tb.chan <= chan_max or (legacy and tb.chan == -1 and tb.send == tb.recv == -1)
        if not chan_ok:
            add(Finding("chan-invalid", f"{pre}threadblock {b} on GPU {r} has an invalid channel "
                                        f"{tb.chan}", gpu=r, tb=b, line=tb.line))
        if tb.send >= 0:
            nsend[tb.chan] = nsend.get(tb.chan, 0) + 1
            if nsend[tb.chan] == MAX_TBS_PER_CHAN_DIR + 1:
                add(Finding("too-many-tbs-per-channel", f"{pre}more than {MAX_TBS_PER_CHAN_DIR} "
                            f"TBs send on channel {tb.chan}", gpu=r, tb=b, line=tb.line))
        if tb.recv >= 0:
            nrecv[tb.chan] = nrecv.get(tb.chan, 0) + 1
            if nrecv[tb.chan] == MAX_TBS_PER_CHAN_DIR + 1:
                add(Finding("too-many-tbs-per-channel", f"{pre}more than {MAX_TBS_PER_CHAN_DIR} "
                            f"TBs receive on channel {tb.chan}", gpu=r, tb=b, line=tb.line))
        if tb.nsteps > MAX_SUBS:
            add(Finding("too-many-children", f"{pre}{tb.nsteps} <step> elements in one TB "
                                             f"(max {MAX_SUBS})", gpu=r, tb=b, line=tb.line))
        max_s = p.max_steps_per_tb
        cols = _columns(tb, cache)
        used_types.update(cols.types)
        if _runtime_clean(g, cols, miss):
            # only the step index limit can still fire; report its first offender
            if cols.s and (max(cols.s) >= max_s or len(cols.s) > max_s):
                i = next((i for i, x in enumerate(cols.s) if x >= max_s), None)
                if i is not None:
                    add(Finding("too-many-steps", f"{pre}too many steps are requested. Max number "
                                                  f"of steps: {max_s}, requested: {cols.s[i] + 1}",
                                gpu=r, tb=b, step=i, line=cols.line[i]))
                elif len(cols.s) <= MAX_SUBS:
                    add(Finding("too-many-steps", f"{pre}{len(cols.s)} steps in threadblock {b} "
                                                  f"(max {max_s})", gpu=r, tb=b, line=tb.line))
            continue
        pending = 0
        too_many = False
        steps = tb.read_steps()
        for i, st in enumerate(steps):
            if st.line and ("step", st.line) in miss:
                for m in miss[("step", st.line)]:
                    add(Finding("missing-attribute", f"{pre}Attribute {m.attr} of node step not "
                                                     f"found", gpu=r, tb=b, step=i, line=st.line))
            if st.s >= max_s:
                if too_many:
                    continue
                too_many = True
                add(Finding("too-many-steps", f"{pre}too many steps are requested. Max number of "
                                              f"steps: {max_s}, requested: {st.s + 1}",
                            gpu=r, tb=b, step=i, line=st.line))
            elif st.s < 0:
                add(Finding("step-index-negative", f"{pre}step must be positive: step {st.s}",
                            gpu=r, tb=b, step=i, line=st.line))
            t = st.type
            if t not in STEP_TYPES:
                add(Finding("bad-step-type", f"{pre}type of transfer is not supported: {t}",
                            gpu=r, tb=b, step=i, line=st.line))
                continue
            for buf in (st.srcbuf, st.dstbuf):
                if buf not in BUFFERS:
                    add(Finding("bad-buffer", f"{pre}buffer {buf} is not supported", gpu=r, tb=b,
                                step=i, line=st.line))
            if st.depid >= 0:
                pending += 1
            if t == "nop":
                continue
            chk_src, chk_dst = _BOUNDS_CHECKED[t]
            for chk, buf, off, side in ((chk_src, st.srcbuf, st.srcoff, "srcoff"),
                                        (chk_dst, st.dstbuf, st.dstoff, "dstoff")):
                if chk and buf in BUFFERS:
                    n = _buffer_chunks(g, buf)
                    if not -1 <= off < n:
                        add(Finding("offset-out-of-range", f"{pre}{side}={off} out of bounds for "
                                    f"buffer {buf} of {n} chunks", gpu=r, tb=b, step=i,
                                    line=st.line))
            if not 0 <= st.cnt < MAX_COUNT:
                add(Finding("cnt-out-of-range", f"{pre}count ({st.cnt}) must be positive and less "
                                                f"than {MAX_COUNT}", gpu=r, tb=b, step=i,
                            line=st.line))
            if st.hasdep not in (0, 1):
                add(Finding("hasdep-invalid", f"{pre}has_dependence needs to be 0 or 1, but it "
                                              f"was {st.hasdep}", gpu=r, tb=b, step=i, line=st.line))
            if pending and st.depid < 0:
                add(Finding("nop-chain-no-dep", f"{pre}when there is a chain of dependencies, the "
                            f"last reduction must be a part of the first immediate instruction. "
                            f"Detected for GPU {r}, threadblock {b}, and step {i}",
                            gpu=r, tb=b, step=i, line=st.line))
            pending = 0
        if MAX_SUBS >= len(steps) > p.max_steps_per_tb and all(0 <= x.s < max_s for x in steps):
            # every s is in range but the TB has more steps than its array holds
            add(Finding("too-many-steps", f"{pre}{len(steps)} steps in threadblock {b} "
                                          f"(max {max_s})", gpu=r, tb=b, line=tb.line))
    valid = [x for x in seen if 0 <= x < p.max_tbs]
    gap = next((x for x in range(max(valid) + 1) if x not in seen), None) if valid else None
    if gap is not None:
        add(Finding("tb-id-gap", f"{pre}thread block {gap} is not defined", gpu=r, line=g.line))
    if nodes > p.max_nodes:
        add(Finding("node-budget", f"{pre}{nodes} XML nodes for this rank (max {p.max_nodes}; the "
                                   f"runtime says 'limited to 1024 nodes')", gpu=r, line=g.line))


def safety_findings(s: Schedule, profile: Profile | str, _cache: dict | None = None) -> list[Finding]:
    """(b): what the loader lets through but makes the schedule unsafe (§5, §8, §9.1-3, §13).

    Deterministic order: per-GPU checks in document order, then link checks sorted by
    (sender, receiver, chan). Deadlocks, races and postconditions are the interpreter's job.
    """
    p = _profile(profile)
    out: list[Finding] = []
    add = out.append
    ngpus = s.ngpus
    nch = s.nchannels
    if ngpus < 1:
        add(Finding("ngpus-invalid", f"ngpus={ngpus}"))
    by_id: dict[int, ScheduleGPU] = {}
    for g in s.gpus:
        if g.id in by_id:
            add(Finding("gpu-duplicate", f"second <gpu id={g.id}>", gpu=g.id, line=g.line))
            continue
        by_id[g.id] = g
        if not 0 <= g.id < ngpus:
            add(Finding("gpu-id-out-of-range", f"<gpu id={g.id}> with ngpus={ngpus}: no rank reads "
                                               f"it", gpu=g.id, line=g.line))
    for r in range(max(ngpus, 0)):
        if r not in by_id:
            add(Finding("gpu-missing", f"rank {r} has no <gpu> element and runs nothing", gpu=r))
            if r > 4096:
                break
    # link bookkeeping: (sender, receiver, chan) -> cnt sequences and declaring TBs
    sent: dict[tuple, list[int]] = {}
    recvd: dict[tuple, list[int]] = {}
    send_decl: dict[tuple, list] = {}
    recv_decl: dict[tuple, list] = {}
    for r, g in by_id.items():
        if not 0 <= r < ngpus:
            continue
        tbs = {}
        for tb in g.tbs:
            tbs.setdefault(tb.id, tb)
        conn_send: dict[tuple, int] = {}
        conn_recv: dict[tuple, int] = {}
        for tb in g.tbs:
            b = tb.id
            for peer, what in ((tb.send, "send"), (tb.recv, "recv")):
                if peer >= ngpus:
                    add(Finding("peer-out-of-range", f"{what} peer {peer} >= ngpus={ngpus}",
                                gpu=r, tb=b, line=tb.line))
            if tb.chan >= nch and (tb.send >= 0 or tb.recv >= 0):
                add(Finding("chan-not-connected", f"chan {tb.chan} >= nchannels={nch}", gpu=r, tb=b,
                            line=tb.line))
            if p.max_chan < tb.chan <= _chan_accepted(p):
                add(Finding("chan-out-of-bounds", f"chan {tb.chan} is accepted but written out of "
                                                  f"bounds (use <= {p.max_chan})", gpu=r, tb=b,
                            line=tb.line))
            if tb.send >= 0:
                key = (tb.chan, tb.send)
                if key in conn_send:
                    add(Finding("two-tbs-one-connection", f"TBs {conn_send[key]} and {b} both send "
                                f"to {tb.send} on channel {tb.chan}", gpu=r, tb=b, line=tb.line))
                conn_send.setdefault(key, b)
                send_decl.setdefault((r, tb.send, tb.chan), []).append(b)
            if tb.recv >= 0:
                key = (tb.chan, tb.recv)
                if key in conn_recv:
                    add(Finding("two-tbs-one-connection", f"TBs {conn_recv[key]} and {b} both "
                                f"receive from {tb.recv} on channel {tb.chan}", gpu=r, tb=b,
                                line=tb.line))
                conn_recv.setdefault(key, b)
                recv_decl.setdefault((tb.recv, r, tb.chan), []).append(b)
            _tb_safety(s, p, g, tbs, tb, add, sent, recvd, _cache)
    # links
    for key in sorted(set(send_decl) | set(recv_decl)):
        a, b, c = key
        if not (0 <= a < ngpus and 0 <= b < ngpus):
            continue
        if key not in recv_decl:
            add(Finding("link-undeclared", f"gpu {a} sends to {b} on channel {c}, but no TB of gpu "
                                           f"{b} receives from {a} on that channel", gpu=a,
                        tb=send_decl[key][0]))
        elif key not in send_decl:
            add(Finding("link-undeclared", f"gpu {b} receives from {a} on channel {c}, but no TB "
                                           f"of gpu {a} sends to {b} on that channel", gpu=b,
                        tb=recv_decl[key][0]))
    for key in sorted(set(sent) | set(recvd)):
        a, b, c = key
        xs, ys = sent.get(key, []), recvd.get(key, [])
        if xs != ys:
            k = next((i for i, (x, y) in enumerate(zip(xs, ys)) if x != y), min(len(xs), len(ys)))
            detail = (f"send #{k} has cnt {xs[k]}, receive #{k} has cnt {ys[k]}"
                      if k < min(len(xs), len(ys)) else
                      f"{len(xs)} sends vs {len(ys)} receives")
            add(Finding("link-cnt-mismatch", f"link {a}->{b} channel {c}: {detail}", gpu=a))
    return out


class _Cols:
    """A TB's steps as columns, so most checks run as C-level min/max/set operations."""
    __slots__ = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
                 "hasdep", "line", "types")

    def __init__(self, tb):
        # the loader's columns (or columns built from the step objects): no per-step work
        (self.s, self.type, self.srcbuf, self.srcoff, self.dstbuf, self.dstoff, self.cnt,
         self.depid, self.deps, self.hasdep, self.line) = tb.columns()
        self.types = set(self.type)


def _columns(tb, cache: dict | None) -> _Cols:
    """The TB's columns, shared between the runtime and safety passes of one check() call."""
    if cache is None:
        return _Cols(tb)
    hit = cache.get(id(tb))
    if hit is not None and hit[0] is tb:
        return hit[1]
    cols = _Cols(tb)
    cache[id(tb)] = (tb, cols)      # keeps tb alive, so its id cannot be reused meanwhile
    return cols


def _runtime_clean(g: ScheduleGPU, c: _Cols, miss) -> bool:
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
    smallest = min(_buffer_chunks(g, x) for x in bufs)
    return min(srcoff) >= -1 and min(dstoff) >= -1 and max(srcoff) < smallest and \
        max(dstoff) < smallest


def _tb_safety(s, p, g, tbs, tb, add, sent, recvd, cache=None) -> None:
    r, b = g.id, tb.id
    c = _columns(tb, cache)
    if c.s and _safety_clean(g, tb, c):
        if max(c.depid) >= 0:
            # dependencies are the only per-step rule left: check each one in step order
            for i in compress(range(len(c.s)), map((-1).__lt__, c.depid)):
                _dep_safety_at(p, g, tbs, tb, i, c.depid[i], c.deps[i], c.line[i], add)
        if tb.send >= 0:
            sent.setdefault((r, tb.send, tb.chan), []).extend(
                c.cnt if c.types <= _SENDS else compress(c.cnt, map(_SENDS.__contains__, c.type)))
        if tb.recv >= 0:
            recvd.setdefault((tb.recv, r, tb.chan), []).extend(
                c.cnt if c.types <= _RECEIVES else compress(c.cnt, map(_RECEIVES.__contains__, c.type)))
        return
    steps = tb.read_steps()
    chain_len = 0
    chain_cnt = None
    prev = None
    pending_nop = False
    for i, st in enumerate(steps):
        t = st.type
        if st.s != i:
            add(Finding("step-index", f"s={st.s} at position {i}", gpu=r, tb=b, step=i,
                        line=st.line))
        if t == "nop" and st.depid < 0:
            add(Finding("nop-without-dep", "nop without depid is dropped and shifts later step "
                                           "counters", gpu=r, tb=b, step=i, line=st.line))
        if st.depid >= 0:
            _dep_safety(p, g, tbs, tb, i, st, add)
        if t in _SENDS:
            if tb.send < 0:
                add(Finding("step-without-peer", f"'{t}' sends but the TB has send=-1", gpu=r,
                            tb=b, step=i, line=st.line))
            else:
                sent.setdefault((r, tb.send, tb.chan), []).append(st.cnt)
        if t in _RECEIVES:
            if tb.recv < 0:
                add(Finding("step-without-peer", f"'{t}' receives but the TB has recv=-1", gpu=r,
                            tb=b, step=i, line=st.line))
            else:
                recvd.setdefault((tb.recv, r, tb.chan), []).append(st.cnt)
        if t != "nop":
            if st.cnt == 0:
                add(Finding("cnt-zero", f"'{t}' with cnt=0 moves nothing", gpu=r, tb=b, step=i,
                            line=st.line, severity="warning"))
            for touched, buf, off, side in ((t in _READS, st.srcbuf, st.srcoff, "src"),
                                            (t in _WRITES, st.dstbuf, st.dstoff, "dst")):
                if touched and buf in BUFFERS:
                    n = _buffer_chunks(g, buf)
                    if off < 0 or off + st.cnt > n:
                        add(Finding("offset-past-buffer", f"{side} {buf}[{off}..{off + st.cnt}) "
                                    f"outside the {n} chunks of buffer {buf}", gpu=r, tb=b, step=i,
                                    line=st.line))
        # re fusion (§4): same dstbuf/dstoff/srcbuf, later ones depid=-1, ends after hasdep=1
        fuses = (t == "re" and prev is not None and prev.type == "re" and prev.hasdep != 1
                 and st.depid < 0 and not pending_nop and st.dstbuf == prev.dstbuf
                 and st.dstoff == prev.dstoff and st.srcbuf == prev.srcbuf)
        if fuses:
            chain_len += 1
            if chain_len == MAX_REDUCE_FUSION + 1:
                add(Finding("re-chain-too-long", f"fused re chain of more than {MAX_REDUCE_FUSION} "
                                                 f"steps", gpu=r, tb=b, step=i, line=st.line))
            if st.cnt != chain_cnt:
                add(Finding("re-chain-cnt-mismatch", f"fused re step has cnt {st.cnt}, the chain "
                            f"started with {chain_cnt}", gpu=r, tb=b, step=i, line=st.line))
        else:
            chain_len = 1 if t == "re" else 0
            chain_cnt = st.cnt
        pending_nop = t == "nop"
        prev = st if t != "nop" else None


def _safety_clean(g: ScheduleGPU, tb, c: _Cols) -> bool:
    """True when no per-step safety rule can fire for this TB (conservative, C-speed)."""
    if "nop" in c.types or "re" in c.types or min(c.cnt) <= 0:
        return False
    if list(c.s) != list(range(len(c.s))):
        return False
    if (tb.send < 0 and c.types & _SENDS) or (tb.recv < 0 and c.types & _RECEIVES):
        return False
    bufs = set(c.srcbuf) | set(c.dstbuf)
    if not bufs <= BUFFERS:
        return False
    smallest = min(_buffer_chunks(g, x) for x in bufs)
    return (min(c.srcoff) >= 0 and min(c.dstoff) >= 0
            and max(c.srcoff) + max(c.cnt) <= smallest and max(c.dstoff) + max(c.cnt) <= smallest)


def _dep_safety(p, g, tbs, tb, i, st, add) -> None:
    _dep_safety_at(p, g, tbs, tb, i, st.depid, st.deps, st.line, add)


def _dep_safety_at(p, g, tbs, tb, i, depid, deps, line, add) -> None:
    r, b = g.id, tb.id
    if depid > p.max_dep_tb:
        add(Finding("depid-too-large", f"depid {depid} > {p.max_dep_tb} (stored as int8)",
                    gpu=r, tb=b, step=i, line=line))
    target = tbs.get(depid)
    if target is None or not 0 <= deps < target.nsteps:
        add(Finding("dep-target-missing", f"depends on tb {depid} step {deps}, which does "
                                          f"not exist", gpu=r, tb=b, step=i, line=line))
        return
    if target is tb and deps >= i:
        add(Finding("dep-self-wait", f"waits on its own TB's step {deps}", gpu=r, tb=b, step=i,
                    line=line))
        return
    tc = target.columns()
    ttype, thasdep = tc[1], tc[9]
    if ttype[deps] != "nop" and thasdep[deps] == 1:
        return
    if any(h == 1 and t != "nop" for t, h in zip(ttype[deps + 1:], thasdep[deps + 1:])):
        add(Finding("dep-released-late", f"depends on tb {depid} step {deps}, which has "
                                         f"hasdep=0; a later step releases it", gpu=r, tb=b,
                    step=i, line=line, severity="warning"))
    else:
        add(Finding("dep-never-released", f"depends on tb {depid} step {deps}, but that TB "
                                          f"never publishes it (hasdep=0): hangs", gpu=r, tb=b,
                    step=i, line=line))


def check(schedule: Schedule, profile: Profile | str) -> list[Finding]:
    """All loader findings for ``profile``: runtime verdict findings (a) first, then safety (b)."""
    if table_clean(schedule, profile):
        return []
    cache: dict = {}
    with _gc_paused():
        return (runtime_findings(schedule, profile, cache)
                + safety_findings(schedule, profile, cache))


@contextmanager
def _gc_paused():
    """Nothing here makes reference cycles; skip cyclic GC passes over big schedules."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rejects(finding: Finding) -> bool:
    """True for findings that make the runtime reject the file or fail its launch."""
    return finding.code in REJECT_CODES or finding.code in LAUNCH_CODES


def verdict(schedule: Schedule, profile: Profile | str) -> str:
    """``"ok"``, ``"reject: <first reason>"`` or ``"launch-fail: <reason>"`` for ``profile``."""
    with _gc_paused():
        found = runtime_findings(schedule, profile)
    if not found:
        return "ok"
    f = found[0]
    kind = "launch-fail" if f.code in LAUNCH_CODES else "reject"
    return f"{kind}: {f}"


# ---------------------------------------------------------------------------------------------
# Whole-file proof that a loaded table has no loader finding at all

_TYPE_BIT = {name: 1 << i for i, name in enumerate(StepTable.TYPES)}


def _type_bits(names) -> int:
    return sum(_TYPE_BIT[t] for t in names if t in _TYPE_BIT)


def table_clean(schedule: Schedule, profile: Profile | str) -> bool:
    """True only if :func:`check` returns no finding for ``profile`` (False: it may or may not).

    Needs the loader's step table (:meth:`~ccxml.loader.model.Schedule.step_table`); every rule of
    :func:`runtime_findings` and :func:`safety_findings` is checked on whole columns, with the
    same conservative per-TB conditions the step-by-step passes use to skip themselves.
    """
    st = schedule.step_table()
    if st is None:
        return False
    tab, bounds = st
    p = _profile(profile)
    legacy = _is_legacy(p)
    s = schedule
    if s.missing or any(issue.fatal for issue in s.lexical):
        return False
    out: list = []
    _header_findings(s, p, legacy, out.append)
    if out:
        return False
    ngpus, nch = s.ngpus, s.nchannels
    gpus = s.gpus
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
    sends, recvs = _type_bits(_SENDS), _type_bits(_RECEIVES)
    tbits_l, bbits_l = tbits.tolist(), bbits.tolist()
    lens_l, somax_l, domax_l = lens.tolist(), somax.tolist(), domax.tolist()
    max_s = p.max_steps_per_tb
    if max(lens_l) > min(max_s, MAX_SUBS):
        return False
    chan_max = _chan_accepted(p)
    # ---- TBs, rank by rank (document order) ---------------------------------------------------
    t = 0
    gpu_of_tb = []
    first_tb = {}                                  # gpu id -> doc index of its first TB
    id_to_doc: dict = {}
    link_out: list = []                            # per TB: (r, send, chan) or None
    link_in: list = []
    for g in gpus:
        r = g.id
        if g.s_chunks < 0 or len(g.tbs) > MAX_SUBS:
            return False
        sizes = (g.i_chunks, g.o_chunks, g.s_chunks)
        ids = [tb.id for tb in g.tbs]
        if sorted(ids) != list(range(len(ids))) or len(ids) > p.max_tbs:
            return False
        nodes = 1 + len(gpus)
        nsend: dict = {}
        nrecv: dict = {}
        first_tb[r] = t
        for tb in g.tbs:
            n = lens_l[t]
            nodes += 1 + n
            snd, rcv, ch = tb.send, tb.recv, tb.chan
            if snd == r or rcv == r or snd < -1 or rcv < -1 or snd >= ngpus or rcv >= ngpus:
                return False
            if not (0 <= ch <= chan_max or (legacy and ch == -1 and snd == rcv == -1)):
                return False
            if (snd >= 0 or rcv >= 0) and ch >= nch:
                return False
            if p.max_chan < ch <= chan_max:
                return False
            bits = tbits_l[t]
            if (snd < 0 and bits & sends) or (rcv < 0 and bits & recvs):
                return False
            if snd >= 0:
                if (ch, snd) in nsend:
                    return False                   # two TBs on one connection
                nsend[(ch, snd)] = tb.id
            if rcv >= 0:
                if (ch, rcv) in nrecv:
                    return False
                nrecv[(ch, rcv)] = tb.id
            smallest = min(sizes[k] for k in range(3) if bbits_l[t] >> k & 1)
            if somax_l[t] > smallest or domax_l[t] > smallest:
                return False
            id_to_doc[(r, tb.id)] = t
            gpu_of_tb.append(r)
            link_out.append((r, snd, ch) if snd >= 0 else None)
            link_in.append((rcv, r, ch) if rcv >= 0 else None)
            t += 1
        if nodes > p.max_nodes:
            return False
        per_chan_s: dict = {}
        per_chan_r: dict = {}
        for ch, _ in nsend:
            per_chan_s[ch] = per_chan_s.get(ch, 0) + 1
        for ch, _ in nrecv:
            per_chan_r[ch] = per_chan_r.get(ch, 0) + 1
        if max(per_chan_s.values(), default=0) > MAX_TBS_PER_CHAN_DIR or \
                max(per_chan_r.values(), default=0) > MAX_TBS_PER_CHAN_DIR:
            return False
    # ---- links: declared at both ends, equal cnt sequences ------------------------------------
    outs = {k: i for i, k in enumerate(link_out) if k is not None}
    ins = {k: i for i, k in enumerate(link_in) if k is not None}
    if outs.keys() != ins.keys():
        return False
    lid = {k: i for i, k in enumerate(outs)}
    out_id = np.array([lid[k] if k is not None else -1 for k in link_out], np.int64)
    in_id = np.array([lid[k] if k is not None else -1 for k in link_in], np.int64)
    tb_of = np.repeat(np.arange(ntb, dtype=np.int64), lens)
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
    # ---- dependencies -------------------------------------------------------------------------
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
        ds = tab.deps[sl][dep_rows].astype(np.int64)
        if ds.min() < 0 or (ds >= lens[tgt]).any():
            return False
        if ((tgt == own) & (ds >= pos[dep_rows])).any():
            return False
        if (hasdep[starts[tgt] + ds] != 1).any():
            return False
    return True
