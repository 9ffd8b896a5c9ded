"""2D-Ring AllReduce: intra-server ring all-reduce (or ring reduce), inter-server ring
all-reduce among one rank per server, intra-server ring broadcast.

S servers × M ranks per server, rank (s, i) = s·M + i; the leader of server s is (s, 0). The
buffer is S blocks of M units (× K instances for ``--channels K``; channels follow the lane plan
of ``ccxml.frontend.lanes.Lanes``).

1. ``intra="allreduce"`` (default): ring all-reduce inside every server (M blocks of S units),
   so every rank, the leader included, holds the server's sum; ``intra="reduce"``: the blocks are
   reduced along the chain (s,1) → (s,2) → … → (s,M−1) → (s,0), pipelined block by block;
2. all-reduce among the leaders {(s, 0)} on the S blocks: ``inter="ring"`` (default) or another
   level-1 algorithm of §11 (nhr, nb, rhd);
3. ring broadcast from the leader along (s,0) → (s,1) → … → (s,M−1), pipelined by block, so a
   block leaves the leader as soon as the inter-server all-reduce has finished it.

With ``intra="allreduce"`` the non-leaders' copy of the server sum is not needed afterwards;
HCCL's 2-D ring does the same (it reuses its ring all-reduce template). Phases are joined by
data dependencies only. CLI: ``--intra allreduce|reduce``, ``--inter ring|nhr|nb|rhd``.

Cost (n bytes, level 0 = intra, level 1 = inter): 2(M−1)α₀ + 2(M−1)/M·nβ₀ + (M−1)/M·nγ
+ 2(S−1)α₁ + 2(S−1)/S·nβ₁ + (S−1)/S·nγ + (S+M−2)(α₀ + n/S·β₀).
"""
from __future__ import annotations

from ccxml.frontend import levels as lv
from ccxml.frontend.algorithm import Options
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import ring
from ccxml.tables.schemes import INTER
from ccxml.vocab.wire import Coll

INTRA = ("allreduce", "reduce")


@algorithm("2d-ring", Coll.ALLREDUCE, intra=INTRA, inter=INTER)
def allreduce(p: int, *, topology=None, options: Options = Options(), intra: str = "allreduce",
              inter: str = "ring") -> Program:
    prog, s_, m_, instances = lv.two_level("2d-ring", p, topology, options)
    servers = lv.servers_of(s_, m_)
    leaders = [s * m_ for s in range(s_)]
    for inp, out, lanes in instances:
        for mem in servers:
            if intra == "allreduce":
                lv.allreduce(prog, mem, "ring", lanes, src=lambda r, j, c: inp(j * s_, (j + 1) * s_),
                             loc=lambda r, j, c: out(j * s_, (j + 1) * s_))
            else:
                lv.reduce_table(prog, mem, ring.chain_reduce(m_, s_), lanes, owner=lambda j: 0,
                                nblocks=s_, src=lambda r, j, c: inp(j * m_, (j + 1) * m_),
                                acc=lambda r, j, c: out(j * m_, (j + 1) * m_))
        src = inp if m_ == 1 else out          # one rank per server: nothing reduced yet
        lv.allreduce(prog, leaders, inter, lanes, src=lambda r, j, c: src(j * m_, (j + 1) * m_),
                     loc=lambda r, j, c: out(j * m_, (j + 1) * m_))
        for mem in servers:
            lv.copy_table(prog, mem, ring.chain_bcast(m_, s_), lanes,
                          loc=lambda r, j, c: out(j * m_, (j + 1) * m_))
    return prog


COLLECTIVES = registry.get("2d-ring").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("2d-ring")
