"""``Program.compile`` does not consume the program: one program compiled for several targets in
one process gives the files of a fresh build per target; the copy it compiles
(:func:`ccxml.ir.clone.clone_algo`) agrees with its exact twin, ``copy.deepcopy``."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ccxml.algorithms import build
from ccxml.frontend.algorithm import Options
from ccxml.ir.clone import STEP_REFERENCES, STEP_VALUES, clone_algo
from ccxml.ir.nodes import Step
from ccxml.passes import LimitError, assign_threadblocks, parse_pipeline
from ccxml.topology.model import Topology
from ccxml.vocab.errors import ChunkError
from ccxml.vocab.wire import profile
from ccxml.writer.msccl import to_xml

TARGETS = ("exec", "rccl", "legacy")
# flat algorithms with fusion (exec, legacy) and lowering (rccl), rooted, alltoall, and the
# hierarchical ones (nops, several channels)
CASES = [
    ("ring", "allreduce", 8, {}),
    ("ring", "reduce", 6, {"root": 2}),
    ("rhd", "allreduce", 13, {}),
    ("pairwise", "alltoall", 5, {}),
    ("nhr", "reducescatter", 5, {}),
    ("mesh", "allreduce", 5, {"variant": "one-shot"}),
    ("hierarchical", "allreduce", 12, {"topology": Topology.uniform(3, 4)}),
    ("2d-torus", "allreduce", 6, {"topology": Topology.uniform(2, 3)}),
]


def _program(alg, coll, p, kw):
    return build(alg, coll, p, options=Options(), **kw)


@pytest.mark.parametrize("alg, coll, p, kw", CASES, ids=[f"{a}-{c}-{p}" for a, c, p, _ in CASES])
def test_one_program_compiles_for_every_target_as_fresh_builds_do(alg, coll, p, kw):
    prog = _program(alg, coll, p, kw)
    shared = {t: to_xml(prog.compile(t), t) for t in (*TARGETS, "exec")}       # exec twice
    for target in TARGETS:
        fresh = _program(alg, coll, p, kw).compile(target, consume=True)
        assert shared[target] == to_xml(fresh, target), target
    assert len({shared[t] for t in TARGETS}) > 1         # the targets do differ
    assert prog.compile("exec") is prog.compile(profile("exec"))     # compiled once per target


def test_options_and_pipelines_are_compiled_apart():
    prog = _program("ring", "allreduce", 5, {})
    fused = to_xml(prog.compile("exec"), "exec")
    unfused = to_xml(prog.compile("exec", merge_rcs=False), "exec")
    assert fused != unfused
    assert unfused == to_xml(_program("ring", "allreduce", 5, {}).compile("exec", merge_rcs=False),
                             "exec")
    text = "threadblocks,ordering,fusion{merge_rcs=false},splitting,dependencies,numbering,checks"
    given = prog.compile("exec", passes=parse_pipeline(text))     # fusion runs, fusing nothing
    assert given is not prog.compile("exec", merge_rcs=False)     # (there it does not run)
    assert to_xml(given, "exec") == unfused
    assert prog.compile("exec", passes=parse_pipeline(text)) is given


def test_the_recording_is_left_as_it_was():
    prog = _program("ring", "allreduce", 4, {})
    before = [(st.type, st.chan, st.tb, st.dep_list) for gpu in prog.algo.gpus for st in gpu.pending]
    prog.compile("rccl")
    after = [(st.type, st.chan, st.tb, st.dep_list) for gpu in prog.algo.gpus for st in gpu.pending]
    assert before == after and all(not gpu.tbs for gpu in prog.algo.gpus)


def test_a_failed_compile_leaves_the_program_usable():
    prog = build("ring", "allreduce", 2, options=Options(channels=33))    # too wide for exec
    with pytest.raises(LimitError):
        prog.compile("exec")
    with pytest.raises(LimitError):                     # again: the same verdict, no stale state
        prog.compile("exec")
    fresh = build("ring", "allreduce", 2, options=Options(channels=33))
    assert to_xml(prog.compile("unbounded"), "exec") == to_xml(fresh.compile("unbounded"), "exec")
    with pytest.raises(ChunkError, match="already compiled"):
        prog.chunk(0, "i", 1).copy(prog.chunk(0, "o", 1))


def test_consume_compiles_in_place_once():
    prog = _program("ring", "allreduce", 4, {})
    algo = prog.compile("exec", consume=True)
    assert algo is prog.algo and prog.compile("exec") is algo
    with pytest.raises(ChunkError, match="compiled in place for target 'exec'.*build it again"):
        prog.compile("rccl")


def test_clone_copies_every_step_field():
    """Every slot of ``Step`` (read from the source: a compiled Step has no ``__slots__``)."""
    import ast

    import ccxml.ir.nodes as nodes
    tree = ast.parse((Path(nodes.__file__).parent / "nodes.py").read_text())
    step = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Step")
    slots = next(ast.literal_eval(n.value) for n in step.body if isinstance(n, ast.Assign)
                 and n.targets[0].id == "__slots__")
    assert sorted(STEP_VALUES + STEP_REFERENCES) == sorted(slots)


def _state(algo):
    """Everything the passes read or write, with step and TB references as positions."""
    steps = [st for gpu in algo.gpus for st in (*gpu.pending, *gpu.steps())]
    pos = {id(st): i for i, st in enumerate(steps)}
    tbs = {id(tb): (gpu.id, i) for gpu in algo.gpus for i, tb in enumerate(gpu.tbs)}

    def ref(x):
        if x is None:
            return None
        if type(x) is Step:
            return pos[id(x)]
        if type(x) in (list, tuple):
            return [ref(y) for y in x]
        return x

    rows = [tuple(getattr(st, f) for f in STEP_VALUES)
            + tuple(ref(getattr(st, f)) for f in STEP_REFERENCES if f != "tb")
            + (tbs.get(id(st.tb)),) for st in steps]
    gpus = [(gpu.id, gpu.input_chunks, gpu.output_chunks, gpu.scratch_chunks,
             [(tb.send, tb.recv, tb.chan, tb.send_count, tb.recv_count, tbs[id(tb.origin)])
              for tb in gpu.tbs], sorted(gpu._index), gpu._usage) for gpu in algo.gpus]
    attrs = {k: v for k, v in vars(algo).items() if k != "gpus"}
    return rows, gpus, attrs


@pytest.mark.parametrize("alg, coll, p, kw", CASES[:4] + CASES[6:7],
                         ids=[f"{a}-{c}-{p}" for a, c, p, _ in CASES[:4] + CASES[6:7]])
def test_clone_agrees_with_deepcopy_and_shares_nothing(alg, coll, p, kw):
    prog = _program(alg, coll, p, kw)
    prog.compile("exec")                     # match the ends (the recording is then complete)
    algo = prog.algo
    fast, exact = clone_algo(algo), copy.deepcopy(algo)
    assert _state(fast) == _state(exact) == _state(algo)
    old = {id(st) for gpu in algo.gpus for st in gpu.pending}
    assert not old & {id(st) for gpu in fast.gpus for st in gpu.pending}
    assert to_xml(_compiled_copy(fast, "rccl"), "rccl") == to_xml(_compiled_copy(exact, "rccl"),
                                                                  "rccl")


def test_clone_copies_placed_thread_blocks():
    """A recording whose steps are in TBs before the passes run (MSCCLang's sendtb/recvtb hints
    place them so): the TBs, their indexes and the steps' TB references are copied."""
    prog = _program("rhd", "allreduce", 6, {})
    prog.compile("exec")                     # match the ends
    algo = prog.algo
    assign_threadblocks(algo)
    fast, exact = clone_algo(algo), copy.deepcopy(algo)
    assert any(gpu.tbs for gpu in fast.gpus)
    assert _state(fast) == _state(exact) == _state(algo)
    for a, b in zip(algo.gpus, fast.gpus):
        assert [id(tb) for tb in a.tbs] != [id(tb) for tb in b.tbs]
        assert all(st.tb is tb for tb in b.tbs for st in tb.steps)


def _compiled_copy(algo, target):
    from ccxml.passes import compile_algo
    return compile_algo(algo, target=target)
