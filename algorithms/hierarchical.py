"""Hierarchical AllReduce: reduce to a leader inside each server, all-reduce among the leaders,
broadcast inside each server (hccl-algorithms.md §11; the classic "hierarchical all-reduce").

S servers × M ranks per server, rank (s, i) = s·M + i; the leader of server s is (s, 0). The
buffer is S blocks (× K instances for ``--channels K``; channels follow the lane plan of
``_phases.Lanes``).

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

from ccxml.algorithm import Options, program
from ccxml.algorithms import _phases as ph
from ccxml.chunk import Program
from ccxml.wire import Buffer, Coll

#: how a server reduces to (and broadcasts from) its leader
INTRA = ("star", "ring")


def allreduce(p: int, *, topology=None, options: Options = Options(), intra: str = "star",
              inter: str = "ring") -> Program:
    s_, m_ = ph.uniform_shape("hierarchical", p, topology)
    reduce_table = ph.REDUCE_TABLES[ph.choose("hierarchical", "intra", intra, INTRA)]
    bcast_table = ph.BCAST_TABLES[intra]
    ph.choose("hierarchical", "inter", inter, ph.INTER)
    k_ = options.channels
    units = s_
    prog = program("hierarchical", Coll.ALLREDUCE, p, k_ * units, options,
                   extra_attrs=ph.topology_attrs(topology))
    for c in range(k_):
        inp = ph.Space(prog, Buffer.INPUT, units, instances=k_, instance=c)
        out = ph.Space(prog, Buffer.OUTPUT, units, instances=k_, instance=c)
        servers = [[s * m_ + i for i in range(m_)] for s in range(s_)]
        lanes = ph.Lanes(k_, c)
        for mem in servers:
            ph.run_reduce(mem, reduce_table(m_, s_), lanes, owner=lambda j: 0, nblocks=s_,
                          src=lambda pos, j, mem=mem: inp(mem[pos], j, j + 1),
                          acc=lambda pos, j, mem=mem: out(mem[pos], j, j + 1))
        leaders = [s * m_ for s in range(s_)]
        loc = lambda pos, j: out(leaders[pos], j, j + 1)  # noqa: E731
        ph.allreduce_phase(leaders, inter, lanes, src=loc, loc=loc)
        for mem in servers:
            ph.run_copy(mem, bcast_table(m_, s_), lanes,
                        loc=lambda pos, j, mem=mem: out(mem[pos], j, j + 1))
    return prog


COLLECTIVES = {Coll.ALLREDUCE: allreduce}

if __name__ == "__main__":
    from ccxml.algorithm import run_script
    run_script("hierarchical")
