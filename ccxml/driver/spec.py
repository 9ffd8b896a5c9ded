"""An algorithm as data, and the one recipe that turns it into a schedule.

registry entry → topology → builder options → :class:`~ccxml.frontend.algorithm.Options` →
:func:`build` → :func:`compile` for a runtime profile → :func:`export` (MSCCL XML) → load
(:func:`schedule`): every command, ``ccxml tune``, the MSCCLang front end, the tests and the
benchmarks go through these functions instead of writing the steps out again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ccxml.vocab.wire import Coll, Profile

if TYPE_CHECKING:
    from ccxml.frontend.chunk import Program
    from ccxml.ir.nodes import Algo
    from ccxml.loader.model import Schedule
    from ccxml.passes import Hook
    from ccxml.topology.model import Topology


@dataclass(frozen=True)
class AlgorithmSpec:
    """What to build: algorithm ``name`` (a registry entry, ``NAME`` or ``NAME:VARIANT`` as
    :meth:`~ccxml.frontend.registry.Registry.entries` lists them) for ``collective`` on ``ranks``
    ranks.

    ``options``: :class:`~ccxml.frontend.algorithm.Options` fields (channels, proto, inplace,
    min_bytes, max_bytes); ``topology``: a Topology or None; ``root``: of a rooted collective
    (default 0); ``params``: the builder's own keyword values (intra, inter, variant, counts,
    ...); ``opts``: builder options as text (``--opt KEY=VALUE``), read as the type of their
    default. ``strict``: ``generate``'s reading — the name is one algorithm (no ``:VARIANT``)
    and the topology goes to the builder as given, so that one that takes none says so; else
    (``simulate``, ``select``, ``tune``) the topology is handed only to builders that take one,
    in the form they take (:meth:`~ccxml.frontend.registry.Algorithm.topology_args`).
    """
    name: str
    collective: str
    ranks: int
    options: Mapping[str, Any] = field(default_factory=dict)
    topology: Any = None
    root: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    opts: Mapping[str, str] = field(default_factory=dict)
    strict: bool = False

    def __post_init__(self) -> None:
        for name in ("options", "params", "opts"):       # read-only copies: the spec is a value
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name) or {})))
        object.__setattr__(self, "collective", Coll(self.collective).value)

    def with_options(self, **options: Any) -> AlgorithmSpec:
        """The same spec with some :class:`Options` fields replaced (e.g. ``max_bytes``)."""
        from dataclasses import replace
        return replace(self, options={**self.options, **options})


def build(spec: AlgorithmSpec) -> Program:
    """The Program ``spec`` describes (built, not compiled). Raises ValueError subclasses
    (unknown algorithm, a shape or option the builder refuses, ...)."""
    from ccxml.algorithms import registry
    from ccxml.frontend.algorithm import Options
    coll = Coll(spec.collective)
    root = 0 if coll.rooted and spec.root is None else spec.root
    if spec.strict:
        name, kwargs = spec.name, {"topology": spec.topology}
        alg = registry.get(name)
    else:
        name, kwargs = registry.entry(spec.name)
        alg = registry.get(name)
        if coll in alg.builders:
            kwargs.update(alg.topology_args(coll, spec.topology))
    if spec.opts:
        kwargs.update(alg.parse_options(coll, dict(spec.opts)))
    return registry.build(name, coll, spec.ranks, options=Options(**spec.options), root=root,
                          **{**spec.params, **kwargs})


def compile(program: Program, profile: str | Profile = "exec", *, merge_rcs: bool = True,
            hook: Hook | None = None, passes: str | None = None, consume: bool = False) -> Algo:
    """``program`` compiled for runtime ``profile`` (its passes, or the pipeline text
    ``passes``; ``hook(pass, algo)`` after each): the compiled Algo. ``consume``: compile the
    program itself, which then cannot compile again (no copy: a program built to be compiled
    once)."""
    return program.compile(profile, merge_rcs=merge_rcs, hook=hook, passes=passes, consume=consume)


def export(algo: Algo, profile: str = "exec") -> str:
    """The MSCCL XML text of a compiled Algo, for ``profile``."""
    from ccxml.writer.msccl import to_xml
    return to_xml(algo, profile)


def compiled(spec: AlgorithmSpec, profile: str = "exec") -> Algo:
    """:func:`build`, then :func:`compile` for ``profile``: the compiled Algo."""
    return compile(build(spec), profile, consume=True)    # a program of its own, compiled once


def text(spec: AlgorithmSpec, profile: str = "exec") -> str:
    """:func:`compiled`, then :func:`export`: the MSCCL XML text."""
    return export(compiled(spec, profile), profile)


def schedule(spec: AlgorithmSpec, profile: str = "exec", *,
             on_limit: Callable[[str], None] | None = None) -> Schedule:
    """``spec`` written for ``profile`` and read back by the loader: a Schedule. When the
    profile's limits stop it and ``on_limit`` is given, it is built again for the
    :data:`~ccxml.vocab.wire.UNBOUNDED` profile (to be timed, never written) and ``on_limit``
    gets the limit's one line."""
    from ccxml.loader.reader import loads
    return loads(schedule_text(spec, profile, on_limit=on_limit)[0])


