"""The executor's four ways of issuing a phase (issue 26.2): Streamed, Stepwise, Laned, Staged.

``run(prog, phase, how=...)`` takes one of them; ``run``'s keyword form picks the same one
(:func:`ccxml.frontend.executor.strategy`), so every algorithm writes the files it wrote before
(benchmarks/output_hashes.py: 813 hashes unchanged). A combination no strategy issues is refused
where it is written."""
from __future__ import annotations

import pytest

from ccxml.driver import generate_text
from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.executor import Laned, Stage, Staged, Stepwise, Streamed, run, strategy
from ccxml.frontend.lanes import Lanes
from ccxml.tables import ring
from ccxml.tables.plan import Copy, Reduce, by_block
from ccxml.vocab.errors import AlgorithmError
from ccxml.vocab.wire import Buffer, Coll

I, O = Buffer.INPUT, Buffer.OUTPUT


def ring_allreduce(p: int, k: int, how) -> str:
    """ccxml.algorithms.ring.allreduce, with its two phases issued ``how`` says."""
    prog = program("ring", Coll.ALLREDUCE, p, p * k, Options(channels=k))
    run(prog, Reduce(ring.reduce_scatter(p), own=by_block(I, k), acc=by_block(O, k)), instances=k,
        how=how)
    run(prog, Copy(ring.all_gather(p), loc=by_block(O, k)), instances=k, how=how)
    return prog.to_xml("exec")


@pytest.mark.parametrize("p,k", [(4, 1), (6, 2)])
def test_a_strategy_object_writes_what_the_keywords_write(p, k):
    want = generate_text("ring", "allreduce", p, channels=k)[0]     # order="channels"
    assert ring_allreduce(p, k, Streamed()) == want
    # the same order, each step planned whole before it is issued: the same steps
    assert ring_allreduce(p, k, Stepwise(order="channels")) == want


def test_the_keywords_pick_the_strategy():
    assert type(strategy(order="channels")) is Streamed
    assert type(strategy(order="channels", send="interleave")) is Stepwise
    assert type(strategy(order="channels", even=True)) is Stepwise
    assert type(strategy()) is Stepwise
    assert type(strategy(stage=Stage(0))) is Staged
    assert type(strategy(lanes=Lanes())) is Laned


@pytest.mark.parametrize("make", [
    lambda: Stepwise(order="sideways"),
    lambda: Stepwise(send="shout"),
    lambda: Laned(Lanes(), order="sideways"),
    lambda: Staged(Stage(0), order="channels"),
    lambda: strategy(stage=Stage(0), send="interleave"),
    lambda: strategy(stage=Stage(0), lanes=Lanes()),
    lambda: strategy(lanes=Lanes(), channel=lambda s, d, c: c),
])
def test_a_combination_no_strategy_issues_is_refused_where_it_is_written(make):
    with pytest.raises(AlgorithmError, match="internal"):
        make()


def test_a_lane_plan_serves_one_instance():
    prog = program("ring", Coll.ALLGATHER, 4, 8, Options(channels=2))
    with pytest.raises(AlgorithmError, match="one instance"):
        run(prog, Copy(ring.all_gather(4), loc=by_block(O, 2)), instances=2, how=Laned(Lanes()))
    assert [st for g in prog.algo.gpus for st in g.pending] == []
