"""Lower a loaded :class:`~ccxml.schedule.Schedule` to the flat program the runtime executes.

This is the interpreter's front half. It decides, once and statically, everything the runtime's
parser decides (msccl-runtime.md §3, §4, §8, §9):

* which ``<step>`` elements become kernel instructions: a ``nop`` is not stored, its dependency is
  attached to the next real step; consecutive ``re`` steps fuse (same ``dstbuf``/``dstoff``/
  ``srcbuf``, later ones ``depid=-1``, a ``hasdep=1`` step ends the chain, at most
  ``MAX_REDUCE_FUSION`` operands, the fused instruction uses the last step's ``cnt``);
* the value each instruction publishes in its TB's flag (the kernel's step counter, which equals
  the XML ``s`` only for well-formed files);
* the physical memory each buffer reference lands in, with the in-place aliasing of input and
  output the runtime applies for the collective (§7) and out-of-bounds accesses;
* the links (sender gpu, receiver gpu, channel) and how many primitive calls each step issues
  (``ceil(cnt / maxAllowedCount)``, §6);
* static link and dependency problems: shared connections, unmatched send/recv sequences, ``cnt``
  mismatches, steps on a missing peer, dependencies on steps that never publish;
* which instructions touch memory another TB of the same GPU also touches, with a write on one
  side: only those need happens-before tracking for the race check.

Nothing here runs the schedule; :mod:`ccxml.interpreter.execute` does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ccxml.collectives import Collective
from ccxml.findings import Finding
from ccxml.schedule import Schedule
from ccxml.wire import CHUNK_EFFECTIVE_BYTES, LINK_CALLS, MAX_COUNT_PER_CALL, MAX_REDUCE_FUSION, Proto

# instruction kinds (ints for a fast dispatch in the execution loop)
K_SEND, K_RECV, K_RCS, K_RRS, K_RRC, K_RRCS, K_CPY, K_RE = range(8)
KIND_OF = {"s": K_SEND, "r": K_RECV, "rcs": K_RCS, "rrs": K_RRS, "rrc": K_RRC, "rrcs": K_RRCS,
           "cpy": K_CPY, "re": K_RE}
KIND_NAME = {v: k for k, v in KIND_OF.items()}
RECEIVES = frozenset({K_RECV, K_RCS, K_RRS, K_RRC, K_RRCS})
SENDS = frozenset({K_SEND, K_RCS, K_RRS, K_RRCS})
READS_SRC = frozenset({K_SEND, K_RRS, K_RRC, K_RRCS, K_CPY, K_RE})
WRITES_DST = frozenset({K_RECV, K_RCS, K_RRC, K_RRCS, K_CPY, K_RE})

BUFFER_NAMES = {"i": "input", "o": "output", "s": "scratch"}


class NotExecutable(ValueError):
    """The schedule cannot be run at all (unknown step type or buffer, no GPUs, ...)."""


class Instr:
    """One kernel instruction (a real step, or a fused ``re`` chain).

    ``deps`` are ((global tb, value), ...) from preceding nops and the step itself; ``pub`` is the
    value published in the TB flag (-1 if hasdep=0); ``calls`` the primitive calls on the link(s).
    ``src_phys``/``src_starts``/``dst_phys``/``dst_start`` address physical memory (set per call
    form by :func:`place`; -1 when the side is not accessed or out of bounds); ``tracked`` lists
    the (location, is_write) accesses to memory shared between TBs and ``bit`` its clock bit.
    """

    __slots__ = ("kind", "s", "line", "cnt", "calls", "deps", "pub", "srcbuf", "srcoffs", "dstbuf",
                 "dstoff", "s_last", "src_phys", "src_starts", "dst_phys", "dst_start", "tracked", "bit")

    def __init__(self, kind, s, line, cnt, deps, pub, srcbuf, srcoff, dstbuf, dstoff):
        self.kind = kind
        self.s = s
        self.s_last = s
        self.line = line
        self.cnt = cnt
        self.calls = 0
        self.deps = deps
        self.pub = pub
        self.srcbuf = srcbuf
        self.srcoffs = (srcoff,)
        self.dstbuf = dstbuf
        self.dstoff = dstoff
        self.src_phys = -1
        self.src_starts = ()
        self.dst_phys = -1
        self.dst_start = -1
        self.tracked = ()
        self.bit = 0


@dataclass(slots=True)
class TBProg:
    gpu: int
    id: int
    send: int
    recv: int
    chan: int
    instrs: list
    out_link: int = -1
    in_link: int = -1
    line: int = 0


@dataclass(slots=True)
class Link:
    src: int
    dst: int
    chan: int
    senders: list = field(default_factory=list)     # global tb ids
    receivers: list = field(default_factory=list)

    def name(self) -> str:
        return f"{self.src}->{self.dst} chan {self.chan}"


@dataclass(slots=True)
class PhysBuffer:
    gpu: int
    name: str          # "input", "output", "input=output", "scratch"
    size: int
    loc_base: int = 0


@dataclass
class Program:
    ngpus: int
    gpu_ids: list
    tbs: list                      # TBProg by global id
    tb_index: dict                 # (gpu, tb id) -> global id
    links: list
    buffers: list                  # PhysBuffer
    # buffer letter -> (physical index, offset) per gpu
    layout: dict
    cap: int                       # link capacity in calls (bounded model)
    max_allowed: int
    findings: list
    nsteps: int
    ntracked: int
    inplace: bool
    collective: Collective | None
    input_bits: dict               # gpu -> first contribution bit of its input
    schedule: Schedule | None = None

    def where(self, t: int, ins: Instr | None = None) -> dict:
        tb = self.tbs[t]
        d = {"gpu": tb.gpu, "tb": tb.id}
        if ins is not None:
            d["step"] = ins.s
            d["line"] = ins.line or None
        return d


def max_allowed_count(schedule: Schedule) -> int:
    """``maxAllowedCount`` at the largest message size the file accepts (§6).

    ``maxBytes == 0`` means no upper bound, so the worst case (1 chunk per call) is assumed.
    """
    try:
        proto = Proto(schedule.proto)
    except ValueError:
        proto = Proto.SIMPLE
    c = schedule.nchunksperloop
    max_bytes = schedule.max_bytes
    if max_bytes <= 0 or c <= 0:
        return 1
    bytes_per_chunk = max_bytes / c
    return max(1, min(MAX_COUNT_PER_CALL, int(CHUNK_EFFECTIVE_BYTES[proto] // bytes_per_chunk)))


def link_capacity(schedule: Schedule) -> int:
    try:
        return LINK_CALLS[Proto(schedule.proto)]
    except ValueError:
        return LINK_CALLS[Proto.SIMPLE]


def lower(schedule: Schedule) -> Program:
    """Lower ``schedule`` to instructions, links and static findings (independent of call form).

    Guarantees: every dependency names a global TB id (or -1 for a TB that does not exist);
    static findings are in ``Program.findings`` in document order. Memory is laid out later by
    :func:`place`.
    """
    findings: list[Finding] = []
    gpus = schedule.gpus
    if not gpus:
        raise NotExecutable("the file has no <gpu> elements")
    ngpus = schedule.ngpus
    gpu_ids = [g.id for g in gpus]
    if len(set(gpu_ids)) != len(gpu_ids):
        raise NotExecutable("a gpu id appears twice")

    tbs: list[TBProg] = []
    tb_index: dict[tuple[int, int], int] = {}
    for g in gpus:
        for tb in g.tbs:
            if (g.id, tb.id) in tb_index:
                raise NotExecutable(f"gpu {g.id}: tb id {tb.id} appears twice")
            tb_index[(g.id, tb.id)] = len(tbs)
            tbs.append(TBProg(g.id, tb.id, tb.send, tb.recv, tb.chan, [], line=tb.line))

    nsteps = 0
    raw_deps: list[tuple] = []   # (waiter t, instr, gpu, depid, deps, s, line)
    kind_of = KIND_OF
    t = -1
    for g in gpus:
        gid = g.id
        for tb in g.tbs:
            t += 1
            instrs = tbs[t].instrs
            append = instrs.append
            counter = 0
            pending: list = []
            chain = 0
            prev = None
            nsteps += len(tb.steps)
            for st in tb.steps:
                typ = st.type
                if typ == "nop":
                    if st.depid >= 0:
                        pending.append((st.depid, st.deps, st.line))
                    chain = 0
                    continue
                kind = kind_of.get(typ)
                if kind is None:
                    raise NotExecutable(f"gpu {gid} tb {tb.id} step {st.s}: unknown step type {typ!r}")
                srcbuf, dstbuf, depid, hasdep = st.srcbuf, st.dstbuf, st.depid, st.hasdep
                if srcbuf not in BUFFER_NAMES or dstbuf not in BUFFER_NAMES:
                    raise NotExecutable(f"gpu {gid} tb {tb.id} step {st.s}: srcbuf/dstbuf "
                                        f"{srcbuf!r}/{dstbuf!r} must be i, o or s")
                if (chain and kind == K_RE and depid < 0 and not pending and prev.dstbuf == dstbuf
                        and prev.dstoff == st.dstoff and prev.srcbuf == srcbuf
                        and chain < MAX_REDUCE_FUSION):
                    prev.srcoffs += (st.srcoff,)
                    prev.cnt = st.cnt
                    prev.s_last = st.s
                    if hasdep:
                        prev.pub = counter
                        chain = 0
                    else:
                        chain += 1
                    counter += 1
                    continue
                if pending or depid >= 0:
                    if depid >= 0:
                        pending.append((depid, st.deps, st.line))
                    counter += len(pending) - 1
                    for d in pending:
                        raw_deps.append((t, len(instrs), gid, d[0], d[1], st.s, d[2] or st.line))
                    pending = []
                prev = Instr(kind, st.s, st.line, st.cnt, (), counter if hasdep else -1,
                             srcbuf, st.srcoff, dstbuf, st.dstoff)
                append(prev)
                counter += 1
                chain = 1 if (kind == K_RE and not hasdep) else 0
            if pending:
                findings.append(Finding(
                    "dangling-nop", f"the TB ends with {len(pending)} nop dependencies that no step "
                    "carries; the kernel ignores them", gpu=gid, tb=tb.id, line=pending[-1][2] or None,
                    severity="warning"))

    # ---- dependencies -------------------------------------------------------------------
    if raw_deps:
        last_pub = [max((ins.pub for ins in tb.instrs), default=-1) for tb in tbs]
        hasdep_at: dict[int, dict] = {}
        sched_tbs = [tb for g in gpus for tb in g.tbs]
        dep_lists: dict[tuple[int, int], list] = {}
        for t, idx, gpu, depid, dval, s, line in raw_deps:
            x = tb_index.get((gpu, depid))
            where = dict(gpu=gpu, tb=tbs[t].id, step=s, line=line or None)
            if x is None:
                findings.append(Finding("bad-dependency", f"depends on tb {depid}, which gpu {gpu} does "
                                        "not have; the step can never run", **where))
                x = -1
            elif last_pub[x] < dval:
                findings.append(Finding(
                    "dep-never-published", f"depends on tb {depid} step {dval}, but tb {depid} publishes "
                    f"no step >= {dval} (hasdep=1 missing or step absent): the waiter hangs", **where))
            else:
                hd = hasdep_at.get(x)
                if hd is None:
                    hd = hasdep_at[x] = {st.s: bool(st.hasdep) and st.type != "nop"
                                         for st in reversed(sched_tbs[x].steps)}
                if not hd.get(dval, False):
                    findings.append(Finding(
                        "dep-late-release", f"depends on tb {depid} step {dval}, which has hasdep=0 or is "
                        "a nop; it is released only by a later publishing step", severity="warning",
                        **where))
            dep_lists.setdefault((t, idx), []).append((x, dval))
        for (t, idx), lst in dep_lists.items():
            tbs[t].instrs[idx].deps = tuple(lst)

    # ---- links --------------------------------------------------------------------------
    max_allowed = max_allowed_count(schedule)
    links: list[Link] = []
    link_index: dict[tuple[int, int, int], int] = {}
    gpu_set = set(gpu_ids)
    for t, tb in enumerate(tbs):
        kinds = {ins.kind for ins in tb.instrs}
        uses_send = not kinds.isdisjoint(SENDS)
        uses_recv = not kinds.isdisjoint(RECEIVES)
        if uses_send or uses_recv:
            for ins in tb.instrs:
                if ins.kind in SENDS or ins.kind in RECEIVES:
                    ins.calls = -(-ins.cnt // max_allowed) if ins.cnt > 0 else 0
        for peer, uses, what in ((tb.send, uses_send, "send"), (tb.recv, uses_recv, "recv")):
            if uses and peer < 0:
                findings.append(Finding("no-peer", f"a step {what}s but the TB has {what}=-1",
                                        gpu=tb.gpu, tb=tb.id, line=tb.line or None))
            elif peer >= 0 and (peer not in gpu_set or peer == tb.gpu or (ngpus and peer >= ngpus)):
                findings.append(Finding("bad-peer", f"{what} peer {peer} is not another GPU of the file",
                                        gpu=tb.gpu, tb=tb.id, line=tb.line or None))
        for peer, out in ((tb.send, True), (tb.recv, False)):
            if peer < 0 or peer == tb.gpu:
                continue
            key = (tb.gpu, peer, tb.chan) if out else (peer, tb.gpu, tb.chan)
            k = link_index.get(key)
            if k is None:
                k = link_index[key] = len(links)
                links.append(Link(*key))
            if out:
                tb.out_link = k
                links[k].senders.append(t)
            else:
                tb.in_link = k
                links[k].receivers.append(t)

    for ln in links:
        for side, lst in (("send", ln.senders), ("recv", ln.receivers)):
            if len(lst) > 1:
                who = ", ".join(f"tb {tbs[x].id}" for x in lst)
                findings.append(Finding(
                    "shared-connection", f"{who} all use the {side} side of link {ln.name()}: they share "
                    "one FIFO, which corrupts data or hangs", gpu=tbs[lst[0]].gpu, tb=tbs[lst[1]].id))
        sends = [(t, ins) for t in ln.senders for ins in tbs[t].instrs if ins.kind in SENDS]
        recvs = [(t, ins) for t in ln.receivers for ins in tbs[t].instrs if ins.kind in RECEIVES]
        for (ts, a), (tr, b) in zip(sends, recvs):
            if a.cnt != b.cnt:
                findings.append(Finding(
                    "cnt-mismatch", f"link {ln.name()}: gpu {tbs[ts].gpu} tb {tbs[ts].id} step {a.s} sends "
                    f"cnt={a.cnt} but the matching receive (gpu {tbs[tr].gpu} tb {tbs[tr].id} step {b.s}) "
                    f"has cnt={b.cnt}", gpu=tbs[tr].gpu, tb=tbs[tr].id, step=b.s, line=b.line or None))
                break
        if len(ln.senders) > 1 or len(ln.receivers) > 1:
            t0 = (ln.receivers or ln.senders)[0]
            findings.append(Finding(
                "unmatched-link", f"link {ln.name()} has {len(ln.senders)} sending and "
                f"{len(ln.receivers)} receiving TBs: their steps cannot be matched one to one",
                gpu=tbs[t0].gpu, tb=tbs[t0].id))
        elif len(sends) != len(recvs):
            if not ln.receivers:
                msg = (f"link {ln.name()}: {len(sends)} send steps but no TB on gpu {ln.dst} receives "
                       f"from gpu {ln.src} on chan {ln.chan}")
            elif not ln.senders:
                msg = (f"link {ln.name()}: {len(recvs)} receive steps but no TB on gpu {ln.src} sends "
                       f"to gpu {ln.dst} on chan {ln.chan}")
            else:
                msg = f"link {ln.name()}: {len(sends)} send-side steps but {len(recvs)} receive-side steps"
            t0 = (ln.receivers or ln.senders)[0]
            findings.append(Finding("unmatched-link", msg, gpu=tbs[t0].gpu, tb=tbs[t0].id))

    return Program(ngpus=ngpus, gpu_ids=gpu_ids, tbs=tbs, tb_index=tb_index, links=links,
                   buffers=[], layout={}, cap=link_capacity(schedule), max_allowed=max_allowed,
                   findings=findings, nsteps=nsteps, ntracked=0, inplace=False, collective=None,
                   input_bits={}, schedule=schedule)


def place(prog: Program, collective: Collective | None, inplace: bool) -> list[Finding]:
    """Lay out memory for one call form and address every instruction's accesses.

    In-place calls alias input and output as the runtime does for the collective (§7; an unknown
    collective aliases them at offset 0). Buffer sizes come from the collective (the declared
    ``i_chunks``/``o_chunks`` otherwise; scratch from ``s_chunks``). Returns ``out-of-bounds``
    findings; such sides are left unaccessed. Marks instructions that touch a location another TB
    of the same GPU also touches, with a write on some side, as tracked (race candidates).
    Re-placing a Program for another form overwrites the previous placement.
    """
    findings: list[Finding] = []
    gpus = prog.schedule.gpus
    buffers: list[PhysBuffer] = []
    layout: dict[int, dict] = {}
    input_bits: dict[int, int] = {}
    nbits = 0
    for g in gpus:
        r = g.id
        if collective is not None and 0 <= r < collective.ngpus:
            n_in, n_out = collective.input_chunks(r), collective.output_chunks(r)
        else:
            n_in, n_out = max(g.i_chunks, 0), max(g.o_chunks, 0)
        input_bits[r] = nbits
        nbits += n_in
        lay = {}
        if inplace:
            d = collective.inplace_input_offset(r) if collective is not None else 0
            if d >= 0:   # input chunk j is output chunk j + d
                buffers.append(PhysBuffer(r, "input=output", max(n_out, n_in + d)))
                lay["o"] = (len(buffers) - 1, 0)
                lay["i"] = (len(buffers) - 1, d)
            else:        # output chunk m is input chunk m - d
                buffers.append(PhysBuffer(r, "input=output", max(n_in, n_out - d)))
                lay["i"] = (len(buffers) - 1, 0)
                lay["o"] = (len(buffers) - 1, -d)
        else:
            buffers.append(PhysBuffer(r, "input", n_in))
            lay["i"] = (len(buffers) - 1, 0)
            buffers.append(PhysBuffer(r, "output", n_out))
            lay["o"] = (len(buffers) - 1, 0)
        buffers.append(PhysBuffer(r, "scratch", max(g.s_chunks, 0)))
        lay["s"] = (len(buffers) - 1, 0)
        lay["_sizes"] = {"i": n_in, "o": n_out, "s": max(g.s_chunks, 0)}
        layout[r] = lay
    nloc = 0
    for b in buffers:
        b.loc_base = nloc
        nloc += b.size

    cands: list = []
    owner = [-2] * nloc            # location -> the one tb touching it, -1 when several, -2 none
    written = bytearray(nloc)
    for t, tb in enumerate(prog.tbs):
        lay = layout[tb.gpu]
        for ins in tb.instrs:
            kind, cnt = ins.kind, ins.cnt
            ins.src_phys = ins.dst_phys = -1
            ins.tracked = ()
            ins.bit = 0
            if cnt <= 0:
                continue
            acc = None
            if kind in READS_SRC:
                k, base = lay[ins.srcbuf]
                b = buffers[k]
                starts = []
                for off in ins.srcoffs:
                    if off < 0 or base + off + cnt > b.size:
                        findings.append(_oob(tb, ins, "src", ins.srcbuf, off, cnt, b.size - base))
                        starts = None
                        break
                    starts.append(base + off)
                if starts is not None:
                    ins.src_phys, ins.src_starts = k, tuple(starts)
                    acc = [(b.loc_base + a, False) for a in starts]
            if kind in WRITES_DST:
                k, base = lay[ins.dstbuf]
                b = buffers[k]
                off = ins.dstoff
                if off < 0 or base + off + cnt > b.size:
                    findings.append(_oob(tb, ins, "dst", ins.dstbuf, off, cnt, b.size - base))
                else:
                    ins.dst_phys, ins.dst_start = k, base + off
                    l0 = b.loc_base + base + off
                    written[l0:l0 + cnt] = b"\x01" * cnt
                    if acc is None:
                        acc = [(l0, True)]
                    else:
                        acc.append((l0, True))
            if acc is not None:
                cands.append((t, ins, acc))
                for l0, _w in acc:
                    for l in range(l0, l0 + cnt):
                        o = owner[l]
                        if o == -2:
                            owner[l] = t
                        elif o != t:
                            owner[l] = -1

    ntracked = 0
    if -1 in owner:
        for t, ins, acc in cands:
            cnt = ins.cnt
            tr = [(l, w) for l0, w in acc for l in range(l0, l0 + cnt) if owner[l] == -1 and written[l]]
            if tr:
                # reads before writes on one location, so a read-modify-write (re) is seen as such
                tr.sort()
                ins.tracked = tuple(tr)
                ins.bit = 1 << ntracked
                ntracked += 1

    prog.buffers, prog.layout, prog.input_bits = buffers, layout, input_bits
    prog.ntracked, prog.inplace, prog.collective = ntracked, inplace, collective
    return findings


def build(schedule: Schedule, collective: Collective | None, inplace: bool) -> Program:
    """:func:`lower` then :func:`place`; the placement's findings are appended to ``findings``."""
    prog = lower(schedule)
    prog.findings.extend(place(prog, collective, inplace))
    return prog


def _oob(tb: TBProg, ins: Instr, side: str, buf: str, off: int, cnt: int, size: int) -> Finding:
    return Finding("out-of-bounds", f"{KIND_NAME[ins.kind]} {side} {BUFFER_NAMES[buf]}[{off}..{off + cnt}) "
                   f"is outside the buffer's {size} chunks", gpu=tb.gpu, tb=tb.id, step=ins.s,
                   line=ins.line or None)
