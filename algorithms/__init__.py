"""The algorithm scripts, importable as ``ccxml.algorithms.<name>``.

``REGISTRY`` maps each CLI name to its module. Every module defines ``COLLECTIVES`` (collective →
builder); :func:`build` calls the right builder with the arguments it accepts.
"""
from __future__ import annotations

import importlib
import inspect

from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.vocab.wire import Coll

#: CLI name -> module name in this package, in the order ``ccxml list`` shows them
REGISTRY = {
    "ring": "ring",
    "mesh": "mesh",
    "rhd": "rhd",
    "pairwise": "pairwise",
    "star": "star",
    "nhr": "nhr",
    "nb": "nb",
    "ahc": "ahc",
    "pipeline": "pipeline",
    "2d-ring": "ring2d",
    "2d-torus": "torus2d",
    "2d-mesh": "mesh2d",
    "hierarchical": "hierarchical",
}


def available() -> dict[str, object]:
    """Name -> module for every registered algorithm whose script is present."""
    out = {}
    for name, module in REGISTRY.items():
        try:
            out[name] = importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{module}":
                raise
    return out


def get(name: str):
    """The module of algorithm ``name`` (importing only that one); AlgorithmError otherwise."""
    module = REGISTRY.get(name)
    if module is not None:
        try:
            return importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{module}":
                raise
    raise AlgorithmError(f"unknown algorithm {name!r}; known: {', '.join(available())}")


def supported(name: str) -> list[Coll]:
    return list(get(name).COLLECTIVES)


def build(name: str, coll: Coll | str, ranks: int, *, options: Options | None = None, **kwargs):
    """Build ``coll`` with algorithm ``name`` for ``ranks`` ranks; returns a Program."""
    module = get(name)
    try:
        coll = Coll(coll)
    except ValueError:
        raise AlgorithmError(f"unknown collective {coll!r}; known: "
                             f"{', '.join(c.value for c in Coll)}") from None
    builder = module.COLLECTIVES.get(coll)
    if builder is None:
        raise AlgorithmError(f"{name} does not support {coll.value}; it supports "
                             f"{', '.join(c.value for c in module.COLLECTIVES)}")
    params = inspect.signature(builder).parameters
    unused = {k: v for k, v in kwargs.items() if v is not None and k not in params}
    if unused:
        raise AlgorithmError(f"{name} {coll.value} takes no {', '.join('--' + k for k in unused)}")
    args = {k: v for k, v in kwargs.items() if v is not None and k in params}
    return builder(ranks, options=options or Options(), **args)
