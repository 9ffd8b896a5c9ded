"""Lower a recorded MSCCLang program through ccxml's Chunk API, passes and writer.

:func:`lower_program` builds a :class:`ccxml.frontend.chunk.Program` for the collective (or a
custom one, written ``coll="custom"``), replays the recorded operations into it once per instance
— a copy is ``a.copy(b)``, a reduce ``a.reduce(b)`` — and compiles it for the target. What
MSCCLang's lowering decides, it decides the same way:

* **instances**: operation by operation, instance i's chunk j of the input/output is at
  j·instances + i·size (``interleaved_replication``, the default) or at i·len(buffer) + j; a
  named scratch buffer of s chunks is repeated per instance (i·s + j) after the rank's earlier
  scratch buffers; channel c of instance i is i·(channels of one instance) + c;
* **channels**: ``ch`` as given (-1: channel 0);
* **thread blocks** (``ThreadblockPolicy.manual``): the steps of the operations a program puts
  in one ``sendtb``/``recvtb`` share a TB, when every such TB has at most one send peer, one
  receive peer and one channel and no two share a connection (the runtime's rules); otherwise,
  and under the auto policy, ccxml's own placement (one TB per connection) decides — said once.

The passes then order, fuse (``instr_fusion``), split what the target cannot take and number;
a thread block split onto extra channels is said once too. :func:`check_program` proves the
compiled XML with ccxml's interpreter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ccxml import driver
from ccxml.frontend.chunk import Program
from ccxml.ir.nodes import TB, Algo
from ccxml.mscclang.chunks import Buffer, ThreadblockPolicy
from ccxml.mscclang.collectives import CCXML_COLLS
from ccxml.mscclang.record import COPY, Output, Recorded, Session
from ccxml.vocab.collectives import Collective
from ccxml.vocab.errors import CollectiveError, MSCCLangError
from ccxml.vocab.wire import CUSTOM_COLL, INPUT, OUTPUT, SCRATCH, Coll, Profile, profile
from ccxml.vocab.wire import Buffer as WireBuffer


@dataclass
class Lowered:
    """A program compiled for one target."""

    algo: Algo
    text: str
    output: Output
    custom: bool


def lower_program(prog: Recorded, target: str, session: Session) -> Lowered:
    coll = CCXML_COLLS.get(prog.collective.name)
    k = prog.instances
    per_instance, sizes = _layout(prog, coll)
    try:
        cprog = Program(prog.name, coll or CUSTOM_COLL, prog.num_ranks, per_instance * k,
                        proto=prog.protocol, inplace=bool(prog.collective.inplace),
                        root=getattr(prog.collective, "root", None) if coll is Coll.BROADCAST else None,
                        min_bytes=session.min_bytes, max_bytes=session.max_bytes,
                        buffers=None if coll else [(i * k, o * k) for i, o in sizes])
    except CollectiveError as e:
        raise MSCCLangError(f"{prog.name}: {e}") from None
    place = _placer(prog)
    hints = _Hints(prog) if prog.threadblock_policy == ThreadblockPolicy.manual else None
    prof = profile(target)              # resolved once, for the compile and the notes
    spread = None if hints is not None else _spread(prog, prof, session)
    nch = 1 + max(max((op[5] for op in prog.ops), default=0),       # channels of one instance
                  spread(0, prog.num_ranks // 2) if spread else 0)
    pending = [g.pending for g in cprog.algo.gpus]
    chunk = cprog.chunk
    for i in range(k):
        base = nch * i
        for kind, src, dst, sendtb, recvtb, ch in prog.ops:
            a = chunk(src.rank, *place(src, i), src.size)
            b = chunk(dst.rank, *place(dst, i), dst.size)
            if ch >= 0:
                chan = base + ch
            elif hints is not None and src.rank == dst.rank:
                chan = base + hints.local_chan(src.rank, sendtb)
            elif spread is not None and src.rank != dst.rank:
                chan = base + spread(src.rank, dst.rank)
            else:
                chan = base
            if hints is None:
                if kind is COPY:
                    a.copy(b, chan)
                else:
                    a.reduce(b, chan)
                continue
            ps, pd = pending[src.rank], pending[dst.rank]
            ms, md = len(ps), len(pd)
            if kind is COPY:
                a.copy(b, chan)
            else:
                a.reduce(b, chan)
            hints.add(src.rank, sendtb, i, ps[ms:])
            if dst.rank != src.rank:
                hints.add(dst.rank, recvtb, i, pd[md:])
    if hints is not None:
        why = hints.place(cprog.algo)
        if why:
            session.note("tb-hints", f"{prog.name}: sendtb/recvtb not used: {why}; ccxml placed "
                                     f"the steps in one thread block per connection")
    algo = driver.compile(cprog, prof, merge_rcs=bool(prog.instr_fusion), consume=True)
    _note_splits(prog, algo, prof, session)
    text = driver.export(algo, target)
    output = Output(prog.name, prog.num_ranks, coll.value if coll else CUSTOM_COLL, text,
                    sum(len(g.tbs) for g in algo.gpus),
                    sum(len(tb.steps) for g in algo.gpus for tb in g.tbs), algo.nchannels)
    return Lowered(algo, text, output, coll is None)


def _layout(prog: Recorded, coll: Coll | None) -> tuple[int, list[tuple[int, int]]]:
    """(nchunksperloop of one instance, per rank (input, output) chunks); a built-in
    collective's buffers must be the shape ccxml's definition of it has."""
    bufs = prog.buffers
    sizes = [(len(b[Buffer.input]), len(b.get(Buffer.output, ()))) for b in bufs]
    if coll is None:
        return max(1, max(max(s) for s in sizes)), sizes
    c = sizes[0][1] if coll is Coll.ALLGATHER else sizes[0][0]
    try:
        definition = Collective(coll, prog.num_ranks, c, getattr(prog.collective, "root", 0)
                                if coll.rooted else None)
    except CollectiveError as e:
        raise MSCCLangError(f"{prog.name}: {e}") from None
    for r, (i, o) in enumerate(sizes):
        want_i, want_o = definition.input_chunks(r), definition.output_chunks(r)
        inplace = prog.collective.inplace
        if (i, o) not in ((want_i, want_o), (want_i, 0 if inplace else want_o),
                          (want_i, want_i if inplace else want_o)):
            raise MSCCLangError(f"{prog.name}: rank {r} of {type(prog.collective).__name__} has "
                                f"{i} input and {o} output chunks; {coll.value} of "
                                f"{prog.num_ranks} ranks with {c} chunks per call has {want_i} "
                                f"and {want_o}")
    return c, sizes


def _spread(prog: Recorded, prof: Profile, session: Session):
    """Under the auto policy, the channel of a transfer the program leaves to the compiler:
    None (channel 0, as msccl-tools picks) unless some rank would then talk to more peers in one
    direction than a channel connects (32); then the ring distance d of the two ranks (1..n/2)
    picks it, 16 distances a channel: every rank has at most 32 peers per channel, and a pair
    of ranks talks on one channel both ways (one full-duplex TB)."""
    limit = prof.max_tbs_per_chan_dir
    sends: dict[int, set] = {}
    recvs: dict[int, set] = {}
    for _, src, dst, _, _, ch in prog.ops:
        if ch < 0 and src.rank != dst.rank:
            sends.setdefault(src.rank, set()).add(dst.rank)
            recvs.setdefault(dst.rank, set()).add(src.rank)
    most = max(map(len, (*sends.values(), *recvs.values())), default=0)
    if most <= limit:
        return None
    n = prog.num_ranks
    per_chan = max(1, limit // 2)

    def spread(src: int, dst: int) -> int:
        d = (dst - src) % n
        return (min(d, n - d) - 1) // per_chan
    top = (n // 2 - 1) // per_chan
    session.note("spread", f"{prog.name}: a rank talks to {most} peers, one channel connects "
                           f"{limit}: ccxml spread its transfers over {top + 1} channels")
    return spread


def _placer(prog: Recorded) -> Callable[[Any, int], tuple[WireBuffer, int]]:
    """ref, instance -> (wire buffer, index) in the replicated program."""
    k = prog.instances
    interleaved = prog.interleaved_replication
    offsets: dict = {}
    for r, bufs in enumerate(prog.buffers):
        at = 0
        for key, buf in bufs.items():
            if key is not Buffer.input and key is not Buffer.output:
                offsets[r, key] = at
                at += buf.instance_size() * k

    def place(ref: Any, i: int) -> tuple[WireBuffer, int]:
        b = ref.buffer
        if b is Buffer.input or b is Buffer.output:
            wire = INPUT if b is Buffer.input else OUTPUT
            if k == 1:
                return wire, ref.index
            if interleaved:
                return wire, ref.index * k + i * ref.size
            return wire, len(prog.buffers[ref.rank][b]) * i + ref.index
        return SCRATCH, offsets[ref.rank, b] + prog.buffers[ref.rank][b].instance_size() * i + ref.index
    return place


class _Hints:
    """The manual policy's thread blocks: (rank, tb, instance) -> its steps, in issue order."""

    def __init__(self, prog: Recorded):
        self.groups: dict[tuple[int, int, int], list] = {}
        # a local operation without ``ch`` runs on its TB's channel: the channel of the TB's
        # transfers, else of its first local operation with one, else 0
        chans: dict[tuple[int, int], int] = {}
        for _, src, dst, sendtb, recvtb, ch in prog.ops:
            if src.rank != dst.rank:
                chans.setdefault((src.rank, sendtb), max(ch, 0))
                chans.setdefault((dst.rank, recvtb), max(ch, 0))
        for _, src, dst, sendtb, _, ch in prog.ops:
            if src.rank == dst.rank and ch >= 0:
                chans.setdefault((src.rank, sendtb), ch)
        self.chans = chans

    def local_chan(self, rank: int, tb: int) -> int:
        return self.chans.get((rank, tb), 0)

    def add(self, rank: int, tb: int, instance: int, steps: list) -> None:
        self.groups.setdefault((rank, tb, instance), []).extend(steps)

    def place(self, algo: Algo) -> str | None:
        """Put every step in its hinted TB; or, if some TB would break a runtime rule, nothing
        and say why."""
        plans: dict[int, list[tuple[tuple[int, int, int], list]]] = {}
        for key in sorted(self.groups):
            rank, tb, instance = key
            steps = self.groups[key]
            sends = {st.send_peer for st in steps if st.send_peer >= 0}
            recvs = {st.recv_peer for st in steps if st.recv_peer >= 0}
            chans = {st.chan for st in steps}
            where = f"on rank {rank}, thread block {tb} would"
            if len(sends) > 1:
                return f"{where} send to ranks {sorted(sends)} (one send peer per TB)"
            if len(recvs) > 1:
                return f"{where} receive from ranks {sorted(recvs)} (one receive peer per TB)"
            if len(chans) > 1:
                return f"{where} use channels {sorted(chans)} (one channel per TB)"
            plans.setdefault(rank, []).append(((next(iter(sends), -1), next(iter(recvs), -1),
                                                chans.pop() if chans else 0), steps))
        for rank, plan in plans.items():
            used: set = set()
            for (send, recv, chan), _ in plan:
                for conn in (("send", send), ("receive", recv)):
                    if conn[1] >= 0:
                        if (chan, conn) in used:
                            return (f"on rank {rank}, two thread blocks would {conn[0]} "
                                    f"{'to' if conn[0] == 'send' else 'from'} rank {conn[1]} on "
                                    f"channel {chan} (one TB per connection)")
                        used.add((chan, conn))
        for rank, plan in plans.items():
            gpu = algo.gpus[rank]
            mine = {id(st) for _, steps in plan for st in steps}
            if len(mine) != len(gpu.pending):      # a rank's steps are all hinted or none is
                return f"rank {rank} has steps outside any thread block"
        for rank, plan in plans.items():
            gpu = algo.gpus[rank]
            for (send, recv, chan), steps in plan:
                placed = gpu.add_tb(TB(send, recv, chan))
                for st in steps:                    # (in issue order)
                    st.chan = chan
                    placed.add_step(st)
            gpu.pending = []
        return None


def _note_splits(prog: Recorded, algo: Algo, prof: Profile, session: Session) -> None:
    split = sum(1 for g in algo.gpus for tb in g.tbs if tb.segment == 1)
    if split:
        session.note("split", f"{prog.name}: {split} thread block(s) longer than the {prof.name} "
                              f"runtime's {prof.max_steps_per_tb} steps went onto "
                              f"extra channels")


def check_program(prog: Recorded) -> tuple[bool, str]:
    """(passed, why not): the compiled XML proven by ccxml's interpreter; for a custom
    collective (no postcondition there) also the collective's own check of the data."""
    from ccxml.interpreter import verify
    custom = CCXML_COLLS.get(prog.collective.name) is None
    target = "legacy" if custom else prog._session.target
    lowered = prog.lower(target)
    report = verify(lowered.text, target=target)
    if not report.ok:
        return False, f"{prog.name}: {report.first_reason}"
    if custom and not prog.collective.check(prog):
        return False, f"{prog.name}: the collective's check() found wrong chunks (printed above)"
    return True, ""


__all__ = ["Lowered", "check_program", "lower_program"]
