"""Run a lowered :class:`~ccxml.interpreter.program.Program` the way the GPUs would.

Semantics (msccl-runtime.md §4, §8, §9):

* every TB runs its instructions in order; before an instruction it waits until, for each of its
  dependencies (tb x, value k), TB x has published a value >= k (flags are per TB and monotonic;
  only ``hasdep=1`` instructions publish);
* a link (sender gpu, receiver gpu, chan) is a FIFO of primitive calls: a step of ``cnt`` c issues
  ``calls = ceil(c / maxAllowedCount)`` calls (none for c = 0). In the bounded model a sender
  blocks while the link holds ``cap`` pending calls (2 Simple, 8 LL/LL128); ``rcs``/``rrs``/
  ``rrcs`` receive and forward call by call;
* values are symbolic: a chunk holds the set of input contributions (rank, input chunk) it is the
  reduction of (see :class:`~ccxml.interpreter.values.Values`); a reduction of two values sharing
  a contribution is a double count. ``None`` is memory nobody wrote; once read it travels as the
  ``UNINIT`` flag so that it is reported once, where it is read.

Execution has two phases. :func:`run` plays the control flow only (program order, dependency
flags, link FIFOs with or without the bound) and records the order in which instructions take
their data action (a send's first call, a receive's first call, a local step) and which send
each receive got its message from; it decides completion and what blocked TBs wait for. That
order respects every data dependency, so :func:`replay` then evaluates the symbolic data for a
call form by walking it, with no scheduling left. The control run does not depend on the call
form, so one run serves both forms.

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

:func:`replay` is a small object (:class:`_Replay`): the memory, the messages in flight and the
findings, the data actions as methods (read, reduce, write) and the walk over the order in one
loop; the race check's clocks are another (:class:`_Races`).

Fast twin: :func:`ccxml.interpreter.levels.prove` (on a Program from :mod:`.program` or
:mod:`.table`) answers for a clean schedule in bulk, or returns None and this engine runs. When it
answers, this engine completes with no finding and the same final memory and leftover messages
(tests/test_twins.py).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ccxml.interpreter.program import (
    BUFFER_NAMES,
    K_CPY,
    K_RCS,
    K_RE,
    K_RECV,
    K_RRC,
    K_RRCS,
    K_RRS,
    K_SEND,
    KIND_NAME,
    Program,
    dep_sources,
)
from ccxml.interpreter.values import Reporter, Values
from ccxml.vocab.findings import Finding

UNBOUNDED = 1 << 62


@dataclass
class Control:
    """The outcome of a control run (independent of the call form)."""
    completed: bool
    cap: int
    order: list                  # instruction ids in the order they take their data action
    src_of: list                 # receive instruction -> the send instruction it got its message from
    blocked: dict                # global tb -> ("dep", x, k) | ("recv", link) | ("send", link)
    pcs: list                    # global tb -> global id of its next instruction
    leftover: list               # (link index, messages) at the end, when completed


@dataclass
class ExecResult:
    completed: bool
    cap: int
    memory: list                 # flat symbolic memory (Program.buffers[k] starts at loc_base)
    values: Values | None = None
    findings: list = field(default_factory=list)
    blocked: dict = field(default_factory=dict)     # global tb -> (reason, ...)
    pcs: list = field(default_factory=list)
    leftover: list = field(default_factory=list)    # (link index, messages)
    flag_bits: tuple = (0, 0)                        # (UNINIT, DUP)
    races: int = 0
    counts: dict = field(default_factory=dict)


def run(prog: Program, cap: int = UNBOUNDED) -> Control:
    """Play the control flow with links holding ``cap`` calls (memoised per Program and cap).

    Guarantees: ``completed`` is True iff every TB ran every instruction; otherwise ``blocked``
    says what each unfinished TB waits for. ``order`` lists each started instruction once, after
    its TB predecessors, the send it receives from and the instructions releasing its
    dependencies.
    """
    memo = prog.control.get(cap)
    if memo is not None:
        return memo
    tbs, ntb, nlinks = prog.tbs, len(prog.tbs), len(prog.links)
    OP, CALLS, PUB, DEPS = prog.op, prog.calls, prog.pub, prog.deps
    src_of = [-1] * len(OP)
    order: list[int] = []
    record = order.append
    pc, ends = [tb.start for tb in tbs], [tb.end for tb in tbs]
    cdone = [-1] * ntb           # calls done of the current instruction, -1: deps not yet met
    pub = [-1] * ntb
    dep_waiters: list[list[int]] = [[] for _ in range(ntb)]
    lq = [deque() for _ in range(nlinks)]
    lpend = [0] * nlinks
    lrw = [-1] * nlinks          # tb blocked receiving on the link
    lsw = [-1] * nlinks          # tb blocked sending on the link
    in_ready = [True] * ntb
    ready = list(range(ntb - 1, -1, -1))
    out_link, in_link = [tb.out_link for tb in tbs], [tb.in_link for tb in tbs]
    pop, push = ready.pop, ready.append
    while ready:
        t = pop()
        in_ready[t] = False
        g = pc[t]
        end = ends[t]
        cd = cdone[t]
        lo = out_link[t]
        li = in_link[t]
        while g < end:
            if cd < 0:
                dl = DEPS[g]
                if dl is not None:
                    for x, k in dl:
                        if x < 0 or pub[x] < k:
                            if x >= 0:
                                dep_waiters[x].append(t)
                            break
                    else:
                        x = None
                    if x is not None:
                        break
                cd = 0
            op = OP[g]
            if op == 0:
                # local step (or a link step with cnt=0: no primitive call, nothing moves)
                record(g)
            else:
                calls = CALLS[g]
                while cd < calls:
                    if op & 2:
                        if lpend[li] <= 0 or (cd == 0 and not lq[li]):
                            lrw[li] = t
                            break
                        if op & 1 and lpend[lo] >= cap:
                            lsw[lo] = t
                            break
                        if cd == 0:
                            src_of[g] = lq[li].popleft()
                            record(g)
                            if op & 1:
                                lq[lo].append(g)
                        lpend[li] -= 1
                        w = lsw[li]
                        if w >= 0:
                            lsw[li] = -1
                            if not in_ready[w]:
                                in_ready[w] = True
                                push(w)
                    else:
                        if lpend[lo] >= cap:
                            lsw[lo] = t
                            break
                        if cd == 0:
                            record(g)
                            lq[lo].append(g)
                    if op & 1:
                        lpend[lo] += 1
                        w = lrw[lo]
                        if w >= 0:
                            lrw[lo] = -1
                            if not in_ready[w]:
                                in_ready[w] = True
                                push(w)
                    cd += 1
                if cd < calls:
                    break
            # instruction complete
            p = PUB[g]
            if p > pub[t]:
                pub[t] = p
                ws = dep_waiters[t]
                if ws:
                    for w in ws:
                        if not in_ready[w]:
                            in_ready[w] = True
                            push(w)
                    ws.clear()
            g += 1
            cd = -1
        pc[t] = g
        cdone[t] = cd

    completed = all(pc[t] == ends[t] for t in range(ntb))
    leftover = [(k, len(lq[k])) for k in range(nlinks) if lq[k]] if completed else []
    why = {} if completed else _blocked(prog, pc, cdone, pub, lpend, lq)
    res = Control(completed=completed, cap=cap, order=order, src_of=src_of,
                  blocked=why, pcs=pc, leftover=leftover)
    prog.control[cap] = res
    return res


def _blocked(prog: Program, pc: list, cdone: list, pub: list, lpend: list, lq: list) -> dict:
    """global tb -> what it waits for (("dep", x, k), ("recv", link) or ("send", link)), for
    every TB the control run left unfinished. Each still waits for what stopped it (any change
    to that would have woken it), so its reason is read off the final state in the loop's order."""
    OP, DEPS = prog.op, prog.deps
    why: dict[int, tuple] = {}
    for t, tb in enumerate(prog.tbs):
        g = pc[t]
        if g == tb.end:
            continue
        reason = None
        if cdone[t] < 0 and DEPS[g] is not None:
            for x, k in DEPS[g]:
                if x < 0 or pub[x] < k:
                    reason = ("dep", x, k)
                    break
        if reason is None:
            op, cd, li = OP[g], max(cdone[t], 0), tb.in_link
            if op & 2 and (lpend[li] <= 0 or (cd == 0 and not lq[li])):
                reason = ("recv", li)
            else:
                reason = ("send", tb.out_link)
        why[t] = reason
    return why


