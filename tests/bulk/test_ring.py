"""Ring AllReduce, AllGather and ReduceScatter lowered in bulk (ccxml/bulk/ring.py) against their
exact twin, the object path (Chunk API → IR → passes → writer): the same bytes, or the bulk
lowering declines."""
from __future__ import annotations

import pytest
from in_process import ccxml

from ccxml.bulk import lower
from ccxml.bulk.ring import ring_allreduce_lane, split
from ccxml.driver import build, export, generate_spec
from ccxml.driver import compile as compile_program
from ccxml.passes.registry import pipeline
from ccxml.vocab.errors import LimitError
from ccxml.vocab.wire import profile


def object_path(p: int, target: str, coll: str = "allreduce", **options) -> str:
    """The file the object path writes (what ``ccxml generate`` wrote before the bulk lowering)."""
    prog = build(generate_spec("ring", coll, p, **options))
    return export(compile_program(prog, target, consume=True), target)


def bulk_path(p: int, target: str, coll: str = "allreduce", **options) -> str | None:
    sched = lower("ring", coll, p, profile=profile(target), **options)
    return None if sched is None else "".join(sched.xml_parts(target))


def same(p: int, target: str, coll: str = "allreduce", **options) -> None:
    want, got = object_path(p, target, coll, **options), bulk_path(p, target, coll, **options)
    assert got is not None, "the bulk lowering declined"
    if got != want:                     # name the first line that differs
        for i, (a, b) in enumerate(zip(want.splitlines(), got.splitlines())):
            assert b == a, f"line {i}"
    assert got == want


# p = 2 (one rrcs, the last receive names the input), p − 1 splits that land on a fused step of
# each phase (exec: 64 steps per TB; 2p − 1 = 65, 127, 129, 199 ...), one piece, several
@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 32, 33, 34, 40, 64, 65, 66, 100])
@pytest.mark.parametrize("target", ["exec", "legacy"])
def test_the_bulk_lowering_writes_the_object_paths_bytes(p, target):
    same(p, target)


@pytest.mark.parametrize("p,channels", [(3, 2), (8, 3), (33, 2), (65, 3), (100, 2)])
@pytest.mark.parametrize("target", ["exec", "legacy"])
def test_channels_interleave_their_pieces_as_the_passes_do(p, channels, target):
    same(p, target, channels=channels)


@pytest.mark.parametrize("options", [{"proto": "LL"}, {"proto": "LL128", "max_bytes": 1 << 20},
                                     {"min_bytes": 4096, "max_bytes": 1 << 30}, {"min_bytes": 1 << 20}])
def test_protocol_and_size_window_reach_the_header_as_they_do_on_the_object_path(options):
    same(40, "exec", **options)
    same(9, "legacy", **options)


@pytest.mark.parametrize("p,target,channels", [(3, "exec", 1), (40, "exec", 2), (130, "legacy", 1)])
def test_in_place_the_output_is_the_input_as_on_the_object_path(p, target, channels):
    same(p, target, inplace=True, channels=channels)


def test_settled_splits_are_the_passes_own_walk():
    """Splitting the lane takes the pass's fixed point: pieces within the limit, the send half of
    a cut step opening the next piece, and the same shape on every rank (the written twin)."""
    limit = profile("legacy").max_steps_per_tb
    pieces, top = split(ring_allreduce_lane(1024), limit)
    assert top == len(pieces) - 1 == 8
    assert [len(lane) for lane, _, _ in pieces] == [256] + [255] * 7 + [14]
    assert all(lane.types[0].value == "s" for lane, _, _ in pieces[1:])
    assert sum(len(lane) for lane, _, _ in pieces) == 2 * 1024 - 1 + len(pieces) - 1


@pytest.mark.parametrize("target,options", [
    ("rccl", {}),                        # no fused steps: the lowering pass runs instead
    ("exec", {"merge_rcs": False}),       # --no-fuse
])
def test_the_bulk_lowering_declines_what_it_does_not_stand_for(target, options):
    assert lower("ring", "allreduce", 256, profile=profile(target), **options) is None


# AllGather: a send from the input, instance 0's local copy of K chunks; ReduceScatter: running
# sums in scratch (s_chunks differs from rank to rank), the last receive into output chunk c.
# 2p − 1 > 64 from p = 33 (exec), 2p − 1 > 256 from p = 129 (legacy; slow below)
@pytest.mark.parametrize("p,channels", [(2, 1), (3, 2), (5, 1), (33, 1), (34, 2), (65, 1), (100, 2)])
@pytest.mark.parametrize("coll", ["allgather", "reducescatter"])
@pytest.mark.parametrize("target", ["exec", "legacy"])
def test_allgather_and_reducescatter_write_the_object_paths_bytes(p, channels, coll, target):
    same(p, target, coll, channels=channels)


