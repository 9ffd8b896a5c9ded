"""Mesh (HCCL ``*_mesh*.cc``; hccl-algorithms.md §2).

Every pair of ranks is directly connected and all transfers of a phase run at once: each rank
talks to each peer on its own thread block (one full-duplex TB per peer and channel), so a
phase is one round however many peers there are. With ``channels`` = K every block is K chunks
and channel instance c carries chunk c of each block.

* ReduceScatter, 1 step: every rank j sends its copy of block r to rank r, which receives the
  p−1 copies side by side into scratch and reduces them with its own block (HCCL reduces in
  flight; the data movement is the same, §12.12).
* AllGather, 1 step: rank r copies its input to output block r and sends it to every peer.
* AllReduce, two-shot (default): ReduceScatter then AllGather on p blocks, 2 steps.
  ``variant="one-shot"``: every rank sends its whole buffer to every peer and reduces locally,
  1 step (HCCL ``all_reduce_mesh_oneshot.cc``, for small data). CLI: ``ccxml generate mesh
  --ranks 8 --variant one-shot``; Python: ``ccxml.algorithms.build("mesh", "allreduce", 8,
  variant="one-shot")``.
* Scatter, 1 step: root sends block j to rank j. Gather, 1 step: rank j sends its block to root.
* Broadcast = Scatter + AllGather, 2 steps. The root already holds every block, so nobody sends
  to it in the AllGather step (HCCL's all-gather would resend root its own data).
* Reduce = ReduceScatter + Gather of the reduced blocks to root, 2 steps.
* AllToAll / AllToAllV, 1 step: local copy of the own slot, then rank r sends its data for j to
  j, for every j at once. A transfer longer than a link buffers goes as several messages (the
  Chunk API cuts it): peers exchange on a full-duplex TB, send first, and would both block
  otherwise.

Runtime limits: a channel holds at most 32 TBs with a send (receive) peer, so the peers are
spread over channels by pair distance d = min(|i−j|, p−|i−j|): distances 1..16 (32 peers) on the
first channel of an instance, 17..32 on the next, and so on (:func:`peer_channel`); at p = 64 one
instance uses 2 channels and 63 TBs per rank, which also fits RCCL's 64 TBs per GPU (K = 2 does
not: the compiler stops with RCCL's TB limit and suggests fewer ``--channels``).

Cost (HCCL doc, n bytes, p−1 links used at once): SC, GA, AG α + n/p·β;
RS α + n/p·β + (p−1)/p·nγ; BC 2α + 2n/p·β; RD, AR 2α + 2n/p·β + (p−1)/p·nγ;
one-shot AR α + nβ + (p−1)nγ; A2A(V) α + β·max_j n_{r,j}.
"""
from __future__ import annotations

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import mesh, star
from ccxml.tables.mesh import slot
from ccxml.tables.plan import Copy, Listed, Reduce, by_block, fixed
from ccxml.vocab.collectives import alltoallv_offsets
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import PROFILES, Buffer, Coll

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH

#: the AllReduce variants
VARIANTS = ("two-shot", "one-shot")

#: pair distances sharing one channel: two peers per distance, so at most 32 TBs per direction
DISTANCES_PER_CHANNEL = min(pr.max_tbs_per_chan_dir for pr in PROFILES.values()) // 2


