"""Pipeline (hccl-algorithms.md §10): intra-server full mesh overlapped with an inter-server ring.

S servers × M ranks per server (equal M; ``--servers S --ranks-per-server M``), rank (s, i) =
s·M + i, whose block is block s·M + i. Inter-server links join the S ranks with the same local
index i; inside a server every pair is linked. Slots t = 0 … S−1:

* AllGather (§10.1): in slot t rank (s, i) sends block ((s−t) mod S, i) to (s+1, i) (t < S−1)
  and the same block to every local peer (s, j). The intra transfers of slot t forward what the
  inter transfer of slot t−1 delivered, while the inter transfer of slot t carries it on.
* ReduceScatter (§10.2): X_t = block ((s+1+t) mod S, i). In slot t every local peer reduces its
  contribution to X_t into (s, i)'s staging copy; then (s+1, i)'s accumulated X_{t−1} (the same
  block) arrives over the ring and is reduced last, and (s, i) passes X_t on to (s−1, i). After
  slot S−1, X_{S−1} = (s, i) is complete and lands in the output.
* AllReduce (§10.3): the ReduceScatter on S·M blocks, then the AllGather with the ring running
  the other way (slot t: send block ((s+t) mod S, i) to (s−1, i)).
* AllToAll (§10.4): inter = pairwise over servers, intra = mesh. In slot t, (s, i) sends its M
  blocks for server (s+1+t) to ((s+1+t) mod S, i) and receives server s's blocks from
  ((s−1−t) mod S, i); intra slot t hands every local peer (s, j) the block for (s, j) that came
  in during slot t−1 (slot 0: its own data). In place, the received blocks land in scratch and
  are copied to the output at the end (an output block is an input block still to be sent).

Overlap is expressed by dependencies, not by phase order: every transfer depends only on the
data it moves (the reductions into a staging block are ordered intra first, inter last, so the
intra reductions of slot t+1 never wait for the inter transfer of slot t). Intra and inter
transfers use different peers and hence different thread blocks, which run concurrently.

Cost (HCCL doc; s = total bytes, p = S·M): RS = AG = max(s/p·β₁ + α₁, s/p·β₀ + α₀)·(S−1)
+ s/p·β₀ + α₀; AR = 2 × that (level 0 = intra, level 1 = inter).
"""
from __future__ import annotations

from ccxml.algorithms import _phases as ph
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.vocab.wire import Buffer, Coll


def _setup(coll: Coll, p: int, topology, options: Options, units: int) -> tuple[Program, int, int]:
    s_, m_ = ph.uniform_shape("pipeline", p, topology)
    prog = program("pipeline", coll, p, options.channels * units, options,
                   extra_attrs=ph.topology_attrs(topology))
    return prog, s_, m_


def _place_intra(up: ph.LanePhase, down: ph.LanePhase, pairs) -> dict[tuple[int, int], int]:
    """Channels of intra-server transfers: toward higher ranks on ``up``, lower on ``down``.

    The two directions between a pair of ranks then sit in two one-way thread blocks. In one
    full-duplex TB one side would issue its receive before its send (the ordering pass cannot
    move a send that waits on another TB), and the exchange would run in lock-step, one
    direction at a time.
    """
    ups = [(a, b) for a, b in pairs if a < b]
    downs = [(a, b) for a, b in pairs if a > b]
    cu = up.place(ups) if ups else -1
    cd = down.place(downs) if downs else -1
    return {(a, b): (cu if a < b else cd) for a, b in pairs}


def _place_from(phase: ph.LanePhase, server: int, pairs) -> int:
    """Channel of one server's inter-server sends. Placed per sending server, so that with two
    servers (where s+1 = s−1) the two directions get separate thread blocks and run at once."""
    return phase.place(pairs)


