"""2D-Mesh AllReduce: an intra-server all-reduce, then M inter-server all-reduces side by side.

S servers × M ranks per server, rank (s, i) = s·M + i. The buffer is M·S units (× K instances
for ``--channels K``; channels follow the lane plan of ``ccxml.frontend.lanes.Lanes``).

1. intra-server ring all-reduce (every server in parallel) on M blocks of S units: afterwards
   every rank of server s holds the server's sum;
2. M inter-server ring all-reduces in parallel, plane i = {(s, i) : s}, each on the WHOLE buffer
   (S blocks of M units): every plane computes the global sum for its own ranks, so no third
   phase is needed. Each plane uses its own inter-server links.

A plane starts on a block as soon as the intra phase has finished that block on both ends (data
dependencies, no barrier). The inner algorithms are parameters (§11): ``intra`` ∈ {ring, mesh}
(level 0) and ``inter`` ∈ {ring, nhr, nb, rhd} (level 1), default ring/ring; CLI ``--intra`` /
``--inter``.

Cost (ring/ring, n bytes, level 0 = intra, level 1 = inter):
2(M−1)α₀ + 2(M−1)/M·nβ₀ + (M−1)/M·nγ  +  2(S−1)α₁ + 2(S−1)/S·nβ₁ + (S−1)/S·nγ.
"""
from __future__ import annotations

from ccxml.frontend import levels as lv
from ccxml.frontend.algorithm import Options
from ccxml.frontend.chunk import Program
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables.schemes import INTER, INTRA
from ccxml.vocab.wire import Coll


@algorithm("2d-mesh", Coll.ALLREDUCE, intra=INTRA, inter=INTER)
def allreduce(p: int, *, topology=None, options: Options = Options(), intra: str = "ring",
              inter: str = "ring") -> Program:
    prog, s_, m_, instances = lv.two_level("2d-mesh", p, topology, options)
    for inp, out, lanes in instances:
        for mem in lv.servers_of(s_, m_):
            lv.allreduce(prog, mem, intra, lanes, src=lambda r, j, c: inp(j * s_, (j + 1) * s_),
                         loc=lambda r, j, c: out(j * s_, (j + 1) * s_))
        loc = lambda r, j, c: out(j * m_, (j + 1) * m_)   # noqa: E731
        # with one rank per server the intra phase left nothing in the output
        src = (lambda r, j, c: inp(j * m_, (j + 1) * m_)) if m_ == 1 else loc
        for i in range(m_):
            lv.allreduce(prog, [s * m_ + i for s in range(s_)], inter, lanes, src=src, loc=loc)
    return prog


COLLECTIVES = registry.get("2d-mesh").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("2d-mesh")
