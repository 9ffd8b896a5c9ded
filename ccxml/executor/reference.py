"""MPI's own collective on the same input: the reference ``ccxml run`` checks against and times.

Always the out-of-place call (MPI's in-place forms place results differently from NCCL's, e.g.
``MPI_Reduce_scatter_block``), with ``MPI_SUM``. Buffer sizes follow
:class:`~ccxml.vocab.collectives.Collective`, in chunks of ``chunk_elems`` elements.
"""
from __future__ import annotations

import numpy as np

from ccxml.vocab.collectives import Collective
from ccxml.vocab.wire import Coll

#: the MPI function each collective is checked against (for the table and messages)
MPI_NAMES = {Coll.ALLREDUCE: "MPI_Allreduce", Coll.ALLGATHER: "MPI_Allgather",
             Coll.REDUCESCATTER: "MPI_Reduce_scatter_block", Coll.ALLTOALL: "MPI_Alltoall",
             Coll.ALLTOALLV: "MPI_Alltoallv", Coll.BROADCAST: "MPI_Bcast", Coll.REDUCE: "MPI_Reduce",
             Coll.GATHER: "MPI_Gather", Coll.SCATTER: "MPI_Scatter"}


class Reference:
    """MPI's collective for ``rank``: ``call()`` runs it once from ``sendbuf`` into ``recvbuf``;
    ``defined`` says whether this rank's output is defined (not for non-roots of reduce and
    gather)."""

    def __init__(self, MPI, comm, collective: Collective, rank: int, chunk_elems: int, sendbuf: np.ndarray):
        c = collective.coll
        ce = chunk_elems
        self.name = MPI_NAMES[c]
        self.sendbuf = sendbuf
        self.recvbuf = np.empty(collective.output_chunks(rank) * ce, dtype=sendbuf.dtype)
        root = collective.root
        self.defined = not (c in (Coll.REDUCE, Coll.GATHER) and rank != root)
        s, r, SUM = self.sendbuf, self.recvbuf, MPI.SUM
        if c is Coll.ALLREDUCE:
            self.call = lambda: comm.Allreduce(s, r, op=SUM)
        elif c is Coll.ALLGATHER:
            self.call = lambda: comm.Allgather(s, r)
        elif c is Coll.REDUCESCATTER:
            self.call = lambda: comm.Reduce_scatter_block(s, r, op=SUM)
        elif c is Coll.ALLTOALL:
            self.call = lambda: comm.Alltoall(s, r)
        elif c is Coll.ALLTOALLV:
            m, p = collective.matrix, collective.ngpus
            send, recv = collective.alltoallv_offsets()
            sc = [m[rank][j] * ce for j in range(p)]
            sd = [send[rank][j] * ce for j in range(p)]
            rc = [m[i][rank] * ce for i in range(p)]
            rd = [recv[i][rank] * ce for i in range(p)]
            self.call = lambda: comm.Alltoallv([s, (sc, sd)], [r, (rc, rd)])
        elif c is Coll.BROADCAST:         # in place on the output: the root's holds its input
            if rank == root:
                r[:] = s
            self.call = lambda: comm.Bcast(r, root=root)
        elif c is Coll.REDUCE:
            self.call = lambda: comm.Reduce(s, r, op=SUM, root=root)
        elif c is Coll.GATHER:
            self.call = lambda: comm.Gather(s, r, root=root)
        elif c is Coll.SCATTER:
            self.call = lambda: comm.Scatter(s, r, root=root)
        else:  # pragma: no cover - every Coll member is handled above
            raise ValueError(f"no MPI collective for {c.value}")