def execute(prog: Program, cap: int = UNBOUNDED, data: bool = True) -> ExecResult:
    """Run one slice iteration of ``prog`` (as placed) with links holding ``cap`` calls.

    Guarantees: ``completed`` is True iff every TB ran every instruction; otherwise ``blocked``
    says what each unfinished TB waits for. With ``data``, ``memory`` holds the final symbolic
    contents, and findings report races, double counts and uninitialised reads (with locations).
    """
    ctl = run(prog, cap)
    if data:
        res = replay(prog, ctl)
    else:
        res = ExecResult(completed=ctl.completed, cap=cap, memory=[])
    res.blocked, res.pcs, res.leftover = ctl.blocked, ctl.pcs, ctl.leftover
    return res


def input_ranges(prog: Program):
    """(rank, first memory location, number of chunks) of every rank's input in the placed
    call form."""
    for r, lay in prog.layout.items():
        k, base = lay["i"]
        b = prog.buffers[k]
        n_in = min(lay["_sizes"]["i"], b.size - base)
        if n_in > 0:
            yield r, b.loc_base + base, n_in


def initial_memory(prog: Program, V: Values) -> list:
    """The symbolic memory of the placed call form before any step: every input chunk holds
    its own contribution, everything else is None (never written)."""
    mem: list = [None] * prog.nloc
    pos = prog.gpu_pos
    SH = V.SH
    for r, a, n_in in input_ranges(prog):
        bitr = 1 << pos[r]
        mem[a:a + n_in] = [(j << SH) | bitr for j in range(n_in)]
    return mem


