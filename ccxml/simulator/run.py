"""Simulate a loaded schedule: :func:`simulate_schedule` runs the class engine
(:mod:`ccxml.simulator.classes`) when it applies, else the per-step engine
(:mod:`ccxml.simulator.engine`, its exact twin and the reference; the model is documented there).

It sits above both engines, so that the per-step engine does not import the class engine built on
it (no import circle inside the package).
"""
from __future__ import annotations

from ccxml.loader.model import Schedule
from ccxml.simulator.engine import _Engine
from ccxml.simulator.results import SimResult
from ccxml.topology.model import Topology
from ccxml.vocab.errors import SimulationError


def simulate_schedule(schedule: Schedule, nbytes: float, topology: Topology, *, record: bool = False,
                      exact_twin: bool = False, classes: bool | None = None) -> SimResult:
    """Simulate ``schedule`` moving ``nbytes`` (nccl-tests convention) on ``topology``.

    ``record=True`` adds the :class:`Timeline`; ``exact_twin=True`` shares a network's links with
    the simple reference allocation (:func:`ccxml.simulator.flows.maxmin_rates`, every flow at
    every event) instead of the incremental one — for tests; the results agree.

    ``classes`` (default: unless ``record`` or ``exact_twin``): on a network, when the schedule
    has a verified symmetry, run the class engine (:mod:`ccxml.simulator.classes`: one rank per
    orbit, each transfer a flow class); ``classes=False`` forces the per-step engine, its exact
    twin. A schedule the class engine finds wrong is run per step, which names the error."""
    if classes is None:
        classes = not record and not exact_twin
    if classes and topology.is_network:
        from ccxml.simulator.classes import simulate_classes
        try:
            got = simulate_classes(schedule, nbytes, topology)
        except SimulationError:
            got = None
        if got is not None:
            return got
    eng = _Engine(schedule, nbytes, topology, record=record, exact_twin=exact_twin)
    eng.run()
    return eng.result()


__all__ = ["simulate_schedule"]
