"""The pass pipeline: each pass's stated guarantee is checked on the IR after it ran, over a
representative set of algorithms x collectives x targets, and every check can fail."""
from __future__ import annotations

import gc

import pytest

from ccxml.algorithms import build
from ccxml.frontend.algorithm import Options
from ccxml.passes import compile_algo, pass_names, pipeline
from ccxml.topology.model import Topology
from ccxml.vocab.wire import NOP, RECV_COPY_SEND, RECV_REDUCE_COPY, profile

# (algorithm, collective, ranks, target, builder options): every flat algorithm, both kinds of
# hierarchy, the three targets, TBs long enough to split (ring 33 on exec/rccl), alltoallv
CASES = [
    ("ring", "allreduce", 5, "exec", {}),
    ("ring", "allreduce", 33, "exec", {}),
    ("ring", "allreduce", 33, "rccl", {}),
    ("ring", "reducescatter", 8, "legacy", {}),
    ("ring", "broadcast", 5, "exec", {"root": 3}),
    ("ring", "reduce", 6, "rccl", {"root": 2}),
    ("ring", "allgather", 4, "exec", {"channels": 2}),
    ("mesh", "allreduce", 8, "exec", {}),
    ("mesh", "allreduce", 5, "rccl", {"variant": "one-shot"}),
    ("rhd", "allreduce", 13, "exec", {}),
    ("rhd", "allreduce", 8, "rccl", {}),
    ("pairwise", "alltoall", 8, "exec", {}),
    ("pairwise", "alltoallv", 3, "legacy", {"counts": [[1, 2, 0], [3, 1, 1], [0, 2, 2]]}),
    ("star", "gather", 5, "exec", {"root": 1}),
    ("star", "scatter", 4, "rccl", {"root": 0}),
    ("nhr", "allreduce", 13, "exec", {}),
    ("nhr", "reducescatter", 5, "rccl", {}),
    ("nb", "allgather", 13, "exec", {}),
    ("nb", "allreduce", 5, "legacy", {}),
    ("ahc", "allreduce", 5, "exec", {"topology": Topology.from_groups("2,3")}),
    ("2d-torus", "allreduce", 6, "exec", {"topology": Topology.uniform(2, 3)}),
    ("hierarchical", "allreduce", 12, "rccl", {"topology": Topology.uniform(3, 4)}),
]


def _program(alg, coll, p, kw):
    opts = {k: kw[k] for k in ("channels",) if k in kw}
    args = {k: v for k, v in kw.items() if k not in opts}
    return build(alg, coll, p, options=Options(**opts), **args)


def _compile_checked(alg, coll, p, target, kw, **pipeline_options):
    """Compile, checking each pass's guarantee right after it; return (algo, passes run)."""
    algo = _program(alg, coll, p, kw).algo
    prof = profile(target)
    ran = []

    def hook(ps, algo):
        ran.append(ps.name)
        problem = ps.check(algo, prof)
        assert problem is None, f"after {ps.name}: {problem}"
    pipeline(prof, **pipeline_options).run(algo, prof, hook)
    return algo, ran


@pytest.mark.parametrize("alg, coll, p, target, kw", CASES,
                         ids=[f"{a}-{c}-{p}-{t}" for a, c, p, t, _ in CASES])
def test_every_pass_keeps_its_guarantee(alg, coll, p, target, kw):
    _, ran = _compile_checked(alg, coll, p, target, kw)
    assert ran == list(pipeline(profile(target)).names)


@pytest.mark.parametrize("options", [{"merge_rcs": False}, {"sort": False}])
def test_guarantees_hold_without_fusion_or_ordering(options):
    _, ran = _compile_checked("ring", "allreduce", 33, "exec", {}, **options)
    assert "fusion" not in ran if "merge_rcs" in options else "ordering" not in ran


def test_the_cases_exercise_what_the_passes_do():
    """The set above is representative: steps fuse, rrc is lowered, TBs split, nops appear."""
    split, _ = _compile_checked("ring", "allreduce", 33, "exec", {})
    tbs = [tb for gpu in split.gpus for tb in gpu.tbs]
    assert any(tb.segment > 0 for tb in tbs)
    assert any(st.type is RECV_COPY_SEND for tb in tbs for st in tb.steps)
    lowered, _ = _compile_checked("ring", "reduce", 6, "rccl", {"root": 2})
    assert not any(st.type is RECV_REDUCE_COPY for st in lowered.steps())
    hier, _ = _compile_checked("hierarchical", "allreduce", 12, "rccl",
                               {"topology": Topology.uniform(3, 4)})
    assert any(st.type is NOP for st in hier.steps())


def test_the_pipeline_of_each_target():
    assert pass_names() == ("threadblocks", "ordering", "fusion", "lowering", "splitting",
                          "dependencies", "numbering", "checks")
    assert "lowering" not in pipeline(profile("exec")).names
    assert "fusion" not in pipeline(profile("rccl")).names
    assert "fusion" not in pipeline(profile("legacy"), merge_rcs=False).names
    assert "ordering" not in pipeline(profile("legacy"), sort=False).names
    assert all(p.__doc__ and p.name for p in pipeline(profile("rccl")))


@pytest.mark.parametrize("enabled", [True, False])
def test_compiling_restores_the_garbage_collector_as_it_was(enabled):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        seen = []
        compile_algo(_program("ring", "allreduce", 4, {}).algo, target="exec",
                     hook=lambda ps, algo: seen.append(gc.isenabled()))
        assert seen and not any(seen)          # paused while the passes run
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# ---- every check can fail: break the IR the way the guarantee forbids -----------------------
def _after(pass_name, alg="ring", coll="allreduce", p=5, target="exec", kw=None):
    """The IR right after ``pass_name`` (later passes not run) and that pass's check."""
    algo = _program(alg, coll, p, kw or {}).algo
    prof = profile(target)
    for ps in pipeline(prof):
        ps.run(algo, prof)
        if ps.name == pass_name:
            assert ps.check(algo, prof) is None
            return algo, _Checked(ps, prof)
    raise AssertionError(f"{pass_name} does not run for {target}")


