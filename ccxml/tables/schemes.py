"""The flat algorithms as phases of the hierarchical ones (hccl-algorithms.md §11).

A hierarchical schedule (AHC, the 2-D family, Hierarchical) runs flat collectives among some of
the ranks (the ranks of one server, or one rank per server) on some of the data. A
:class:`Scheme` is a flat algorithm as tables over n members, with the convention that a
reduce-scatter leaves block j with member j and an all-gather starts from member j holding
block j. :data:`INTRA` and :data:`INTER` are the reference's choices for a level.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ccxml.tables import Table, mesh, nb, nhr, rhd, ring


def _identity(n: int, j: int) -> int:
    return j


def _no_steps(n: int) -> Table:
    return []


@dataclass(frozen=True)
class Scheme:
    """A flat algorithm as tables over n members.

    ``rs`` is the reduce part of the reduce-scatter, after which block j is complete at
    ``holder(n, j)``; ``rs_tail`` is a copy table handing blocks from holder to owner (RHD's
    unfold). ``ar_ag`` is the all-gather half of an all-reduce, starting from the holders
    (default: ``ag``, when holder is the identity).
    """

    name: str
    rs: Callable[[int], Table]
    ag: Callable[[int], Table]
    holder: Callable[[int, int], int] = _identity
    rs_tail: Callable[[int], Table] = _no_steps
    ar_ag: Callable[[int], Table] | None = None


SCHEMES = {s.name: s for s in (
    Scheme("ring", ring.reduce_scatter, ring.all_gather),
    Scheme("mesh", lambda n: mesh.reduce_scatter(n, nearest_first=False),
           lambda n: mesh.all_gather(n, nearest_first=False)),
    Scheme("nhr", nhr.reduce_scatter, nhr.all_gather),
    Scheme("nb", nb.reduce_scatter, nb.all_gather),
    Scheme("rhd", rhd.reduce_scatter, rhd.all_gather, rhd.holder, rhd.rs_tail, rhd.allreduce_ag),
)}

#: the reference's choices (§11): level 0 (inside a server) Mesh or Ring; level 1 (between
#: servers) Ring, RHD, NHR or NB
INTRA = ("ring", "mesh")
INTER = ("ring", "nhr", "nb", "rhd")
