"""RHD, NHR and NB keep their logarithmic round count in the default file (issue 17, part 1).

The default ``generate`` (no ``--max-bytes``: any size) is what a user ships; the reason to pick
these algorithms over Ring is ⌈log2 p⌉ rounds instead of p − 1. Measured as the simulator's
critical path in messages (α = 1, β = γ = 0: every message costs 1, local copies and reductions
nothing), it must equal the reference's step count (hccl-algorithms.md §4, §7, §8, §13):

* RHD AllReduce: 2·log2 p, plus 2 for the fold and unfold when p is not a power of two;
* NHR ReduceScatter and AllGather: ⌈log2 p⌉; NB AllReduce: 2·⌈log2 p⌉;
* and the log-step algorithms added beside them: Bruck AllToAll and recursive-doubling AllGather,
  ⌈log2 p⌉.

and every one of these files must verify on every target, bounded links included (the
interpreter runs each link with the few calls the runtime buffers: ``deadlock-fifo``).
"""
from __future__ import annotations

from functools import lru_cache

import pytest

from ccxml.driver import generate_text
from ccxml.interpreter import verify
from ccxml.loader.reader import loads
from ccxml.simulator import simulate
from ccxml.topology.model import Topology

PS = (5, 8, 12, 16, 32, 33)
CASES = (("rhd", "allreduce"), ("nhr", "reducescatter"), ("nhr", "allgather"), ("nb", "allreduce"),
         ("bruck", "alltoall"), ("recursive-doubling", "allgather"))
TARGETS = ("exec", "rccl", "legacy")
COUNT_ONLY = Topology.flat(alpha=1.0, beta=0.0, gamma=0.0)


def reference_messages(algorithm: str, coll: str, p: int) -> int:
    """The reference's steps on the critical path."""
    ceil_log = (p - 1).bit_length()
    if algorithm == "rhd":
        floor_log = p.bit_length() - 1
        return 2 * floor_log + (0 if p & (p - 1) == 0 else 2)
    return ceil_log * (2 if coll == "allreduce" else 1)


@lru_cache(maxsize=None)
def default_file(algorithm: str, coll: str, p: int, target: str) -> str:
    return generate_text(algorithm, coll, p, target=target)[0]


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("algorithm,coll", CASES, ids=[f"{a}-{c}" for a, c in CASES])
def test_critical_path_has_the_reference_message_count(algorithm, coll, p):
    sched = loads(default_file(algorithm, coll, p, "exec"))
    messages = simulate(sched, 1 << 20, COUNT_ONLY).time_s
    assert messages == reference_messages(algorithm, coll, p)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("algorithm,coll", CASES, ids=[f"{a}-{c}" for a, c in CASES])
def test_default_file_verifies_with_bounded_links(algorithm, coll, p, target):
    report = verify(default_file(algorithm, coll, p, target), target=target)
    assert report.ok, report.first_reason
    assert report.stats["per_form"], "no call form was checked"
    for form in report.stats["per_form"].values():
        assert form["link_calls"] == 2       # Simple: a link buffers two calls (runtime §9.5)