class _Checked:
    """A pass with the profile it ran for: ``check(algo)`` checks its guarantee."""

    def __init__(self, ps, prof):
        self.ps, self.prof = ps, prof

    def check(self, algo):
        return self.ps.check(algo, self.prof)


def _comm_tb(algo, gpu=0):
    return next(tb for tb in algo.gpus[gpu].tbs if tb.send >= 0 and len(tb.steps) > 2)


def test_threadblocks_check_names_a_step_out_of_issue_order():
    algo, ps = _after("threadblocks")
    tb = _comm_tb(algo)
    tb.steps[0], tb.steps[1] = tb.steps[1], tb.steps[0]
    assert "was issued before the step ahead of it" in ps.check(algo)


def test_threadblocks_check_names_a_step_in_a_tb_of_another_peer():
    algo, ps = _after("threadblocks", "pairwise", "alltoall", 4)
    a, b = [tb for tb in algo.gpus[0].tbs if tb.send >= 0][:2]
    st = next(s for s in a.steps if s.type.sends)
    a.steps.remove(st)
    b.steps.append(st)
    st.tb = b
    assert f"sends to {st.send_peer}, its TB to {b.send}" in ps.check(algo)


def test_ordering_check_names_sends_out_of_link_order():
    algo, ps = _after("ordering")
    tb = _comm_tb(algo)
    a, b = [st for st in tb.steps if st.type.sends][:2]
    a.send_index, b.send_index = b.send_index, a.send_index
    assert "the link's message order changed" in ps.check(algo)


def test_ordering_check_finds_a_wait_cycle_across_gpus():
    # every rank of a ring first waits for a receive: each link keeps its message order, but
    # no rank sends first
    algo, ps = _after("ordering", "ring", "allgather", 3)
    for gpu in algo.gpus:
        tb = _comm_tb(algo, gpu.id)
        recv = next(st for st in tb.steps if st.type.receives)
        tb.steps.remove(recv)
        tb.steps.insert(0, recv)
    assert "steps wait on each other in a cycle" in ps.check(algo)


def test_ordering_check_names_a_step_ahead_of_its_dependency():
    algo, ps = _after("ordering", "ring", "allgather", 3)
    tb = _comm_tb(algo, 0)
    first, last = tb.steps[0], tb.steps[-1]
    first.add_dep(last)
    assert "comes before" in ps.check(algo)


def test_fusion_check_names_an_rcs_that_forwards_something_else():
    algo, ps = _after("fusion")
    rcs = next(st for st in algo.steps() if st.type is RECV_COPY_SEND)
    rcs.src = (rcs.dst[0], rcs.dst[1] + 1)
    assert "forwards" in ps.check(algo)


def test_lowering_check_names_a_type_the_target_does_not_run():
    algo, ps = _after("lowering", "ring", "reduce", 4, "rccl", {"root": 0})
    st = next(st for st in algo.steps() if st.type.receives)
    st.type = RECV_REDUCE_COPY
    assert "rccl does not execute rrc" in ps.check(algo)


def test_splitting_check_names_a_piece_that_does_not_wait_on_the_one_before():
    algo, ps = _after("splitting", "ring", "allreduce", 33)
    piece = next(tb for gpu in algo.gpus for tb in gpu.tbs if tb.segment > 0)
    before = next(tb for tb in algo.gpus[piece.gpu].tbs
                  if tb.origin is piece.origin and tb.segment == piece.segment - 1)
    piece.steps[0].remove_dep(before.steps[-1])
    assert "without waiting on the end of piece" in ps.check(algo)


def test_splitting_check_names_a_tb_over_the_limit():
    algo, ps = _after("splitting", "ring", "allreduce", 33)
    tb = algo.gpus[0].tbs[0]
    other = algo.gpus[1].tbs[0].steps[0]
    tb.steps += [tb.nop(other) for _ in range(65 - len(tb.steps))]
    assert "has 65 steps; exec allows 64" in ps.check(algo)


def test_dependencies_check_names_a_wait_that_was_dropped():
    algo, ps = _after("dependencies", "hierarchical", "allreduce", 12, "rccl",
                      {"topology": Topology.uniform(3, 4)})
    nop = next(st for st in algo.steps() if st.type is NOP)
    nop.tb.steps.remove(nop)
    assert "no longer waits on" in ps.check(algo)


def test_dependencies_check_names_a_target_without_hasdep():
    algo, ps = _after("dependencies", "hierarchical", "allreduce", 12, "rccl",
                      {"topology": Topology.uniform(3, 4)})
    st = next(st for st in algo.steps() if st.dep is not None)
    st.dep.publish = False
    assert "has no hasdep" in ps.check(algo)


def test_numbering_check_names_tb_ids_out_of_order():
    algo, ps = _after("numbering", "pairwise", "alltoall", 4)
    tbs = algo.gpus[0].tbs
    tbs[0].id, tbs[1].id = tbs[1].id, tbs[0].id
    assert "has id 1 at place 0" in ps.check(algo)


def test_checks_pass_reports_a_broken_link():
    algo, ps = _after("checks")
    st = next(st for st in algo.steps() if st.type.sends)
    st.cnt += 1
    assert "differ at message" in ps.check(algo)
