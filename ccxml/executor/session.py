"""One ``ccxml run``: the schedule and MPI's own collective, size after size, on every rank.

Every method of :class:`Session` is collective: each rank calls it with the same arguments.
Per size the schedule runs once on fresh input and is compared with MPI's result (``check``),
then runs ``warmup`` times untimed and ``iters`` times timed; MPI's collective is timed the same
way. A time is the slowest rank's average per iteration (a collective ends when its last rank
does). After each phase the ranks agree on whether all went well; a rank that fails (a hang, a
step that cannot run) first tells the others, so that they stop at once instead of waiting out
their own timeout, and rank 0 then describes the failure from every rank's state.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ccxml.executor.data import chunk_elems, compare, make_input, poison, size_of, tolerance
from ccxml.executor.engine import Engine, Outcome
from ccxml.executor.plan import rank_plan
from ccxml.executor.reference import Reference
from ccxml.interpreter.execute import UNBOUNDED, deadlock_findings, leftover_finding
from ccxml.interpreter.program import Program
from ccxml.vocab.collectives import Collective
from ccxml.vocab.sizes import busbw_factor

ABORT_TAG = 1


@dataclass(frozen=True)
class Timing:
    """One implementation's time per call at one size, and nccl-tests' bandwidths."""
    time_s: float
    algbw: float           # bytes / s
    busbw: float

    @classmethod
    def of(cls, nbytes: int, time_s: float, factor: float) -> "Timing":
        algbw = nbytes / time_s if time_s > 0 else float("inf")
        return cls(time_s, algbw, algbw * factor)


@dataclass(frozen=True)
class Row:
    """One size: nccl-tests' columns for the schedule and for MPI's collective."""
    nbytes: int            # nccl-tests' size, rounded to whole chunks of whole elements
    count: int             # elements in that size
    chunk_elems: int
    schedule: Timing
    mpi: Timing
    wrong: int | None      # wrong output chunks over all ranks; None: not checked


@dataclass(frozen=True)
class Failure:
    """Why a size failed: ``kind`` is "mismatch", "hang" or "error"; ``lines`` (rank 0 only)
    say where, one finding a line."""
    kind: str
    nbytes: int
    lines: tuple


class Session:
    def __init__(self, MPI, prog: Program, collective: Collective, dtype: np.dtype, timeout: float):
        self.MPI = MPI
        world = MPI.COMM_WORLD
        self.rank = world.Get_rank()
        self.nranks = world.Get_size()
        # separate communicators: the schedule's messages, control traffic, MPI's collective
        self.data, self.ctrl, self.refc = world.Dup(), world.Dup(), world.Dup()
        self._abort_buf = np.zeros(1, np.uint8)
        self.abort = self.ctrl.Irecv(self._abort_buf, source=MPI.ANY_SOURCE, tag=ABORT_TAG)
        self._notices: list = []
        self.prog = prog
        self.plan = rank_plan(prog, self.rank)
        self.collective = collective
        self.coll = collective.coll.value
        self.dtype = np.dtype(dtype)
        self.timeout = timeout
        self.tol = tolerance(self.coll, self.dtype, collective.ngpus)
        self.engine: Engine | None = None     # the last size's: it holds what MPI still owns

    # ---- one size --------------------------------------------------------------------------
    def measure(self, nbytes: int, iters: int, warmup: int, check: bool) -> tuple[Row | None, Failure | None]:
        """Check (optionally) and time the schedule and MPI's collective at ``nbytes``."""
        MPI, ctrl, rank = self.MPI, self.ctrl, self.rank
        ce = chunk_elems(self.collective, nbytes, self.dtype)
        size = size_of(self.collective, ce, self.dtype)
        try:
            eng = self.engine = Engine(MPI, self.data, self.plan, ce, self.dtype)
            inp = make_input(self.dtype, self.collective.input_chunks(rank) * ce, rank)
            ref = Reference(MPI, self.refc, self.collective, rank, ce, inp)
            ready = Outcome("ok")
        except MemoryError:
            ready = Outcome("error", f"rank {rank}: not enough memory for the buffers of this size")
        fail = self._agree(ready, size)
        if fail:
            return None, fail
        wrong = None
        with np.errstate(all="ignore"):        # timed runs reduce their own results: overflow is fine
            eng.memory.fill(poison(self.dtype) if check else 0)
            eng.view(*self.plan.input)[:] = inp
            if check:
                fail = self._agree(eng.run(self.timeout, self.abort), size)
                if fail:
                    return None, fail
                ref.call()
                mism = compare(eng.view(*self.plan.output), ref.recvbuf, ce, self.tol, rank) if ref.defined else None
                wrong = ctrl.allreduce(len(mism.chunks) if mism else 0)
                found = ctrl.gather(mism, root=0)
                if wrong:
                    lines = tuple(m.describe() for m in found or () if m)
                    return None, Failure("mismatch", size, lines)
            else:
                ref.call()
            fail = self._agree(self._repeat(eng, warmup), size)
            if fail:
                return None, fail
            ctrl.Barrier()
            t0 = MPI.Wtime()
            out = self._repeat(eng, iters)
            t = (MPI.Wtime() - t0) / iters
            fail = self._agree(out, size)
            if fail:
                return None, fail
            ctrl.Barrier()
            t0 = MPI.Wtime()
            for _ in range(iters):
                ref.call()
            t_mpi = (MPI.Wtime() - t0) / iters
        times = np.array([t, t_mpi])
        ctrl.Allreduce(MPI.IN_PLACE, times, op=MPI.MAX)
        t, t_mpi = times.tolist()
        factor = busbw_factor(self.coll, self.collective.ngpus)
        return Row(size, size // self.dtype.itemsize, ce, Timing.of(size, t, factor), Timing.of(size, t_mpi, factor),
                   wrong), None

    def _repeat(self, eng: Engine, n: int) -> Outcome:
        """Run the schedule ``n`` times, or until a run fails; the last outcome."""
        out = Outcome("ok")
        for _ in range(n):
            out = eng.run(self.timeout, self.abort)
            if out.status != "ok":
                break
        return out

    # ---- agreement and failure reports -----------------------------------------------------
    def _agree(self, out: Outcome, nbytes: int) -> Failure | None:
        """All ranks learn whether every run ended well; on a failure rank 0 gets the lines."""
        code = {"ok": 0, "timeout": 1, "aborted": 1, "error": 2}[out.status]
        if out.status in ("timeout", "error"):
            note = np.ones(1, np.uint8)
            for q in range(self.nranks):
                if q != self.rank:
                    self._notices.append((self.ctrl.Isend(note, dest=q, tag=ABORT_TAG), note))
        worst = self.ctrl.allreduce(code, op=self.MPI.MAX)
        if not worst:
            return None
        kind = "error" if worst == 2 else "hang"
        outcomes = self.ctrl.gather(out, root=0)
        if self.rank != 0:
            return Failure(kind, nbytes, ())
        if kind == "error":
            return Failure(kind, nbytes, tuple(o.error for o in outcomes if o.status == "error"))
        return Failure(kind, nbytes, tuple(str(f) for f in self.blocked_findings(outcomes)))

    def blocked_findings(self, outcomes: list[Outcome]) -> list:
        """What every unfinished thread block of every rank waits for, in the interpreter's
        words (:func:`~ccxml.interpreter.execute.deadlock_findings`: cycles of waits, or a
        wait on a TB that has finished), and the messages no step received."""
        prog = self.prog
        blocked, pcs = {}, {}
        for o in outcomes:
            blocked.update(o.blocked)
            pcs.update(o.pcs)
        found = deadlock_findings(prog, SimpleNamespace(blocked=blocked, pcs=pcs, cap=UNBOUNDED), "hang", "")
        left: dict[int, int] = {}
        for o in outcomes:
            for g in o.unreceived:
                k = prog.tbs[prog.tb_of[g]].out_link
                if not any(t in blocked for t in prog.links[k].receivers):
                    left[k] = left.get(k, 0) + 1
        found.extend(leftover_finding(prog, k, n) for k, n in sorted(left.items()))
        return found

    def close(self) -> None:
        """End a session whose runs all succeeded: every request completes (so that MPI can be
        finalised). After a failure requests stay pending, and the process ends without
        finalising MPI."""
        self.ctrl.Send(np.zeros(1, np.uint8), dest=self.rank, tag=ABORT_TAG)
        self.abort.Wait()
        for c in (self.data, self.ctrl, self.refc):
            c.Free()