def channels_per_instance(p: int) -> int:
    """Channels one instance needs so that no channel carries more than 32 peers."""
    return (p // 2 - 1) // DISTANCES_PER_CHANNEL + 1


def by_peer(p: int):
    """The channel of a transfer, for the executor: its link's (:func:`peer_channel`)."""
    per_instance = channels_per_instance(p)

    def chan(a: int, b: int, c: int) -> int:
        d = (b - a) % p
        return c * per_instance + (min(d, p - d) - 1) // DISTANCES_PER_CHANNEL
    return chan


def peer_channel(a: int, b: int, p: int, instance: int = 0) -> int:
    """The channel of the link between ranks a and b (the same seen from either side)."""
    return by_peer(p)(a, b, instance)


def slots(p: int, k: int):
    """Where a rank lands the copy of a peer (a staged reduce): scratch slot ``slot(src, dst)``."""
    return lambda dst, src, j, c: (S, slot(src, dst, p) * k + c, 1)


def part(n: int, k: int, c: int) -> tuple[int, int]:
    """(offset, size) of instance c's part when n chunks are cut over k instances."""
    return c * (n // k) + min(c, n % k), n // k + (1 if c < n % k else 0)


def _reduce_scatter(prog: Program, p: int, k: int, final) -> None:
    """Every rank j sends block r to r, which lands the p−1 copies in scratch and sums them with
    its own into ``final`` (HCCL reduces in flight; the data movement is the same, §12.12)."""
    run(prog, Reduce(mesh.reduce_scatter(p), own=by_block(I, k), acc=final, final=final,
                     land=slots(p, k)), instances=k, channel=by_peer(p))


@algorithm("mesh", Coll.ALLREDUCE, variant=VARIANTS)
def allreduce(p: int, *, variant: str = "two-shot", options: Options = Options()) -> Program:
    k = options.channels
    if variant == "one-shot":
        prog = program("mesh", Coll.ALLREDUCE, p, k, options)
        run(prog, Reduce(mesh.one_shot(p), own=fixed(I), acc=fixed(O), land=slots(p, k)),
            instances=k, channel=by_peer(p))
        return prog
    prog = program("mesh", Coll.ALLREDUCE, p, p * k, options)
    _reduce_scatter(prog, p, k, final=by_block(O, k))
    run(prog, Copy(mesh.all_gather(p), loc=by_block(O, k)), instances=k, channel=by_peer(p))
    return prog


@algorithm("mesh", Coll.ALLGATHER)
def allgather(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("mesh", Coll.ALLGATHER, p, p * k, options)
    for r in range(p):
        prog.input(r, 0, k).copy(prog.output(r, r * k, k))
    run(prog, Copy(mesh.all_gather(p), loc=by_block(O, k), first=fixed(I)), instances=k,
        channel=by_peer(p))
    return prog


@algorithm("mesh", Coll.REDUCESCATTER)
def reducescatter(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("mesh", Coll.REDUCESCATTER, p, p * k, options)
    _reduce_scatter(prog, p, k, final=fixed(O))
    return prog


@algorithm("mesh", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("mesh", Coll.BROADCAST, p, p * k, options, root=root)
    prog.input(root, 0, p * k).copy(prog.output(root, 0, p * k))
    run(prog, Copy(star.scatter(p, root), loc=by_block(O, k), first=by_block(I, k)),   # step 1
        instances=k, channel=by_peer(p))
    own = lambda r, j, c: (I if r == root else O, r * k + c, 1)   # noqa: E731
    run(prog, Copy(mesh.all_gather(p, skip=root), loc=by_block(O, k), first=own),     # step 2
        instances=k, channel=by_peer(p))
    return prog


@algorithm("mesh", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("mesh", Coll.REDUCE, p, p * k, options, root=root)
    _reduce_scatter(prog, p, k, final=by_block(O, k))
    run(prog, Copy(star.gather(p, root), loc=by_block(O, k)), instances=k, channel=by_peer(p))
    return prog


@algorithm("mesh", Coll.SCATTER)
def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_scatter("mesh", p, root, options)


@algorithm("mesh", Coll.GATHER)
def gather(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_gather("mesh", p, root, options)


@algorithm("mesh", Coll.ALLTOALL)
def alltoall(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("mesh", Coll.ALLTOALL, p, p * k, options)
    _direct_exchange(prog, tuple((k,) * p for _ in range(p)), k)
    return prog


@algorithm("mesh", Coll.ALLTOALLV)
def alltoallv(p: int, *, counts=None, options: Options = Options()) -> Program:
    m = check_counts(counts, p, options.inplace)
    prog = program("mesh", Coll.ALLTOALLV, p, alltoallv_chunks(m, p), options, counts=m)
    _direct_exchange(prog, m, options.channels)
    return prog


def root_scatter(algorithm: str, p: int, root: int, options: Options) -> Program:
    """The root sends block j straight to rank j, every peer at once (Mesh and Star Scatter)."""
    k = options.channels
    prog = program(algorithm, Coll.SCATTER, p, k, options, root=root)
    prog.input(root, root * k, k).copy(prog.output(root, 0, k))
    run(prog, Copy(star.scatter(p, root), loc=fixed(O), first=by_block(I, k)), instances=k,
        channel=by_peer(p))
    return prog


def root_gather(algorithm: str, p: int, root: int, options: Options) -> Program:
    """Every rank sends its block straight to the root, all at once (Mesh and Star Gather)."""
    k = options.channels
    prog = program(algorithm, Coll.GATHER, p, k, options, root=root)
    prog.input(root, 0, k).copy(prog.output(root, root * k, k))
    run(prog, Copy(star.gather(p, root), loc=by_block(O, k), first=fixed(I)), instances=k,
        channel=by_peer(p))
    return prog


def _direct_exchange(prog: Program, m, k: int) -> None:
    """Local copy of the own slot, then every rank sends to every peer at once."""
    p = len(m)
    exchange = Exchange(prog, m, k)
    exchange.local_copies()
    run(prog, Copy(mesh.alltoall(p), loc=exchange.landing, first=exchange.sent), instances=k,
        channel=by_peer(p), order="moves", merge=False)
    exchange.unstage()


class Exchange:
    """All-to-all(v) bookkeeping shared with PairWise: slot offsets, in-place staging.

    M[i][j] chunks go from i to j; i's data for j sits at ``send[i][j]`` in i's input and lands
    at ``recv[i][j]`` in j's output (the runtime's packed layout, ccxml/collectives.py). In place
    the input and output are one buffer and a slot may land before its own data has been sent,
    so every slot lands in scratch first and is copied out after all sends are issued. The
    tables' block i·p + j is i's data for j, cut over the K instances (:func:`part`).
    """

    def __init__(self, prog: Program, m, k: int):
        self.prog, self.m, self.p, self.k = prog, m, len(m), k
        self.send_off, self.recv_off = alltoallv_offsets(m)
        into = S if prog.inplace else O
        #: where the sender keeps block i·p + j (its data for j), and where j lands it, per instance
        self.sent = Listed([self._places(I, self.send_off, c) for c in range(k)])
        self.landing = Listed([self._places(into, self.recv_off, c) for c in range(k)])

    def _places(self, buffer, offsets, c: int):
        out = []
        for i, row in enumerate(self.m):
            for j, n in enumerate(row):
                off, size = part(n, self.k, c)
                out.append((buffer, offsets[i][j] + off, size))
        return out

    def local_copies(self) -> None:
        for r in range(self.p):
            if self.m[r][r]:
                self.prog.input(r, self.send_off[r][r], self.m[r][r]).copy(
                    self.prog.chunk(r, S if self.prog.inplace else O, self.recv_off[r][r], self.m[r][r]))

    def unstage(self) -> None:
        if not self.prog.inplace:
            return
        for j in range(self.p):
            for r in range(self.p):
                if self.m[r][j]:
                    at = self.recv_off[r][j]
                    self.prog.scratch(j, at, self.m[r][j]).copy(self.prog.output(j, at, self.m[r][j]))


def check_counts(counts, p: int, inplace: bool = False) -> tuple[tuple[int, ...], ...]:
    """Validate an alltoallv P×P matrix of chunk counts (one clear line on error)."""
    if counts is None:
        raise AlgorithmError("alltoallv needs counts: a PxP matrix of chunk counts "
                             "(Python counts=..., CLI --counts FILE.csv)")
    try:
        m = tuple(tuple(int(x) for x in row) for row in counts)
    except (TypeError, ValueError):
        raise AlgorithmError("alltoallv counts must be a PxP matrix of integers") from None
    if len(m) != p or any(len(row) != p for row in m):
        raise AlgorithmError(f"alltoallv counts must be a {p}x{p} matrix for --ranks {p}, got "
                             f"{len(m)} rows of lengths {sorted({len(row) for row in m})}")
    if any(x < 0 for row in m for x in row):
        raise AlgorithmError("alltoallv counts must be >= 0")
    if not any(x for row in m for x in row):
        raise AlgorithmError("alltoallv counts are all zero: nothing to move")
    if inplace:
        for r in range(p):
            sent, received = sum(m[r]), sum(row[r] for row in m)
            if sent != received:
                raise AlgorithmError(f"in-place alltoallv needs equal send and receive sizes per "
                                     f"rank; rank {r} sends {sent} chunks and receives {received}")
    return m


def alltoallv_chunks(m, p: int) -> int:
    """nchunksperloop for alltoallv: the largest per-rank buffer, rounded up to a multiple of p."""
    most = max(max(sum(m[r]), sum(row[r] for row in m)) for r in range(p))
    return -(-most // p) * p


COLLECTIVES = registry.get("mesh").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("mesh")
