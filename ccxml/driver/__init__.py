"""The driver: the application's recipes, once, below the command line and tuning.

An algorithm is data, :class:`AlgorithmSpec` (name, collective, ranks, options, topology, ...);
the recipe that turns it into a schedule lives here only:

    registry entry → topology (:func:`resolve_topology`) → builder options → Options →
    :func:`build` → :func:`compile` for a runtime profile → :func:`export` (MSCCL XML) → load

:func:`schedules` gives what ``simulate``, ``select`` and ``tune`` time (one schedule per size,
each built for a window ending there); :func:`load_source` reads SOURCE, a file or an algorithm;
:func:`rank_algorithms` is ``select``'s ranking. The command line (:mod:`ccxml.cli`) parses
options, calls these and prints; :mod:`ccxml.tuning` and :mod:`ccxml.mscclang` call them too.
The driver imports nothing of the command line or tuning (a layer contract in pyproject.toml).

The submodules import what they need when called, so ``import ccxml.driver`` stays light.
"""
from __future__ import annotations

from ccxml.driver.rank import (
    EXACT_CUT,
    bound_at,
    bounds,
    exact_bound_lines,
    exact_bound_of,
    other_reading,
    rank_algorithms,
)
from ccxml.driver.source import (
    UNVERIFIED_NOTE,
    Source,
    SourceError,
    Unverified,
    check_verified,
    load_source,
    names_file,
    verification_failure,
    window_warning,
)
from ccxml.driver.spec import (
    AlgorithmSpec,
    algorithm_schedule,
    algorithm_schedules,
    build,
    compile,
    compiled,
    compiled_algorithm,
    export,
    generate_spec,
    generate_text,
    limit_note,
    schedule,
    schedules,
    text,
)
from ccxml.driver.topology import (
    OptionError,
    TopologyOptions,
    check_fit,
    fit_ranks,
    free_model_problem,
    ranks_of,
    resolve_topology,
)

__all__ = ["EXACT_CUT", "UNVERIFIED_NOTE", "bound_at", "exact_bound_of",
           "AlgorithmSpec", "OptionError", "Source", "SourceError", "TopologyOptions",
           "Unverified", "algorithm_schedule", "algorithm_schedules", "bounds", "build", "check_fit",
           "check_verified", "compile", "compiled", "compiled_algorithm", "exact_bound_lines", "export",
           "fit_ranks", "free_model_problem", "generate_spec", "generate_text", "limit_note", "load_source",
           "names_file", "other_reading", "rank_algorithms", "ranks_of", "resolve_topology", "schedule", "schedules",
           "text", "verification_failure", "window_warning"]
