"""Hierarchical AllReduce: reduce to a leader inside each server, all-reduce among the leaders,
broadcast inside each server (hccl-algorithms.md §11; the classic "hierarchical all-reduce").

S servers × M ranks per server, rank (s, i) = s·M + i; the leader of server s is (s, 0). The
buffer is S blocks (× K instances for ``--channels K``; channels follow the lane plan of
``ccxml.frontend.lanes.Lanes``).

1. intra-server reduce to the leader, block by block: ``intra="star"`` (default) — every rank
   sends each block straight to the leader, which reduces them in turn; ``intra="ring"`` — the
   blocks are reduced along the chain (s,1) → … → (s,M−1) → (s,0), pipelined;
2. all-reduce among the leaders {(s, 0)} on the S blocks with ``inter`` ∈ {ring, nhr, nb, rhd}
   (default ring; §11's level-1 algorithms);
3. intra-server broadcast from the leader (star, or the pipelined chain for ``intra="ring"``).

CLI: ``--intra star|ring``, ``--inter ring|nhr|nb|rhd``.

Only the leaders use inter-server links. Phases are joined by data dependencies only, so the
leader forwards block j to the other servers while it still reduces block j+1, and broadcasts a
block as soon as it is final.

Cost (star intra, ring inter, n bytes, level 0 = intra, level 1 = inter):
reduce (M−1)·S·α₀ + (M−1)·n(β₀+γ) at the leader's links, serialised at the leader;
all-reduce 2(S−1)α₁ + 2(S−1)/S·nβ₁ + (S−1)/S·nγ; broadcast (M−1)·S·α₀ + (M−1)·nβ₀.
"""
from __future__ import annotations

from ccxml.frontend import levels as lv
from ccxml.frontend.algorithm import Options
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import ring, star
from ccxml.tables.schemes import INTER
from ccxml.vocab.wire import Coll

#: how a server reduces to (and broadcasts from) its leader
INTRA = ("star", "ring")
REDUCE_TABLES = {"ring": ring.chain_reduce, "star": star.reduce}
BCAST_TABLES = {"ring": ring.chain_bcast, "star": star.bcast}


@algorithm("hierarchical", Coll.ALLREDUCE, intra=INTRA, inter=INTER)
def allreduce(p: int, *, topology=None, options: Options = Options(), intra: str = "star",
              inter: str = "ring") -> Program:
    prog, s_, m_, instances = lv.two_level("hierarchical", p, topology, options, units=lambda s, m: s)
    reduce_table, bcast_table = REDUCE_TABLES[intra], BCAST_TABLES[intra]
    servers = lv.servers_of(s_, m_)
    leaders = [s * m_ for s in range(s_)]
    for inp, out, lanes in instances:
        block = lambda r, j, c: out(j, j + 1)   # noqa: E731
        for mem in servers:
            lv.reduce_table(prog, mem, reduce_table(m_, s_), lanes, owner=lambda j: 0, nblocks=s_,
                            src=lambda r, j, c: inp(j, j + 1), acc=block)
        lv.allreduce(prog, leaders, inter, lanes, src=block, loc=block)
        for mem in servers:
            lv.copy_table(prog, mem, bcast_table(m_, s_), lanes, loc=block)
    return prog


COLLECTIVES = registry.get("hierarchical").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("hierarchical")
