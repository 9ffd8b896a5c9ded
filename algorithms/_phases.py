"""Phase builders for the hierarchical algorithms: flat algorithms run on a SUBSET of ranks.

A hierarchical schedule (AHC, Pipeline, the 2-D family) is a composition of flat collectives
that each run among some of the ranks (the ranks of one server, or one rank per server) on some
of the data. This module supplies the pieces:

* :class:`Space` — where logical *units* of a buffer live, for one of K parallel instances
  (``--channels``). A range of units is a :data:`Data` (a tuple of Chunks, usually one).
* step tables — which member sends which blocks to which member in each step, for the flat
  algorithms (ring, mesh, NHR, NB, RHD with its fold; chains and stars for rooted phases),
  following the per-step rules of hccl-algorithms.md §2–§8. A table is a list of steps, a step
  a list of ``(from_pos, to_pos, blocks)``; positions index the member list.
* :data:`SCHEMES` — each flat algorithm as a :class:`Scheme` (its reduce-scatter, all-gather and
  all-reduce tables), and the reference's choices for a level: :data:`INTRA` (inside a server)
  and :data:`INTER` (between servers), checked by :func:`choose`.
* executors — :func:`run_reduce` (every transfer reduces into the receiver's copy) and
  :func:`run_copy` (every transfer stores), which issue the Chunk API calls step by step, and
  the phases built on them: :func:`reduce_scatter_phase`, :func:`all_gather_phase`,
  :func:`allreduce_phase`.
* :func:`two_level` — the start every two-level AllReduce builder shares.

Ownership convention of the reduce-scatter tables: member ``pos`` ends with block ``pos``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ccxml.frontend.algorithm import program
from ccxml.frontend.chunk import Chunk, Program
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import CHUNK_EFFECTIVE_BYTES, LINK_CALLS, MAX_COUNT_PER_CALL, Buffer, Coll

Data = tuple[Chunk, ...]
Transfer = tuple[int, int, Sequence[int]]     # (from position, to position, blocks)
Table = list[list[Transfer]]


# ---- where data lives ------------------------------------------------------------------------

class Space:
    """Logical units ``[0, units)`` of ``buffer`` on every rank, for instance ``instance`` of K.

    With ``block=None`` instance c owns chunks ``[base + c·units, base + (c+1)·units)`` (one
    contiguous slice). With ``block=X`` the buffer is a row of rank-blocks of K·X chunks and
    instance c owns the X chunks at offset c·X of each rank-block, so a unit range that crosses a
    rank-block boundary is several chunk ranges.
    """

    def __init__(self, prog: Program, buffer: Buffer, units: int, *, block: int | None = None,
                 instances: int = 1, instance: int = 0, base: int = 0):
        self.prog, self.buffer, self.units, self.block = prog, Buffer(buffer), units, block
        self.k, self.c, self.base = instances, instance, base

    def __call__(self, rank: int, lo: int, hi: int) -> Data:
        if not 0 <= lo < hi <= self.units:
            raise AlgorithmError(f"internal: unit range [{lo}, {hi}) outside [0, {self.units})")
        if self.block is None:
            return (self.prog.chunk(rank, self.buffer, self.base + self.c * self.units + lo, hi - lo),)
        x, out = self.block, []
        u = lo
        while u < hi:
            b, off = divmod(u, x)
            n = min(hi - u, x - off)
            out.append(self.prog.chunk(rank, self.buffer, self.base + b * self.k * x + self.c * x + off, n))
            u += n
        return tuple(out)


def _pieces(data: Data) -> list[tuple[Chunk, int, int]]:
    out, pos = [], 0
    for ch in data:
        out.append((ch, pos, pos + ch.size))
        pos += ch.size
    return out


def _cut(data: Data, bounds: list[int]) -> list[Chunk]:
    """``data`` cut at the running offsets ``bounds`` (which include every piece boundary)."""
    out = []
    for ch, lo, hi in _pieces(data):
        cuts = [b for b in bounds if lo <= b <= hi]
        for a, b in zip(cuts, cuts[1:]):
            out.append(Chunk(ch.program, ch.gpu_id, ch.chunk_type, ch.index + a - lo, b - a))
    return out


def _align(*datas: Data) -> list[tuple[Chunk, ...]]:
    sizes = {sum(c.size for c in d) for d in datas}
    if len(sizes) != 1:
        raise AlgorithmError(f"internal: data of different sizes {sorted(sizes)}")
    if all(len(d) == 1 for d in datas):
        return [tuple(d[0] for d in datas)]
    bounds = sorted({b for d in datas for _, lo, hi in _pieces(d) for b in (lo, hi)})
    return list(zip(*(_cut(d, bounds) for d in datas)))


def message_cap(prog: Program) -> int:
    """Largest ``cnt`` a message may have so that its link can buffer all of it.

    A step of cnt c is ⌈c / maxAllowedCount⌉ primitive calls and a link buffers only
    ``LINK_CALLS[proto]`` calls before the sender blocks (msccl-runtime.md §6, §9.5); with no
    ``maxBytes`` maxAllowedCount may be 1. Two ranks that both send before they receive (every
    ring and exchange step) hang unless each message fits with one call to spare (a fused
    receive-and-send needs room for its send before it receives), so longer transfers are cut
    into messages of at most (LINK_CALLS − 1)·maxAllowedCount chunks.
    """
    a = prog.algo
    allowed = 1
    if a.maxBytes > 0:
        allowed = max(1, min(MAX_COUNT_PER_CALL,
                             int(CHUNK_EFFECTIVE_BYTES[a.proto] // (a.maxBytes / a.nchunksperloop))))
    return max(1, min(MAX_COUNT_PER_CALL, (LINK_CALLS[a.proto] - 1) * allowed))


def _messages(pieces: list[tuple[Chunk, ...]], cross: bool) -> list[tuple[Chunk, ...]]:
    """Aligned pieces cut to at most :func:`message_cap` chunks when they cross ranks."""
    if not cross or not pieces:
        return pieces
    cap = message_cap(pieces[0][0].program)
    out = []
    for group in pieces:
        size = group[0].size
        for lo in range(0, size, cap):
            n = min(cap, size - lo)
            out.append(tuple(Chunk(c.program, c.gpu_id, c.chunk_type, c.index + lo, n) for c in group))
    return out


Op = tuple[str, tuple[Chunk, ...], int]      # ("copy" | "reduce", chunks, channel)


def plan_copy(src: Data, dst: Data, chan: int) -> list[Op]:
    """The messages of copying ``src`` into ``dst``, not yet issued."""
    cross = src[0].gpu_id != dst[0].gpu_id
    return [("copy", (a, b), chan) for a, b in _messages(_align(src, dst), cross) if a != b]


def plan_reduce(src: Data, operand: Data, out: Data, chan: int) -> list[Op]:
    """The messages of ``out`` = ``operand`` ⊕ ``src``, not yet issued."""
    cross = src[0].gpu_id != operand[0].gpu_id
    return [("reduce", t, chan) for t in _messages(_align(src, operand, out), cross)]


def issue(*plans: list[Op]) -> None:
    """Issue planned transfers round-robin, message i of every plan before message i+1 of any.

    The transfers of one algorithm step are concurrent; interleaving their messages gives every
    thread block an alternating send/receive order, which bounded links need (a TB whose sends
    wait on other TBs keeps its issue order, so a run of sends would fill the link and hang).
    """
    longest = max((len(pl) for pl in plans), default=0)
    for i in range(longest):
        for pl in plans:
            if i < len(pl):
                kind, ch, chan = pl[i]
                if kind == "copy":
                    ch[0].copy(ch[1], chan=chan)
                else:
                    ch[0].reduce(ch[1], chan=chan, out=ch[2])


def copy(src: Data, dst: Data, chan: int) -> Data:
    """Copy ``src`` into ``dst`` now (a cpy on one rank, send/receive across ranks)."""
    issue(plan_copy(src, dst, chan))
    return dst


def reduce(src: Data, operand: Data, out: Data, chan: int) -> Data:
    """``out`` = ``operand`` ⊕ ``src`` now; operand and out on the receiving rank."""
    issue(plan_reduce(src, operand, out, chan))
    return out


# ---- channels ------------------------------------------------------------------------------

class Lanes:
    """Channel plan of one instance, so that no thread block mixes two independent streams.

    The TB pass puts all of a rank's steps on one channel into ONE thread block when the rank
    has at most one send and one receive peer there, else one TB per peer; the step-ordering
    pass then interleaves each TB's sends and receives by index. Two streams of steps that share
    a TB can so be reordered into a wait cycle (example: a chain reduce 1→2→…→0 followed by a
    chain broadcast 0→1→…: rank 1's broadcast receive moves in front of its reduce sends).

    A *stream* is a run of table steps in which every rank keeps the same role toward each peer
    (send only, receive only, or both): a whole ring, one distance of NHR, a mesh step. Streams
    on one channel (a *lane*) must touch disjoint peers of every rank, and a rank that already
    has a stream on the lane must end up with more than one send or receive peer there (so the
    TB pass gives each peer its own TB). Lane l of instance c of K is channel ``l·K + c``.
    """

    def __init__(self, instances: int = 1, instance: int = 0):
        self.k, self.c = instances, instance
        # lane -> rank -> stream id -> (send peers, recv peers)
        self._use: list[dict[int, dict[int, tuple[set, set]]]] = []
        self._streams: list[tuple[int, dict[tuple[int, int], frozenset]]] = []   # (lane, roles)

    def phase(self) -> "LanePhase":
        """A new phase: its steps start new streams (never continue another phase's)."""
        return LanePhase(self)

    def chan(self, lane: int) -> int:
        return lane * self.k + self.c

    @property
    def used(self) -> int:
        return len(self._use)

    def _fits(self, lane: int, sid: int | None, peers: dict[int, tuple[set, set]]) -> bool:
        use = self._use[lane]
        for r, (snew, rnew) in peers.items():
            mine_s, mine_r = set(snew), set(rnew)
            other_s: set = set()
            other_r: set = set()
            for other, (ss, rr) in use.get(r, {}).items():
                if other == sid:
                    mine_s |= ss
                    mine_r |= rr
                else:
                    other_s |= ss
                    other_r |= rr
            if not other_s and not other_r:
                continue
            if (mine_s | mine_r) & (other_s | other_r):
                return False
            if len(mine_s | other_s) <= 1 and len(mine_r | other_r) <= 1:
                return False
        return True

    def _add(self, lane: int, sid: int, peers: dict[int, tuple[set, set]]) -> None:
        use = self._use[lane]
        for r, (ss, rr) in peers.items():
            s0, r0 = use.setdefault(r, {}).setdefault(sid, (set(), set()))
            s0 |= ss
            r0 |= rr


class LanePhase:
    """Places the steps of one phase on channels (see :class:`Lanes`)."""

    def __init__(self, lanes: Lanes):
        self.lanes = lanes
        self.sids: list[int] = []

    def place(self, transfers: Sequence[tuple[int, int]]) -> int:
        """The channel for one step whose transfers are ``(from_rank, to_rank)`` pairs."""
        roles: dict[tuple[int, int], set] = {}
        peers: dict[int, tuple[set, set]] = {}
        for a, b in transfers:
            roles.setdefault((a, b), set()).add("s")
            roles.setdefault((b, a), set()).add("r")
            peers.setdefault(a, (set(), set()))[0].add(b)
            peers.setdefault(b, (set(), set()))[1].add(a)
        want = {k: frozenset(v) for k, v in roles.items()}
        ln = self.lanes
        for sid in self.sids:
            lane, seen = ln._streams[sid]
            if all(seen.get(k, v) == v for k, v in want.items()) and ln._fits(lane, sid, peers):
                seen.update(want)
                ln._add(lane, sid, peers)
                return ln.chan(lane)
        sid = len(ln._streams)
        lane = 0
        while lane < len(ln._use) and not ln._fits(lane, None, peers):
            lane += 1
        if lane == len(ln._use):
            ln._use.append({})
        ln._streams.append((lane, dict(want)))
        ln._add(lane, sid, peers)
        self.sids.append(sid)
        return ln.chan(lane)


# ---- executors ----------------------------------------------------------------------------

Loc = Callable[[int, int], Data]          # (position, block) -> data on that member


class Directions:
    """The two lane phases of one executor call. Where two ranks exchange in one step, the
    transfer toward the higher rank goes on one and the other on the second, so the two
    directions sit in two one-way thread blocks: in one full-duplex TB one side would receive
    before it sends (the ordering pass alternates a TB's sends and receives) and the exchange
    would run one direction at a time. Every other transfer goes on the first."""

    def __init__(self, lanes: Lanes):
        self.up, self.down = lanes.phase(), lanes.phase()

    def place(self, members: Sequence[int], step: list[Transfer]) -> list[int]:
        """The channel of each transfer of ``step`` (-1 for an empty one)."""
        pairs = [(members[a], members[b]) if blocks else None for a, b, blocks in step]
        present = set(pairs)
        down = [t is not None and t[0] > t[1] and (t[1], t[0]) in present for t in pairs]
        ups = [t for t, d in zip(pairs, down) if t is not None and not d]
        downs = [t for t, d in zip(pairs, down) if d]
        cu = self.up.place(ups) if ups else -1
        cd = self.down.place(downs) if downs else -1
        return [-1 if t is None else cd if d else cu for t, d in zip(pairs, down)]


def run_reduce(members: Sequence[int], table: Table, lanes: Lanes, *, src: Loc, acc: Loc,
               final: Loc | None = None, owner: Callable[[int], int] | None = None,
               nblocks: int | None = None) -> None:
    """Issue a reduce-type table: each transfer reduces the sender's value of a block into the
    receiver's. ``src(pos, j)`` is member pos's own contribution, ``acc(pos, j)`` where it keeps a
    partial sum, ``final(pos, j)`` where the owner (``owner(j)``, default member j) stores the
    complete block. An owner that never receives its block (``nblocks`` blocks, default one per
    member) copies it from where it is to ``final``. Locations are called with positions.
    """
    final = final or acc
    owner = owner or (lambda j: j)
    last: dict[tuple[int, int], tuple[int, int]] = {}
    for si, step in enumerate(table):
        for ti, (_, b, blocks) in enumerate(step):
            for j in blocks:
                last[(b, j)] = (si, ti)
    cur: dict[tuple[int, int], Data] = {}

    def value(pos: int, j: int) -> Data:
        v = cur.get((pos, j))
        return v if v is not None else src(pos, j)

    dirs = Directions(lanes)
    for si, step in enumerate(table):
        chans = dirs.place(members, step)
        sources = [[value(a, j) for j in blocks] for a, _, blocks in step]
        plans = []
        for ti, (_, b, blocks) in enumerate(step):
            chan = chans[ti]
            plan: list[Op] = []
            for j, s in zip(blocks, sources[ti]):
                done = owner(j) == b and last[(b, j)] == (si, ti)
                out = final(b, j) if done else acc(b, j)
                plan += plan_reduce(s, value(b, j), out, chan)
                cur[(b, j)] = out
            plans.append(plan)
        issue(*plans)
    for j in range(len(members) if nblocks is None else nblocks):
        b = owner(j)
        if (b, j) not in last:
            copy(value(b, j), final(b, j), lanes.chan(0))


def run_copy(members: Sequence[int], table: Table, lanes: Lanes, *, loc: Loc,
             first: Loc | None = None) -> None:
    """Issue a copy-type table: each transfer stores the sender's block at the receiver's
    ``loc``. ``first(pos, j)``, if given, is where the sender reads a block it has not received
    (its own block, before a local copy has put it at ``loc``)."""
    have: set[tuple[int, int]] = set()
    dirs = Directions(lanes)
    for step in table:
        chans = dirs.place(members, step)
        plans = []
        for (a, b, blocks), chan in zip(step, chans):
            plan: list[Op] = []
            for j in blocks:
                s = loc(a, j) if first is None or (a, j) in have else first(a, j)
                plan += plan_copy(s, loc(b, j), chan)
            plans.append(plan)
        issue(*plans)
        for _, b, blocks in step:
            have.update((b, j) for j in blocks)


# ---- step tables (positions 0..n-1; member pos ends with block pos) ---------------------------

def ns(n: int) -> int:
    """⌈log2 n⌉ as HCCL computes it (bit length of n − 1)."""
    return (n - 1).bit_length()


def n_blocks(n: int, k: int) -> int:
    """n_k of NHR/NB step k (§7.1): the integers in 0…n−1 that are ≡ 2^k mod 2^(k+1)."""
    return (n - 1 + (1 << k)) >> (k + 1)


def ring_rs(n: int) -> Table:
    """Ring reduce-scatter: step k, pos r sends block r−1−k to r+1 (§3)."""
    return [[(r, (r + 1) % n, [(r - 1 - k) % n]) for r in range(n)] for k in range(n - 1)]


def ring_ag(n: int) -> Table:
    """Ring all-gather: step k, pos r sends block r−k to r+1 (§3)."""
    return [[(r, (r + 1) % n, [(r - k) % n]) for r in range(n)] for k in range(n - 1)]


def nhr_rs(n: int) -> Table:
    """NHR reduce-scatter, identity map (§7.1): step k, d = 2^k, r sends to r−d the blocks
    {r − d − 2d·i : i < n_k}."""
    out = []
    for k in range(ns(n)):
        d = 1 << k
        nk = n_blocks(n, k)
        out.append([(r, (r - d) % n, [(r - d - 2 * d * i) % n for i in range(nk)]) for r in range(n)])
    return out


def nhr_ag(n: int) -> Table:
    """NHR all-gather, identity map (§7.1): step s, d = 2^(ns−1−s), r sends to r+d the blocks
    {r − 2d·i : i < ⌊(n−1+d)/2d⌋} (the time-reverse of the reduce-scatter)."""
    out = []
    s_ = ns(n)
    for s in range(s_):
        d = 1 << (s_ - 1 - s)
        cnt = (n - 1 + d) // (2 * d)
        out.append([(r, (r + d) % n, [(r - 2 * d * i) % n for i in range(cnt)]) for r in range(n)])
    return out


def mesh_rs(n: int) -> Table:
    """Mesh reduce-scatter (§2, §12.12): one step, every a sends block b to b."""
    return [[(a, b, [b]) for a in range(n) for b in range(n) if a != b]] if n > 1 else []


def mesh_ag(n: int) -> Table:
    """Mesh all-gather (§2): one step, every a sends its block to every b."""
    return [[(a, b, [a]) for a in range(n) for b in range(n) if a != b]] if n > 1 else []


def chain_reduce(n: int, nblocks: int) -> Table:
    """Blocks pipelined along the chain 1 → 2 → … → n−1 → 0; position 0 ends with every block
    (ring reduce, §3, cut into ``nblocks`` pieces so consecutive hops overlap)."""
    if n < 2:
        return []
    chain = list(range(1, n)) + [0]
    hops = len(chain) - 1
    return [[(chain[h], chain[h + 1], [s - h]) for h in range(hops) if 0 <= s - h < nblocks]
            for s in range(nblocks + hops - 1)]


def chain_bcast(n: int, nblocks: int) -> Table:
    """Blocks pipelined along the chain 0 → 1 → … → n−1 (ring broadcast, §3)."""
    if n < 2:
        return []
    hops = n - 1
    return [[(h, h + 1, [s - h]) for h in range(hops) if 0 <= s - h < nblocks]
            for s in range(nblocks + hops - 1)]


def star_reduce(n: int, nblocks: int) -> Table:
    """Every member sends every block straight to position 0, which reduces them in turn."""
    return [[(a, 0, list(range(nblocks))) for a in range(1, n)]] if n > 1 else []


def star_bcast(n: int, nblocks: int) -> Table:
    """Position 0 sends every block straight to every member (Star broadcast, §6)."""
    return [[(0, b, list(range(nblocks))) for b in range(1, n)]] if n > 1 else []


REDUCE_TABLES = {"ring": chain_reduce, "star": star_reduce}
BCAST_TABLES = {"ring": chain_bcast, "star": star_bcast}


def nb_rs(n: int) -> Table:
    """NB reduce-scatter (§8): step k, d = 2^k, r sends to r+d the blocks {r + d + 2d·i : i < n_k}."""
    return [[(r, (r + (1 << k)) % n, [(r + (1 << k) + (2 << k) * i) % n for i in range(n_blocks(n, k))])
             for r in range(n)] for k in range(ns(n))]


def nb_ag(n: int) -> Table:
    """NB all-gather (§8, distances increasing as in the code, §12.1): step k, d = 2^k, r sends
    to r+d the blocks {r − i : i < min(d, n − d)}."""
    return [[(r, (r + (1 << k)) % n, [(r - i) % n for i in range(min(1 << k, n - (1 << k)))])
             for r in range(n)] for k in range(ns(n))]


class _Fold:
    """RHD's power-of-two block for n members (§4.1): B = 2^⌊log2 n⌋, rr = n − B; the pairs
    (2i, 2i+1), i < rr, keep the even member. Block-slice u = blocks {2u, 2u+1} for u < rr,
    {u + rr} otherwise, so block rank u ends with exactly the blocks of its pair."""

    def __init__(self, n: int):
        self.m = n.bit_length() - 1
        self.rr = n - (1 << self.m)

    def real(self, u: int) -> int:
        return 2 * u if u < self.rr else u + self.rr

    def blocks(self, lo: int, hi: int) -> list[int]:
        """The blocks of block-slices [lo, hi)."""
        return [j for u in range(lo, hi) for j in ((2 * u, 2 * u + 1) if u < self.rr else (u + self.rr,))]

    def halving(self) -> Table:
        """HD reduce-scatter, distance halving (§4.2): mask = 2^(m−1−s), b sends the slices
        [(b⊕mask) & ~(mask−1), +mask) to b⊕mask."""
        out = []
        for s in range(self.m):
            mask = 1 << (self.m - 1 - s)
            out.append([(self.real(b), self.real(b ^ mask), self.blocks((b ^ mask) & ~(mask - 1),
                                                                           ((b ^ mask) & ~(mask - 1)) + mask))
                        for b in range(1 << self.m)])
        return out

    def doubling(self) -> Table:
        """HD all-gather, distance doubling (§4.2): mask = 2^s, b sends [b & ~(mask−1), +mask)."""
        out = []
        for s in range(self.m):
            mask = 1 << s
            out.append([(self.real(b), self.real(b ^ mask), self.blocks(b & ~(mask - 1), (b & ~(mask - 1)) + mask))
                        for b in range(1 << self.m)])
        return out


def rhd_rs(n: int) -> Table:
    """RHD reduce-scatter without the final hand-over (§4.3): fold 2i+1 → 2i (whole buffer),
    then the halving steps; block j is then complete at :func:`rhd_holder`."""
    f = _Fold(n)
    fold = [[(2 * i + 1, 2 * i, list(range(n))) for i in range(f.rr)]] if f.rr else []
    return fold + f.halving()


def rhd_holder(n: int, j: int) -> int:
    """Where block j is complete after :func:`rhd_rs`: the kept member of its pair."""
    return j - j % 2 if j < 2 * _Fold(n).rr else j


def rhd_tail(n: int) -> Table:
    """RHD reduce-scatter's last step: 2i hands block 2i+1 to 2i+1."""
    rr = _Fold(n).rr
    return [[(2 * i, 2 * i + 1, [2 * i + 1]) for i in range(rr)]] if rr else []


def rhd_ag(n: int) -> Table:
    """RHD all-gather (§4.3): 2i+1 sends its block to 2i, doubling steps, 2i sends the
    complete output (all but the partner's own block) to 2i+1."""
    f = _Fold(n)
    if not f.rr:
        return f.doubling()
    return ([[(2 * i + 1, 2 * i, [2 * i + 1]) for i in range(f.rr)]] + f.doubling()
            + [[(2 * i, 2 * i + 1, [j for j in range(n) if j != 2 * i + 1]) for i in range(f.rr)]])


def rhd_ar_ag(n: int) -> Table:
    """The all-gather half of RHD all-reduce (§4.3): doubling steps from the kept members,
    then 2i sends the whole result to 2i+1."""
    f = _Fold(n)
    unfold = [[(2 * i, 2 * i + 1, list(range(n))) for i in range(f.rr)]] if f.rr else []
    return f.doubling() + unfold


def _identity(n: int, j: int) -> int:
    return j


def _no_steps(n: int) -> Table:
    return []


@dataclass(frozen=True)
class Scheme:
    """A flat algorithm as step tables over n members; reduce-scatter leaves block j with member
    j and all-gather starts from member j holding block j.

    ``rs`` is the reduce part of the reduce-scatter, after which block j is complete at
    ``holder(n, j)``; ``rs_tail`` is a copy table handing blocks from holder to owner (RHD's
    unfold). ``ar_ag`` is the all-gather half of an all-reduce, starting from the holders
    (default: ``ag``, when holder is the identity).
    """

    name: str
    rs: Callable[[int], Table]
    ag: Callable[[int], Table]
    holder: Callable[[int, int], int] = _identity
    rs_tail: Callable[[int], Table] = _no_steps
    ar_ag: Callable[[int], Table] | None = None


SCHEMES = {s.name: s for s in (
    Scheme("ring", ring_rs, ring_ag),
    Scheme("mesh", mesh_rs, mesh_ag),
    Scheme("nhr", nhr_rs, nhr_ag),
    Scheme("nb", nb_rs, nb_ag),
    Scheme("rhd", rhd_rs, rhd_ag, rhd_holder, rhd_tail, rhd_ar_ag),
)}

#: the reference's choices (§11): level 0 (inside a server) Mesh or Ring; level 1 (between
#: servers) Ring, RHD, NHR or NB
INTRA = ("ring", "mesh")
INTER = ("ring", "nhr", "nb", "rhd")


def choose(algorithm: str, flag: str, name: str, allowed: Sequence[str]) -> str:
    """``name`` if it is one of ``allowed``; else AlgorithmError listing them (one line)."""
    if name not in allowed:
        raise AlgorithmError(f"{algorithm}: --{flag} must be one of {', '.join(allowed)}; got {name!r}")
    return name


def reduce_scatter_phase(members: Sequence[int], scheme: str, lanes: Lanes, *, src: Loc, acc: Loc,
                         final: Loc | None = None) -> None:
    """Reduce-scatter among ``members`` on n = len(members) blocks with the flat algorithm
    ``scheme``: member pos ends with block pos at ``final`` (default ``acc``); ``src`` is a
    member's contribution, ``acc`` where it keeps partial sums."""
    sc, n = SCHEMES[scheme], len(members)
    final = final or acc
    tail = sc.rs_tail(n)
    if not tail:
        run_reduce(members, sc.rs(n), lanes, src=src, acc=acc, final=final)
        return
    run_reduce(members, sc.rs(n), lanes, src=src, acc=acc, owner=lambda j: sc.holder(n, j),
               final=lambda pos, j: final(pos, j) if pos == j else acc(pos, j))
    run_copy(members, tail, lanes, loc=final, first=acc)


def all_gather_phase(members: Sequence[int], scheme: str, lanes: Lanes, *, loc: Loc,
                     first: Loc | None = None) -> None:
    """All-gather among ``members`` with ``scheme``: member pos starts with block pos (read with
    ``first`` if given) and every block lands at ``loc``."""
    run_copy(members, SCHEMES[scheme].ag(len(members)), lanes, loc=loc, first=first)


def allreduce_phase(members: Sequence[int], scheme: str, lanes: Lanes, *, src: Loc,
                    loc: Loc) -> None:
    """All-reduce among ``members`` on n = len(members) blocks: the reduce-scatter of
    ``scheme`` then its all-gather; ``src(pos, j)`` is the contribution, ``loc(pos, j)`` where
    the result goes."""
    sc, n = SCHEMES[scheme], len(members)
    run_reduce(members, sc.rs(n), lanes, src=src, acc=loc, owner=lambda j: sc.holder(n, j))
    run_copy(members, (sc.ar_ag or sc.ag)(n), lanes, loc=loc)


# ---- topology helpers ---------------------------------------------------------------------

def uniform_shape(name: str, p: int, topology) -> tuple[int, int]:
    """(S servers, M ranks per server) of a uniform topology for ``p`` ranks, or AlgorithmError."""
    if topology is None:
        raise AlgorithmError(f"{name} needs a topology: give --servers S --ranks-per-server M "
                             f"(or --groups / --topology)")
    try:
        topology.check_ranks(p)
    except ValueError as e:
        raise AlgorithmError(str(e)) from None
    if topology.groups is None:
        return 1, p
    if len(set(topology.groups)) != 1:
        raise AlgorithmError(f"{name} needs servers of equal size; groups "
                             f"{','.join(map(str, topology.groups))} are uneven (use ahc)")
    return len(topology.groups), topology.groups[0]


def topology_attrs(topology) -> dict[str, str] | None:
    return topology.to_attrs() if topology is not None else None


def servers_of(s_: int, m_: int) -> list[list[int]]:
    """The ranks of each server, rank (s, i) = s·M + i."""
    return [[s * m_ + i for i in range(m_)] for s in range(s_)]


def two_level(name: str, p: int, topology, options, *, intra: str, intra_choices: Sequence[str],
              inter: str, units: Callable[[int, int], int] | None = None):
    """What a two-level AllReduce builder starts with: (Program, S, M, instances).

    Checks the uniform S×M shape and the inner choices (``inter`` among :data:`INTER`), makes
    the Program with ``units(S, M)`` units per instance (default S·M) that records the topology, and
    gives, for each instance c of K = ``options.channels``, (input Space, output Space, Lanes).
    """
    s_, m_ = uniform_shape(name, p, topology)
    choose(name, "intra", intra, intra_choices)
    choose(name, "inter", inter, INTER)
    k_ = options.channels
    units = s_ * m_ if units is None else units(s_, m_)
    prog = program(name, Coll.ALLREDUCE, p, k_ * units, options, extra_attrs=topology_attrs(topology))
    instances = [(Space(prog, Buffer.INPUT, units, instances=k_, instance=c),
                  Space(prog, Buffer.OUTPUT, units, instances=k_, instance=c), Lanes(k_, c))
                 for c in range(k_)]
    return prog, s_, m_, instances
