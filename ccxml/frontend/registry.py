"""The algorithm registry: every algorithm registers its builders here, once.

An algorithm script marks each builder with :func:`algorithm`::

    @algorithm("ring", Coll.ALLREDUCE)
    def allreduce(p: int, *, options: Options = Options()) -> Program: ...

    @algorithm("2d-torus", Coll.ALLREDUCE, intra=INTRA, inter=INTER)
    def allreduce(p: int, *, topology=None, options: Options = Options(), intra="ring", inter="ring"): ...

The decorator records the algorithm's name, the collective, the builder and the keyword options it
takes (its signature: ``root``, ``counts``, ``topology``, ``intra``, ...), and wraps the builder so
that its parameters are checked before it runs, called from the CLI or from Python: the rank
count, the root, and every option with a list of choices.

:data:`registry` is the one :class:`Registry`. ``ccxml.algorithms`` declares the built-in
algorithms (name → module, imported on first use, so that ``ccxml generate ring`` imports only
ring); ``ccxml list``, ``generate``, ``simulate``, ``select`` and ``tune`` read the registry. A
package of its own registers the same way — :meth:`Registry.declare` a name and the module that
registers it (an entry point of a group ``ccxml.algorithms`` gives exactly that pair), or
:meth:`Registry.register` a builder directly.
"""
from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ccxml.frontend.algorithm import Options, check_ranks, check_root
from ccxml.frontend.chunk import Program
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Coll

Builder = Callable[..., Program]


