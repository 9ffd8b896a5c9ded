"""Run a lowered :class:`~ccxml.interpreter.program.Program` the way the GPUs would.

Semantics (msccl-runtime.md §4, §8, §9):

* every TB runs its instructions in order; before an instruction it waits until, for each of its
  dependencies (tb x, value k), TB x has published a value >= k (flags are per TB and monotonic;
  only ``hasdep=1`` instructions publish);
* a link (sender gpu, receiver gpu, chan) is a FIFO of primitive calls: a step of ``cnt`` c issues
  ``calls = ceil(c / maxAllowedCount)`` calls (none for c = 0). In the bounded model a sender
  blocks while the link holds ``cap`` pending calls (2 Simple, 8 LL/LL128); ``rcs``/``rrs``/
  ``rrcs`` receive and forward call by call;
* values are symbolic: a chunk holds an int bitmask of input contributions (rank, input chunk); a
  reduction of two values sharing a contribution is a double count. ``None`` is memory nobody
  wrote; once read it travels as the ``UNINIT`` bit so that it is reported once, where it is read.

Data races are found exactly. The happens-before relation is program order, dependency edges (from
the *first* publication that releases the waiter) and send→receive edges. Each TB carries a clock:
an int whose bit k is set when instruction k (one of the few that touch memory shared between TBs
of a GPU, see program.py) happens before the TB's current point. Clocks travel on messages and on
publications, joins are bitwise ORs. Each shared location keeps its last write and the reads since
(latest per TB); an access that is not ordered after them is a race. This reports a race on a
location iff one exists, whatever interleaving the simulation picks. Slice iterations touch
disjoint slices of every chunk, so instructions of different iterations never overlap in memory:
one iteration is checked. For the same reason, and because a system of deterministic TBs with
monotone flags and FIFO links is confluent, one iteration completes iff all do (links are empty at
the end of a correct iteration), so one iteration also decides deadlock.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field

from ccxml.findings import Finding
from ccxml.interpreter.program import (BUFFER_NAMES, K_CPY, K_RCS, K_RE, K_RECV, K_RRC, K_RRCS, K_RRS,
                                       K_SEND, KIND_NAME, RECEIVES, SENDS, Program)

UNBOUNDED = 1 << 62


@dataclass
class ExecResult:
    completed: bool
    cap: int
    memory: list                 # physical buffers (lists of values)
    findings: list = field(default_factory=list)
    blocked: dict = field(default_factory=dict)     # global tb -> (reason, ...)
    pcs: list = field(default_factory=list)
    leftover: list = field(default_factory=list)    # (link index, messages)
    flag_bits: tuple = (0, 0)                        # (UNINIT, DUP)
    races: int = 0


class _Reporter:
    """Collects findings, at most ``limit`` per code (the rest are counted)."""

    def __init__(self, limit: int = 20):
        self.limit = limit
        self.findings: list[Finding] = []
        self.counts: dict[str, int] = {}

    def add(self, f: Finding) -> None:
        n = self.counts.get(f.code, 0)
        self.counts[f.code] = n + 1
        if n < self.limit:
            self.findings.append(f)


def describe_bits(mask: int, prog: Program, limit: int = 8) -> str:
    """Human list of the contributions in ``mask``: ``(rank 0, chunk 3), ...``."""
    starts = sorted((b, r) for r, b in prog.input_bits.items())
    keys = [b for b, _ in starts]
    out = []
    total = 0
    m = mask
    while m:
        low = m & -m
        k = low.bit_length() - 1
        m ^= low
        total += 1
        if len(out) < limit:
            i = bisect_right(keys, k) - 1
            if i < 0:
                out.append(f"?{k}")
            else:
                b, r = starts[i]
                out.append(f"({r},{k - b})")
    if total > limit:
        out.append(f"... {total} in all")
    return "{" + ", ".join(out) + "}" if out else "{}"


def execute(prog: Program, cap: int = UNBOUNDED, data: bool = True) -> ExecResult:
    """Run one slice iteration of ``prog`` with links holding ``cap`` calls.

    Guarantees: ``completed`` is True iff every TB ran every instruction; otherwise ``blocked``
    says what each unfinished TB waits for. With ``data``, ``memory`` holds the final symbolic
    contents, and findings report races, double counts and uninitialised reads (with locations).
    """
    tbs = prog.tbs
    ntb = len(tbs)
    links = prog.links
    nlinks = len(links)
    rep = _Reporter()

    # ---- symbolic memory ----------------------------------------------------------------
    total_bits = 0
    memory: list[list] = []
    for b in prog.buffers:
        memory.append([None] * b.size)
    if prog.collective is not None:
        coll = prog.collective
        for r, first in prog.input_bits.items():
            total_bits = max(total_bits, first + (coll.input_chunks(r) if 0 <= r < coll.ngpus else 0))
    else:
        for r, first in prog.input_bits.items():
            total_bits = max(total_bits, first + prog.layout[r]["_sizes"]["i"])
    UNINIT = 1 << total_bits
    DUP = 1 << (total_bits + 1)
    FLAGS = UNINIT | DUP
    if data:
        for r, first in prog.input_bits.items():
            k, base = prog.layout[r]["i"]
            n_in = prog.layout[r]["_sizes"]["i"]
            mem = memory[k]
            for j in range(n_in):
                if base + j < len(mem):
                    mem[base + j] = 1 << (first + j)

    # ---- state -------------------------------------------------------------------------
    pc = [0] * ntb
    cdone = [-1] * ntb           # calls done of the current instruction, -1: deps not yet met
    pub = [-1] * ntb
    tracking = prog.ntracked > 0
    clock = [0] * ntb
    pubhist_v = [[] for _ in range(ntb)] if tracking else None
    pubhist_c = [[] for _ in range(ntb)] if tracking else None
    dep_waiters: list[list[int]] = [[] for _ in range(ntb)]
    lq = [deque() for _ in range(nlinks)]
    lpend = [0] * nlinks
    lrw = [-1] * nlinks          # tb blocked receiving on the link
    lsw = [-1] * nlinks          # tb blocked sending on the link
    why: dict[int, tuple] = {}
    # race histories: location -> (tb, instr) of last write; location -> {tb: instr} reads since
    lastw: dict[int, tuple] = {}
    reads: dict[int, dict] = {}
    reported_pairs: set = set()

    in_ready = [True] * ntb
    ready = list(range(ntb - 1, -1, -1))
    tb_instrs = [tb.instrs for tb in tbs]
    out_link = [tb.out_link for tb in tbs]
    in_link = [tb.in_link for tb in tbs]

    def loc_name(l: int) -> str:
        bufs = prog.buffers
        lo, hi = 0, len(bufs) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if bufs[mid].loc_base <= l:
                lo = mid
            else:
                hi = mid - 1
        b = bufs[lo]
        return f"{b.name}[{l - b.loc_base}]"

    def race(l: int, t1: int, i1, t2: int, i2, w1: bool, w2: bool) -> None:
        key = (id(i1), id(i2))
        if key in reported_pairs:
            return
        reported_pairs.add(key)
        a, b = tbs[t1], tbs[t2]
        rep.add(Finding(
            "race", f"gpu {b.gpu}: tb {a.id} step {i1.s} ({KIND_NAME[i1.kind]}, "
            f"{'writes' if w1 else 'reads'} {loc_name(l)}) and tb {b.id} step {i2.s} "
            f"({KIND_NAME[i2.kind]}, {'writes' if w2 else 'reads'} it) are not ordered by "
            "program order, dependencies or messages", gpu=b.gpu, tb=b.id, step=i2.s,
            line=i2.line or None))

    def check_access(t: int, ins, clk: int) -> None:
        for l, w in ins.tracked:
            lw = lastw.get(l)
            if lw is not None and lw[0] != t and not (clk & lw[1].bit):
                race(l, lw[0], lw[1], t, ins, True, w)
            if w:
                rd = reads.get(l)
                if rd:
                    for t2, i2 in rd.items():
                        if t2 != t and not (clk & i2.bit):
                            race(l, t2, i2, t, ins, False, True)
                    rd.clear()
                lastw[l] = (t, ins)
            else:
                rd = reads.get(l)
                if rd is None:
                    reads[l] = {t: ins}
                else:
                    rd[t] = ins

    def where_read(t: int, ins, buf: str, start: int, vals: list) -> None:
        tb = tbs[t]
        j = vals.index(None)
        off = (ins.srcoffs[0] if buf == ins.srcbuf else ins.dstoff)
        rep.add(Finding("uninitialised-read", f"{KIND_NAME[ins.kind]} reads {BUFFER_NAMES[buf]} chunk "
                        f"{off + j}, which nothing wrote before", gpu=tb.gpu, tb=tb.id, step=ins.s,
                        line=ins.line or None))

    def read_src(t: int, ins, which: int) -> list:
        cnt = ins.cnt
        if ins.src_phys < 0:
            return [UNINIT] * cnt
        a = ins.src_starts[which]
        vals = memory[ins.src_phys][a:a + cnt]
        if None in vals:
            where_read(t, ins, ins.srcbuf, a, vals)
            vals = [UNINIT if v is None else v for v in vals]
        return vals

    def write_dst(ins, vals: list) -> None:
        if ins.dst_phys >= 0:
            a = ins.dst_start
            n = min(len(vals), ins.cnt)
            memory[ins.dst_phys][a:a + n] = vals[:n] if n != len(vals) else vals

    def reduce(t: int, ins, a: list, b: list) -> list:
        res = list(map(int.__or__, a, b))
        if any(map(int.__and__, a, b)):
            for j, (x, y) in enumerate(zip(a, b)):
                both = x & y & ~FLAGS
                if both:
                    tb = tbs[t]
                    rep.add(Finding(
                        "double-count", f"{KIND_NAME[ins.kind]} reduces chunk {j} of the step "
                        f"(dst {BUFFER_NAMES[ins.dstbuf]}[{ins.dstoff + j}]) with contributions "
                        f"{describe_bits(both, prog)} on both sides", gpu=tb.gpu, tb=tb.id, step=ins.s,
                        line=ins.line or None))
                    res[j] |= DUP
        return res

    # ---- scheduler ---------------------------------------------------------------------
    while ready:
        t = ready.pop()
        in_ready[t] = False
        instrs = tb_instrs[t]
        n = len(instrs)
        i = pc[t]
        cd = cdone[t]
        lo = out_link[t]
        li = in_link[t]
        clk = clock[t]
        blocked = None
        while i < n:
            ins = instrs[i]
            if cd < 0:
                for x, k in ins.deps:
                    if x < 0 or pub[x] < k:
                        blocked = ("dep", x, k)
                        if x >= 0:
                            dep_waiters[x].append(t)
                        break
                if blocked is not None:
                    break
                if tracking and ins.deps:
                    for x, k in ins.deps:
                        hv = pubhist_v[x]
                        j = bisect_right(hv, k - 1)
                        clk |= pubhist_c[x][j]
                cd = 0
            kind = ins.kind
            calls = ins.calls
            if kind == K_CPY or kind == K_RE or calls == 0:
                # local step (or a link step with cnt=0: no primitive call, nothing moves)
                if tracking and ins.tracked:
                    check_access(t, ins, clk)
                    clk |= ins.bit
                if data and ins.cnt > 0:
                    if kind == K_CPY:
                        write_dst(ins, read_src(t, ins, 0))
                    elif kind == K_RE:
                        if ins.dst_phys >= 0:
                            a = ins.dst_start
                            acc = memory[ins.dst_phys][a:a + ins.cnt]
                            if None in acc:
                                where_read(t, ins, ins.dstbuf, a, acc)
                                acc = [UNINIT if v is None else v for v in acc]
                        else:
                            acc = [UNINIT] * ins.cnt
                        srcs = [read_src(t, ins, w) for w in range(len(ins.srcoffs))]
                        for vals in srcs:
                            acc = reduce(t, ins, acc, vals)
                        write_dst(ins, acc)
            else:
                recvs = kind in RECEIVES
                sends = kind in SENDS
                while cd < calls:
                    if recvs and (lpend[li] <= 0 or (cd == 0 and not lq[li])):
                        blocked = ("recv", li)
                        lrw[li] = t
                        break
                    if sends and lpend[lo] >= cap:
                        blocked = ("send", lo)
                        lsw[lo] = t
                        break
                    if cd == 0:
                        msg = None
                        if recvs:
                            msg = lq[li].popleft()
                            if tracking:
                                clk |= msg[1]
                        if tracking and ins.tracked:
                            check_access(t, ins, clk)
                            clk |= ins.bit
                        if data:
                            if kind == K_SEND:
                                out = read_src(t, ins, 0)
                            elif kind == K_RECV:
                                write_dst(ins, msg[0])
                            elif kind == K_RCS:
                                out = msg[0]
                                write_dst(ins, out)
                            else:
                                got = msg[0]
                                mine = read_src(t, ins, 0)
                                if len(got) != len(mine):
                                    m = min(len(got), len(mine))
                                    got, mine = got[:m], mine[:m]
                                out = reduce(t, ins, got, mine)
                                if kind != K_RRS:
                                    write_dst(ins, out)
                        else:
                            out = None
                        if sends:
                            lq[lo].append((out, clk))
                    if recvs:
                        lpend[li] -= 1
                        w = lsw[li]
                        if w >= 0:
                            lsw[li] = -1
                            if not in_ready[w]:
                                in_ready[w] = True
                                ready.append(w)
                    if sends:
                        lpend[lo] += 1
                        w = lrw[lo]
                        if w >= 0:
                            lrw[lo] = -1
                            if not in_ready[w]:
                                in_ready[w] = True
                                ready.append(w)
                    cd += 1
                if blocked is not None:
                    break
            # instruction complete
            p = ins.pub
            if p >= 0 and p > pub[t]:
                pub[t] = p
                if tracking:
                    pubhist_v[t].append(p)
                    pubhist_c[t].append(clk)
                ws = dep_waiters[t]
                if ws:
                    for w in ws:
                        if not in_ready[w]:
                            in_ready[w] = True
                            ready.append(w)
                    ws.clear()
            i += 1
            cd = -1
        pc[t] = i
        cdone[t] = cd
        clock[t] = clk
        if blocked is not None:
            why[t] = blocked
        else:
            why.pop(t, None)

    completed = all(pc[t] == len(tb_instrs[t]) for t in range(ntb))
    res = ExecResult(completed=completed, cap=cap, memory=memory, blocked=why if not completed else {},
                     pcs=pc, flag_bits=(UNINIT, DUP))
    if completed:
        for k in range(nlinks):
            if lq[k]:
                res.leftover.append((k, len(lq[k])))
    res.findings = rep.findings
    res.races = rep.counts.get("race", 0)
    res.counts = rep.counts
    return res


def deadlock_findings(prog: Program, res: ExecResult, code: str, note: str) -> list[Finding]:
    """Describe why ``res`` did not complete: a cycle of waits, or a wait on a finished TB.

    Each unfinished TB waits for one thing: a dependency (TB x publishing >= k), a message on its
    receive link (from the link's sender TB) or room on its send link (its receiver TB). Following
    these from a blocked TB either closes a cycle (reported TB by TB) or ends at a TB that has
    finished or does not exist.
    """
    tbs = prog.tbs

    def succ(t: int):
        r = res.blocked.get(t)
        if r is None:
            return None, "is not blocked"
        if r[0] == "dep":
            x, k = r[1], r[2]
            ins = tbs[t].instrs[res.pcs[t]]
            if x < 0:
                return None, f"step {ins.s} waits for a dependency on a TB that does not exist"
            return x, f"step {ins.s} ({KIND_NAME[ins.kind]}) waits for tb {tbs[x].id} to publish step {k}"
        ln = prog.links[r[1]]
        ins = tbs[t].instrs[res.pcs[t]]
        if r[0] == "recv":
            others = ln.senders
            return (others[0] if others else None), (
                f"step {ins.s} ({KIND_NAME[ins.kind]}) waits for a message on link {ln.name()}")
        others = ln.receivers
        return (others[0] if others else None), (
            f"step {ins.s} ({KIND_NAME[ins.kind]}) waits for room on link {ln.name()} "
            f"(full at {res.cap} calls)")

    out: list[Finding] = []
    covered: set[int] = set()
    for t0 in sorted(res.blocked):
        if t0 in covered:
            continue
        path = []
        pos = {}
        t = t0
        while t is not None and t not in pos and t in res.blocked and t not in covered:
            pos[t] = len(path)
            nxt, why = succ(t)
            path.append((t, why))
            t = nxt
        covered.update(pos)
        if t is not None and t in pos:
            cyc = path[pos[t]:]
            desc = " -> ".join(f"gpu {tbs[a].gpu} tb {tbs[a].id} {w}" for a, w in cyc)
            first = cyc[0][0]
            out.append(Finding(code, f"{note}cycle of {len(cyc)} TBs: {desc} -> back to gpu "
                               f"{tbs[first].gpu} tb {tbs[first].id}", gpu=tbs[first].gpu,
                               tb=tbs[first].id, step=tbs[first].instrs[res.pcs[first]].s))
        elif t is None or t not in res.blocked:
            if t is None:
                end = "and nothing can ever provide it"
            else:
                end = f"but gpu {tbs[t].gpu} tb {tbs[t].id} has finished without providing it"
            desc = " -> ".join(f"gpu {tbs[x].gpu} tb {tbs[x].id} {y}" for x, y in path)
            out.append(Finding(code, f"{note}{desc}, {end}", gpu=tbs[path[0][0]].gpu,
                               tb=tbs[path[0][0]].id, step=tbs[path[0][0]].instrs[res.pcs[path[0][0]]].s))
    return out