def _gather_slots(s_: int, m_: int, lanes: ph.Lanes, loc, first, direction: int) -> None:
    """All-gather of the rank blocks: inter ring in ``direction`` (+1: to s+1) ∥ intra mesh.

    ``loc(rank, block)`` is where a block lives, ``first(rank)`` where a rank reads its own block.
    """
    # A rank's inter receive and its inter forward must sit in different thread blocks: fused
    # into one rcs step, the block's flag would be published only after the forward, and the
    # intra copies of slot t would wait for the inter transfer of slot t. So the ring's links
    # alternate between two phases (three for an odd ring), which never share a thread block.
    inters = [lanes.phase() for _ in range(3)]
    up, down = lanes.phase(), lanes.phase()
    rank = lambda s, i: (s % s_) * m_ + i  # noqa: E731

    def inter_of(s: int) -> ph.LanePhase:
        return inters[2] if s_ % 2 and s == s_ - 1 else inters[s % 2]

    for t in range(s_):
        held = {}                                   # (s, i) -> block it forwards in slot t
        for s in range(s_):
            for i in range(m_):
                b = rank(s - direction * t, i)
                held[(s, i)] = (b, first(rank(s, i)) if t == 0 else loc(rank(s, i), b))
        if t < s_ - 1:
            for s in range(s_):
                chan = inter_of(s).place([(rank(s, i), rank(s + direction, i)) for i in range(m_)])
                for i in range(m_):
                    b, data = held[(s, i)]
                    ph.copy(data, loc(rank(s + direction, i), b), chan)
        if m_ > 1:
            pairs = [(rank(s, i), rank(s, j)) for s in range(s_) for i in range(m_) for j in range(m_) if i != j]
            chans = _place_intra(up, down, pairs)
            for s in range(s_):
                for i in range(m_):
                    b, data = held[(s, i)]
                    for j in range(m_):
                        if j != i:
                            ph.copy(data, loc(rank(s, j), b), chans[(rank(s, i), rank(s, j))])


def _reduce_slots(s_: int, m_: int, lanes: ph.Lanes, src, acc, final) -> None:
    """Reduce-scatter of the rank blocks: intra mesh reductions ∥ inter ring toward s−1.

    ``src(rank, block)`` is a rank's contribution, ``acc(rank, block)`` its staging copy,
    ``final(rank)`` where the rank's own complete block goes.
    """
    inter, up, down = lanes.phase(), lanes.phase(), lanes.phase()
    rank = lambda s, i: (s % s_) * m_ + i  # noqa: E731
    cur: dict[tuple[int, int], tuple] = {}

    def value(r: int, b: int):
        v = cur.get((r, b))
        return v if v is not None else src(r, b)

    def into(r: int, b: int, last: bool):
        return final(r) if last and b == r else acc(r, b)

    for t in range(s_):
        x = {(s, i): rank(s + 1 + t, i) for s in range(s_) for i in range(m_)}     # X_t
        if m_ > 1:
            pairs = [(rank(s, j), rank(s, i)) for s in range(s_) for i in range(m_) for j in range(m_) if i != j]
            chans = _place_intra(up, down, pairs)
            for s in range(s_):
                for i in range(m_):
                    r, b = rank(s, i), x[(s, i)]
                    peers = [j for j in range(m_) if j != i]
                    for n, j in enumerate(peers):
                        last = t == 0 and n == len(peers) - 1
                        cur[(r, b)] = ph.reduce(src(rank(s, j), b), value(r, b), into(r, b, last),
                                                chans[(rank(s, j), r)])
        if t >= 1:
            for s in range(s_):
                chan = _place_from(inter, s, [(rank(s + 1, i), rank(s, i)) for i in range(m_)])
                for i in range(m_):
                    r, b = rank(s, i), x[(s, i)]
                    cur[(r, b)] = ph.reduce(value(rank(s + 1, i), b), value(r, b), into(r, b, True), chan)


def allgather(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.ALLGATHER, p, topology, options, p)
    k_ = options.channels
    for c in range(k_):
        inp = ph.Space(prog, Buffer.INPUT, 1, instances=k_, instance=c)
        out = ph.Space(prog, Buffer.OUTPUT, p, block=1, instances=k_, instance=c)
        loc = lambda r, b: out(r, b, b + 1)  # noqa: E731
        first = lambda r: inp(r, 0, 1)  # noqa: E731
        for r in range(p):
            ph.copy(first(r), loc(r, r), c)
        _gather_slots(s_, m_, ph.Lanes(k_, c), loc, first, +1)
    return prog


