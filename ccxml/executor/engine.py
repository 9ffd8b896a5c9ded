"""Run a rank's thread blocks on real memory, with MPI point-to-point messages between ranks.

One process per rank, one thread: a cooperative scheduler visits the rank's thread blocks in
document order, and each runs its instructions until one cannot start. An instruction starts
when every dependency is released (TB x has published a value >= k: flags are per TB and
monotonic, msccl-runtime.md §8) and, if it receives, when its message has arrived. Then it runs
whole, with the runtime's semantics (§4, ⊕ = sum):

====== ==================================================================
s      send src[srcoff..+cnt)
r      dst[dstoff..+cnt) = message
rcs    dst = message; forward the message
rrs    send message ⊕ src
rrc    dst = message ⊕ src
rrcs   dst = message ⊕ src; send it
cpy    dst = src
re     dst = dst ⊕ src[o1] ⊕ src[o2] ... (a fused chain)
====== ==================================================================

A link (sender, receiver, channel) is an MPI message stream: messages carry the channel as
their tag, and MPI does not let two messages of one (source, tag, communicator) overtake each
other, so a receiving TB gets its peer's sends in link order. A receiving TB posts its next
receives ahead (a small window) into buffers of its own; sends are synchronous-mode and
nonblocking (``Issend``): the TB goes on at once, and the run is complete only when every
message has been received, so a message nobody receives cannot go unnoticed. A link buffers
without bound: a schedule that hangs only with the runtime's bounded FIFOs (verify's
``deadlock-fifo``) completes here. Slices are not modelled: a step moves its chunks whole.

Nothing blocks: when no TB can move, the scheduler polls, yielding the CPU, until a message
arrives, another rank reports a failure, or ``timeout`` seconds pass without progress; then it
stops and says what each unfinished TB waits for, in the interpreter's terms.
"""
from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ccxml.executor.plan import Instr, RankPlan
from ccxml.interpreter.program import K_CPY, K_NONE, K_RCS, K_RE, K_RECV, K_RRC, K_RRCS, K_RRS, K_SEND

_RECEIVING = frozenset({K_RECV, K_RCS, K_RRS, K_RRC, K_RRCS})
#: receives a TB keeps posted ahead, and the bytes they may hold (at least one is always posted)
PREPOST, PREPOST_BYTES = 4, 64 << 20
#: idle polls before yielding the CPU, and idle seconds before sleeping between polls
SPINS, SLEEP_AFTER, SLEEP = 64, 0.05, 2e-4


@dataclass
class Outcome:
    """How one run of the schedule ended on this rank."""
    status: str                     # "ok", "timeout", "aborted" (another rank failed), "error"
    error: str = ""                 # for "error": one line
    blocked: dict = field(default_factory=dict)   # global tb -> ("dep", x, k) | ("recv", link)
    pcs: dict = field(default_factory=dict)       # global tb -> global id of its next instruction
    unreceived: list = field(default_factory=list)  # global ids of sends nobody received


class _TBState:
    __slots__ = ("tb", "pc", "n", "posted", "next_post", "posted_bytes", "recv_at")

    def __init__(self, tb, recv_at):
        self.tb = tb
        self.pc = 0
        self.n = len(tb.instrs)
        self.posted = deque()       # (instruction index, request, buffer) in program order
        self.next_post = 0          # index into recv_at of the next receive to post
        self.posted_bytes = 0
        self.recv_at = recv_at      # instruction indices of the TB's receives


