"""HCCL's rule of thumb for picking an algorithm (hccl-algorithms.md §1, §11; the seed design §3.11).

HCCL chooses per level. Inside a server (every pair of ranks directly connected): **Star** for small
rooted messages (broadcast, gather, reduce, scatter: HCCL has Star templates for the first two
only, §6, but names all four as Star's), **Mesh** otherwise. Between servers: **PairWise**
for all-to-all (for large data **Pipeline** where the model shows it is faster: see
:attr:`Advice.unless_faster`), **AHC** when the groups have unequal sizes, **Pipeline** for large
data on several multi-rank servers, **Ring** for few servers, **RHD** for a power-of-two server
count or small data, **NHR** (or **NB**) otherwise.

The thresholds are ccxml's, not HCCL's (HCCL's executors use hardware-specific ones):
:data:`SMALL_BYTES`, :data:`LARGE_BYTES`, :data:`FEW_SERVERS`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ccxml.topology.model import Topology

#: at or below this many bytes a message counts as "small" (NHR's one-shot threshold, §7.2)
SMALL_BYTES = 256 * 1024
#: at or above this many bytes a multi-server message counts as "large" (Pipeline territory)
LARGE_BYTES = 32 * 1024 * 1024
#: this many servers or fewer count as "few" (Ring territory)
FEW_SERVERS = 4

#: the collectives with a root
ROOTED = ("broadcast", "gather", "reduce", "scatter")

#: which collectives each algorithm family offers (hccl-algorithms.md §1)
SUPPORTS = {
    "star": {"broadcast", "gather"},
    "mesh": {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "scatter", "gather",
             "alltoall"},
    "ring": {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "scatter", "gather"},
    "rhd": {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"},
    "pairwise": {"alltoall", "alltoallv"},
    "nhr": {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "scatter"},
    "nb": {"allreduce", "allgather", "reducescatter", "broadcast", "scatter"},
    "ahc": {"allreduce", "allgather", "reducescatter"},
    "pipeline": {"allreduce", "allgather", "reducescatter", "alltoall"},
}


@dataclass(frozen=True)
class Advice:
    """What the rule recommends, in order of preference, and why (one line).

    ``unless_faster``: an algorithm that replaces the first choice when a cost model shows it is
    faster (large all-to-all: Pipeline instead of PairWise)."""
    level: str                 # "server-inner" or "server-outer"
    algorithms: tuple[str, ...]
    reason: str
    unless_faster: str | None = None


def _is_pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def hccl_rule(coll: str, nranks: int, nbytes: float, topology: Topology | None = None) -> Advice:
    """HCCL's rule of thumb for ``coll`` on ``nranks`` ranks moving ``nbytes``.

    A flat topology (or a single group) is one server: the server-inner rule applies.
    """
    groups = topology.groups if topology is not None and topology.groups is not None else (nranks,)
    servers = len(groups)

    def keep(*names: str) -> tuple[str, ...]:
        return tuple(a for a in names if coll in SUPPORTS.get(a, ()))

    if servers == 1:
        if nbytes <= SMALL_BYTES and coll in ROOTED:
            return Advice("server-inner", ("star",) + keep("mesh"),
                          f"one server, small message (<= {SMALL_BYTES // 1024} KiB), rooted: Star")
        return Advice("server-inner", keep("mesh") or keep("ring"),
                      "one server: Mesh" + (" (large message)" if nbytes > SMALL_BYTES else ""))
    if coll in ("alltoall", "alltoallv"):
        if nbytes >= LARGE_BYTES and len(set(groups)) == 1 and groups[0] > 1 and keep("pipeline"):
            return Advice("server-outer", keep("pairwise", "pipeline"),
                          f"all-to-all, large data on {servers} servers: PairWise, or Pipeline if "
                          f"faster", unless_faster="pipeline")
        return Advice("server-outer", keep("pairwise"), "all-to-all between servers: PairWise")
    if len(set(groups)) > 1 and keep("ahc"):
        return Advice("server-outer", keep("ahc", "nhr", "nb"),
                      f"unequal server sizes {list(groups)}: AHC")
    if nbytes >= LARGE_BYTES and groups[0] > 1 and keep("pipeline"):
        return Advice("server-outer", keep("pipeline", "ring"),
                      f"large data (>= {LARGE_BYTES >> 20} MiB) on {servers} multi-rank servers: Pipeline")
    if servers <= FEW_SERVERS and keep("ring"):
        return Advice("server-outer", keep("ring", "rhd" if _is_pow2(servers) else "nhr"),
                      f"few servers ({servers} <= {FEW_SERVERS}): Ring")
    if _is_pow2(servers) and keep("rhd"):
        return Advice("server-outer", keep("rhd", "nhr", "nb"),
                      f"{servers} servers, a power of two: RHD")
    if nbytes <= SMALL_BYTES and keep("rhd"):
        return Advice("server-outer", keep("rhd", "nhr", "nb"),
                      f"{servers} servers, not a power of two, small data (<= {SMALL_BYTES // 1024} "
                      f"KiB): RHD")
    return Advice("server-outer", keep("nhr", "nb", "ring"),
                  f"{servers} servers, not a power of two: NHR or NB")