def schedule_text(spec: AlgorithmSpec, profile: str = "exec", *,
                  on_limit: Callable[[str], None] | None = None) -> tuple[str, str]:
    """What :func:`schedule` loads: (MSCCL XML text, the profile it was written for — ``profile``,
    or :data:`~ccxml.vocab.wire.UNBOUNDED`'s name when its limits stopped it and ``on_limit``
    was called)."""
    from ccxml.vocab.errors import LimitError
    from ccxml.vocab.wire import UNBOUNDED
    try:
        algo = compiled(spec, profile)
    except LimitError as e:
        if on_limit is None:
            raise
        profile = UNBOUNDED.name
        algo = compiled(spec, profile)
        on_limit(str(e).splitlines()[0])
    return export(algo, profile), profile


def schedules(spec: AlgorithmSpec, sizes: list[int], profile: str = "exec", *,
              on_limit: Callable[[str], None] | None = None) -> list[Schedule]:
    """One schedule per size, what ``simulate``, ``select`` and ``tune`` time: ``spec`` built for
    a window ending at that size (messages as large as the runtime moves at that size, §6).
    Sizes that give the same primitive-call size share one schedule."""
    from ccxml.vocab.wire import max_allowed_count
    first = schedule(spec.with_options(max_bytes=max(sizes)), profile, on_limit=on_limit)
    built = {max_allowed_count(first.proto, max(sizes), first.nchunksperloop): first}
    out: list[Schedule] = []
    for n in sizes:
        allowed = max_allowed_count(first.proto, n, first.nchunksperloop)
        if allowed not in built:
            built[allowed] = schedule(spec.with_options(max_bytes=n), profile, on_limit=on_limit)
        out.append(built[allowed])
    return out


def limit_note(name: str, reason: str, profile: str = "exec") -> str:
    """What simulate and select say of a schedule timed without the runtime's limits."""
    from ccxml.vocab.wire import UNBOUNDED
    return (f"{name}: {reason}; timed without the {profile} runtime's limits (profile "
            f"{UNBOUNDED.name!r}, as if the runtime had none): no runtime loads it as built")


# ---- the keyword forms (the tests and benchmarks call these) --------------------------------

def _spec(algorithm: str, coll: str, ranks: int, root: int | None, topology: Topology | None,
          opts: Mapping[str, str] | None, options: Mapping[str, Any]) -> AlgorithmSpec:
    return AlgorithmSpec(algorithm, coll, ranks, options=options, topology=topology, root=root, opts=opts or {})


def compiled_algorithm(algorithm: str, coll: str, ranks: int, *, root: int | None = None,
                       topology: Topology | None = None, target: str = "exec",
                       opts: dict[str, str] | None = None, **options: Any) -> Algo:
    """:func:`compiled` of ``AlgorithmSpec(algorithm, coll, ranks, ...)`` for profile ``target``;
    ``options`` are :class:`Options` fields."""
    return compiled(_spec(algorithm, coll, ranks, root, topology, opts, options), target)


def algorithm_schedule(algorithm: str, coll: str, ranks: int, *, root: int | None = None,
                       topology: Topology | None = None, target: str = "exec",
                       opts: dict[str, str] | None = None, on_limit: Callable[[str], None] | None = None,
                       **options: Any) -> Schedule:
    """:func:`schedule` of ``AlgorithmSpec(algorithm, coll, ranks, ...)`` for profile ``target``."""
    return schedule(_spec(algorithm, coll, ranks, root, topology, opts, options), target, on_limit=on_limit)


def algorithm_schedules(algorithm: str, coll: str, ranks: int, sizes: list[int], *, root: int | None = None,
                        topology: Topology | None = None, target: str = "exec",
                        opts: dict[str, str] | None = None,
                        on_limit: Callable[[str], None] | None = None) -> list[Schedule]:
    """:func:`schedules` of ``AlgorithmSpec(algorithm, coll, ranks, ...)`` for profile ``target``."""
    return schedules(_spec(algorithm, coll, ranks, root, topology, opts, {}), sizes, target, on_limit=on_limit)


def generate_spec(algorithm: str, coll: str, ranks: int, *, root: int | None = None,
                  topology: Topology | None = None, opts: Mapping[str, str] | None = None,
                  counts: Any = None, intra: Any = None, inter: Any = None, variant: Any = None,
                  **options: Any) -> AlgorithmSpec:
    """``ccxml generate``'s spec (:attr:`AlgorithmSpec.strict`): ``counts``, ``intra``, ``inter`` and
    ``variant`` go to the builder, which validates them (one that takes none of them says so);
    ``options`` are :class:`Options` fields."""
    params = {k: v for k, v in (("counts", counts), ("intra", intra), ("inter", inter),
                                ("variant", variant)) if v is not None}
    return AlgorithmSpec(algorithm, coll, ranks, options=options, topology=topology, root=root,
                         params=params, opts=opts or {}, strict=True)


def generate_text(algorithm: str, coll: str, ranks: int, *, target: str = "exec", merge_rcs: bool = True,
                  hook: Hook | None = None, **kwargs: Any) -> tuple[str, Algo]:
    """:func:`generate_spec` built, compiled for ``target`` and exported: (xml text, compiled Algo),
    the bytes ``ccxml generate`` writes."""
    algo = compile(build(generate_spec(algorithm, coll, ranks, **kwargs)), target, merge_rcs=merge_rcs, hook=hook)
    return export(algo, target), algo
