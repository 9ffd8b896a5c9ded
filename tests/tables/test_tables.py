"""The tables of moves (ccxml/tables): each table does what its docstring says, checked on the
tables alone (no program built), and the merge rule makes the messages it promises."""
from __future__ import annotations

import pytest

from ccxml.tables import mesh, nb, nhr, pipeline, rhd, ring, star
from ccxml.tables.plan import Copy, Reduce, by_block, messages
from ccxml.tables.schemes import SCHEMES
from ccxml.vocab.wire import Buffer

SIZES = list(range(1, 18)) + [31, 32, 33]


def reduced(table, n: int, nblocks: int | None = None) -> dict[tuple[int, int], frozenset]:
    """(member, block) -> the members whose contribution it holds after a reduce table. No
    member sends a block in the step that brings it one (the planner reads a sender's value as
    the moves before it in the step left it: ccxml.tables.plan.messages)."""
    held = {(r, j): frozenset([r]) for r in range(n) for j in range(nblocks or n)}
    for step in table:
        got = {(b, j) for _, b, blocks in step for j in blocks}
        assert not any((a, j) in got for a, _, blocks in step for j in blocks), step
        before = dict(held)
        for a, b, blocks in step:
            for j in blocks:
                assert not before[(a, j)] & held[(b, j)], f"block {j} reduced twice into {b}"
                held[(b, j)] = held[(b, j)] | before[(a, j)]
    return held


def gathered(table, start: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The (member, block) pairs held after a copy table; a sender must hold what it sends."""
    have = set(start)
    for step in table:
        for a, b, blocks in step:
            for j in blocks:
                assert (a, j) in have, f"member {a} sends block {j} it does not hold"
                have.add((b, j))
    return have


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("n", SIZES)
def test_every_scheme_reduce_scatters_and_all_gathers(scheme, n):
    sc = SCHEMES[scheme]
    everyone = frozenset(range(n))
    held = reduced(sc.rs(n), n)
    for j in range(n):
        assert held[(sc.holder(n, j), j)] == everyone
    owned = gathered(sc.rs_tail(n), {(sc.holder(n, j), j) for j in range(n)})
    assert {(j, j) for j in range(n)} <= owned
    assert gathered(sc.ag(n), {(j, j) for j in range(n)}) == {(r, j) for r in range(n) for j in range(n)}
    assert gathered((sc.ar_ag or sc.ag)(n), {(sc.holder(n, j), j) for j in range(n)}) == \
        {(r, j) for r in range(n) for j in range(n)}


@pytest.mark.parametrize("n", SIZES)
def test_rhd_on_block_slices_reduces_each_slice_at_its_block_rank(n):
    """Flat RHD AllReduce and Reduce: the fold (whole buffer as one block), then halving on the
    B block-slices; block rank b ends with slice b, summed over every member."""
    f = rhd.Fold(n)
    folded = reduced(rhd.fold(f, lambda g: [0]), n, 1)
    held = reduced(rhd.halving(f, per_rank=False), n, f.B)
    for b in range(f.B):
        members = {m for r in held[(f.real(b), b)] for m in folded[(r, 0)]}
        assert members == set(range(n))


@pytest.mark.parametrize("n", SIZES)
def test_rooted_tables_reach_the_root_or_every_member(n):
    root = n // 2
    everyone = frozenset(range(n))
    for table in (ring.chain_reduce(n, 3), star.reduce(n, 3)):          # to member 0
        held = reduced(table, n, 3)
        assert all(held[(0, j)] == everyone for j in range(3))
    for table in (ring.chain_bcast(n, 3), ring.block_bcast(n, 3), star.bcast(n, 3)):
        assert gathered(table, {(0, j) for j in range(3)}) == {(r, j) for r in range(n) for j in range(3)}
    own = {(j, j) for j in range(n)}
    assert own <= gathered(ring.scatter(n), {(0, j) for j in range(n)})
    for table in (star.scatter(n, root), nhr.scatter(n, root), nb.scatter(n, root)):
        assert own <= gathered(table, {(root, j) for j in range(n)})
    assert {(0, j) for j in range(n)} <= gathered(ring.gather(n), own)
    assert {(root, j) for j in range(n)} <= gathered(star.gather(n, root), own)
    assert gathered(rhd.bcast(n, root), {(root, 0)}) == {(r, 0) for r in range(n)}
    assert gathered(mesh.all_gather(n, skip=root), own | {(root, j) for j in range(n)}) == \
        {(r, j) for r in range(n) for j in range(n)}


@pytest.mark.parametrize("s_, m_", [(1, 3), (2, 1), (2, 3), (3, 4), (4, 2)])
def test_pipeline_slots_reduce_scatter_and_all_gather(s_, m_):
    p = s_ * m_
    held = reduced(pipeline.reduce(s_, m_), p)
    assert all(held[(r, r)] == frozenset(range(p)) for r in range(p))
    for direction in (1, -1):
        assert gathered(pipeline.gather(s_, m_, direction), {(r, r) for r in range(p)}) == \
            {(r, j) for r in range(p) for j in range(p)}


def test_blocks_that_touch_go_as_one_message_and_exchanges_are_cut_alike():
    """Member 0 sends blocks 3, 1, 0 (0 and 1 touch, 3 does not) to member 1, which sends
    block 2 back: three blocks make two messages, and with ``even`` both directions are cut at
    the same block counts."""
    table = [[(0, 1, [3, 1, 0]), (1, 0, [2])]]
    phase = Copy(table, loc=by_block(Buffer.OUTPUT, 1))
    (found,) = list(messages(phase, n=2))
    o = Buffer.OUTPUT
    assert found == [(0, 1, [((o, 0, 2), None, (o, 0, 2)), ((o, 3, 1), None, (o, 3, 1))]),
                     (1, 0, [((o, 2, 1), None, (o, 2, 1))])]
    (even,) = list(messages(phase, n=2, even=True))
    assert [[m[0][2] for m in msgs] for _, _, msgs in even] == [[1, 1, 1], [1]]
    (alone,) = list(messages(phase, n=2, merge=False))
    assert [len(msgs) for _, _, msgs in alone] == [3, 1]


def test_a_reduce_reads_own_then_partial_sums_and_the_owner_writes_final():
    """Ring reduce-scatter on 3 members: the first step reads contributions, the second the
    partial sums, and each owner's last receive writes its final place."""
    i, s, o = Buffer.INPUT, Buffer.SCRATCH, Buffer.OUTPUT
    phase = Reduce(ring.reduce_scatter(3), own=by_block(i, 1), acc=by_block(s, 1),
                   final=lambda r, j, c: (o, 0, 1))
    first, last = list(messages(phase, n=3))
    assert first[0] == (0, 1, [((i, 2, 1), (i, 2, 1), (s, 2, 1))])
    assert last[0] == (0, 1, [((s, 1, 1), (i, 1, 1), (o, 0, 1))])
