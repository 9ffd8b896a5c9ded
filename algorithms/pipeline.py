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

from ccxml.frontend import levels as lv
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.lanes import Lanes
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import pipeline
from ccxml.tables.plan import Copy, Reduce, Space
from ccxml.vocab.wire import Buffer, Coll


def _setup(coll: Coll, p: int, topology, options: Options, units: int) -> tuple[Program, int, int]:
    s_, m_ = lv.uniform_shape("pipeline", p, topology)
    prog = program("pipeline", coll, p, options.channels * units, options,
                   extra_attrs=lv.topology_attrs(topology))
    return prog, s_, m_


class Slots:
    """Lane plan of the slot tables (:class:`ccxml.frontend.lanes.Lanes` for one instance).

    Intra-server transfers toward higher ranks go on one lane phase, toward lower ranks on
    another: the two directions between a pair then sit in two one-way thread blocks (in one
    full-duplex TB one side would issue its receive before its send, and the exchange would run
    in lock-step). Inter-server transfers are placed per sending server (with two servers, s+1 =
    s−1, so the two directions get separate thread blocks); ``inters`` lane phases take turns
    among the servers (a rank's inter receive and its inter forward must sit in different thread
    blocks: fused into one rcs step, the block's flag would be published only after the forward,
    and the intra copies of slot t would wait for the inter transfer of slot t). ``inter_first``:
    the inter transfers are placed before the intra ones.
    """

    def __init__(self, lanes: Lanes, s_: int, m_: int, *, inters: int, per: str | None,
                 inter_first: bool):
        self.s_, self.m_ = s_, m_
        self.inters = [lanes.phase() for _ in range(inters)]
        self.up, self.down = lanes.phase(), lanes.phase()
        self.per, self.inter_first = per, inter_first

    def _inter(self, s: int):
        if len(self.inters) == 1:
            return self.inters[0]
        return self.inters[2] if self.s_ % 2 and s == self.s_ - 1 else self.inters[s % 2]

    def place(self, prog: Program, pairs) -> list[int]:
        """The lane group of each transfer (sender, receiver) of one slot (-1 for a local copy,
        which stays on the instance's channel)."""
        chans = [-1] * len(pairs)
        inter: dict[int, list[int]] = {}
        ups, downs = [], []
        for t, pair in enumerate(pairs):
            if pair is None or pair[0] == pair[1]:
                continue
            a, b = pair
            if a // self.m_ != b // self.m_:
                key = {"sender": a, "receiver": b, None: 0}[self.per] // self.m_
                inter.setdefault(key, []).append(t)
            else:
                (ups if a < b else downs).append(t)
        groups = [(self._inter(s), ts) for s, ts in sorted(inter.items())]
        intra = [(self.up, ups), (self.down, downs)]
        for phase, ts in (groups + intra if self.inter_first else intra + groups):
            if ts:
                chan = phase.place(prog, [pairs[t] for t in ts])
                for t in ts:
                    chans[t] = chan
        return chans


def _gather(prog: Program, s_: int, m_: int, lanes: Lanes, loc, first, direction: int) -> None:
    """All-gather of the rank blocks: inter ring in ``direction`` (+1: to s+1) ∥ intra mesh."""
    slots = Slots(lanes, s_, m_, inters=3, per="sender", inter_first=True)
    run(prog, Copy(pipeline.gather(s_, m_, direction), loc=loc, first=first), instances=[lanes.c],
        lanes=slots, merge=False)


def _reduce(prog: Program, s_: int, m_: int, lanes: Lanes, src, acc, final) -> None:
    """Reduce-scatter of the rank blocks: intra mesh reductions ∥ inter ring toward s−1."""
    slots = Slots(lanes, s_, m_, inters=1, per="receiver", inter_first=False)
    run(prog, Reduce(pipeline.reduce(s_, m_), own=src, acc=acc, final=final), instances=[lanes.c],
        lanes=slots, merge=False)


@algorithm("pipeline", Coll.ALLREDUCE)
def allreduce(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.ALLREDUCE, p, topology, options, p)
    k_ = options.channels
    for c in range(k_):
        inp = Space(Buffer.INPUT, p, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, p, instances=k_, instance=c)
        lanes = Lanes(k_, c)
        loc = lambda r, b, c: out(b, b + 1)  # noqa: E731
        _reduce(prog, s_, m_, lanes, src=lambda r, b, c: inp(b, b + 1), acc=loc, final=loc)
        _gather(prog, s_, m_, lanes, loc, loc, -1)
    return prog


@algorithm("pipeline", Coll.ALLGATHER)
def allgather(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.ALLGATHER, p, topology, options, p)
    k_ = options.channels
    for c in range(k_):
        inp = Space(Buffer.INPUT, 1, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, p, block=1, instances=k_, instance=c)
        for r in range(p):
            lv.copy(prog, r, inp(0, 1), r, out(r, r + 1), c)
        _gather(prog, s_, m_, Lanes(k_, c), lambda r, b, c: out(b, b + 1), lambda r, b, c: inp(0, 1), +1)
    return prog


@algorithm("pipeline", Coll.REDUCESCATTER)
def reducescatter(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.REDUCESCATTER, p, topology, options, p)
    k_ = options.channels
    for c in range(k_):
        inp = Space(Buffer.INPUT, p, block=1, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, 1, instances=k_, instance=c)
        scr = Space(Buffer.SCRATCH, p, instances=k_, instance=c)
        _reduce(prog, s_, m_, Lanes(k_, c), src=lambda r, b, c: inp(b, b + 1),
                acc=lambda r, b, c: scr(b, b + 1), final=lambda r, b, c: out(0, 1))
    return prog


@algorithm("pipeline", Coll.ALLTOALL)
def alltoall(p: int, *, topology=None, options: Options = Options()) -> Program:
    prog, s_, m_ = _setup(Coll.ALLTOALL, p, topology, options, p)
    prog.split_directions()     # one message per server pair and slot, at any size
    k_ = options.channels
    staging = max(1, (s_ - 1) * m_)
    for c in range(k_):
        inp = Space(Buffer.INPUT, p, block=1, instances=k_, instance=c)
        out = Space(Buffer.OUTPUT, p, block=1, instances=k_, instance=c)
        scr = Space(Buffer.SCRATCH, staging, instances=k_, instance=c)
        # in place, output block j IS the input block j this rank still has to send to rank j:
        # land everything in scratch and copy it over once every send has been issued
        land = (Space(Buffer.SCRATCH, p, instances=k_, instance=c, base=k_ * staging)
                if options.inplace else out)

        def held(r: int, b: int, c: int):
            """Where data for rank d from rank o waits on r: o's input, or r's staging slot for
            the inter-server slot that brought it."""
            o, d = divmod(b // 2, p)
            if r == o:
                return inp(d, d + 1)
            t = (d // m_ - o // m_ - 1) % s_
            return scr(t * m_ + d % m_, t * m_ + d % m_ + 1)

        def stored(r: int, b: int, c: int):
            """Where a leg delivers: the staging slot (inter), the destination's landing (intra)."""
            return held(r, b, c) if b % 2 == 0 else land(b // 2 // p, b // 2 // p + 1)

        slots = Slots(Lanes(k_, c), s_, m_, inters=1, per=None, inter_first=True)
        run(prog, Copy(pipeline.alltoall(s_, m_), loc=stored, first=held), instances=[c], lanes=slots,
            rounds=True)
        if land is not out:
            for r in range(p):
                lv.copy(prog, r, land(0, p), r, out(0, p), c)
    return prog


COLLECTIVES = registry.get("pipeline").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("pipeline")
