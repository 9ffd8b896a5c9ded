"""RHD — recursive halving-doubling (HCCL ``recursive_halvingdoubling_base.cc`` and the
``*_recursive_hd.cc`` / ``*_halving_doubling.cc`` templates; hccl-algorithms.md §4).

Folding (p not a power of two): B = 2^⌊log2 p⌋, rr = p − B, m = log2 B. The ranks 0…2rr−1 form
the pairs (2i, 2i+1); one member of each pair stays in the power-of-two "block", the other is
folded into it. For AllReduce/ReduceScatter/AllGather the even member stays (block rank
b = r/2 for r < 2rr, b = r − rr above). Inside the block the partner in a step is b ⊕ mask.

Kernels on B block-slices (block rank b):

* HD-RS, distance halving: step s = 0…m−1, mask = 2^(m−1−s); send block-slices
  [(b⊕mask) & ~(mask−1), +mask) to b⊕mask, receive and reduce [b & ~(mask−1), +mask).
  Afterwards b owns block-slice b.
* HD-AG, distance doubling: step s = 0…m−1, mask = 2^s; send [b & ~(mask−1), +mask) to b⊕mask,
  receive and copy [(b⊕mask) & ~(mask−1), +mask).

Collectives (steps, with the fold/unfold only when p is not a power of two):

* AllReduce, 2m (+2): data in B block-slices. Fold: 2i+1 sends its whole buffer to 2i, which
  reduces. HD-RS, HD-AG. Unfold: 2i sends the whole result to 2i+1.
* ReduceScatter, m (+2): p per-rank blocks; block-slice b = per-rank blocks {2b, 2b+1} for
  b < rr, {b+rr} otherwise. Fold of the whole input, HD-RS, then 2i sends block 2i+1 to 2i+1.
* AllGather, m (+2): 2i+1 sends its own block to 2i, HD-AG with the same block-slices, then 2i
  sends the complete output to 2i+1.
* Broadcast, m (+1): if the root is odd and < 2rr the odd pair members form the block, else
  the even ones. Binomial tree, distance halving: in round i (mask = 2^(m−1−i)) every block
  rank holding the data sends the whole buffer to b ⊕ mask. Then each pair's block member sends
  the buffer to its partner.
* Reduce, 2m (+1): the pair member with the root's parity (even if the root ≥ 2rr) keeps and
  receives the partner's whole buffer (fold). HD-RS on B block-slices, then a gather to the root,
  distance doubling: step s, mask = 2^s, block ranks b ≡ root_b (mod 2^s) take part; the one
  whose bit s differs from root_b's sends its block-slices [b & ~(mask−1), +mask), the other
  copies them.

Chunks: with K = ``channels`` every block-slice (AR, Reduce) or per-rank block (RS, AG) is K
chunks and Broadcast's buffer is K chunks; channel c carries chunk c of every block, so K copies
of the algorithm run side by side. For AR and Reduce chunk c of block-slice u is chunk c·B + u,
so that each channel's transfers are contiguous. An exchange (both partners send in one step)
is cut into messages of at most the program's message cap, alternating directions, so it
completes with bounded links. Partial sums live in the output (AllReduce, root of Reduce)
or in scratch; the input is only read.

Step order: HCCL runs a rank's steps one after another on one stream (§0.3); every step above
ends with ``Program.next_round``, so a rank's transfers of one step wait for its transfers of the
step before (a rank idle in a step goes on at once, as in HCCL, which has no barrier).

Cost (HCCL doc; n bytes, p′ = 2^⌊log p⌋):
BC ⌈log p⌉(α + nβ).
RS, p = 2^m: log p·α + (p−1)/p·n(β+γ); otherwise fold α + n(β+γ), then ⌊log p⌋ halving steps
Σ_{i=1..k} (α + ⌈p/2^i⌉·n/p·(β+γ)), then α + n/p·β.  AG: as RS without γ.
AR, p = 2^m: 2 log p·α + 2(p−1)/p·nβ + (p−1)/p·nγ;
otherwise (2⌊log p⌋+2)α + (2(p′−1)/p′ + 2)nβ + ((p′−1)/p′ + 1)nγ.
RD, p = 2^m: as AR; otherwise (2⌊log p⌋+1)α + (2(p′−1)/p′ + 1)nβ + ((p′−1)/p′ + 1)nγ.
"""
from __future__ import annotations

from typing import Callable

from ccxml.frontend.algorithm import Options, check_ranks, check_root, program
from ccxml.frontend.chunk import Program
from ccxml.vocab.wire import Buffer, Coll