def replay(prog: Program, ctl: Control) -> ExecResult:
    """Evaluate the symbolic data of the placed call form along ``ctl.order``."""
    return _Replay(prog, ctl).run()


class _Races:
    """The exact race check of one replay (see the module docstring).

    Each TB carries a clock, an int whose bit ``prog.bit[g]`` is set once tracked instruction g
    happens before the TB's current point; clocks travel on messages (``msgclk``, dropped when
    received) and on publications (``pubclk``). Each tracked location keeps its last write and
    the reads since (latest per TB); an access not ordered after them is a race, reported once
    per pair of instructions.
    """

    __slots__ = ("prog", "rep", "tracked", "bit", "tb_of", "dsrc", "sends", "tflag", "clock",
                 "msgclk", "pubclk", "lastw", "reads", "reported")

    def __init__(self, prog: Program, rep: Reporter):
        self.prog, self.rep = prog, rep
        self.tracked, self.bit, self.tb_of = prog.tracked, prog.bit, prog.tb_of
        self.dsrc = dsrc = dep_sources(prog)
        n = len(prog.kind)
        self.sends = [o & 1 for o in prog.op]
        self.tflag = tflag = [0] * n     # 1: has dependencies, 2: tracked, 4: releases a dependency
        for g, srcs in dsrc.items():
            tflag[g] |= 1
            for x in srcs:
                if x >= 0:
                    tflag[x] |= 4
        for g in self.tracked:
            tflag[g] |= 2
        self.clock = [0] * len(prog.tbs)
        self.msgclk = [0] * n            # clock a sending instruction put on its message
        self.pubclk: dict[int, int] = {}
        self.lastw: dict[int, tuple] = {}
        self.reads: dict[int, dict] = {}
        self.reported: set = set()

    def advance(self, g: int, x: int) -> None:
        """Instruction ``g`` takes its data action; ``x``: the send its message came from (-1:
        none). Joins the clocks that reach it, checks its tracked accesses, passes its clock on."""
        t = self.tb_of[g]
        clk = self.clock[t]
        if x >= 0:
            msgclk = self.msgclk
            clk |= msgclk[x]
            msgclk[x] = 0          # each message is received once: drop its clock
        f = self.tflag[g]
        if f:
            if f & 1:
                pubclk = self.pubclk
                for x in self.dsrc[g]:
                    if x >= 0:
                        clk |= pubclk[x]
            if f & 2:
                self.check_access(t, g, clk)
                clk |= self.bit[g]
            if f & 4:
                self.pubclk[g] = clk
        if self.sends[g]:
            self.msgclk[g] = clk
        self.clock[t] = clk

    def check_access(self, t: int, g: int, clk: int) -> None:
        BIT, lastw, reads = self.bit, self.lastw, self.reads
        for l, w in self.tracked[g]:
            lw = lastw.get(l)
            if lw is not None and lw[0] != t and not (clk & BIT[lw[1]]):
                self.race(l, lw[0], lw[1], t, g, True, w)
            if w:
                rd = reads.get(l)
                if rd:
                    for t2, g2 in rd.items():
                        if t2 != t and not (clk & BIT[g2]):
                            self.race(l, t2, g2, t, g, False, True)
                    rd.clear()
                lastw[l] = (t, g)
            else:
                rd = reads.get(l)
                if rd is None:
                    reads[l] = {t: g}
                else:
                    rd[t] = g

    def race(self, l: int, t1: int, g1: int, t2: int, g2: int, w1: bool, w2: bool) -> None:
        key = (g1, g2)
        if key in self.reported:
            return
        self.reported.add(key)
        prog = self.prog
        K = prog.kind
        a, b = prog.tbs[t1], prog.tbs[t2]
        self.rep.add(Finding(
            "race", f"gpu {b.gpu}: tb {a.id} step {prog.s[g1]} ({KIND_NAME[K[g1]]}, "
            f"{'writes' if w1 else 'reads'} {self.loc_name(l)}) and tb {b.id} step {prog.s[g2]} "
            f"({KIND_NAME[K[g2]]}, {'writes' if w2 else 'reads'} it) are not ordered by "
            "program order, dependencies or messages", gpu=b.gpu, tb=b.id, step=prog.s[g2],
            line=prog.line[g2] or None))

    def loc_name(self, l: int) -> str:
        """``buffer[index]`` of flat memory location ``l``."""
        bufs = self.prog.buffers
        lo, hi = 0, len(bufs) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if bufs[mid].loc_base <= l:
                lo = mid
            else:
                hi = mid - 1
        b = bufs[lo]
        return f"{b.name}[{l - b.loc_base}]"


