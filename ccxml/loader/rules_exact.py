"""The exact loader checker: the rules of :mod:`ccxml.loader.catalogue`, step by step.

:class:`ExactChecker` walks a :class:`~ccxml.loader.model.Schedule` the way the runtime's loader
reads it and returns every finding, in a deterministic order:

* :meth:`ExactChecker.runtime_findings` — (a) every reason the runtime rejects the file or fails
  its first launch, in the order the runtime meets them (so the first is the runtime's own first
  complaint);
* :meth:`ExactChecker.safety_findings` — (b) what the loader lets through but makes the schedule
  unsafe.

The per-TB step loops are two methods, :meth:`ExactChecker.tb_runtime` and
:meth:`ExactChecker.tb_safety`. Fast twin: :class:`ccxml.loader.rules_fast.FastChecker`
overrides exactly those two, answering from the TB's columns when it can prove which rules
cannot fire; and :func:`ccxml.loader.rules_fast.table_clean` proves a whole file clean. Both
must give this checker's findings, byte for byte (tests/test_twins.py).
"""
from __future__ import annotations

from ccxml.loader.catalogue import (
    BOUNDS_CHECKED,
    BUFFERS,
    EXEC_COLLS,
    LAUNCH_CODES,
    LEGACY_COLLS,
    MAX_COUNT,
    MAX_SUBS,
    MAX_TBS_PER_CHAN_DIR,
    PROTOS,
    READS,
    RECEIVES,
    SENDS,
    STEP_TYPES,
    WRITES,
    buffer_chunks,
    chan_accepted,
    is_legacy,
    profile_of,
)
from ccxml.loader.model import Schedule, ScheduleGPU
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import MAX_REDUCE_FUSION, Profile, StepType


class Cols:
    """A TB's steps as columns, so most checks run as C-level min/max/set operations."""
    __slots__ = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
                 "hasdep", "line", "types")

    def __init__(self, tb):
        # the loader's columns (or columns built from the step objects): no per-step work
        (self.s, self.type, self.srcbuf, self.srcoff, self.dstbuf, self.dstoff, self.cnt,
         self.depid, self.deps, self.hasdep, self.line) = tb.columns()
        self.types = set(self.type)