Ref = tuple[Buffer, int]          # (buffer, chunk index) as the Chunk API names it


class _Fold:
    """The power-of-two block for p ranks: B, rr, m and the block-rank ↔ rank maps.

    ``odd`` picks which member of each part-one pair (2i, 2i+1) belongs to the block.
    """

    def __init__(self, p: int, odd: bool = False):
        self.p = p
        self.m = p.bit_length() - 1
        self.B = 1 << self.m
        self.rr = p - self.B
        self.odd = odd

    def real(self, b: int) -> int:
        """The rank of block rank b."""
        return 2 * b + self.odd if b < self.rr else b + self.rr

    def block(self, r: int) -> int | None:
        """The block rank of rank r, None if r is folded out."""
        if r >= 2 * self.rr:
            return r - self.rr
        return r // 2 if r % 2 == self.odd else None

    def pairs(self):
        """(member in the block, partner folded into it) for every part-one pair."""
        for i in range(self.rr):
            yield 2 * i + self.odd, 2 * i + 1 - self.odd


class _Data:
    """Where every rank keeps each chunk of the working vector, and the moves between ranks.

    The vector is ``units`` units (block-slices or per-rank blocks) of K chunks; chunk c of
    unit u is chunk ``chunk(u, c)`` and travels on channel c, so the K channels run K
    independent copies of the algorithm side by side (as in ring.py). ``home(r, j)`` is where
    rank r stores chunk j when it receives it. A move becomes, per channel, one message per
    run of units whose source, local operand and destination chunks are contiguous.
    """

    def __init__(self, prog: Program, k: int, units: int, chunk: Callable[[int, int], int],
                 home: Callable[[int, int], Ref]):
        self.prog, self.k, self.chunk, self.home = prog, k, chunk, home
        self.loc: list[dict[int, Ref]] = [{} for _ in range(prog.ngpus)]

    def hold(self, r: int, lo: int, hi: int, where: Callable[[int], Ref]) -> None:
        """Rank r initially holds units lo…hi−1, chunk j at ``where(j)``."""
        for u in range(lo, hi):
            for c in range(self.k):
                j = self.chunk(u, c)
                self.loc[r][j] = where(j)

    def localize(self, r: int, lo: int, hi: int) -> None:
        """Copy units lo…hi−1 on rank r to their home (HCCL's input → output copy)."""
        for c in range(self.k):
            for msg in self._messages(r, r, lo, hi, False, self.home, c):
                self._issue(*msg)

    def copy(self, s: int, d: int, lo: int, hi: int) -> None:
        """d's units lo…hi−1 := s's."""
        self._move(s, d, lo, hi, False, self.home)

    def reduce(self, s: int, d: int, lo: int, hi: int,
               home: Callable[[int, int], Ref] | None = None) -> None:
        """d's units lo…hi−1 ⊕= s's, stored at ``home`` (default: the data's home)."""
        self._move(s, d, lo, hi, True, home or self.home)

    def bulk(self, s: int, d: int, reduce: bool, home: Callable[[int, int], Ref] | None = None) -> None:
        """d's whole vector := (or ⊕=) s's, as K equal contiguous chunk ranges, range c on
        channel c: one message per channel when the buffers allow it (fold and unfold)."""
        n = len(self.loc[s])
        for c in range(self.k):
            chunks = list(range(c * n // self.k, (c + 1) * n // self.k))
            for msg in self._runs(s, d, chunks, reduce, home or self.home, c):
                self._issue(*msg)

    def _move(self, s: int, d: int, lo: int, hi: int, reduce: bool, home) -> None:
        for c in range(self.k):
            for msg in self._messages(s, d, lo, hi, reduce, home, c):
                self._issue(*msg)

    def exchange(self, x: int, y: int, to_y: tuple[int, int], to_x: tuple[int, int],
                 reduce: bool) -> None:
        """x sends units ``to_y`` to y while y sends ``to_x`` (disjoint) to x: one kernel step.

        Messages carry at most the program's ``message_cap`` chunks (one call less than a link
        buffers). When a direction needs several, the k-th messages of both directions on every
        channel form one sub-round (:meth:`Program.next_round`), so each side sends its
        (k+1)-th message only after it has received the k-th: the exchange completes even when
        a link buffers only LINK_CALLS calls.
        """
        cap = self.prog.message_cap
        lanes = [[m for a in range(lo, hi, cap)
                  for m in self._messages(s, d, a, min(a + cap, hi), reduce, self.home, c)]
                 for c in range(self.k) for s, d, (lo, hi) in ((x, y, to_y), (y, x, to_x))]
        depth = max(map(len, lanes))
        for i in range(depth):
            for lane in lanes:
                if i < len(lane):
                    self._issue(*lane[i])
            if depth > 1:
                self.prog.next_round()

    def _messages(self, s: int, d: int, lo: int, hi: int, reduce: bool, home, chan: int) -> list:
        """The ops moving channel ``chan``'s chunks of units lo…hi−1 from s to d, one per run
        whose source, local operand (reduce) and destination are each contiguous. Nothing is
        issued yet."""
        return self._runs(s, d, [self.chunk(u, chan) for u in range(lo, hi)], reduce, home, chan)

    def _runs(self, s: int, d: int, chunks: list[int], reduce: bool, home, chan: int) -> list:
        src, dst_loc = self.loc[s], self.loc[d]
        if any(j not in src for j in chunks) or (reduce and any(j not in dst_loc for j in chunks)):
            raise ValueError(f"rank {s} or {d} does not hold chunks {chunks}")
        key = [(src[j], dst_loc[j] if reduce else None, home(d, j)) for j in chunks]
        out, start = [], 0
        for i in range(1, len(key) + 1):
            if i < len(key) and all(a is None or (a[0] == b[0] and a[1] == b[1] + 1)
                                    for a, b in zip(key[i], key[i - 1])):
                continue
            out.append((s, d, chunks[start:i], key[start], reduce, chan))
            start = i
        return out

    def _issue(self, s: int, d: int, chunks: list[int], first: tuple, reduce: bool,
               chan: int) -> None:
        prog, size = self.prog, len(chunks)
        (sb, so), operand, (db, do) = first
        a, out = prog.chunk(s, sb, so, size), prog.chunk(d, db, do, size)
        if reduce:
            a.reduce(prog.chunk(d, operand[0], operand[1], size), chan=chan, out=out)
        else:
            a.copy(out, chan=chan)
        for i, j in enumerate(chunks):
            self.loc[d][j] = (db, do + i)


def _hd_reduce_scatter(data: _Data, f: _Fold, span: Callable[[int, int], tuple[int, int]],
                       last_home: Callable[[int, int], Ref] | None = None) -> None:
    """HD-RS among the block ranks; ``span(lo, hi)`` = chunk range of block-slices lo…hi−1.
    ``last_home``, if given, is where the last step's sums land (the data's home before)."""
    for s in range(f.m):
        mask = 1 << (f.m - 1 - s)
        if s == f.m - 1 and last_home is not None:
            data.home = last_home
        for b in range(f.B):
            if b & mask == 0:                 # b keeps the lower half, its partner the upper
                peer = b | mask
                mine, theirs = b & ~(mask - 1), peer & ~(mask - 1)
                data.exchange(f.real(b), f.real(peer), span(theirs, theirs + mask),
                              span(mine, mine + mask), reduce=True)
        data.prog.next_round()


def _hd_all_gather(data: _Data, f: _Fold, span: Callable[[int, int], tuple[int, int]]) -> None:
    """HD-AG among the block ranks (distance doubling, copies)."""
    for s in range(f.m):
        mask = 1 << s
        for b in range(f.B):
            if b & mask == 0:
                peer = b | mask
                mine, theirs = b & ~(mask - 1), peer & ~(mask - 1)
                data.exchange(f.real(b), f.real(peer), span(mine, mine + mask),
                              span(theirs, theirs + mask), reduce=False)
        data.prog.next_round()


def _per_rank_span(f: _Fold) -> Callable[[int, int], tuple[int, int]]:
    """Per-rank blocks (units) of block-slices lo…hi−1: slice b is blocks {2b, 2b+1} for b < rr,
    {b + rr} otherwise (RS, AG)."""
    def first_rank(b: int) -> int:
        return 2 * b if b <= f.rr else b + f.rr
    return lambda lo, hi: (first_rank(lo), first_rank(hi))


def _slices(lo: int, hi: int) -> tuple[int, int]:
    """Block-slices are the units (AR, Reduce)."""
    return lo, hi


def allreduce(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    f, k = _Fold(p), options.channels
    prog = program("rhd", Coll.ALLREDUCE, p, f.B * k, options)
    data = _Data(prog, k, f.B, lambda u, c: c * f.B + u, lambda r, j: (Buffer.OUTPUT, j))
    for r in range(p):
        data.hold(r, 0, f.B, lambda j: (Buffer.INPUT, j))
    for keep, gone in f.pairs():
        data.reduce(gone, keep, 0, f.B)
    prog.next_round()
    _hd_reduce_scatter(data, f, _slices)
    _hd_all_gather(data, f, _slices)
    for keep, gone in f.pairs():
        data.copy(keep, gone, 0, f.B)
    prog.next_round()
    return prog


def reducescatter(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    f, k = _Fold(p), options.channels
    prog = program("rhd", Coll.REDUCESCATTER, p, p * k, options)
    # partial sums in scratch, so that a step's blocks stay contiguous; the last step's sum of a
    # rank's own block goes to its output
    data = _Data(prog, k, p, lambda u, c: u * k + c, lambda r, j: (Buffer.SCRATCH, j))
    for r in range(p):
        data.hold(r, 0, p, lambda j: (Buffer.INPUT, j))
    for keep, gone in f.pairs():     # the whole input: one message per channel
        data.bulk(gone, keep, True)
    prog.next_round()
    _hd_reduce_scatter(data, f, _per_rank_span(f), last_home=lambda r, j: (
        (Buffer.OUTPUT, j - r * k) if j // k == r else (Buffer.SCRATCH, j)))
    for keep, gone in f.pairs():
        data.copy(keep, gone, gone, gone + 1)
    prog.next_round()
    return prog


def allgather(p: int, *, options: Options = Options()) -> Program:
    check_ranks(p)
    f, k = _Fold(p), options.channels
    prog = program("rhd", Coll.ALLGATHER, p, p * k, options)
    data = _Data(prog, k, p, lambda u, c: u * k + c, lambda r, j: (Buffer.OUTPUT, j))
    for r in range(p):
        data.hold(r, r, r + 1, lambda j: (Buffer.INPUT, j % k))
        if f.block(r) is not None:
            data.localize(r, r, r + 1)
    for keep, gone in f.pairs():
        data.copy(gone, keep, gone, gone + 1)
    prog.next_round()
    _hd_all_gather(data, f, _per_rank_span(f))
    for keep, gone in f.pairs():
        data.copy(keep, gone, 0, p)
    prog.next_round()
    return prog


def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k = options.channels
    f = _Fold(p, odd=root < 2 * (p - (1 << (p.bit_length() - 1))) and root % 2 == 1)
    prog = program("rhd", Coll.BROADCAST, p, k, options, root=root)
    data = _Data(prog, k, 1, lambda u, c: c, lambda r, j: (Buffer.OUTPUT, j))
    data.hold(root, 0, 1, lambda j: (Buffer.INPUT, j))
    data.localize(root, 0, 1)
    rootb = f.block(root)
    for i in range(f.m):
        mask = 1 << (f.m - 1 - i)
        for b in range(f.B):
            if (b ^ rootb) & ((mask << 1) - 1) == 0:        # holds the data already
                data.copy(f.real(b), f.real(b ^ mask), 0, 1)
        prog.next_round()
    for keep, gone in f.pairs():
        data.copy(keep, gone, 0, 1)
    prog.next_round()
    return prog


def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    check_ranks(p)
    check_root(root, p)
    k = options.channels
    rr = p - (1 << (p.bit_length() - 1))
    f = _Fold(p, odd=root < 2 * rr and root % 2 == 1)
    prog = program("rhd", Coll.REDUCE, p, f.B * k, options, root=root)
    data = _Data(prog, k, f.B, lambda u, c: c * f.B + u,
                 lambda r, j: (Buffer.OUTPUT if r == root else Buffer.SCRATCH, j))
    for r in range(p):
        data.hold(r, 0, f.B, lambda j: (Buffer.INPUT, j))
    for keep, gone in f.pairs():
        data.reduce(gone, keep, 0, f.B)
    prog.next_round()
    _hd_reduce_scatter(data, f, _slices)
    rootb = f.block(root)
    for s in range(f.m):
        mask = 1 << s
        for b in range(f.B):
            if (b ^ rootb) & (mask - 1) == 0 and (b ^ rootb) & mask:
                lo = b & ~(mask - 1)
                data.copy(f.real(b), f.real(b ^ mask), lo, lo + mask)
        prog.next_round()
    return prog


COLLECTIVES = {
    Coll.ALLREDUCE: allreduce,
    Coll.ALLGATHER: allgather,
    Coll.REDUCESCATTER: reducescatter,
    Coll.BROADCAST: broadcast,
    Coll.REDUCE: reduce,
}

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("rhd")