class _Replay:
    """The symbolic data run of one call form (:func:`replay`): memory, messages in flight and
    the findings, with the data actions as methods and the walk over the order in :meth:`run`."""

    __slots__ = ("prog", "ctl", "rep", "V", "mem", "msgv", "races", "UNINIT", "DUP", "RM", "SH",
                 "LIM", "K", "CN", "DST")

    def __init__(self, prog: Program, ctl: Control):
        self.prog, self.ctl = prog, ctl
        self.rep = Reporter()
        self.V = V = Values(prog)
        self.UNINIT, self.DUP, self.RM, self.SH, self.LIM = V.UNINIT, V.DUP, V.RM, V.SH, V.LIM
        self.K, self.CN, self.DST = prog.kind, prog.cnt, prog.dst_loc
        self.mem = initial_memory(prog, V)
        self.msgv: dict[int, list] = {}       # send instruction -> the values of its message
        self.races = _Races(prog, self.rep) if prog.ntracked > 0 else None

    def run(self) -> ExecResult:
        """Walk ``ctl.order``: each instruction's data action, by kind (§4)."""
        prog, ctl = self.prog, self.ctl
        mem, msgv = self.mem, self.msgv
        DK, CN, SRC, DST = prog.dkind, prog.cnt, prog.src_loc, prog.dst_loc
        RM, SH = self.RM, self.SH
        src_of = ctl.src_of
        fused = prog.fused
        read_src, reduce, combine, write = self.read_src, self.reduce, self.combine, self.write
        advance = self.races.advance if self.races is not None else None
        for g in ctl.order:
            kd = DK[g]
            if advance is not None:
                advance(g, src_of[g])
            if kd == K_SEND:
                msgv[g] = read_src(g, SRC[g])
            elif kd == K_RECV or kd == K_RCS:
                v = msgv.pop(src_of[g])
                d = DST[g]
                if d >= 0:
                    n = CN[g]
                    if len(v) == n:
                        mem[d:d + n] = v
                    else:
                        write(g, v)
                if kd == K_RCS:
                    msgv[g] = v
            elif kd == K_RRCS or kd == K_RRS or kd == K_RRC:
                got = msgv.pop(src_of[g])
                n = CN[g]
                mine = read_src(g, SRC[g])
                if len(got) != n:
                    m = min(len(got), n)
                    got, mine = got[:m], mine[:m]
                if n == 1:
                    x, y = got[0], mine[0]
                    if x >= 0 and not ((x ^ y) >> SH) and not (x & y & RM):
                        out = [x | y]
                    else:
                        out = [combine(g, 0, x, y)]
                else:
                    out = reduce(g, got, mine)
                if kd != K_RRS:
                    d = DST[g]
                    if d >= 0:
                        if len(out) == n:
                            mem[d:d + n] = out
                        else:
                            write(g, out)
                if kd != K_RRC:
                    msgv[g] = out
            elif kd == K_CPY:
                write(g, read_src(g, SRC[g]))
            elif kd == K_RE:
                acc = read_src(g, DST[g], prog.dstbuf[g])
                a = SRC[g]
                offs = fused.get(g)
                if offs is None:
                    srcs = [read_src(g, a)]
                else:
                    srcs = [read_src(g, a + o - offs[0] if a >= 0 else -1) for o in offs]
                for vals in srcs:
                    acc = reduce(g, acc, vals)
                write(g, acc)
            # K_NONE: nothing moves
        rep = self.rep
        res = ExecResult(completed=ctl.completed, cap=ctl.cap, memory=mem, values=self.V,
                         flag_bits=(self.UNINIT, self.DUP))
        res.findings = rep.findings
        res.races = rep.counts.get("race", 0)
        res.counts = rep.counts
        return res

    # -- data actions ------------------------------------------------------------------------
    def read_src(self, g: int, a: int, buf: str | None = None) -> list:
        """The ``cnt`` values at location ``a`` (-1: out of bounds), unwritten ones reported
        and read as UNINIT; ``buf`` names the buffer in the report (default: srcbuf)."""
        n = self.CN[g]
        if a < 0:
            return [self.UNINIT] * n
        vals = self.mem[a:a + n]
        if None in vals:
            vals = self.uninit(g, buf or self.prog.srcbuf[g], vals)
        return vals

    def uninit(self, g: int, buf: str, vals: list) -> list:
        """Report the first unwritten value of ``vals`` (read from ``buf`` by ``g``); all of them
        read as UNINIT."""
        prog = self.prog
        tb = prog.tbs[prog.tb_of[g]]
        j = vals.index(None)
        off = prog.srcoff[g] if buf == prog.srcbuf[g] else prog.dstoff[g]
        self.rep.add(Finding("uninitialised-read", f"{KIND_NAME[self.K[g]]} reads {BUFFER_NAMES[buf]} "
                             f"chunk {off + j}, which nothing wrote before", gpu=tb.gpu, tb=tb.id,
                             step=prog.s[g], line=prog.line[g] or None))
        UNINIT = self.UNINIT
        return [UNINIT if v is None else v for v in vals]

    def reduce(self, g: int, a: list, b: list) -> list:
        """Elementwise a ⊕ b, reporting double counts."""
        RM, SH = self.RM, self.SH
        if len(a) == 1:
            x, y = a[0], b[0]
            if x >= 0 and not ((x ^ y) >> SH):
                if x & y & RM:
                    return [self.dup(g, 0, x, y)]
                return [x | y]
            return [self.combine(g, 0, x, y)]
        xs = list(map(int.__xor__, a, b))
        if min(a) >= 0 and min(xs) >= 0 and max(xs) < self.LIM:
            if any(map(RM.__and__, map(int.__and__, a, b))):
                dup = self.dup
                return [dup(g, j, x, y) if x & y & RM else x | y for j, (x, y) in enumerate(zip(a, b))]
            return list(map(int.__or__, a, b))
        combine = self.combine
        return [combine(g, j, x, y) for j, (x, y) in enumerate(zip(a, b))]

    def combine(self, g: int, j: int, x: int, y: int) -> int:
        """x ⊕ y for chunk ``j`` of ``g``'s step, in any form (simple or mixed)."""
        if x >= 0 and not ((x ^ y) >> self.SH):
            return self.dup(g, j, x, y) if x & y & self.RM else x | y
        V = self.V
        v, both = V.combine(x, y)
        if both:
            self.report_dup(g, j, both)
            v = V.combine(v, self.DUP)[0]
        return v

    def dup(self, g: int, j: int, x: int, y: int) -> int:
        """x ⊕ y of two simple values of one index sharing contributions: reported, DUP set."""
        c = x & y & self.RM
        idx = x >> self.SH
        both = []
        while c:
            low = c & -c
            both.append((low.bit_length() - 1, idx))
            c ^= low
        self.report_dup(g, j, both)
        return x | y | self.DUP

    def report_dup(self, g: int, j: int, both: list) -> None:
        prog = self.prog
        tb = prog.tbs[prog.tb_of[g]]
        self.rep.add(Finding(
            "double-count", f"{KIND_NAME[self.K[g]]} reduces chunk {j} of the step "
            f"(dst {BUFFER_NAMES[prog.dstbuf[g]]}[{prog.dstoff[g] + j}]) with contributions "
            f"{self.V.describe_pairs(both)} on both sides", gpu=tb.gpu, tb=tb.id, step=prog.s[g],
            line=prog.line[g] or None))

    def write(self, g: int, vals: list) -> None:
        """Store ``vals`` at ``g``'s destination (at most ``cnt`` of them; none out of bounds)."""
        d = self.DST[g]
        if d >= 0:
            n = self.CN[g]
            m = len(vals)
            if m == n:
                self.mem[d:d + n] = vals
            elif m < n:
                self.mem[d:d + m] = vals
            else:
                self.mem[d:d + n] = vals[:n]