def reducescatter(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.REDUCESCATTER, p, topology, options, p)
    k_ = options.channels
    for c in range(k_):
        inp = ph.Space(prog, Buffer.INPUT, p, block=1, instances=k_, instance=c)
        out = ph.Space(prog, Buffer.OUTPUT, 1, instances=k_, instance=c)
        scr = ph.Space(prog, Buffer.SCRATCH, p, instances=k_, instance=c)
        _reduce_slots(s_, m_, ph.Lanes(k_, c), src=lambda r, b: inp(r, b, b + 1),
                      acc=lambda r, b: scr(r, b, b + 1), final=lambda r: out(r, 0, 1))
    return prog


def allreduce(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.ALLREDUCE, p, topology, options, p)
    k_ = options.channels
    for c in range(k_):
        inp = ph.Space(prog, Buffer.INPUT, p, instances=k_, instance=c)
        out = ph.Space(prog, Buffer.OUTPUT, p, instances=k_, instance=c)
        lanes = ph.Lanes(k_, c)
        loc = lambda r, b: out(r, b, b + 1)  # noqa: E731
        _reduce_slots(s_, m_, lanes, src=lambda r, b: inp(r, b, b + 1), acc=loc,
                      final=lambda r: loc(r, r))
        _gather_slots(s_, m_, lanes, loc, lambda r: loc(r, r), -1)
    return prog


def alltoall(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.ALLTOALL, p, topology, options, p)
    k_ = options.channels
    rank = lambda s, i: (s % s_) * m_ + i  # noqa: E731
    for c in range(k_):
        inp = ph.Space(prog, Buffer.INPUT, p, block=1, instances=k_, instance=c)
        out = ph.Space(prog, Buffer.OUTPUT, p, block=1, instances=k_, instance=c)
        staging = max(1, (s_ - 1) * m_)
        scr = ph.Space(prog, Buffer.SCRATCH, staging, instances=k_, instance=c)
        # in place, output block j IS the input block j this rank still has to send to rank j:
        # land everything in scratch and copy it over once every send has been issued
        land = (ph.Space(prog, Buffer.SCRATCH, p, instances=k_, instance=c, base=k_ * staging)
                if options.inplace else out)
        lanes = ph.Lanes(k_, c)
        inter, up, down = lanes.phase(), lanes.phase(), lanes.phase()

        def staged(r: int, t: int, j: int):
            """Where r keeps, after inter slot t, the block for local rank j of its server."""
            return scr(r, t * m_ + j, t * m_ + j + 1)

        for t in range(s_):
            if t < s_ - 1:
                pairs = [(rank(s, i), rank(s + 1 + t, i)) for s in range(s_) for i in range(m_)]
                chan = inter.place(pairs)
                for s in range(s_):
                    for i in range(m_):
                        dst_s = (s + 1 + t) % s_
                        ph.copy(inp(rank(s, i), dst_s * m_, dst_s * m_ + m_),
                                scr(rank(dst_s, i), t * m_, t * m_ + m_), chan)
            # intra slot t: the block for (s, i) that originated at ((s − t) mod S, j)
            chans = _place_intra(up, down, [(rank(s, j), rank(s, i)) for s in range(s_)
                                            for i in range(m_) for j in range(m_) if i != j])
            for s in range(s_):
                for i in range(m_):
                    for j in range(m_):
                        src_rank = rank(s - t, j)
                        data = (inp(rank(s, j), rank(s, i), rank(s, i) + 1) if t == 0
                                else staged(rank(s, j), t - 1, i))
                        ph.copy(data, land(rank(s, i), src_rank, src_rank + 1),
                                chans.get((rank(s, j), rank(s, i)), c))
        if land is not out:
            for r in range(p):
                ph.copy(land(r, 0, p), out(r, 0, p), c)
    return prog


COLLECTIVES = {
    Coll.ALLREDUCE: allreduce,
    Coll.ALLGATHER: allgather,
    Coll.REDUCESCATTER: reducescatter,
    Coll.ALLTOALL: alltoall,
}

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("pipeline")
