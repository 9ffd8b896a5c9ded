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
registers it, or :meth:`Registry.register` a builder directly.

Plugins: a pip-installed distribution declares an algorithm with an entry point of the group
:data:`PLUGIN_GROUP` (``ccxml.algorithms``), ``NAME = package.module``; ``ccxml.algorithms`` has the
registry read that group after the built-ins (:meth:`Registry.add_plugins`). The entry points are
read when a name is not a built-in or every name is asked for, and a plugin's module is imported,
like a built-in's, when its algorithm is first used. A plugin that cannot be used — its module
does not import, registers nothing under its name, or the name is a built-in's or an earlier
plugin's — is left out with one :class:`~ccxml.vocab.errors.PluginWarning` naming it and its
distribution; the other algorithms keep working.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ccxml.frontend.algorithm import Options, check_ranks, check_root
from ccxml.frontend.chunk import Program
from ccxml.vocab.errors import AlgorithmError, PluginWarning
from ccxml.vocab.wire import Coll

Builder = Callable[..., Program]

#: the entry-point group of algorithm plugins: ``NAME = package.module`` declares algorithm NAME
PLUGIN_GROUP = "ccxml.algorithms"


@dataclass(frozen=True)
class Plugin:
    """An algorithm declared by an installed distribution's entry point."""

    name: str               # the algorithm
    module: str             # the module that registers it
    distribution: str
    version: str

    def __str__(self) -> str:
        return f"plugin {self.name} (distribution {self.distribution} {self.version})"


