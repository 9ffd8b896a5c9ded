"""Tuning: a verified ``MSCCL_ALGO_DIR`` for one cluster, chosen by the cost model.

For every requested collective and call form (out-of-place, in-place) :func:`tune`

1. builds every available algorithm that supports the collective (or the ones named), for the
   rank count and topology, with ``Simple`` (the simulator does not model LL/LL128, so it could
   not tell the protocols apart);
2. simulates each at sizes ``min, min·f, min·f², … max`` — at each size as built for a window
   ending there, so with the messages the written file will send (:class:`_Ranker`) — and,
   between two sampled sizes whose winners differ, bisects on the byte count to find where the
   ranking changes (:func:`plan_windows`); adjacent sizes with the same winner form one window;
3. writes each window's file with ``minBytes``/``maxBytes`` set to the window (inclusive ends, as
   the runtime compares them, msccl-runtime.md §7) and proves it with
   :func:`ccxml.interpreter.verify` for the target. A candidate whose file fails is dropped for
   this collective and form, reported, and the windows are planned again without it; a failing
   file is never returned.

:func:`write_algo_dir` installs the files into a directory that then holds nothing else (the
runtime reads every file there and one bad file aborts its scan) and writes the manifest
(:func:`manifest`) *beside* the directory, as ``<DIR>.manifest.json``. Same inputs give
byte-identical files and manifest.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ccxml.topology.model import Topology
from ccxml.vocab.errors import TuneError
from ccxml.vocab.wire import Coll, Proto

if TYPE_CHECKING:
    from ccxml.loader.model import Schedule

#: the collectives the runtime selects by message size (msccl-runtime.md §7); tuned by default
DEFAULT_COLLS = ("allreduce", "allgather", "reducescatter", "alltoall")
#: every collective tune accepts: the default ones plus the rooted ones the executor routes
TUNABLE_COLLS = DEFAULT_COLLS + ("broadcast", "reduce")
#: collectives whose runtime size multiplier is ngpus (msccl-runtime.md §6)
_MULT_NGPUS = {"allgather", "reducescatter", "alltoall"}
#: the call forms, as named in file names and in the manifest
FORMS = {"outofplace": False, "inplace": True}
#: at most this many ranking changes are searched for between two sampled sizes
_MAX_SPLITS = 32

MANIFEST_FORMAT = "ccxml-tune-manifest/1"
PROTOCOL_NOTE = ("Simple for every file: the simulator models transfers as latency plus bytes over "
                 "(shared) link bandwidth and does not model the LL/LL128 protocols, so it cannot "
                 "rank them")


@dataclass(frozen=True)
class TuneConfig:
    """What to tune for. ``algorithms`` None = every available algorithm."""
    ranks: int
    topology: Topology
    colls: tuple[str, ...] = DEFAULT_COLLS
    target: str = "exec"
    min_bytes: int = 1 << 10
    max_bytes: int = 1 << 30          # 0 = the last window has no upper bound
    factor: float = 2.0
    algorithms: tuple[str, ...] | None = None
    forms: tuple[str, ...] = ("outofplace", "inplace")
    root: int = 0
    channels: int = 1

    def sample_sizes(self) -> list[int]:
        """The sizes simulated: min·fᵏ up to max (0 → up to 1 GiB), plus max itself."""
        from ccxml.vocab.sizes import size_range
        lo = max(1, self.min_bytes)
        hi = self.max_bytes if self.max_bytes else max(lo, 1 << 30)
        sizes = size_range(lo, hi, self.factor)
        if sizes[-1] != hi:
            sizes.append(hi)
        return sizes


@dataclass
class TunedFile:
    """One verified file of the directory."""
    name: str
    coll: str
    form: str
    algorithm: str
    min_bytes: int
    max_bytes: int
    text: str
    nchunksperloop: int
    nchannels: int
    proto: str
    verdict: dict
    simulated: dict

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass
class TuneResult:
    config: TuneConfig
    files: list[TunedFile] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)      # candidates that cannot be built
    rejected: list[dict] = field(default_factory=list)     # candidates whose file failed verify
    notes: list[str] = field(default_factory=list)


# ---- building -------------------------------------------------------------------------------

def build_text(algorithm: str, coll: str, cfg: TuneConfig, inplace: bool, min_bytes: int = 0,
               max_bytes: int = 0) -> str:
    """``algorithm``'s ``coll`` as MSCCL XML for ``cfg``'s target. Raises ValueError subclasses."""
    from ccxml.driver import AlgorithmSpec, text
    c = Coll(coll)
    opts = {"channels": cfg.channels, "proto": Proto.SIMPLE, "inplace": inplace, "min_bytes": min_bytes,
            "max_bytes": max_bytes}
    return text(AlgorithmSpec(algorithm, c, cfg.ranks, options=opts, topology=cfg.topology,
                              root=cfg.root if c.rooted else None), cfg.target)


def candidates(coll: str, cfg: TuneConfig) -> list[str]:
    """Names of the algorithms to try for ``coll``: those available now that support it, and
    their variants (``NAME:VARIANT``, :meth:`ccxml.frontend.registry.Registry.entries`)."""
    from ccxml.algorithms import registry
    found = registry.entries(coll)
    names = list(cfg.algorithms) if cfg.algorithms is not None else found
    return [n for n in names if n in found]


# ---- windows --------------------------------------------------------------------------------

def plan_windows(best: Callable[[int], str], sizes: list[int]) -> list[tuple[int, str]]:
    """Where the winner changes: ``[(first_size, winner), ...]`` in increasing size order.

    ``best(n)`` names the winner at n bytes (deterministic). Every sampled size is asked; between
    two consecutive samples with different winners the smallest size whose winner differs from
    the lower sample's is found by bisection (repeatedly, for several changes in one gap). The
    first entry starts at ``sizes[0]``; consecutive entries always have different winners.
    """
    if not sizes:
        return []
    out: list[tuple[int, str]] = [(sizes[0], best(sizes[0]))]
    p, w = sizes[0], out[0][1]              # the winner is w from out[-1][0] through p
    for b in sizes[1:]:
        wb = best(b)
        for _ in range(_MAX_SPLITS):
            if w == wb:
                break
            lo, hi = p, b                   # best(lo) == w != best(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if best(mid) == w:
                    lo = mid
                else:
                    hi = mid
            p, w = hi, best(hi)
            out.append((p, w))
        if w != wb:                         # too many changes in one gap: settle at b
            out.append((b, wb))
        p, w = b, wb
    return out


def windows_from_plan(plan: list[tuple[int, str]], min_bytes: int, max_bytes: int) -> list[tuple[int, int, str]]:
    """``(lo, hi, winner)`` windows from :func:`plan_windows`: inclusive, non-overlapping, the
    first starting at ``min_bytes`` and the last ending at ``max_bytes`` (0 = unlimited)."""
    out = []
    for i, (start, name) in enumerate(plan):
        lo = min_bytes if i == 0 else start
        hi = plan[i + 1][0] - 1 if i + 1 < len(plan) else max_bytes
        out.append((lo, hi, name))
    return out


# ---- tuning ---------------------------------------------------------------------------------

def _sig(x: float, digits: int = 4) -> float:
    """``x`` rounded to ``digits`` significant digits (stable, readable manifest numbers)."""
    return float(f"{x:.{digits}g}")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


_BUFFER_ATTRS = re.compile(r' (?:srcbuf|srcoff|dstbuf|dstoff|i_chunks|o_chunks|s_chunks)="[^"]*"')


def sim_signature(text: str, schedule) -> str:
    """What the simulator's result depends on: everything but the buffers, offsets and header
    flags. In-place and out-of-place builds of an algorithm usually share it, and then share
    their simulations."""
    body = text[text.index("\n") + 1:]
    h = hashlib.sha256(_BUFFER_ATTRS.sub("", body).encode("utf-8")).hexdigest()
    return f"{schedule.coll}/{schedule.ngpus}/{schedule.nchunksperloop}/{h}"


_MISSING = object()
#: a prefetched result already in the cache (by signature): not sent back
_KNOWN = "known"


def _cost(args: tuple) -> float:
    """The pool's estimate of a task on candidate ``args[0]`` (longest first, LPT):
    :func:`ccxml.driver.rank.candidate_cost`."""
    from ccxml.driver.rank import candidate_cost
    return candidate_cost(args[0])


def _probe(name: str, coll: str, cfg: TuneConfig, inplace: bool, n: int):
    """Can ``name`` build ``coll`` and run at all: ``(name, (proto, nchunksperloop), None)`` or
    ``(name, None, reason)`` (a worker of :func:`tune`'s pool)."""
    from ccxml.loader.reader import loads
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError
    try:
        text = build_text(name, coll, cfg, inplace)
        sched = loads(text)
        simulate_schedule(sched, n, cfg.topology)     # it can run at all
        return name, (sched.proto, sched.nchunksperloop), None
    except (ValueError, SimulationError) as e:
        return name, None, _first_line(e)


def _windowed_results(name: str, coll: str, cfg: TuneConfig, inplace: bool, shape: tuple,
                      sizes: list[int], known: set):
    """``name`` built for a window ending at each of ``sizes`` (one build per count per call,
    as :func:`tune`'s ``windowed`` shares them) and simulated there: ``[(n, signature or None,
    SimResult or None or _KNOWN)]``, _KNOWN when (signature, n) is in ``known`` (a worker of
    :func:`tune`'s pool)."""
    from ccxml.loader.reader import loads
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError
    from ccxml.vocab.wire import max_allowed_count
    proto, nchunks = shape
    built: dict[int, tuple[Schedule, str] | ValueError] = {}
    out: list[tuple[int, str | None, Any]] = []
    for n in sizes:
        key = max_allowed_count(proto, n, nchunks)
        got = built.get(key)
        if got is None:
            try:
                text = build_text(name, coll, cfg, inplace, 0, n)
                got = (loads(text), text)
            except ValueError as e:
                got = e
            built[key] = got
        if isinstance(got, ValueError):
            out.append((n, None, None))
            continue
        sched, text = got
        sig = sim_signature(text, sched)
        if (sig, n) in known:
            out.append((n, sig, _KNOWN))
            continue
        try:
            r = simulate_schedule(sched, n, cfg.topology)
        except SimulationError:
            r = None
        out.append((n, sig, r))
    return out


class _Ranker:
    """Simulated times of the candidates of one (collective, form), cached per size.

    A candidate is simulated at n bytes as built for a window ending at n — its messages as large
    as the runtime moves at that size (``max_allowed_count``), as ``ccxml select`` builds it — so
    the ranking counts the transfers (and their latency and per-message costs) the file written
    for that window will make. Builds are shared between sizes with the same count per call;
    results are shared through ``cache`` with any schedule of the same :func:`sim_signature`.
    """

    def __init__(self, build: Callable[[str, int], tuple], names: list[str], topology: Topology,
                 cache: dict, note: Callable[[str], None] | None = None, prefetch=None):
        self._build = build                 # (name, n) -> (Schedule, signature) or ValueError
        self.topology = topology
        self.active = sorted(names)
        self._cache = cache                 # (signature, n) -> SimResult
        self._note = note
        #: ``prefetch(names, sizes, known)`` -> {name: [(n, signature or None, result), ...]}:
        #: the same builds and simulations done elsewhere (a process pool); None: here, lazily
        self._prefetch = prefetch
        self._sigs: dict[tuple[str, int], str | None] = {}    # (name, n) -> signature (None: no build)
        self._exact: dict[str, object] = {}                    # coll -> exact max-flow bound or None

    def exact(self, coll: str):
        """The topology's exact max-flow bound of ``coll`` (:func:`ccxml.driver.exact_bound_of`),
        computed once."""
        if coll not in self._exact:
            from ccxml.driver import exact_bound_of
            self._exact[coll] = exact_bound_of(self.topology, coll)
        return self._exact[coll]

    def prefetch(self, sizes: list[int]) -> None:
        """Build and simulate, through ``prefetch``, every active candidate at ``sizes`` not
        known yet; :meth:`result` then finds them (the same figures it would compute)."""
        if self._prefetch is None:
            return
        todo = {name: [n for n in sizes if (name, n) not in self._sigs] for name in self.active}
        todo = {name: ns for name, ns in todo.items() if ns}
        if not todo:
            return
        known = {key for key, r in self._cache.items() if r is not None}
        for name, rows in self._prefetch(todo, known).items():
            for n, sig, r in rows:
                self._sigs[(name, n)] = sig
                if sig is not None and not isinstance(r, str):
                    self._cache.setdefault((sig, n), r)

    def time(self, name: str, n: int) -> float:
        """Simulated seconds; inf when it cannot be built or the model times it at 0 s (a
        schedule that moves nothing the model sees is never the best)."""
        r = self.result(name, n)
        return float("inf") if r is None or not r.time_s > 0 else r.time_s

    def result(self, name: str, n: int):
        """The SimResult of ``name`` at n bytes, None when it cannot be built for that size."""
        from ccxml.simulator import simulate_schedule
        from ccxml.vocab.errors import SimulationError
        sig = self._sigs.get((name, n), _MISSING)
        if sig is None:                     # prefetched: cannot be built for that size
            return None
        if sig is not _MISSING and (sig, n) in self._cache:
            return self._cache[(sig, n)]
        try:
            sched, sig = self._build(name, n)
        except ValueError:
            return None
        key = (sig, n)
        r = self._cache.get(key)
        if r is None:
            if self._note:
                self._note(f"{name} at {n} B")
            try:
                r = simulate_schedule(sched, n, self.topology)
            except SimulationError:
                r = None
            self._cache[key] = r
        return r

    def ranking(self, n: int) -> list[str]:
        """Active candidates at n bytes, fastest first (ties: by name)."""
        self.prefetch([n])
        return sorted(self.active, key=lambda a: (self.time(a, n), a))

    def best(self, n: int) -> str:
        self.prefetch([n])
        return min(self.active, key=lambda a: (self.time(a, n), a))


def _point(ranker: _Ranker, name: str, n: int, text: str, schedule, root: int = 0) -> dict:
    """Simulated figures of the written file at n bytes, the topology's busbw bound there (the
    fastest any schedule could be, :func:`ccxml.driver.bound_at`), and the runner-up for
    comparison."""
    from ccxml.driver import bound_at
    from ccxml.simulator import simulate_schedule
    key = (sim_signature(text, schedule), n)
    r = ranker._cache.get(key)
    if r is None:
        r = ranker._cache[key] = simulate_schedule(schedule, n, ranker.topology)
    doc: dict[str, Any] = {"bytes": n, "time_us": _sig(r.time_s * 1e6), "busbw_GBps": _sig(r.busbw / 1e9)}
    coll = getattr(schedule.coll, "value", schedule.coll)
    bound = bound_at(ranker.topology, coll, r.nranks, n, root, ranker.exact(coll))
    if bound.time_s > 0:
        doc["bound_busbw_GBps"] = _sig(bound.busbw / 1e9)
        doc["bound_cut"] = bound.cut
    others = [a for a in ranker.ranking(n) if a != name and ranker.result(a, n) is not None]
    if others:
        ru = ranker.result(others[0], n)
        doc["runner_up"] = others[0]
        doc["runner_up_busbw_GBps"] = _sig(ru.busbw / 1e9)
    return doc


def _verdict(report, target: str) -> dict:
    warnings = sorted({f.code for f in report.findings if f.severity != "error"})
    return {"target": target, "verdict": "PASS" if report.ok else "FAIL",
            "forms": list(report.stats.get("forms", [])), "steps": report.stats.get("steps", 0),
            "tbs": report.stats.get("tbs", 0), "warnings": warnings}


def _build_and_verify(name, coll, cfg, inplace, lo, hi, verify):
    """(text, report, None) for a file that passes; (text or None, report or None, why) else."""
    try:
        text = build_text(name, coll, cfg, inplace, lo, hi)
    except ValueError as e:
        return None, None, f"cannot build for this window: {_first_line(e)}"
    try:
        rep = verify(text, target=cfg.target, root=cfg.root if Coll(coll).rooted else None)
    except ValueError as e:
        return text, None, f"cannot be loaded: {_first_line(e)}"
    return text, rep, None if rep.ok else rep.first_reason


def tune(cfg: TuneConfig, on_step: Callable[[int, str | None], None] | None = None,
         jobs: int = 1) -> TuneResult:
    """Choose, build and verify the files of an algorithm directory for ``cfg``.

    ``on_step(done, label)`` reports progress: before each (collective, form) with the number
    done so far and its label, and once at the end with ``(total, None)``. ``jobs`` > 1 builds,
    simulates and verifies the candidates of each step in that many worker processes
    (:class:`ccxml.driver.pool.Pool`); the result is the same as with ``jobs=1``. Raises
    :class:`TuneError` when no file at all can be produced.
    """
    from ccxml.driver.pool import Pool
    with Pool(jobs) as pool:
        return _tune(cfg, on_step, pool)


def _tune(cfg: TuneConfig, on_step, pool) -> TuneResult:
    from ccxml.interpreter import verify
    from ccxml.loader.reader import loads
    from ccxml.vocab.wire import max_allowed_count
    if cfg.ranks < 2:
        raise TuneError(f"--ranks must be >= 2, got {cfg.ranks}")
    cfg.topology.check_ranks(cfg.ranks)
    if cfg.max_bytes and cfg.max_bytes < cfg.min_bytes:
        raise TuneError(f"--max-bytes {cfg.max_bytes} is below --min-bytes {cfg.min_bytes}")
    sizes = cfg.sample_sizes()
    hi_probe = sizes[-1]
    res = TuneResult(cfg)
    done = 0
    cache: dict = {}
    for coll in cfg.colls:
        names = candidates(coll, cfg)
        for form in cfg.forms:
            job = f"{coll} {form}"
            if on_step:
                on_step(done, job)
            note = (lambda what, d=done, j=job: on_step(d, f"{j}: {what}")) if on_step else None
            done += 1
            inplace = FORMS[form]
            shapes: dict[str, tuple[str, int]] = {}          # name -> (proto, nchunksperloop)
            builds: dict[tuple[str, int], tuple] = {}       # (name, count per call) -> build
            for name, shape, why in pool.map(_probe, [(name, coll, cfg, inplace, sizes[0])
                                                       for name in names], cost=_cost):
                if shape is None:
                    res.skipped.append({"coll": coll, "form": form, "algorithm": name,
                                        "reason": why})
                else:
                    shapes[name] = shape
            if not shapes:
                res.notes.append(f"{coll} {form}: no available algorithm can run it on "
                                 f"{cfg.ranks} ranks here; the runtime falls back to NCCL")
                continue

            def windowed(name, n, coll=coll, inplace=inplace, shapes=shapes, builds=builds):
                proto, nchunks = shapes[name]
                key = (name, max_allowed_count(proto, n, nchunks))
                got = builds.get(key)
                if got is None:
                    try:
                        text = build_text(name, coll, cfg, inplace, 0, n)
                        sched = loads(text)
                        got = (sched, sim_signature(text, sched))
                    except ValueError as e:
                        got = e
                    builds[key] = got
                if isinstance(got, ValueError):
                    raise got
                return got

            def prefetch(todo, known, coll=coll, inplace=inplace, shapes=shapes):
                rows = pool.map(_windowed_results, [(name, coll, cfg, inplace, shapes[name], ns, known)
                                                    for name, ns in todo.items()],
                                cost=lambda args: _cost(args) * len(args[5]))
                return dict(zip(todo, rows))

            ranker = _Ranker(windowed, list(shapes), cfg.topology, cache, note,
                             prefetch if pool.parallel else None)
            ranker.prefetch(sizes)
            verified: dict[tuple[str, int, int], tuple[Any, Any, str | None]] = {}   # (text, report, why not)
            while ranker.active:
                plan = plan_windows(ranker.best, sizes)
                wins = windows_from_plan(plan, cfg.min_bytes, cfg.max_bytes)
                if pool.parallel:           # every window's proof at once (the loop stops at
                    todo = [w for w in dict.fromkeys(wins) if (w[2], w[0], w[1]) not in verified]
                    for (lo, hi, name), got in zip(todo, pool.map(
                            _build_and_verify, [(name, coll, cfg, inplace, lo, hi, verify)
                                                for lo, hi, name in todo], cost=_cost)):
                        verified[(name, lo, hi)] = got      # the first failure, as without it)
                failed = None
                for lo, hi, name in wins:
                    key = (name, lo, hi)
                    if key not in verified:
                        verified[key] = _build_and_verify(name, coll, cfg, inplace, lo, hi, verify)
                    text, rep, why = verified[key]
                    if why is not None:
                        failed = (name, lo, hi, why)
                        break
                if failed is None:
                    break
                name, lo, hi, why = failed
                res.rejected.append({"coll": coll, "form": form, "algorithm": name,
                                     "window": {"min_bytes": lo, "max_bytes": hi},
                                     "reason": why})
                ranker.active.remove(name)
            if not ranker.active:
                res.notes.append(f"{coll} {form}: every candidate failed verification; "
                                 f"no file written")
                continue
            width = max(2, len(str(len(wins) - 1)))
            for i, (lo, hi, name) in enumerate(wins):
                text, rep, _ = verified[(name, lo, hi)]
                sched = loads(text)
                at_lo = max(lo, 1)
                at_hi = hi if hi else hi_probe
                root = cfg.root if Coll(coll).rooted else 0
                simulated = {"min": _point(ranker, name, at_lo, text, sched, root)}
                if at_hi != at_lo:
                    simulated["max"] = _point(ranker, name, at_hi, text, sched, root)
                res.files.append(TunedFile(
                    name=f"{coll}-{form}-{i:0{width}d}-{name.replace(':', '-')}.xml", coll=coll, form=form,
                    algorithm=name, min_bytes=lo, max_bytes=hi, text=text,
                    nchunksperloop=sched.nchunksperloop, nchannels=sched.nchannels,
                    proto=sched.proto, verdict=_verdict(rep, cfg.target), simulated=simulated))
    if on_step:
        on_step(done, None)
    if not res.files:
        raise TuneError("no file could be produced: " + ("; ".join(res.notes) or "no candidates"))
    return res
