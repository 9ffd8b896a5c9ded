"""Lower a loaded :class:`~ccxml.loader.model.Schedule` to the flat program the runtime executes.

This is the interpreter's front half. It decides, once, how the runtime's parser stores the file
(msccl-runtime.md §3, §4, §8, §9):

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
* accesses outside the buffers of the call form (``out-of-bounds``, by :func:`place`: the sizes
  come from the collective, so only the call form knows them);
* which instructions touch memory another TB of the same GPU also touches, with a write on one
  side: only those need happens-before tracking for the race check.

Instructions are stored as columns (parallel lists indexed by a global instruction id ``g``;
TB ``t`` owns ids ``tbs[t].start`` to ``tbs[t].end - 1`` in program order), so the execution loop
does list indexing only. Nothing here runs the schedule; :mod:`ccxml.interpreter.execute` does.

Fast twin: :mod:`ccxml.interpreter.table` (:func:`~ccxml.interpreter.table.lower_table`,
:func:`~ccxml.interpreter.table.place_table`) builds the same Program from the loader's numpy step
table where that is simple, or returns None and this module runs (tests/test_twins.py); and
:mod:`ccxml.interpreter.plain` lowers a TB of plain steps in bulk (twin of :func:`lower_tb`).

The static rules (peers, links, dependencies, declared offsets) are not checked here: they are
the loader's (:mod:`ccxml.loader.catalogue`), reported once by ``verify`` (docs/findings.md).
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import compress
from operator import add, mul, sub

from ccxml.loader.model import Schedule
from ccxml.vocab import wire
from ccxml.vocab.collectives import Collective
from ccxml.vocab.errors import NotExecutable
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import LINK_CALLS, MAX_REDUCE_FUSION, Proto

# instruction kinds (ints for a fast dispatch in the execution loop)
K_SEND, K_RECV, K_RCS, K_RRS, K_RRC, K_RRCS, K_CPY, K_RE = range(8)
#: data kind of an instruction that moves nothing (cnt <= 0)
K_NONE = 8
KIND_OF = {"s": K_SEND, "r": K_RECV, "rcs": K_RCS, "rrs": K_RRS, "rrc": K_RRC, "rrcs": K_RRCS,
           "cpy": K_CPY, "re": K_RE}
KIND_NAME = {v: k for k, v in KIND_OF.items()}
RECEIVES = frozenset({K_RECV, K_RCS, K_RRS, K_RRC, K_RRCS})
SENDS = frozenset({K_SEND, K_RCS, K_RRS, K_RRCS})
READS_SRC = frozenset({K_SEND, K_RRS, K_RRC, K_RRCS, K_CPY, K_RE})
WRITES_DST = frozenset({K_RECV, K_RCS, K_RRC, K_RRCS, K_CPY, K_RE})
#: per kind (index), as lists for the hot loops
IS_RECV = [k in RECEIVES for k in range(K_NONE + 1)]
IS_SEND = [k in SENDS for k in range(K_NONE + 1)]
IS_LINK = [a or b for a, b in zip(IS_RECV, IS_SEND)]
IS_READ = [k in READS_SRC for k in range(K_NONE + 1)]
IS_WRITE = [k in WRITES_DST for k in range(K_NONE + 1)]
#: per kind: 1 if it sends, + 2 if it receives (the control run's ``op`` of a link instruction)
LINK_OP = [int(IS_SEND[k]) + 2 * int(IS_RECV[k]) for k in range(K_NONE + 1)]

BUFFER_NAMES = {"i": "input", "o": "output", "s": "scratch"}


@dataclass(slots=True)
class TBProg:
    gpu: int
    id: int
    send: int
    recv: int
    chan: int
    start: int = 0                 # first global instruction id
    end: int = 0                   # one past the last
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


@dataclass(eq=False)
class Program:
    ngpus: int
    gpu_ids: list
    tbs: list                      # TBProg by global id
    tb_index: dict                 # (gpu, tb id) -> global id
    links: list
    cap: int                       # link capacity in calls (bounded model)
    max_allowed: int
    findings: list
    nsteps: int
    schedule: Schedule | None
    # ---- instruction columns (global id g) -------------------------------------------------
    kind: list = field(default_factory=list)
    s: list = field(default_factory=list)          # XML s of the (first) step
    line: list = field(default_factory=list)
    cnt: list = field(default_factory=list)
    calls: list = field(default_factory=list)      # primitive calls; 0 for local instructions
    op: list = field(default_factory=list)         # 0 if calls == 0, else LINK_OP of the kind
    pub: list = field(default_factory=list)        # value published in the TB flag, -1 if none
    deps: list = field(default_factory=list)       # None or ((global tb or -1, value), ...)
    srcbuf: list = field(default_factory=list)
    srcoff: list = field(default_factory=list)
    dstbuf: list = field(default_factory=list)
    dstoff: list = field(default_factory=list)
    tb_of: list = field(default_factory=list)      # g -> global tb
    fused: dict = field(default_factory=dict)      # g -> all srcoffs of a fused re chain
    # ---- per call form (set by place) -----------------------------------------------------
    buffers: list = field(default_factory=list)    # PhysBuffer
    layout: dict = field(default_factory=dict)     # gpu -> {letter: (phys index, offset), ...}
    src_loc: list = field(default_factory=list)    # absolute location of the source, -1: none
    dst_loc: list = field(default_factory=list)
    dkind: list = field(default_factory=list)      # kind, or K_NONE when nothing moves
    tracked: dict = field(default_factory=dict)    # g -> ((location, is_write), ...)
    bit: dict = field(default_factory=dict)        # g -> clock bit
    ntracked: int = 0
    nloc: int = 0
    inplace: bool = False
    collective: Collective | None = None
    input_bits: dict = field(default_factory=dict)     # gpu -> first global input chunk number
    gpu_pos: dict = field(default_factory=dict)        # gpu id -> position in the file
    control: dict = field(default_factory=dict)        # cap -> execute.Control (form-independent)
    #: numpy columns instead of the lists above (ccxml.interpreter.table builds these)
    arrays: dict | None = None

    @property
    def ninstr(self) -> int:
        return len(self.kind) if self.arrays is None else len(self.arrays["kind"])

    def where(self, t: int, g: int | None = None) -> dict:
        tb = self.tbs[t]
        d = {"gpu": tb.gpu, "tb": tb.id}
        if g is not None:
            d["step"] = self.s[g]
            d["line"] = self.line[g] or None
        return d


def max_allowed_count(schedule: Schedule) -> int:
    """``maxAllowedCount`` at the largest message size the file accepts (§6).

    ``maxBytes == 0`` means no upper bound, so the worst case (1 chunk per call) is assumed.
    """
    try:
        proto = Proto(schedule.proto)
    except ValueError:
        proto = Proto.SIMPLE
    return wire.max_allowed_count(proto, schedule.max_bytes, schedule.nchunksperloop)


def link_capacity(schedule: Schedule) -> int:
    try:
        return LINK_CALLS[Proto(schedule.proto)]
    except ValueError:
        return LINK_CALLS[Proto.SIMPLE]


def connect(tb: TBProg, t: int, links: list, link_index: dict) -> None:
    """Attach TB ``t`` to the links of its send and recv peers (created on first use)."""
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


@dataclass(slots=True)
class Columns:
    """The instruction columns :func:`lower` builds, one list per :class:`Program` column, plus
    the dependencies as written (``(g, gpu, depid, deps)``, resolved to TBs at the end)."""
    kind: list = field(default_factory=list)
    s: list = field(default_factory=list)
    line: list = field(default_factory=list)
    cnt: list = field(default_factory=list)
    pub: list = field(default_factory=list)
    deps: list = field(default_factory=list)
    srcbuf: list = field(default_factory=list)
    srcoff: list = field(default_factory=list)
    dstbuf: list = field(default_factory=list)
    dstoff: list = field(default_factory=list)
    tb_of: list = field(default_factory=list)
    fused: dict = field(default_factory=dict)
    raw_deps: list = field(default_factory=list)


def lower(schedule: Schedule, lower_tb_fast=None) -> Program:
    """Lower ``schedule`` to instructions and links (independent of call form).

    Guarantees: every dependency names a global TB id (or -1 for a TB that does not exist).
    Memory is laid out later by :func:`place`. The static rules (peers, links, dependencies,
    offsets) are the loader's (:mod:`ccxml.loader.catalogue`): a file that breaks them is lowered
    as the runtime would run it, and ``Program.findings`` stays empty. ``lower_tb_fast(columns,
    t, gpu, steps)`` is a fast twin of :func:`lower_tb` tried first for each TB (True: it lowered
    the TB; :func:`ccxml.interpreter.plain.lower_plain` passes it).
    """
    gpus = schedule.gpus
    if not gpus:
        raise NotExecutable("the file has no <gpu> elements")
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
            tbs.append(TBProg(g.id, tb.id, tb.send, tb.recv, tb.chan, line=tb.line))
    c = Columns()
    nsteps = 0
    for t, (gid, tb) in enumerate((g.id, tb) for g in gpus for tb in g.tbs):
        steps = tb.columns()
        nsteps += len(steps[0])
        tbs[t].start = len(c.kind)
        if lower_tb_fast is None or not lower_tb_fast(c, t, gid, steps):
            lower_tb(c, t, gid, tb.id, steps)
        tbs[t].end = len(c.kind)
    dep_lists: dict[int, list] = {}
    for g, gpu, depid, dval in c.raw_deps:
        dep_lists.setdefault(g, []).append((tb_index.get((gpu, depid), -1), dval))
    for g, lst in dep_lists.items():
        c.deps[g] = tuple(lst)
    max_allowed = max_allowed_count(schedule)
    calls = link_calls(c.kind, c.cnt, tbs, max_allowed)
    links: list[Link] = []
    link_index: dict[tuple[int, int, int], int] = {}
    for t, tb in enumerate(tbs):
        connect(tb, t, links, link_index)
    return Program(ngpus=schedule.ngpus, gpu_ids=gpu_ids, tbs=tbs, tb_index=tb_index, links=links,
                   cap=link_capacity(schedule), max_allowed=max_allowed, findings=[],
                   nsteps=nsteps, schedule=schedule, kind=c.kind, s=c.s, line=c.line, cnt=c.cnt,
                   calls=calls, op=list(map(mul, map(LINK_OP.__getitem__, c.kind), map(bool, calls))),
                   pub=c.pub, deps=c.deps, srcbuf=c.srcbuf, srcoff=c.srcoff, dstbuf=c.dstbuf,
                   dstoff=c.dstoff, tb_of=c.tb_of, fused=c.fused)


def lower_tb(c: Columns, t: int, gid: int, tb_id: int, steps: tuple) -> None:
    """Append TB ``t``'s instructions to ``c``, step by step, as the runtime's parser stores them
    (§4, §8): a ``nop`` is not stored and its dependency moves to the next real step (a TB that
    ends with nops drops theirs); consecutive ``re`` steps fuse; the published value is the
    kernel's step counter, which counts every step but a fused one."""
    cs, ctype, csb, cso, cdb, cdo, ccnt, cdepid, cdeps, chasdep, cline = steps
    counter = 0
    pending: list = []              # (depid, deps) of the nops before the next real step
    chain = 0                       # operands of the open re chain (0: none open)
    prev = -1
    for j in range(len(cs)):
        typ, depid = ctype[j], cdepid[j]
        if typ == "nop":
            if depid >= 0:
                pending.append((depid, cdeps[j]))
            chain = 0
            continue
        kind = KIND_OF.get(typ)
        if kind is None:
            raise NotExecutable(f"gpu {gid} tb {tb_id} step {cs[j]}: unknown step type {typ!r}")
        srcbuf, dstbuf, hasdep = csb[j], cdb[j], chasdep[j]
        if srcbuf not in BUFFER_NAMES or dstbuf not in BUFFER_NAMES:
            raise NotExecutable(f"gpu {gid} tb {tb_id} step {cs[j]}: srcbuf/dstbuf "
                                f"{srcbuf!r}/{dstbuf!r} must be i, o or s")
        if (chain and kind == K_RE and depid < 0 and not pending and c.dstbuf[prev] == dstbuf
                and c.dstoff[prev] == cdo[j] and c.srcbuf[prev] == srcbuf
                and chain < MAX_REDUCE_FUSION):
            # fused into the open chain: one more operand, the last step's cnt
            c.fused[prev] = c.fused.get(prev, (c.srcoff[prev],)) + (cso[j],)
            c.cnt[prev] = ccnt[j]
            if hasdep:
                c.pub[prev] = counter
                chain = 0
            else:
                chain += 1
            counter += 1
            continue
        g = len(c.kind)
        if depid >= 0:
            pending.append((depid, cdeps[j]))
        if pending:
            counter += len(pending) - 1
            c.raw_deps.extend((g, gid, d, v) for d, v in pending)
            pending = []
        c.kind.append(kind)
        c.s.append(cs[j])
        c.line.append(cline[j])
        c.cnt.append(ccnt[j])
        c.pub.append(counter if hasdep else -1)
        c.deps.append(None)
        c.srcbuf.append(srcbuf)
        c.srcoff.append(cso[j])
        c.dstbuf.append(dstbuf)
        c.dstoff.append(cdo[j])
        c.tb_of.append(t)
        prev = g
        counter += 1
        chain = 1 if (kind == K_RE and not hasdep) else 0