def deadlock_findings(prog: Program, res, code: str, note: str) -> list[Finding]:
    """Describe why ``res`` did not complete: a cycle of waits, or a wait on a finished TB.

    Each unfinished TB waits for one thing: a dependency (TB x publishing >= k), a message on its
    receive link (from the link's sender TB) or room on its send link (its receiver TB). Following
    these from a blocked TB either closes a cycle (reported TB by TB) or ends at a TB that has
    finished or does not exist.
    """
    tbs = prog.tbs
    S, K = prog.s, prog.kind

    def succ(t: int):
        r = res.blocked.get(t)
        if r is None:
            return None, "is not blocked"
        g = res.pcs[t]
        if r[0] == "dep":
            x, k = r[1], r[2]
            if x < 0:
                return None, f"step {S[g]} waits for a dependency on a TB that does not exist"
            return x, f"step {S[g]} ({KIND_NAME[K[g]]}) waits for tb {tbs[x].id} to publish step {k}"
        ln = prog.links[r[1]]
        if r[0] == "recv":
            others = ln.senders
            return (others[0] if others else None), (
                f"step {S[g]} ({KIND_NAME[K[g]]}) waits for a message on link {ln.name()}")
        others = ln.receivers
        return (others[0] if others else None), (
            f"step {S[g]} ({KIND_NAME[K[g]]}) waits for room on link {ln.name()} "
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
                               tb=tbs[first].id, step=S[res.pcs[first]]))
        elif t is None or t not in res.blocked:
            if t is None:
                end = "and nothing can ever provide it"
            else:
                end = f"but gpu {tbs[t].gpu} tb {tbs[t].id} has finished without providing it"
            desc = " -> ".join(f"gpu {tbs[x].gpu} tb {tbs[x].id} {y}" for x, y in path)
            t0_ = path[0][0]
            out.append(Finding(code, f"{note}{desc}, {end}", gpu=tbs[t0_].gpu,
                               tb=tbs[t0_].id, step=S[res.pcs[t0_]]))
    return out


def leftover_finding(prog: Program, link: int, n: int) -> Finding:
    """``n`` messages sent on link ``link`` that no step received."""
    ln = prog.links[link]
    tb = prog.tbs[(ln.receivers or ln.senders)[0]]
    return Finding("leftover-message", f"{n} message(s) left on link {ln.name()} at the end: "
                   "sent but never received", gpu=tb.gpu, tb=tb.id)
