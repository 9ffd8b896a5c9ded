"""Run independent candidates (``select``'s algorithms, ``tune``'s builds and simulations) in a
pool of worker processes, with results in the order of the inputs.

:func:`run_all` maps a module-level function over its argument tuples: with ``jobs <= 1`` (or a
single item) in this process, one after the other, exactly as a plain loop; otherwise in a
:class:`concurrent.futures.ProcessPoolExecutor` of ``jobs`` workers. The results come back in the
order of the inputs whatever order the workers finish in, so a caller that folds them in that
order produces the same output with any ``jobs``. The function should catch the errors it expects
and return them as values (a candidate that cannot be built is a result, not a crash); any other
exception is raised here, as the plain loop would.

Workers are forked where the platform can (Linux: the parent's imported modules and caches come
for free, so a worker starts in milliseconds); elsewhere they are spawned. The pattern is the one
the standard library documents for ``ProcessPoolExecutor.map`` (results in submission order).
"""
from __future__ import annotations

import multiprocessing
import os
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Sequence, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.context import BaseContext

_T = TypeVar("_T")


def default_jobs() -> int:
    """The machine's cores available to this process (``os.process_cpu_count()`` where Python
    has it, else the affinity mask, else ``os.cpu_count()``), at least 1."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        n = count()
    elif hasattr(os, "sched_getaffinity"):
        n = len(os.sched_getaffinity(0))
    else:
        n = os.cpu_count()
    return max(1, n or 1)


def _context() -> BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def paused_gc(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` with the cyclic garbage collector off, then one collection of what it left.

    A candidate's build makes a large graph of objects that lives until the candidate is done;
    the collector, triggered by allocations, would traverse it again and again (``ccxml generate``
    turns it off for the same reason, ccxml/cli/app.py). Between candidates one collection of
    the youngest generation frees its cycles, so memory stays that of one candidate: with the
    collector off nothing the candidate made was promoted, so that generation holds all of it
    and none of the older heap (a full collection traverses the whole process: 37 ms a
    candidate in a bare ``select``, far more inside a test process). The collector's previous
    state is restored."""
    import gc
    was = gc.isenabled()
    gc.disable()
    try:
        return fn(*args)
    finally:
        gc.collect(0)
        if was:
            gc.enable()


def run_all(fn: Callable[..., _T], items: Iterable[Sequence[Any]], jobs: int = 1) -> list[_T]:
    """``[fn(*args) for args in items]``, computed by up to ``jobs`` processes; same order."""
    work = [tuple(a) for a in items]
    if jobs <= 1 or len(work) <= 1:
        return [fn(*args) for args in work]
    from concurrent.futures import ProcessPoolExecutor
    workers = min(jobs, len(work))
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        futures = [pool.submit(fn, *args) for args in work]
        return [f.result() for f in futures]


def run_ordered(tasks: Iterable[tuple[Any, Hashable, Callable[..., Any], Sequence[Any]]],
                then: Callable[[Hashable, Any], Iterable[tuple[Any, Hashable, Callable[..., Any], Sequence[Any]]]]
                | None = None, jobs: int = 1) -> dict[Hashable, Any]:
    """Run tasks ``(priority, key, fn, args)`` — lowest priority first, ties in the order given —
    on up to ``jobs`` processes, and return ``{key: fn(*args)}``. ``then(key, result)``, called
    here as each task finishes, may give further tasks (a later stage of the same work: a
    candidate's proof and simulations once its build is there); they join the queue by
    priority. A worker is never given a task before it is free, so the queue's order is the
    order work starts: longest first (LPT) when the priorities say so.

    The results depend only on each task's arguments, never on the order they ran in, so a caller
    that reads them by key gets the same with any ``jobs``; ``jobs <= 1`` runs everything here,
    in priority order. An unexpected exception of a task is raised here, as in a plain loop."""
    import heapq
    queue: list[tuple[Any, int, Hashable, Callable[..., Any], tuple[Any, ...]]] = []
    seq = 0

    def push(items: Iterable[tuple[Any, Hashable, Callable[..., Any], Sequence[Any]]]) -> None:
        nonlocal seq
        for prio, key, fn, args in items:
            heapq.heappush(queue, (prio, seq, key, fn, tuple(args)))
            seq += 1
    push(tasks)
    out: dict[Hashable, Any] = {}
    if jobs <= 1:
        while queue:
            _, _, key, fn, args = heapq.heappop(queue)
            out[key] = paused_gc(fn, *args)
            if then is not None:
                push(then(key, out[key]))
        return out
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_context()) as pool:
        running: dict[Any, Hashable] = {}
        while queue or running:
            while queue and len(running) < jobs:
                _, _, key, fn, args = heapq.heappop(queue)
                running[pool.submit(paused_gc, fn, *args)] = key
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in sorted(done, key=lambda f: str(running[f])):   # the same order each run
                key = running.pop(f)
                out[key] = f.result()
                if then is not None:
                    push(then(key, out[key]))
    return out


class Pool:
    """A pool kept open across several :meth:`map` calls (``with Pool(jobs) as pool: ...``);
    ``jobs <= 1`` runs everything in this process, as :func:`run_all` does."""

    def __init__(self, jobs: int = 1):
        self.jobs = jobs
        self._executor: ProcessPoolExecutor | None = None

    @property
    def parallel(self) -> bool:
        return self.jobs > 1

    def map(self, fn: Callable[..., _T], items: Iterable[Sequence[Any]],
            cost: Callable[[tuple[Any, ...]], float] | None = None) -> list[_T]:
        """``[fn(*args) for args in items]``, in the order of ``items``. ``cost(args)``: an
        estimate of an item's work; the workers then start the costliest first (LPT; ties in
        the order given). The results keep the order of ``items`` either way."""
        work = [tuple(a) for a in items]
        if not self.parallel or len(work) <= 1:
            return [fn(*args) for args in work]
        if self._executor is None:
            from concurrent.futures import ProcessPoolExecutor
            self._executor = ProcessPoolExecutor(max_workers=self.jobs, mp_context=_context())
        order = range(len(work)) if cost is None else sorted(range(len(work)), key=lambda i: -cost(work[i]))
        futures = {i: self._executor.submit(fn, *work[i]) for i in order}
        return [futures[i].result() for i in range(len(work))]

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Pool", "default_jobs", "paused_gc", "run_all", "run_ordered"]