def link_calls(K: list, CN: list, tbs: list, max_allowed: int) -> list:
    """Primitive calls per instruction: ``ceil(cnt / maxAllowedCount)`` for a link step (none
    for cnt <= 0), 0 for a local one (§6)."""
    calls = [0] * len(K)
    for tb in tbs:
        a, b = tb.start, tb.end
        kinds = set(K[a:b])
        if kinds.isdisjoint(SENDS) and kinds.isdisjoint(RECEIVES):
            continue
        if max_allowed == 1 and kinds <= RECEIVES | SENDS:
            # every step is a link step and a call carries one chunk: calls = max(cnt, 0)
            calls[a:b] = CN[a:b] if min(CN[a:b]) >= 0 else [x if x > 0 else 0 for x in CN[a:b]]
            continue
        for g in range(a, b):
            if IS_LINK[K[g]]:
                x = CN[g]
                calls[g] = -(-x // max_allowed) if x > 0 else 0
    return calls


def dep_sources(prog: Program) -> dict:
    """For each instruction with dependencies: the instructions whose completion releases it.

    TB x releases a wait for value k with its first instruction (program order) that publishes
    a value >= k (flags are monotonic and the step counter increases along a TB). -1 when no
    instruction of x does.
    """
    out: dict[int, tuple] = {}
    pubs: dict[int, tuple] = {}
    PUB = prog.pub
    for g, dl in enumerate(prog.deps):
        if dl is None:
            continue
        srcs = []
        for x, k in dl:
            if x < 0:
                srcs.append(-1)
                continue
            pl = pubs.get(x)
            if pl is None:
                tb = prog.tbs[x]
                ids = [h for h in range(tb.start, tb.end) if PUB[h] >= 0]
                pl = pubs[x] = ([PUB[h] for h in ids], ids)
            i = bisect_left(pl[0], k)
            srcs.append(pl[1][i] if i < len(pl[1]) else -1)
        out[g] = tuple(srcs)
    return out


def layout_memory(gpus, collective: Collective | None, inplace: bool):
    """(buffers, layout, input_bits, nloc) of one call form: the physical buffers of every
    ``<gpu>`` in order, where each letter lands (``layout[gpu][letter] = (buffer, offset)``,
    plus ``"_sizes"``), the first global input chunk number per gpu, and the number of
    locations. See :func:`place`."""
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

    return buffers, layout, input_bits, nloc


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
    buffers, layout, input_bits, nloc = layout_memory(prog.schedule.gpus, collective, inplace)

    K, CN, SB, SO, DB, DO = prog.kind, prog.cnt, prog.srcbuf, prog.srcoff, prog.dstbuf, prog.dstoff
    N = len(K)
    src_loc = [-1] * N
    dst_loc = [-1] * N
    dkind = list(K)
    fused = prog.fused
    # per gpu: the locations each TB touches (to find the shared ones) and the written ones
    touched_by_gpu: dict[int, list] = {}
    touched_of: dict[int, set] = {}
    tbs_on_gpu: dict[int, int] = {}
    bulk: set = set()              # TBs addressed by _place_bulk
    for tb in prog.tbs:
        if tb.end > tb.start:
            tbs_on_gpu[tb.gpu] = tbs_on_gpu.get(tb.gpu, 0) + 1
    written_by_gpu: dict[int, set] = {}
    for t, tb in enumerate(prog.tbs):
        a, b = tb.start, tb.end
        if a == b:
            continue
        lay = layout[tb.gpu]
        # per letter: first valid location, one past the last, base location of offset 0
        lim = {}
        for letter in ("i", "o", "s"):
            k, base = lay[letter]
            buf = buffers[k]
            lim[letter] = (buf.loc_base + base, buf.loc_base + buf.size, buf.size - base)
        # which locations a TB touches matters only when its GPU runs other TBs
        touched = written = None
        if tbs_on_gpu[tb.gpu] > 1:
            touched, written = set(), set()
        if _place_bulk(K, CN, SB, SO, DB, DO, fused, a, b, lim, src_loc, dst_loc, touched, written):
            bulk.add(t)
        else:
            if touched is None:
                touched, written = set(), set()
            for g in range(a, b):
                kd, cnt = K[g], CN[g]
                if cnt <= 0:
                    continue
                if IS_READ[kd]:
                    l0, l1, size = lim[SB[g]]
                    offs = fused.get(g) or (SO[g],)
                    ok = True
                    for off in offs:
                        if off < 0 or l0 + off + cnt > l1:
                            findings.append(_oob(prog, t, g, "src", SB[g], off, cnt, size))
                            ok = False
                            break
                    if ok:
                        src_loc[g] = l0 + offs[0]
                        for off in offs:
                            touched.update(range(l0 + off, l0 + off + cnt))
                if IS_WRITE[kd]:
                    l0, l1, size = lim[DB[g]]
                    off = DO[g]
                    if off < 0 or l0 + off + cnt > l1:
                        findings.append(_oob(prog, t, g, "dst", DB[g], off, cnt, size))
                    else:
                        dst_loc[g] = l0 + off
                        touched.update(range(l0 + off, l0 + off + cnt))
                        written.update(range(l0 + off, l0 + off + cnt))
        if min(CN[a:b]) <= 0:
            for g in range(a, b):
                if CN[g] <= 0:
                    dkind[g] = K_NONE
        if tbs_on_gpu[tb.gpu] < 2:
            continue
        touched_by_gpu.setdefault(tb.gpu, []).append((t, touched))
        touched_of[t] = touched
        w = written_by_gpu.get(tb.gpu)
        if w is None:
            written_by_gpu[tb.gpu] = written
        else:
            w |= written

    tracked, bit, ntracked = _track_shared(prog, touched_by_gpu, touched_of, written_by_gpu, bulk,
                                           src_loc, dst_loc)
    prog.buffers, prog.layout, prog.input_bits = buffers, layout, input_bits
    prog.src_loc, prog.dst_loc, prog.dkind, prog.nloc = src_loc, dst_loc, dkind, nloc
    prog.tracked, prog.bit = tracked, bit
    prog.ntracked, prog.inplace, prog.collective = ntracked, inplace, collective
    prog.gpu_pos = {r: i for i, r in enumerate(prog.gpu_ids)}
    return findings


def _track_shared(prog: Program, touched_by_gpu: dict, touched_of: dict, written_by_gpu: dict, bulk: set,
                  src_loc: list, dst_loc: list) -> tuple[dict, dict, int]:
    """(tracked, bit, ntracked) for :func:`place`: the instructions that access a location two
    TBs of one GPU touch and some TB writes, with their accesses there (race candidates)."""
    K, CN, SO, fused = prog.kind, prog.cnt, prog.srcoff, prog.fused
    # shared locations: touched by two TBs of one gpu and written by some TB
    shared: set = set()
    for gpu, lst in touched_by_gpu.items():
        if len(lst) < 2:
            continue
        seen: set = set()
        mine: set = set()
        for _t, locs in lst:
            mine |= seen & locs
            seen |= locs
        shared |= mine & written_by_gpu.get(gpu, set())
    tracked: dict[int, tuple] = {}
    bit: dict[int, int] = {}
    ntracked = 0
    if shared:
        for t, tb in enumerate(prog.tbs):
            if t not in touched_of or touched_of[t].isdisjoint(shared):
                continue
            a, b = tb.start, tb.end
            if t in bulk:
                # one chunk per access, at src_loc/dst_loc: only those in a shared location
                cands = sorted(set(compress(range(a, b), map(shared.__contains__, src_loc[a:b])))
                               | set(compress(range(a, b), map(shared.__contains__, dst_loc[a:b]))))
            else:
                cands = range(a, b)
            for g in cands:
                cnt = CN[g]
                if cnt <= 0:
                    continue
                acc = []
                kd = K[g]
                if IS_READ[kd] and src_loc[g] >= 0:
                    base = src_loc[g] - (fused.get(g) or (SO[g],))[0]
                    for off in fused.get(g) or (SO[g],):
                        acc.extend((l, False) for l in range(base + off, base + off + cnt))
                if IS_WRITE[kd] and dst_loc[g] >= 0:
                    d = dst_loc[g]
                    acc.extend((l, True) for l in range(d, d + cnt))
                tr = [x for x in acc if x[0] in shared]
                if tr:
                    # reads before writes on one location, so a read-modify-write (re) is seen as such
                    tr.sort()
                    tracked[g] = tuple(tr)
                    bit[g] = 1 << ntracked
                    ntracked += 1
    return tracked, bit, ntracked


def _place_bulk(K, CN, SB, SO, DB, DO, fused, a, b, lim, src_loc, dst_loc, touched, written) -> bool:
    """Address TB instructions a..b-1 in bulk when every access is one chunk and in bounds.

    Returns False (and changes nothing) when that does not hold; the caller then goes step by
    step, which also reports out-of-bounds accesses in program order. ``touched``/``written``
    are filled only when not None.
    """
    cnts = CN[a:b]
    if not (min(cnts) == 1 == max(cnts)):
        return False
    if fused and any(g in fused for g in range(a, b)):
        return False
    okind = K[a:b]
    kinds = set(okind)
    out = []
    for bufs, offs, uses in ((SB[a:b], SO[a:b], IS_READ), (DB[a:b], DO[a:b], IS_WRITE)):
        letters = set(bufs)
        if len(letters) == 1:
            l0, l1, _ = lim[bufs[0]]
            locs = list(map(l0.__add__, offs))
        else:
            lo = {x: v[0] for x, v in lim.items()}
            locs = list(map(add, map(lo.__getitem__, bufs), offs))
        if all(uses[k] for k in kinds):
            mask = None
            used_offs, used_locs = offs, locs
        else:
            mask = list(map(uses.__getitem__, okind))
            used_offs, used_locs = list(compress(offs, mask)), list(compress(locs, mask))
        if used_offs:
            if min(used_offs) < 0:
                return False
            if len(letters) == 1:
                if max(used_locs) >= l1:
                    return False
            else:
                hi = {x: v[1] for x, v in lim.items()}
                ubufs = bufs if mask is None else list(compress(bufs, mask))
                if min(map(sub, map(hi.__getitem__, ubufs), used_locs)) < 1:
                    return False
        out.append((locs, used_locs))
    src_loc[a:b] = out[0][0]
    dst_loc[a:b] = out[1][0]
    if touched is not None:
        touched.update(out[0][1])
        touched.update(out[1][1])
        written.update(out[1][1])
    return True


def build(schedule: Schedule, collective: Collective | None, inplace: bool) -> Program:
    """:func:`lower` then :func:`place`; the placement's findings are appended to ``findings``."""
    prog = lower(schedule)
    prog.findings.extend(place(prog, collective, inplace))
    return prog


def _oob(prog: Program, t: int, g: int, side: str, buf: str, off: int, cnt: int, size: int) -> Finding:
    tb = prog.tbs[t]
    return Finding("out-of-bounds", f"{KIND_NAME[prog.kind[g]]} {side} {BUFFER_NAMES[buf]}[{off}..{off + cnt}) "
                   f"is outside the buffer's {size} chunks", gpu=tb.gpu, tb=tb.id, step=prog.s[g],
                   line=prog.line[g] or None)