@dataclass
class Algorithm:
    """One registered algorithm: its builders by collective, in registration order, and the
    keyword options and choices each takes."""

    name: str
    module: str | None = None
    builders: dict[Coll, Builder] = field(default_factory=dict)
    params: dict[Coll, tuple[str, ...]] = field(default_factory=dict)
    choices: dict[Coll, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    defaults: dict[Coll, dict[str, Any]] = field(default_factory=dict)
    plugin: Plugin | None = None        # the distribution that brings it; None: ccxml's own

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

    def parse_options(self, coll: Coll | str, texts: dict[str, str]) -> dict[str, Any]:
        """The builder of ``coll``'s keyword options from text (``--opt KEY=VALUE``): each value
        read as the type of the option's default (int, float, bool, else text). AlgorithmError
        for an option the builder does not take, or a value that is not of its type."""
        coll = _coll(coll)
        self.builder(coll)
        defaults = self.defaults[coll]
        out: dict[str, Any] = {}
        for key, text in texts.items():
            if key not in defaults:
                takes = ", ".join(defaults) or "none"
                raise AlgorithmError(f"{self.name} {coll.value} takes no option {key!r}; its "
                                     f"options: {takes}")
            out[key] = _read_value(key, text, defaults[key])
        return out


class Registry:
    """Algorithms by name, in the order they were declared or registered: what was declared
    before :meth:`add_plugins`, then the plugins sorted by name, then what was only registered."""

    def __init__(self):
        self._declared: dict[str, str] = {}          # name -> module that registers it
        self._algorithms: dict[str, Algorithm] = {}
        self._groups: list[str] = []                 # entry-point groups of plugins
        self._unread = False                         # a group has not been read yet
        self._plugins: dict[str, Plugin] = {}        # declared names that are plugins
        self._broken: dict[str, str] = {}            # plugin name -> why it cannot be used
        self._warned: set[str] = set()
        self._loading: Plugin | None = None          # the plugin whose module is importing

    # ---- filling it ----------------------------------------------------------------------
    def declare(self, name: str, module: str) -> None:
        """``module`` registers algorithm ``name``: it is imported when ``name`` is first used."""
        self._declared.setdefault(name, module)

    def add_plugins(self, group: str = PLUGIN_GROUP) -> None:
        """Declare the algorithms of the installed distributions' entry points of ``group``
        (``NAME = package.module``), after everything declared so far. The group is read when
        first needed: a name that is not declared, or :meth:`names`."""
        if group not in self._groups:
            self._groups.append(group)
            self._unread = True

    def rescan_plugins(self) -> None:
        """Forget the plugins read so far, and read the entry points again when next needed
        (a distribution installed or removed while the process runs). A plugin's module that
        was imported is dropped from ``sys.modules`` with its algorithm, so that it registers
        again when next used."""
        for name, plugin in self._plugins.items():
            self._declared.pop(name, None)
            sys.modules.pop(plugin.module, None)
        for name in [n for n, alg in self._algorithms.items() if alg.plugin is not None]:
            del self._algorithms[name]
        self._plugins.clear()
        self._broken.clear()
        self._warned.clear()
        self._unread = bool(self._groups)

    def _read_plugins(self) -> None:
        if not self._unread:
            return
        self._unread = False
        # imported here: importing it would cost ~30 ms of every start-up
        import importlib.metadata
        found = []
        for group in self._groups:
            try:
                points = importlib.metadata.entry_points(group=group)
            except Exception as e:                   # unreadable metadata: no plugins
                self._warn(group, f"cannot read the entry points of {group}: {_why(e)}")
                continue
            for ep in points:
                dist = getattr(ep, "dist", None)
                found.append(Plugin(ep.name, ep.module, getattr(dist, "name", None) or "unknown",
                                    getattr(dist, "version", None) or "?"))
        for plugin in sorted(found, key=lambda q: (q.name, q.distribution, q.module)):
            earlier = self._plugins.get(plugin.name)
            alg = self._algorithms.get(plugin.name)
            if (earlier is None and alg is not None and plugin.name not in self._declared
                    and _package(alg.module) == _package(plugin.module)):
                self._declared[plugin.name] = plugin.module      # its module was imported first
                self._plugins[plugin.name] = alg.plugin = plugin
            elif earlier is not None:
                self._warn(str(plugin), f"{plugin}: {plugin.name} is already {earlier}; "
                                        f"{plugin.distribution}'s is left out")
            elif plugin.name in self._declared or plugin.name in self._algorithms:
                self._warn(str(plugin), f"{plugin}: {plugin.name} is a built-in algorithm; the "
                                        f"plugin is left out")
            else:
                self._declared[plugin.name] = plugin.module
                self._plugins[plugin.name] = plugin

    def _warn(self, key: str, message: str) -> None:
        """One :class:`PluginWarning`, once per ``key``."""
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, PluginWarning, stacklevel=3)

    def register(self, name: str, coll: Coll | str, builder: Builder, *,
                 choices: dict[str, Sequence[str]] | None = None) -> Builder:
        """Add ``builder`` as ``name``'s ``coll``; return it wrapped so that its parameters are
        checked before it runs (the rank count, a root in range, the listed ``choices``)."""
        coll = _coll(coll)
        if name not in self._declared:
            self._read_plugins()            # a plugin's module imported directly is still the plugin
        self._check_owner(name, builder)
        alg = self._algorithms.get(name)
        if alg is None:
            plugin = self._plugins.get(name) if name in self._declared else self._loading
            alg = self._algorithms[name] = Algorithm(name, self._declared.get(name, builder.__module__),
                                                     plugin=plugin)
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
            plugin = alg.plugin
            if plugin is None:
                return builder(p, **kwargs)
            try:                                # a plugin's defect is one line, not a traceback
                prog = builder(p, **kwargs)
            except ValueError:
                raise
            except Exception as e:
                raise AlgorithmError(f"{plugin}: its {coll.value} builder failed: {_why(e)}") from e
            if not isinstance(prog, Program):
                raise AlgorithmError(f"{plugin}: its {coll.value} builder returned "
                                     f"{type(prog).__name__}, not a Program")
            return prog

        alg.builders[coll] = checked
        alg.params[coll] = tuple(key for key in params if key not in ("p", "options"))
        alg.choices[coll] = choices
        alg.defaults[coll] = {key: defaults[key] for key in alg.params[coll]}
        return checked

    def _check_owner(self, name: str, builder: Builder) -> None:
        """A built-in algorithm's builders come from the package that declares it (or a script
        run as a program): a plugin that registers a built-in's name is an AlgorithmError."""
        declared = self._declared.get(name)
        if declared is None or name in self._plugins or builder.__module__ == "__main__":
            return
        if _package(builder.__module__) != _package(declared):
            raise AlgorithmError(f"{builder.__module__} registers {name}, which is a built-in "
                                 f"algorithm ({declared})")

    # ---- reading it ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every algorithm declared or registered (without importing any): the built-ins, then
        the plugins by name."""
        self._read_plugins()
        return list(dict.fromkeys([*self._declared, *self._algorithms]))

    def plugin(self, name: str) -> Plugin | None:
        """The plugin that declares ``name``; None for one of ccxml's own or an unknown name."""
        self._read_plugins()
        return self._plugins.get(name)

    def get(self, name: str) -> Algorithm:
        """Algorithm ``name`` (importing the module that registers it); AlgorithmError otherwise,
        naming the plugin and why where ``name`` is a plugin that cannot be used."""
        alg = self._load(name)
        if alg is None:
            if name in self._broken:
                raise AlgorithmError(self._broken[name])
            raise AlgorithmError(f"unknown algorithm {name!r}; known: {', '.join(self.available())}")
        return alg

    def available(self) -> dict[str, Algorithm]:
        """Name -> Algorithm for every algorithm whose module is present; a plugin that cannot
        be used is left out with one warning."""
        found = {name: self._load(name) for name in self.names()}
        for name in found:
            if name in self._broken:
                self._warn(name, self._broken[name])
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
        if alg is not None or name in self._broken:
            return alg
        if name not in self._declared:
            self._read_plugins()
        module = self._declared.get(name)
        if module is None:
            return None
        plugin = self._plugins.get(name)
        if plugin is not None:
            return self._load_plugin(plugin)
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:       # a declared module that is not there
            if e.name != module:
                raise
        return self._algorithms.get(name)

    def _load_plugin(self, plugin: Plugin) -> Algorithm | None:
        """Import a plugin's module; on any failure, forget what it registered and record why."""
        before = set(self._algorithms)
        self._loading = plugin
        try:
            importlib.import_module(plugin.module)
            why = None
        except Exception as e:              # third-party code: whatever it raises
            why = f"cannot import {plugin.module}: {_why(e)}"
        finally:
            self._loading = None
        alg = self._algorithms.get(plugin.name)
        if why is None and alg is None:
            why = f"{plugin.module} registers no algorithm {plugin.name!r}"
        if why is None:
            return alg
        for name in set(self._algorithms) - before:
            if self._algorithms[name].plugin == plugin:
                del self._algorithms[name]
        self._broken[plugin.name] = f"{plugin}: {why}"
        return None

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
            raise AlgorithmError(f"{name} {coll.value} takes no {', '.join(map(self._option, unused))}")
        args = {k: v for k, v in kwargs.items() if v is not None}
        return builder(ranks, options=options or Options(), **args)

    def _option(self, key: str) -> str:
        """How a user gives option ``key``: the topology names its options and who takes them."""
        if key != "topology":
            return "--" + key
        takers = [n for n, a in self.available().items()
                  if any({"topology", "groups", "servers"} & set(ps) for ps in a.params.values())]
        return ("topology (--topology, --preset, --servers, --groups; the algorithms that take "
                f"one: {', '.join(takers)})")


def _package(module: str | None) -> str:
    """The top-level package of a module name."""
    return (module or "").partition(".")[0]


def _why(e: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _read_value(key: str, text: str, default: Any) -> Any:
    """``text`` as the type of ``default`` (bool before int: a bool is an int)."""
    if isinstance(default, bool):
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise AlgorithmError(f"--opt {key}={text}: {key} is true or false")
    for kind, what in ((int, "an integer"), (float, "a number")):
        if isinstance(default, kind):
            try:
                return kind(text)
            except ValueError:
                raise AlgorithmError(f"--opt {key}={text}: {key} takes {what}") from None
    return text


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
