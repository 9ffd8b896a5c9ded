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
so that each channel's transfers are contiguous. Every thread block carries one direction
(``Program.split_directions``): the two halves of an exchange (both partners send in one step)
run side by side, and as no send can block a receive, a step's range goes as one message at any
size (cut only at the runtime's cnt limit of 71 chunks, which the ``generate`` summary reports).
Partial sums live in the output (AllReduce, root of Reduce) or in scratch; the input is only read.

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

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import rhd
from ccxml.tables.plan import Copy, Layout, Reduce, by_block, by_instance, fixed
from ccxml.vocab.wire import Buffer, Coll

I, O, S = Buffer.INPUT, Buffer.OUTPUT, Buffer.SCRATCH


def _steps(prog: Program, phase, k: int, exchange: bool = False) -> None:
    """Every step of ``phase`` ends with next_round; an exchange step's two directions alternate
    message by message (module docstring)."""
    run(prog, phase, instances=k, rounds=True, send="exchange" if exchange else "sequential",
        order="moves")


def _whole(buffer, n: int) -> Layout:
    """The whole vector as one block: instance c's n chunks from c·n (fold and unfold)."""
    return Layout(buffer, 0, n, width=n)


def _folded_in(f: rhd.Fold, placed, elsewhere):
    """``placed`` on the members a partner was folded into, ``elsewhere`` on the others."""
    keepers = {keep for keep, _ in f.pairs()}
    return lambda r, j, c: (placed if r in keepers else elsewhere)(r, j, c)


@algorithm("rhd", Coll.ALLREDUCE)
def allreduce(p: int, *, options: Options = Options()) -> Program:
    f, k = rhd.Fold(p), options.channels
    prog = program("rhd", Coll.ALLREDUCE, p, f.B * k, options)
    prog.split_directions()
    whole = [0]
    _steps(prog, Reduce(rhd.fold(f, lambda g: whole), own=_whole(I, f.B), acc=_whole(O, f.B)), k)
    slices = by_instance(O, f.B)
    _steps(prog, Reduce(rhd.halving(f, per_rank=False), own=_folded_in(f, slices, by_instance(I, f.B)),
                        acc=slices), k, exchange=True)
    _steps(prog, Copy(rhd.doubling(f, per_rank=False), loc=slices), k, exchange=True)
    _steps(prog, Copy(rhd.unfold(f, lambda g: whole), loc=_whole(O, f.B)), k)
    return prog


@algorithm("rhd", Coll.ALLGATHER)
def allgather(p: int, *, options: Options = Options()) -> Program:
    f, k = rhd.Fold(p), options.channels
    prog = program("rhd", Coll.ALLGATHER, p, p * k, options)
    prog.split_directions()
    for r in range(p):
        if f.block(r) is not None:      # the block's members put their own block in place
            for c in range(k):
                prog.input(r, c).copy(prog.output(r, r * k + c))
    out = by_block(O, k)
    own = lambda r, j, c: out(r, j, c) if f.block(r) is not None else (I, c, 1)   # noqa: E731
    table = rhd.all_gather(p, resend_own=True)
    fold, rest = (table[:1], table[1:]) if f.rr else ([], table)
    _steps(prog, Copy(fold, loc=out, first=own), k)
    _steps(prog, Copy(rest[:f.m], loc=out, first=own), k, exchange=True)
    _steps(prog, Copy(rest[f.m:], loc=out, first=own), k)
    return prog


@algorithm("rhd", Coll.REDUCESCATTER)
def reducescatter(p: int, *, options: Options = Options()) -> Program:
    f, k = rhd.Fold(p), options.channels
    prog = program("rhd", Coll.REDUCESCATTER, p, p * k, options)
    prog.split_directions()
    # partial sums in scratch, so that a step's blocks stay contiguous; the last step's sum of a
    # rank's own block goes to its output
    _steps(prog, Reduce(rhd.fold(f, lambda g: [0]), own=_whole(I, p), acc=_whole(S, p)), k)
    held = by_block(S, k)
    home = lambda r, j, c: (O, c, 1) if j == r else held(r, j, c)   # noqa: E731
    _steps(prog, Reduce(rhd.halving(f), own=_folded_in(f, held, by_block(I, k)), acc=held, final=home,
                        owner=lambda j: rhd.holder(p, j)), k, exchange=True)
    _steps(prog, Copy(rhd.rs_tail(p), loc=home), k)
    return prog


@algorithm("rhd", Coll.BROADCAST)
def broadcast(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("rhd", Coll.BROADCAST, p, k, options, root=root)
    prog.split_directions()
    for c in range(k):
        prog.input(root, c).copy(prog.output(root, c))
    _steps(prog, Copy(rhd.bcast(p, root), loc=fixed(O)), k)
    return prog


@algorithm("rhd", Coll.REDUCE)
def reduce(p: int, *, root: int = 0, options: Options = Options()) -> Program:
    k = options.channels
    f = rhd.for_root(p, root)
    prog = program("rhd", Coll.REDUCE, p, f.B * k, options, root=root)
    prog.split_directions()
    home = lambda buf: lambda r, j, c: buf(r, j, c) if r != root else (O, *buf(r, j, c)[1:])   # noqa: E731
    _steps(prog, Reduce(rhd.fold(f, lambda g: [0]), own=_whole(I, f.B), acc=home(_whole(S, f.B))), k)
    slices = home(by_instance(S, f.B))
    _steps(prog, Reduce(rhd.halving(f, per_rank=False), own=_folded_in(f, slices, by_instance(I, f.B)),
                        acc=slices), k, exchange=True)
    _steps(prog, Copy(rhd.gather(p, root), loc=slices), k)
    return prog


COLLECTIVES = registry.get("rhd").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("rhd")
