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
  j, for every j at once. An AllToAllV transfer larger than a link buffers whole (2 Simple calls
  of one chunk when maxBytes is unbounded, see :func:`message_limit`) is sent as several
  messages: peers exchange on a full-duplex TB, send first, and would both block otherwise.

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

from ccxml.frontend.algorithm import Options, check_ranks, check_root, program
from ccxml.frontend.chunk import Program
from ccxml.vocab.collectives import alltoallv_offsets
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import CHUNK_EFFECTIVE_BYTES, LINK_CALLS, MAX_COUNT_PER_CALL, PROFILES, Coll

#: pair distances sharing one channel: two peers per distance, so at most 32 TBs per direction
DISTANCES_PER_CHANNEL = min(pr.max_tbs_per_chan_dir for pr in PROFILES.values()) // 2


def channels_per_instance(p: int) -> int:
    """Channels one instance needs so that no channel carries more than 32 peers."""
    return (p // 2 - 1) // DISTANCES_PER_CHANNEL + 1


def peer_channel(a: int, b: int, p: int, instance: int = 0) -> int:
    """The channel of the link between ranks a and b (the same seen from either side)."""
    d = (b - a) % p
    return instance * channels_per_instance(p) + (min(d, p - d) - 1) // DISTANCES_PER_CHANNEL


def peers(r: int, p: int):
    """Every other rank, nearest first in ring order (HCCL: stream k talks to peer r+1+k)."""
    return [(r + k) % p for k in range(1, p)]


def slot(src: int, dst: int, p: int) -> int:
    """Scratch slot on ``dst`` for the data of ``src`` (0..p−2)."""
    return (src - dst) % p - 1


def message_limit(prog: Program) -> int:
    """Largest message (chunks) a link buffers whole, so two peers that send to each other first
    on a full-duplex TB never both block: LINK_CALLS calls of maxAllowedCount chunks each, where a
    call carries one chunk when maxBytes is unbounded (msccl-runtime.md §6, §9.5)."""
    algo = prog.algo
    per_call = 1
    if algo.maxBytes:
        chunk_bytes = algo.maxBytes / algo.nchunksperloop
        per_call = max(1, min(MAX_COUNT_PER_CALL, int(CHUNK_EFFECTIVE_BYTES[algo.proto] // chunk_bytes)))
    return min(MAX_COUNT_PER_CALL, LINK_CALLS[algo.proto] * per_call)


def pieces(n: int, k_: int, limit: int = MAX_COUNT_PER_CALL):
    """Cut n chunks over k_ channel instances and into messages of at most ``limit`` chunks;
    yields (channel instance, offset, size) of the non-empty pieces."""
    off = 0
    for c in range(k_):
        part = n // k_ + (1 if c < n % k_ else 0)
        end = off + part
        while off < end:
            size = min(limit, end - off)
            yield c, off, size
            off += size


def _reduce_scatter_steps(prog: Program, p: int, k_: int, final) -> None:
    """Every rank j sends block r to r; r reduces the p−1 copies with its own into ``final(r, c)``."""
    for c in range(k_):
        for r in range(p):
            for j in peers(r, p):
                prog.input(r, j * k_ + c).copy(prog.scratch(j, slot(r, j, p) * k_ + c),
                                               chan=peer_channel(r, j, p, c))
    for c in range(k_):
        for r in range(p):
            accumulate(prog, r, p, k_, c, own=prog.input(r, r * k_ + c), final=final(r, c))


def accumulate(prog: Program, r: int, p: int, k_: int, c: int, own, final) -> None:
    """final = own ⊕ the p−1 copies rank r received into scratch.

    The running sum moves through the scratch slots (slot_j ⊕= sum so far), so each ``re`` runs
    on the TB that received slot j instead of piling up on one TB; the last one writes ``final``.
    """
    acc = own
    for j in peers(r, p)[:-1]:
        acc = acc.reduce(prog.scratch(r, slot(j, r, p) * k_ + c), chan=peer_channel(r, j, p, c))
    last = (r - 1) % p
    prog.scratch(r, slot(last, r, p) * k_ + c).reduce(acc, chan=peer_channel(r, last, p, c),
                                                       out=final)


def _all_gather_steps(prog: Program, p: int, k_: int, first, skip: int | None = None) -> None:
    """Rank r sends ``first(r, c)`` to output block r of every peer (except rank ``skip``)."""
    for c in range(k_):
        for r in range(p):
            for j in peers(r, p):
                if j != skip:
                    first(r, c).copy(prog.output(j, r * k_ + c), chan=peer_channel(r, j, p, c))


def reducescatter(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("mesh", Coll.REDUCESCATTER, p, p * k_, options)
    _reduce_scatter_steps(prog, p, k_, final=lambda r, c: prog.output(r, c))
    return prog


def allgather(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("mesh", Coll.ALLGATHER, p, p * k_, options)
    for r in range(p):
        prog.input(r, 0, k_).copy(prog.output(r, r * k_, k_))
    _all_gather_steps(prog, p, k_, first=lambda r, c: prog.input(r, c))
    return prog


VARIANTS = ("two-shot", "one-shot")


def allreduce(p: int, *, variant: str = "two-shot", options: Options = Options()) -> Program:
    check_ranks(p)
    if variant not in VARIANTS:
        raise AlgorithmError(f"mesh allreduce variant must be one of {', '.join(VARIANTS)}, "
                             f"got {variant!r}")
    k_ = options.channels
    if variant == "one-shot":
        prog = program("mesh", Coll.ALLREDUCE, p, k_, options)
        for c in range(k_):
            for r in range(p):
                for j in peers(r, p):
                    prog.input(r, c).copy(prog.scratch(j, slot(r, j, p) * k_ + c),
                                          chan=peer_channel(r, j, p, c))
        for c in range(k_):
            for r in range(p):
                accumulate(prog, r, p, k_, c, own=prog.input(r, c), final=prog.output(r, c))
        return prog
    prog = program("mesh", Coll.ALLREDUCE, p, p * k_, options)
    _reduce_scatter_steps(prog, p, k_, final=lambda r, c: prog.output(r, r * k_ + c))
    _all_gather_steps(prog, p, k_, first=lambda r, c: prog.output(r, r * k_ + c))
    return prog


def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("mesh", Coll.BROADCAST, p, p * k_, options, root=root)
    for _, off, size in pieces(p * k_, 1):
        prog.input(root, off, size).copy(prog.output(root, off, size))
    for c in range(k_):                                  # step 1: scatter
        for j in peers(root, p):
            prog.input(root, j * k_ + c).copy(prog.output(j, j * k_ + c),
                                              chan=peer_channel(root, j, p, c))
    _all_gather_steps(prog, p, k_, skip=root,            # step 2: all-gather
                      first=lambda r, c: prog.input(r, r * k_ + c) if r == root
                      else prog.output(r, r * k_ + c))
    return prog


def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program("mesh", Coll.REDUCE, p, p * k_, options, root=root)
    _reduce_scatter_steps(prog, p, k_, final=lambda r, c: prog.output(r, r * k_ + c))
    for c in range(k_):                                  # step 2: gather to root
        for j in peers(root, p):
            prog.output(j, j * k_ + c).copy(prog.output(root, j * k_ + c),
                                            chan=peer_channel(j, root, p, c))
    return prog


def root_scatter(algorithm: str, p: int, root: int, options: Options) -> Program:
    """The root sends block j straight to rank j, every peer at once (Mesh and Star Scatter)."""
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program(algorithm, Coll.SCATTER, p, k_, options, root=root)
    prog.input(root, root * k_, k_).copy(prog.output(root, 0, k_))
    for c in range(k_):
        for j in peers(root, p):
            prog.input(root, j * k_ + c).copy(prog.output(j, c), chan=peer_channel(root, j, p, c))
    return prog


def root_gather(algorithm: str, p: int, root: int, options: Options) -> Program:
    """Every rank sends its block straight to the root, all at once (Mesh and Star Gather)."""
    check_ranks(p)
    check_root(root, p)
    k_ = options.channels
    prog = program(algorithm, Coll.GATHER, p, k_, options, root=root)
    prog.input(root, 0, k_).copy(prog.output(root, root * k_, k_))
    for c in range(k_):
        for j in peers(root, p):
            prog.input(j, c).copy(prog.output(root, j * k_ + c), chan=peer_channel(j, root, p, c))
    return prog


def scatter(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_scatter("mesh", p, root, options)


def gather(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    return root_gather("mesh", p, root, options)


def alltoall(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    k_ = options.channels
    prog = program("mesh", Coll.ALLTOALL, p, p * k_, options)
    _direct_exchange(prog, tuple((k_,) * p for _ in range(p)), k_)
    return prog


def alltoallv(p: int, *, counts=None, options: Options = Options()) -> Program:
    check_ranks(p)
    m = check_counts(counts, p, options.inplace)
    prog = program("mesh", Coll.ALLTOALLV, p, alltoallv_chunks(m, p), options, counts=m)
    _direct_exchange(prog, m, options.channels)
    return prog


def _direct_exchange(prog: Program, m, k_: int) -> None:
    """Local copy of the own slot, then every rank sends to every peer at once."""
    p = len(m)
    exchange = Exchange(prog, m)
    exchange.local_copies()
    for r in range(p):
        for j in peers(r, p):
            for c, off, size in pieces(m[r][j], k_, exchange.limit):
                exchange.send(r, j, off, size, chan=peer_channel(r, j, p, c))
    exchange.unstage()


class Exchange:
    """All-to-all(v) bookkeeping shared with PairWise: slot offsets, in-place staging.

    M[i][j] chunks go from i to j; i's data for j sits at ``send[i][j]`` in i's input and lands
    at ``recv[i][j]`` in j's output (the runtime's packed layout, ccxml/collectives.py). In place
    the input and output are one buffer and a slot may land before its own data has been sent,
    so every slot lands in scratch first and is copied out after all sends are issued.
    """

    def __init__(self, prog: Program, m):
        self.prog, self.m, self.p = prog, m, len(m)
        self.send_off, self.recv_off = alltoallv_offsets(m)
        self.limit = message_limit(prog)

    def landing(self, src: int, dst: int, off: int, size: int):
        buf = self.prog.scratch if self.prog.inplace else self.prog.output
        return buf(dst, self.recv_off[src][dst] + off, size)

    def send(self, src: int, dst: int, off: int, size: int, chan: int):
        """Issue src's data for dst [off, off+size) and return the landing chunk."""
        return self.prog.input(src, self.send_off[src][dst] + off, size).copy(
            self.landing(src, dst, off, size), chan=chan)

    def local_copies(self) -> None:
        for r in range(self.p):
            for _, off, size in pieces(self.m[r][r], 1):
                self.prog.input(r, self.send_off[r][r] + off, size).copy(
                    self.landing(r, r, off, size))

    def unstage(self) -> None:
        if not self.prog.inplace:
            return
        for j in range(self.p):
            for r in range(self.p):
                for _, off, size in pieces(self.m[r][j], 1):
                    at = self.recv_off[r][j] + off
                    self.prog.scratch(j, at, size).copy(self.prog.output(j, at, size))


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


COLLECTIVES = {
    Coll.ALLREDUCE: allreduce,
    Coll.ALLGATHER: allgather,
    Coll.REDUCESCATTER: reducescatter,
    Coll.BROADCAST: broadcast,
    Coll.REDUCE: reduce,
    Coll.SCATTER: scatter,
    Coll.GATHER: gather,
    Coll.ALLTOALL: alltoall,
    Coll.ALLTOALLV: alltoallv,
}

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("mesh")
