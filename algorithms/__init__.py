"""The algorithm scripts, importable as ``ccxml.algorithms.<name>``.

Every script registers its builders with :func:`ccxml.frontend.registry.algorithm`; the registry
(:data:`ccxml.frontend.registry.registry`) is what ``ccxml list``, ``generate``, ``simulate``,
``select`` and ``tune`` read. This package only declares the built-in scripts, in the order
``ccxml list`` shows them; each is imported when its algorithm is first used, so that ``ccxml
generate ring`` imports ring alone (importing every script would add half of its start-up).
After them come the plugins: installed distributions' entry points of the group
``ccxml.algorithms`` (``NAME = package.module``), sorted by name, read only when a name is not a
built-in or every name is asked for, and imported on first use like the built-ins.
"""
from __future__ import annotations

from ccxml.frontend.registry import PLUGIN_GROUP, registry

#: the built-in algorithms: CLI name -> script in this package
BUILT_IN = (("ring", "ring"), ("mesh", "mesh"), ("rhd", "rhd"), ("pairwise", "pairwise"),
            ("star", "star"), ("nhr", "nhr"), ("nb", "nb"), ("ahc", "ahc"), ("pipeline", "pipeline"),
            ("2d-ring", "ring2d"), ("2d-torus", "torus2d"), ("2d-mesh", "mesh2d"),
            ("hierarchical", "hierarchical"), ("tree", "tree"), ("double-tree", "double_tree"),
            ("bidir-ring", "bidir_ring"), ("recursive-doubling", "doubling"), ("bruck", "bruck"),
            ("forest", "forest"))

for _name, _module in BUILT_IN:
    registry.declare(_name, f"{__name__}.{_module}")
registry.add_plugins(PLUGIN_GROUP)

#: the registry's readers, as ``ccxml.algorithms.build("ring", "allreduce", 8)`` etc.
get, build, available = registry.get, registry.build, registry.available

__all__ = ["available", "build", "get", "registry"]
