"""2D-Torus AllReduce (hccl-algorithms.md §11: level0 RS → level1 AR → level0 AG).

S servers × M ranks per server, rank (s, i) = s·M + i. The buffer is M·S units (× K instances
for ``--channels K``); block i = units [i·S, (i+1)·S). Channels follow the lane plan of
``ccxml.frontend.lanes.Lanes`` (instance c of K on channels c, K + c, ...).

1. intra-server reduce-scatter over the M blocks (every server in parallel): rank (s, i) ends
   with block i reduced over its server;
2. M inter-server all-reduces in parallel, plane i = {(s, i) : s}, on block i cut into S pieces;
3. intra-server all-gather of the M blocks.

Phases are joined by data dependencies only, so a plane starts its all-reduce as soon as its
block is reduced inside the server. The inner algorithms are parameters (§11): ``intra`` ∈
{ring, mesh} (level 0) and ``inter`` ∈ {ring, nhr, nb, rhd} (level 1), default ring/ring (the
"2-D ring" executors of HCCL); CLI ``--intra`` / ``--inter``.

Cost (ring inside and between servers, n bytes, level 0 = intra, level 1 = inter):
RS (M−1)α₀ + (M−1)/M·n(β₀+γ)  +  AR 2(S−1)α₁ + 2(S−1)/(S·M)·nβ₁ + (S−1)/(S·M)·nγ
+  AG (M−1)α₀ + (M−1)/M·nβ₀.
"""
from __future__ import annotations

from ccxml.frontend import levels as lv
from ccxml.frontend.algorithm import Options
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables.schemes import INTER, INTRA
from ccxml.vocab.wire import Coll


@algorithm("2d-torus", Coll.ALLREDUCE, intra=INTRA, inter=INTER)
def allreduce(p: int, *, topology=None, options: Options = Options(), intra: str = "ring",
              inter: str = "ring") -> Program:
    prog, s_, m_, instances = lv.two_level("2d-torus", p, topology, options)
    servers = lv.servers_of(s_, m_)
    planes = [[s * m_ + i for s in range(s_)] for i in range(m_)]
    for inp, out, lanes in instances:
        for mem in servers:
            lv.reduce_scatter(prog, mem, intra, lanes, src=lambda r, j, c: inp(j * s_, (j + 1) * s_),
                              acc=lambda r, j, c: out(j * s_, (j + 1) * s_))
        for i, mem in enumerate(planes):
            loc = lambda r, j, c, i=i: out(i * s_ + j, i * s_ + j + 1)  # noqa: E731
            lv.allreduce(prog, mem, inter, lanes, src=loc, loc=loc)
        for mem in servers:
            lv.all_gather(prog, mem, intra, lanes, loc=lambda r, j, c: out(j * s_, (j + 1) * s_))
    return prog


COLLECTIVES = registry.get("2d-torus").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("2d-torus")
