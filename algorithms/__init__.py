"""The algorithm scripts, importable as ``ccxml.algorithms.<name>``.

Every script registers its builders with :func:`ccxml.frontend.registry.algorithm`; the registry
(:data:`ccxml.frontend.registry.registry`) is what ``ccxml list``, ``generate``, ``simulate``,
``select`` and ``tune`` read. This package only declares the built-in scripts, in the order
``ccxml list`` shows them; each is imported when its algorithm is first used, so that ``ccxml
generate ring`` imports ring alone (importing every script would add half of its start-up).
"""
from __future__ import annotations

from ccxml.frontend.registry import registry

#: the built-in algorithms: CLI name -> script in this package
BUILT_IN = (("ring", "ring"), ("mesh", "mesh"), ("rhd", "rhd"), ("pairwise", "pairwise"),
            ("star", "star"), ("nhr", "nhr"), ("nb", "nb"), ("ahc", "ahc"), ("pipeline", "pipeline"),
            ("2d-ring", "ring2d"), ("2d-torus", "torus2d"), ("2d-mesh", "mesh2d"),
            ("hierarchical", "hierarchical"),
            ("bidir-ring", "bidir_ring"), ("recursive-doubling", "doubling"),
            ("bruck", "bruck"))

for _name, _module in BUILT_IN:
    registry.declare(_name, f"{__name__}.{_module}")

#: the registry's readers, as ``ccxml.algorithms.build("ring", "allreduce", 8)`` etc.
get, build, available = registry.get, registry.build, registry.available

__all__ = ["available", "build", "get", "registry"]