@dataclass
class Algorithm:
    """One registered algorithm: its builders by collective, in registration order, and the
    keyword options and choices each takes."""

    name: str
    module: str | None = None
    builders: dict[Coll, Builder] = field(default_factory=dict)
    params: dict[Coll, tuple[str, ...]] = field(default_factory=dict)
    choices: dict[Coll, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    @property
    def collectives(self) -> list[Coll]:
        return list(self.builders)

    def builder(self, coll: Coll | str) -> Builder:
        """The builder of ``coll``; AlgorithmError naming the ones there are."""
        coll = _coll(coll)
        found = self.builders.get(coll)
        if found is None:
            raise AlgorithmError(f"{self.name} does not support {coll.value}; it supports "
                                 f"{', '.join(c.value for c in self.builders)}")
        return found

    def topology_args(self, coll: Coll | str, topology) -> dict:
        """The keyword arguments that hand a grouped ``topology`` to the builder of ``coll``:
        the topology where it takes one, else its group sizes (``groups``) or its shape
        (``servers``, ``ranks_per_server``); none for a flat topology or a builder that takes
        none of them."""
        if topology is None or topology.groups is None:
            return {}
        params = self.params.get(_coll(coll), ())
        if "topology" in params:
            return {"topology": topology}
        if "groups" in params:
            return {"groups": list(topology.groups)}
        if "servers" in params and "ranks_per_server" in params and topology.ranks_per_server:
            return {"servers": topology.servers, "ranks_per_server": topology.ranks_per_server}
        return {}


class Registry:
    """Algorithms by name, in the order they were declared or registered."""

    def __init__(self):
        self._declared: dict[str, str] = {}          # name -> module that registers it
        self._algorithms: dict[str, Algorithm] = {}

    # ---- filling it ----------------------------------------------------------------------
    def declare(self, name: str, module: str) -> None:
        """``module`` registers algorithm ``name``: it is imported when ``name`` is first used."""
        self._declared.setdefault(name, module)

    def register(self, name: str, coll: Coll | str, builder: Builder, *,
                 choices: dict[str, Sequence[str]] | None = None) -> Builder:
        """Add ``builder`` as ``name``'s ``coll``; return it wrapped so that its parameters are
        checked before it runs (the rank count, a root in range, the listed ``choices``)."""
        coll = _coll(coll)
        alg = self._algorithms.get(name)
        if alg is None:
            alg = self._algorithms[name] = Algorithm(name, self._declared.get(name, builder.__module__))
        before = alg.builders.get(coll)
        if before is not None and before.__module__ not in ("__main__", builder.__module__):
            raise AlgorithmError(f"{name} {coll.value} is registered by {before.__module__} and "
                                 f"{builder.__module__}")
        params = inspect.signature(builder).parameters
        choices = {key: tuple(allowed) for key, allowed in (choices or {}).items()}
        unknown = [key for key in choices if key not in params]
        if unknown:
            raise AlgorithmError(f"{name} {coll.value}: choices for {', '.join(unknown)}, which "
                                 f"the builder does not take")
        defaults = {key: p.default for key, p in params.items()}

        @functools.wraps(builder)
        def checked(p: int, **kwargs) -> Program:
            check_ranks(p)
            if "root" in params:
                check_root(kwargs.get("root", defaults["root"]), p)
            for key, allowed in choices.items():
                value = kwargs.get(key, defaults[key])
                if value is not None and value not in allowed:
                    raise AlgorithmError(f"{name}: --{key} must be one of {', '.join(allowed)}; "
                                         f"got {value!r}")
            return builder(p, **kwargs)

        alg.builders[coll] = checked
        alg.params[coll] = tuple(key for key in params if key not in ("p", "options"))
        alg.choices[coll] = choices
        return checked

    # ---- reading it ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every algorithm declared or registered (without importing any)."""
        return list(dict.fromkeys([*self._declared, *self._algorithms]))

    def get(self, name: str) -> Algorithm:
        """Algorithm ``name`` (importing the module that registers it); AlgorithmError otherwise."""
        alg = self._load(name)
        if alg is None:
            raise AlgorithmError(f"unknown algorithm {name!r}; known: {', '.join(self.available())}")
        return alg

    def available(self) -> dict[str, Algorithm]:
        """Name -> Algorithm for every algorithm whose module is present."""
        found = {name: self._load(name) for name in self.names()}
        return {name: alg for name, alg in found.items() if alg is not None}

    def entries(self, coll: Coll | str) -> list[str]:
        """Every way to run ``coll`` that ``select`` and ``tune`` rank: each available algorithm
        that supports it, and each of its other ``variant`` choices as ``NAME:VARIANT`` (the
        first choice is the builder's default, the algorithm's own name)."""
        coll = _coll(coll)
        out = []
        for name, alg in self.available().items():
            if coll in alg.builders:
                out.append(name)
                out += [f"{name}:{v}" for v in alg.choices[coll].get("variant", ())[1:]]
        return out

    def entry(self, label: str) -> tuple[str, dict]:
        """(algorithm name, builder keywords) of an :meth:`entries` label: ``NAME`` or
        ``NAME:VARIANT``."""
        name, _, variant = label.partition(":")
        return name, ({"variant": variant} if variant else {})

    def _load(self, name: str) -> Algorithm | None:
        alg = self._algorithms.get(name)
        module = self._declared.get(name)
        if alg is None and module is not None:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as e:       # a declared module that is not there
                if e.name != module:
                    raise
            alg = self._algorithms.get(name)
        return alg

    def build(self, name: str, coll: Coll | str, ranks: int, *, options: Options | None = None,
              **kwargs) -> Program:
        """Build ``coll`` with algorithm ``name`` for ``ranks`` ranks; returns a Program. Options
        given as None are left out; one the builder does not take is an AlgorithmError."""
        alg = self.get(name)
        coll = _coll(coll)
        builder = alg.builder(coll)
        takes = alg.params[coll]
        unused = [k for k, v in kwargs.items() if v is not None and k not in takes]
        if unused:
            raise AlgorithmError(f"{name} {coll.value} takes no {', '.join('--' + k for k in unused)}")
        args = {k: v for k, v in kwargs.items() if v is not None}
        return builder(ranks, options=options or Options(), **args)


def _coll(coll: Coll | str) -> Coll:
    try:
        return Coll(coll)
    except ValueError:
        raise AlgorithmError(f"unknown collective {coll!r}; known: "
                             f"{', '.join(c.value for c in Coll)}") from None


#: the one registry
registry = Registry()


def algorithm(name: str, coll: Coll | str, **choices: Sequence[str]) -> Callable[[Builder], Builder]:
    """Register the decorated builder as algorithm ``name``'s ``coll`` (``choices``: the values
    each listed keyword option may take). A script run as a program (``python algorithms/ring.py
    ...``) registers its own builders, which the ``ccxml generate`` it starts then uses; the same
    module imported by its name later takes their place."""
    def register(builder: Builder) -> Builder:
        return registry.register(name, coll, builder, choices=choices)
    return register