class ExactChecker:
    """The loader rules for one runtime profile, applied step by step (see the module)."""

    def __init__(self, profile: Profile | str):
        self.p = profile_of(profile)
        self.legacy = is_legacy(self.p)
        self._cols: dict = {}

    def columns(self, tb) -> Cols:
        """The TB's columns, shared between the runtime and safety passes of this checker."""
        hit = self._cols.get(id(tb))
        if hit is not None and hit[0] is tb:
            return hit[1]
        cols = Cols(tb)
        self._cols[id(tb)] = (tb, cols)      # keeps tb alive, so its id cannot be reused meanwhile
        return cols

    def runtime_findings(self, s: Schedule) -> list[Finding]:
        """(a): every reason the runtime rejects the file or fails its first launch.

        Ordered as the runtime meets them (lexical, header, then rank by rank in document order),
        so the first one is the runtime's own first complaint; launch failures come last.
        """
        p = self.p
        out: list[Finding] = []
        add = out.append
        for issue in s.lexical:
            if issue.fatal:
                add(Finding("lexical", issue.message, line=issue.line))
        header_findings(s, p, self.legacy, add)

        ngpus = s.ngpus
        miss: dict[tuple, list] = {}
        for m in s.missing:
            miss.setdefault((m.element, m.line), []).append(m)
        used_types: set[str] = set()
        ranks = sorted((g for g in s.gpus if 0 <= g.id < ngpus), key=lambda g: g.id)
        for g in ranks:
            self.rank_findings(s, g, ngpus, miss, used_types, add)
        if not any(f.code not in LAUNCH_CODES for f in out):
            bad = sorted(t for t in used_types if t in STEP_TYPES and StepType(t) not in p.step_types)
            if bad:
                add(Finding("rccl-full-ops", f"uses {'/'.join(bad)}: this version of MSCCL build "
                                             f"doesn't support full Ops"))
        return out

    def rank_findings(self, s: Schedule, g: ScheduleGPU, ngpus: int, miss: dict, used_types: set,
                      add) -> None:
        """Runtime findings of rank ``g`` (its own ``<gpu>`` element and TBs)."""
        p, legacy = self.p, self.legacy
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
        chan_max = chan_accepted(p)
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
            cols = self.columns(tb)
            used_types.update(cols.types)
            self.tb_runtime(g, tb, cols, miss, pre, add)
        valid = [x for x in seen if 0 <= x < p.max_tbs]
        gap = next((x for x in range(max(valid) + 1) if x not in seen), None) if valid else None
        if gap is not None:
            add(Finding("tb-id-gap", f"{pre}thread block {gap} is not defined", gpu=r, line=g.line))
        if nodes > p.max_nodes:
            add(Finding("node-budget", f"{pre}{nodes} XML nodes for this rank (max {p.max_nodes}; the "
                                       f"runtime says 'limited to 1024 nodes')", gpu=r, line=g.line))

    def tb_runtime(self, g: ScheduleGPU, tb, cols: Cols, miss: dict, pre: str, add) -> None:
        """Runtime findings of ``tb``'s steps, step by step (``cols``: its columns, unused here;
        the fast twin answers from them)."""
        p = self.p
        r, b = g.id, tb.id
        max_s = p.max_steps_per_tb
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
            chk_src, chk_dst = BOUNDS_CHECKED[t]
            for chk, buf, off, side in ((chk_src, st.srcbuf, st.srcoff, "srcoff"),
                                        (chk_dst, st.dstbuf, st.dstoff, "dstoff")):
                if chk and buf in BUFFERS:
                    n = buffer_chunks(g, buf)
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

    def safety_findings(self, s: Schedule) -> list[Finding]:
        """(b): what the loader lets through but makes the schedule unsafe (§5, §8, §9.1-3, §13).

        Deterministic order: per-GPU checks in document order, then link checks sorted by
        (sender, receiver, chan). Deadlocks, races and postconditions are the interpreter's job.
        """
        p = self.p
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
                if p.max_chan < tb.chan <= chan_accepted(p):
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
                self.tb_safety(g, tbs, tb, add, sent, recvd)
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

    def tb_safety(self, g: ScheduleGPU, tbs: dict, tb, add, sent: dict, recvd: dict) -> None:
        """Safety findings of ``tb``'s steps, step by step; its sends and receives join the
        link sequences ``sent``/``recvd``."""
        p = self.p
        r, b = g.id, tb.id
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
                dep_safety(p, g, tbs, tb, i, st.depid, st.deps, st.line, add)
            if t in SENDS:
                if tb.send < 0:
                    add(Finding("step-without-peer", f"'{t}' sends but the TB has send=-1", gpu=r,
                                tb=b, step=i, line=st.line))
                else:
                    sent.setdefault((r, tb.send, tb.chan), []).append(st.cnt)
            if t in RECEIVES:
                if tb.recv < 0:
                    add(Finding("step-without-peer", f"'{t}' receives but the TB has recv=-1", gpu=r,
                                tb=b, step=i, line=st.line))
                else:
                    recvd.setdefault((tb.recv, r, tb.chan), []).append(st.cnt)
            if t != "nop":
                if st.cnt == 0:
                    add(Finding("cnt-zero", f"'{t}' with cnt=0 moves nothing", gpu=r, tb=b, step=i,
                                line=st.line, severity="warning"))
                for touched, buf, off, side in ((t in READS, st.srcbuf, st.srcoff, "src"),
                                                (t in WRITES, st.dstbuf, st.dstoff, "dst")):
                    if touched and buf in BUFFERS:
                        n = buffer_chunks(g, buf)
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
        tail = len(steps)
        while tail and steps[tail - 1].type == "nop":
            tail -= 1
        dangling = [st for st in steps[tail:] if st.depid >= 0]
        if dangling:
            add(Finding("dangling-nop", f"the TB ends with {len(dangling)} nop dependencies that no "
                        "step carries; the kernel ignores them", gpu=r, tb=b, line=dangling[-1].line,
                        severity="warning"))


def header_findings(s: Schedule, p: Profile, legacy: bool, add) -> None:
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


def dep_safety(p, g, tbs, tb, i, depid, deps, line, add) -> None:
    """Safety findings of step ``i`` of ``tb`` waiting on (tb ``depid``, step ``deps``) of its GPU
    (``tbs``: the GPU's TBs by id)."""
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