class Engine:
    """Runs ``plan`` with messages on ``comm`` (an mpi4py communicator used for nothing else).

    ``memory`` is the rank's block of ``plan.nchunks × chunk_elems`` elements; a run leaves its
    result there. ``abort`` is a posted receive completed when another rank gives up.
    """

    def __init__(self, MPI, comm, plan: RankPlan, chunk_elems: int, dtype: np.dtype):
        self.MPI = MPI
        self.comm = comm
        self.plan = plan
        self.ce = chunk_elems
        self.dtype = dtype
        self.memory = np.empty(plan.nchunks * chunk_elems, dtype=dtype)
        self.flags: dict[int, int] = {}
        self.pending: tuple[list, list] | None = None     # what a failed run leaves (see _stop)
        self.recv_at = {tb.t: [i for i, ins in enumerate(tb.instrs) if ins.kind in _RECEIVING]
                        for tb in plan.tbs}

    def view(self, first_chunk: int, nchunks: int) -> np.ndarray:
        ce = self.ce
        return self.memory[first_chunk * ce:(first_chunk + nchunks) * ce]

    # ---- one run ---------------------------------------------------------------------------
    def run(self, timeout: float, abort) -> Outcome:
        """Run every TB of the rank to its end once. Returns when all its instructions ran and
        all its messages were received (``ok``), or on a failure."""
        self.flags = {tb.t: -1 for tb in self.plan.tbs}
        states = [_TBState(tb, self.recv_at[tb.t]) for tb in self.plan.tbs]
        sends: list = []            # (request, payload, global instruction id)
        for st in states:
            self._post(st)
        idle = 0
        last = 0.0                  # when the scheduler last found itself idle after progress
        while True:
            moved = False
            for st in states:
                if st.pc < st.n:
                    try:
                        moved |= self._advance(st, sends)
                    except _StepError as e:
                        return self._stop(states, sends, "error", str(e))
            if sends and not moved:
                done = self.MPI.Request.Testsome([s[0] for s in sends])
                if done:
                    done = set(done)
                    sends = [s for i, s in enumerate(sends) if i not in done]
                    moved = True
            if moved:
                idle = 0
                continue
            if not sends and all(st.pc == st.n for st in states):
                return Outcome("ok")
            idle += 1
            if idle < SPINS:
                continue
            now = time.monotonic()
            if idle == SPINS:
                last = now
            if abort.Test():
                return self._stop(states, sends, "aborted")
            if now - last > timeout:
                return self._stop(states, sends, "timeout")
            if now - last > SLEEP_AFTER:
                time.sleep(SLEEP)
            else:
                os.sched_yield()

    def _post(self, st: _TBState) -> None:
        """Post the TB's next receives, in program order, up to the window."""
        at = st.recv_at
        ce = self.ce
        while st.next_post < len(at) and (not st.posted or (len(st.posted) < PREPOST
                                                           and st.posted_bytes < PREPOST_BYTES)):
            i = at[st.next_post]
            ins = st.tb.instrs[i]
            buf = np.empty(ins.cnt * ce, dtype=self.dtype)
            req = self.comm.Irecv(buf, source=st.tb.recv_peer, tag=st.tb.chan)
            st.posted.append((i, req, buf))
            st.posted_bytes += buf.nbytes
            st.next_post += 1

    def _advance(self, st: _TBState, sends: list) -> bool:
        """Run the TB's instructions until one cannot start; True if any ran."""
        tb = st.tb
        instrs = tb.instrs
        flags = self.flags
        moved = False
        while st.pc < st.n:
            ins: Instr = instrs[st.pc]
            if ins.deps is not None:
                for x, k in ins.deps:
                    if x < 0 or flags.get(x, -1) < k:
                        return moved
            kind = ins.kind
            msg = None
            if kind in _RECEIVING:
                i, req, buf = st.posted[0]
                status = self.MPI.Status()
                try:
                    if not req.Test(status):
                        return moved
                except self.MPI.Exception as e:
                    raise _StepError(self._where(tb, ins, f"receiving on link {tb.recv_peer}->"
                                     f"{self.plan.rank} chan {tb.chan} failed: {_mpi_error(e)} "
                                     f"(the sender's cnt is larger than the step's cnt={ins.cnt}?)")) from None
                got = status.Get_count(self.MPI.BYTE)
                if got != buf.nbytes:
                    raise _StepError(self._where(tb, ins, f"received {got} bytes on link {tb.recv_peer}->"
                                     f"{self.plan.rank} chan {tb.chan}, but cnt={ins.cnt} means "
                                     f"{buf.nbytes}: the sender's cnt differs"))
                st.posted.popleft()
                st.posted_bytes -= buf.nbytes
                self._post(st)
                msg = buf
            self._execute(ins, msg, tb, sends)
            if ins.pub > flags[tb.t]:
                flags[tb.t] = ins.pub
            st.pc += 1
            moved = True
        return moved

    def _execute(self, ins: Instr, msg, tb, sends: list) -> None:
        ce, mem = self.ce, self.memory
        kind = ins.kind
        if kind == K_NONE:
            return
        n = ins.cnt * ce
        out: np.ndarray | None
        if kind == K_SEND:
            a = ins.src * ce
            out = mem[a:a + n].copy()
        elif kind == K_RECV or kind == K_RCS:
            d = ins.dst * ce
            mem[d:d + n] = msg
            out = msg if kind == K_RCS else None
        elif kind == K_RRS or kind == K_RRC or kind == K_RRCS:
            a = ins.src * ce
            np.add(msg, mem[a:a + n], out=msg)
            if kind != K_RRS:
                d = ins.dst * ce
                mem[d:d + n] = msg
            out = msg if kind != K_RRC else None
        elif kind == K_CPY:
            a, d = ins.src * ce, ins.dst * ce
            mem[d:d + n] = mem[a:a + n]
            return
        elif kind == K_RE:
            d = ins.dst * ce
            acc = mem[d:d + n].copy()
            for s in ins.srcs:
                a = s * ce
                np.add(acc, mem[a:a + n], out=acc)
            mem[d:d + n] = acc
            return
        else:  # pragma: no cover - every data kind is handled above
            raise _StepError(self._where(tb, ins, f"unknown instruction kind {kind}"))
        if out is not None:
            sends.append((self.comm.Issend(out, dest=tb.send_peer, tag=tb.chan), out, ins.g))

    # ---- stopping --------------------------------------------------------------------------
    def _stop(self, states, sends, status: str, error: str = "") -> Outcome:
        """The outcome of a run that cannot finish: what each unfinished TB waits for (the
        interpreter's ``Control.blocked`` vocabulary) and the sends nobody received."""
        # a failed run leaves receives posted and sends unmatched, and MPI still owns their
        # buffers: they stay referenced here, as long as the engine (the process ends soon)
        self.pending = (states, sends)
        out = Outcome(status, error)
        for st in states:
            if st.pc >= st.n:
                continue
            tb = st.tb
            ins = tb.instrs[st.pc]
            reason: tuple | None = None
            for x, k in ins.deps or ():
                if x < 0 or self.flags.get(x, -1) < k:
                    reason = ("dep", x, k)
                    break
            if reason is None:
                reason = ("recv", tb.in_link)
            out.blocked[tb.t] = reason
            out.pcs[tb.t] = ins.g
        out.unreceived = [g for _, _, g in sends]
        return out

    def _where(self, tb, ins: Instr, what: str) -> str:
        return f"rank {self.plan.rank} tb {tb.id} step {ins.s} ({ins.type}): {what}"


class _StepError(Exception):
    """A step that cannot run as written (a message of the wrong size)."""


def _mpi_error(e) -> str:
    try:
        return e.Get_error_string().strip().splitlines()[0]
    except Exception:  # pragma: no cover - an mpi4py without the method
        return str(e).splitlines()[0]