def test_other_algorithms_and_collectives_take_the_object_path():
    for algorithm, coll in [("ring", "broadcast"), ("ring", "alltoall"), ("mesh", "allreduce"),
                            ("bidir-ring", "allreduce")]:
        assert lower(algorithm, coll, 8, profile=profile("exec")) is None
    for coll in ("allgather", "reducescatter"):     # in place: the object path
        assert lower("ring", coll, 8, profile=profile("exec"), inplace=True) is None


def test_the_pipeline_it_stands_for_is_the_targets():
    from ccxml.bulk.ring import PIPELINE
    assert str(pipeline(profile("exec"))) == str(pipeline(profile("legacy"))) == PIPELINE


def test_generate_takes_the_bulk_path_and_writes_the_same_file(tmp_path):
    bulk, objects = tmp_path / "bulk.xml", tmp_path / "objects.xml"
    code, out, err = ccxml("generate", "ring", "--ranks", "40", "--time-passes", "--verify", "-o", bulk)
    assert code == 0, err
    assert "build + passes (bulk)" in err and "threadblocks" not in err and f"PASS {bulk}" in out
    # --passes (the same pipeline, spelled out) runs the object path
    code, out2, err = ccxml("generate", "ring", "--ranks", "40", "--time-passes", "-o", objects,
                            "--passes", str(pipeline(profile("exec"))))
    assert code == 0, err
    assert "threadblocks" in err and "bulk" not in err
    assert bulk.read_bytes() == objects.read_bytes()
    assert out.splitlines()[0].replace(str(bulk), "F") == out2.splitlines()[0].replace(str(objects), "F")


def test_generate_to_stdout_and_a_limit_the_object_path_names(tmp_path):
    code, out, err = ccxml("generate", "ring", "--ranks", "6", "-o", "-", "--verify")
    assert code == 0, err
    assert out == object_path(6, "exec")
    # 199 steps a TB: 4 pieces of each of 9 instances need channel 35 > 31; the bulk lowering
    # says so in the splitting pass's words, without building the steps
    with pytest.raises(LimitError) as objects:
        object_path(100, "exec", channels=9)
    with pytest.raises(LimitError) as bulk:
        lower("ring", "allreduce", 100, profile=profile("exec"), channels=9)
    assert str(bulk.value) == str(objects.value)
    assert "limit is 64 per TB, and splitting it needs channel 35 > 31" in str(bulk.value)
    code, out, err = ccxml("generate", "ring", "--ranks", "100", "--channels", "9", "-o", tmp_path / "x.xml")
    assert code == 2 and err == f"ccxml: {objects.value}\n"


def test_too_many_channels_without_a_split_is_the_object_paths_error():
    assert lower("ring", "allreduce", 4, profile=profile("exec"), channels=40) is None
    with pytest.raises(LimitError, match="exceeds the exec limit of 31"):
        object_path(4, "exec", channels=40)


@pytest.mark.parametrize("p,target,channels", [(65, "exec", 11), (33, "exec", 17), (4096, "legacy", 1)])
def test_a_channel_the_target_lacks_is_refused_as_the_splitting_pass_does(p, target, channels):
    if p <= 200:
        with pytest.raises(LimitError) as objects:
            object_path(p, target, channels=channels)
        want = str(objects.value)
    else:                               # (the object path takes minutes to say it)
        want = ("a thread block on gpu 0 has 8191 steps; the legacy limit is 256 per TB, and splitting "
                "it needs channel 32 > 31: use --target legacy (256 steps per TB) or fewer --channels")
    with pytest.raises(LimitError) as bulk:
        lower("ring", "allreduce", p, profile=profile(target), channels=channels)
    assert str(bulk.value) == want


@pytest.mark.slow
@pytest.mark.parametrize("p,target,coll", [(256, "exec", "allreduce"), (300, "legacy", "allreduce"),
                                           (1024, "legacy", "allreduce"), (300, "legacy", "allgather"),
                                           (300, "legacy", "reducescatter")])
def test_large_rings_are_the_same_bytes(p, target, coll):
    same(p, target, coll)
