"""PairWise (HCCL ``alltoallv_pairwise.cc``; hccl-algorithms.md §5), and the pairwise-exchange
ReduceScatter (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations
in MPICH", IJHPCA 2005, §4.5).

AllToAll and AllToAllV: step 0 copies the own slot (send slot r → recv slot r); then in
step k = 1 … p−1 rank r sends its data for r+k to r+k and receives the data of r−k for it, so
each rank has exactly one send and one receive in flight and no link ever carries two flows.

The steps are serialized like HCCL's single stream: on each rank, both transfers of step k wait
(explicit dependencies) until both transfers of its previous step with data have finished — up
to 128 peer thread blocks per rank, the most a dependency can name (``depid`` ≤ 127); beyond
that the steps run concurrently. Each peer still has its own thread block (the send to r+k and
the receive from r+k, in steps k and p−k, share a full-duplex TB), spread over channels as in
Mesh (at most 32 peers per channel).
With ``channels`` = K every transfer is cut into K parts, channel instance c carrying part c: the
K parts of a step run side by side, and the next step waits for all of them.

AllToAllV takes a P×P matrix of chunk counts M[i][j] (i → j), the packed send/recv layout of
ccxml/collectives.py; zero-count transfers are skipped. A transfer larger than a link buffers
whole is sent as several messages (at k = p/2 the two partners send to each other in the same
step). In place, every slot lands in scratch and is copied out at the end.

ReduceScatter (``--coll reducescatter``): the same partners. In step k = 1 … p−1 rank r sends its
contribution to block r+k to r+k and receives from r−k that rank's contribution to block r, which
it reduces into its running sum (the last one into the output). Serialized and on channels as the
all-to-all. The running sum passes through the thread blocks of all p−1 peers, so, as with Mesh's
ReduceScatter, a dependency names a TB beyond 127 from p = 131 on: exec builds p ≤ 130 and says so beyond (RCCL
and legacy stop at their thread blocks a rank, 64 and 216, one per peer).

Cost (HCCL doc, n_ij = bytes i sends to j): (p−1)α + β·Σ_{k=1..p−1} max_i n_{i,i+k}.
ReduceScatter (the paper's, n = the input): (p−1)α + (p−1)/p·n(β+γ) — Ring's cost, with every
rank talking to every other instead of a neighbour.
"""
from __future__ import annotations

from ccxml.algorithms.mesh import Exchange, alltoallv_chunks, by_peer, check_counts
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import pairwise
from ccxml.tables.plan import Copy, Reduce, by_block, fixed
from ccxml.vocab.wire import Buffer, Coll

#: thread blocks per rank that dependencies can name (depid <= 127 on every runtime)
SERIALIZABLE_TBS = 128


@algorithm("pairwise", Coll.ALLTOALL)
def alltoall(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("pairwise", Coll.ALLTOALL, p, p * k, options)
    _pairwise(prog, tuple((k,) * p for _ in range(p)), k)
    return prog


@algorithm("pairwise", Coll.ALLTOALLV)
def alltoallv(p: int, *, counts=None, options: Options = Options()) -> Program:
    m = check_counts(counts, p, options.inplace)
    prog = program("pairwise", Coll.ALLTOALLV, p, alltoallv_chunks(m, p), options, counts=m)
    _pairwise(prog, m, options.channels)
    return prog


@algorithm("pairwise", Coll.REDUCESCATTER)
def reducescatter(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("pairwise", Coll.REDUCESCATTER, p, p * k, options)
    run(prog, Reduce(pairwise.reduce_scatter(p), own=by_block(Buffer.INPUT, k),
                     acc=fixed(Buffer.SCRATCH), final=fixed(Buffer.OUTPUT)),
        instances=k, channel=by_peer(p), rounds=(p - 1) * k <= SERIALIZABLE_TBS)
    return prog


def _pairwise(prog: Program, m, k: int) -> None:
    p = len(m)
    exchange = Exchange(prog, m, k)
    exchange.local_copies()
    # HCCL's single stream, as dependencies: a rank's step k waits for its step k−1. Every peer
    # has its own TB, and a dependency can name only the first 128 TBs of a rank (depid is an
    # int8 in the kernels), so beyond 128 TBs per rank the steps run unserialised (the data
    # needs no order; each link still carries exactly one flow)
    run(prog, Copy(pairwise.alltoall(p), loc=exchange.landing, first=exchange.sent), instances=k,
        channel=by_peer(p), merge=False, rounds=(p - 1) * k <= SERIALIZABLE_TBS)
    exchange.unstage()


COLLECTIVES = registry.get("pairwise").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("pairwise")
