"""The algorithm registry (ccxml/frontend/registry.py): one place that knows every algorithm, its
builders and their options, checks parameters before a builder runs, and takes algorithms from
outside the package."""
from __future__ import annotations

import pytest

from ccxml.frontend.algorithm import AlgorithmError, Options, program
from ccxml.frontend.registry import Registry
from ccxml.vocab.wire import Coll


def _toy(calls: list):
    """A registry with one outside algorithm, ``toy``: a rooted broadcast with a choice."""
    reg = Registry()

    def broadcast(p: int, *, root: int = 0, flavour: str = "plain", options: Options = Options()):
        calls.append((p, root, flavour))
        prog = program("toy", Coll.BROADCAST, p, 1, options, root=root)
        for r in range(p):
            if r != root:
                prog.input(root, 0).copy(prog.output(r, 0))
        prog.input(root, 0).copy(prog.output(root, 0))
        return prog

    reg.register("toy", Coll.BROADCAST, broadcast, choices={"flavour": ("plain", "fancy")})
    return reg


def test_an_outside_algorithm_registers_and_builds_like_a_built_in():
    from ccxml.interpreter import verify
    calls: list = []
    reg = _toy(calls)
    assert reg.names() == ["toy"] and list(reg.available()) == ["toy"]
    alg = reg.get("toy")
    assert alg.collectives == [Coll.BROADCAST] and alg.params[Coll.BROADCAST] == ("root", "flavour")
    prog = reg.build("toy", "broadcast", 3, root=2, flavour="fancy", counts=None)
    assert calls == [(3, 2, "fancy")]
    assert verify(prog.to_xml()).ok


@pytest.mark.parametrize("kwargs, message", [
    (dict(ranks=1), "--ranks must be an integer >= 2, got 1"),
    (dict(ranks=3, root=3), "--root 3 is out of range for 3 ranks"),
    (dict(ranks=3, flavour="odd"), "toy: --flavour must be one of plain, fancy; got 'odd'"),
    (dict(ranks=3, intra="ring"), "toy broadcast takes no --intra"),
    (dict(ranks=3, coll="allreduce"), "toy does not support allreduce; it supports broadcast"),
    (dict(ranks=3, name="nosuch"), "unknown algorithm 'nosuch'; known: toy"),
])
def test_parameters_are_checked_before_the_builder_runs(kwargs, message):
    calls: list = []
    reg = _toy(calls)
    name, coll, ranks = kwargs.pop("name", "toy"), kwargs.pop("coll", "broadcast"), kwargs.pop("ranks")
    with pytest.raises(AlgorithmError, match=message):
        reg.build(name, coll, ranks, **kwargs)
    assert calls == []
    if name == "toy" and coll == "broadcast" and "intra" not in kwargs:   # called directly too
        with pytest.raises(AlgorithmError, match=message):
            reg.get("toy").builders[Coll.BROADCAST](ranks, **kwargs)
        assert calls == []


def test_a_declared_module_that_is_not_there_is_left_out():
    """What an entry point of the group ``ccxml.algorithms`` would declare: a name and the module
    that registers it; one that cannot be imported is not listed and is an unknown algorithm."""
    reg = _toy([])
    reg.declare("ghost", "ccxml_no_such_module")
    assert reg.names() == ["ghost", "toy"] and list(reg.available()) == ["toy"]
    with pytest.raises(AlgorithmError, match="unknown algorithm 'ghost'; known: toy"):
        reg.get("ghost")


def test_the_built_ins_are_declared_in_list_order_and_check_their_parameters():
    from ccxml.algorithms import BUILT_IN, registry, ring
    assert registry.names()[:len(BUILT_IN)] == [name for name, _ in BUILT_IN]
    assert ring.COLLECTIVES is registry.get("ring").builders
    with pytest.raises(AlgorithmError, match="--root 8 is out of range"):
        ring.broadcast(8, root=8)
    with pytest.raises(AlgorithmError, match="2d-torus: --intra must be one of ring, mesh; got 'nhr'"):
        registry.build("2d-torus", "allreduce", 4, intra="nhr")


def test_options_from_text_take_the_type_of_their_default():
    """``--opt KEY=VALUE``: the value is read as the type of the builder's default."""
    reg = Registry()

    def allgather(p: int, *, width: int = 1, share: float = 0.5, fused: bool = False,
                  label: str | None = None, options: Options = Options()):
        raise AssertionError("not built here")

    reg.register("typed", Coll.ALLGATHER, allgather)
    alg = reg.get("typed")
    assert alg.defaults[Coll.ALLGATHER] == {"width": 1, "share": 0.5, "fused": False, "label": None}
    assert alg.parse_options("allgather", {"width": "3", "share": "0.25", "fused": "yes", "label": "x=1"}) == \
        {"width": 3, "share": 0.25, "fused": True, "label": "x=1"}
    assert alg.parse_options("allgather", {"fused": "Off"}) == {"fused": False}
    for texts, message in [({"width": "3.5"}, "--opt width=3.5: width takes an integer"),
                           ({"share": "half"}, "--opt share=half: share takes a number"),
                           ({"fused": "maybe"}, "--opt fused=maybe: fused is true or false"),
                           ({"depth": "2"}, "typed allgather takes no option 'depth'; its options: "
                                            "width, share, fused, label")]:
        with pytest.raises(AlgorithmError, match=message):
            alg.parse_options("allgather", texts)
    with pytest.raises(AlgorithmError, match="typed does not support allreduce"):
        alg.parse_options("allreduce", {"width": "2"})
