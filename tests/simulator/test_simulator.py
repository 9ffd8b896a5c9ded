"""The α-β-γ simulator on hand-built schedules: exact times, semantics, reports."""
from __future__ import annotations

import pytest
from conftest import CORPUS  # noqa: E402

from ccxml.loader.model import Schedule, ScheduleGPU, ScheduleStep, ScheduleTB
from ccxml.simulator import (
    DEFAULT_TOPOLOGY,
    SimulationError,
    busbw_factor,
    chunk_bytes,
    parse_size,
    simulate,
    size_range,
    sweep,
)
from ccxml.topology.model import Topology, TopologyError, load_preset
from ccxml.vocab.sizes import SizeError, format_size

US = 1e-6


# ---- building schedules by hand ---------------------------------------------------------------

def st(type_, cnt=1, depid=-1, deps=-1, hasdep=0, off=0):
    """A step; ``s`` is filled in by :func:`tb`."""
    return ScheduleStep(0, type_, "i", off, "o", off, cnt, depid, deps, hasdep)


def tb(id_, send, recv, chan, *steps):
    for i, s in enumerate(steps):
        s.s = i
    return ScheduleTB(id_, send, recv, chan, list(steps))


def sched(coll, nchunks, gpus, ngpus=None, **attrs):
    gs = [ScheduleGPU(r, nchunks, nchunks, 0, tbs) for r, tbs in enumerate(gpus)]
    a = {"name": "t", "coll": coll, "ngpus": str(ngpus or len(gpus)), "nchunksperloop": str(nchunks),
         "nchannels": "2", "proto": "Simple", "inplace": "0", "outofplace": "1",
         "minBytes": "0", "maxBytes": "0"}
    a.update(attrs)
    return Schedule(a, gs)


def ring_allreduce(p: int) -> Schedule:
    """One TB per rank, send to r+1, receive from r-1: s, rrs×(p-2), rrcs, rcs×(p-2), r."""
    gpus = []
    for r in range(p):
        steps = [st("s", off=r)]
        steps += [st("rrs", off=(r - k) % p) for k in range(1, p - 1)]
        steps += [st("rrcs", off=(r + 1) % p)]
        steps += [st("rcs", off=(r - k) % p) for k in range(p - 2)]
        steps += [st("r", off=(r + 2) % p)]
        gpus.append([tb(0, (r + 1) % p, (r - 1) % p, 0, *steps)])
    return sched("allreduce", p, gpus)


# ---- the three-rank example, by hand ----------------------------------------------------------

def three_rank_example() -> tuple[Schedule, Topology]:
    """Groups {0} and {1, 2}; n = 3000 B over 3 chunks, so one chunk is 1000 B.

    intra: α = 1 µs, β = 1 ns/B, γ = 0.2 ns/B;  inter: α = 5 µs, β = 4 ns/B, γ = 0.5 ns/B.
    """
    topo = Topology.from_groups([1, 2], intra={"alpha": 1e-6, "beta": 1e-9, "gamma": 2e-10},
                                inter={"alpha": 5e-6, "beta": 4e-9, "gamma": 5e-10})
    g0 = [tb(0, 1, -1, 0, st("s", 1), st("s", 2))]
    g1 = [tb(0, 2, 0, 0, st("rrs", 1, hasdep=1), st("rcs", 2)),
          tb(1, 2, -1, 1, st("s", 10))]
    g2 = [tb(0, -1, 1, 0, st("r", 1, hasdep=1), st("rrc", 2)),
          tb(1, -1, 1, 1, st("r", 10, hasdep=1)),
          tb(2, -1, -1, 0, st("nop", 0, depid=1, deps=0), st("re", 1, depid=0, deps=0),
             st("cpy", 3))]
    return sched("allreduce", 3, [g0, g1, g2]), topo


def test_three_rank_example_to_the_nanosecond():
    s, topo = three_rank_example()
    r = simulate(s, 3000, topo)
    # rank 0 → 1 is inter: s(1 chunk) [0, 5+4=9] µs; s(2 chunks) [9, 9+5+8=22] µs.
    # rank 1 tb 1 → 2 (chan 1, intra): s(10 chunks) [0, 1+10=11] µs, occupying link 1→2.
    # rank 1 tb 0 rrs: data at 9, reduce 1000 B at inter γ: +0.5 → 9.5; the link 1→2 is busy until
    #   11, so the forward runs [11, 13]. rcs: data at 22, forward 2000 B [22, 25].
    # rank 2: tb 1 r at 11; tb 0 r at 13, rrc data at 25 + 2000·0.2 ns = 25.4;
    #   tb 2 waits for tb 1 (11, via the nop) and tb 0 step 0 (13): re [13, 13.2], cpy free.
    assert r.time_s == pytest.approx(25.4 * US, abs=1e-12)
    assert r.chunk_bytes == 1000
    assert r.transfers == 5 and r.steps == 10
    path = [(p.gpu, p.tb, p.step, p.type, p.released_by) for p in r.critical_path]
    assert path == [(0, 0, 0, "s", "start"), (0, 0, 1, "s", "program"),
                    (1, 0, 1, "rcs", "data"), (2, 0, 1, "rrc", "data")]
    assert r.critical_path[-1].end == pytest.approx(25.4 * US, abs=1e-12)
    links = {(ln.src, ln.dst): ln for ln in r.links}
    assert set(links) == {(0, 1), (1, 2)}
    assert links[(0, 1)].level == "inter" and links[(1, 2)].level == "intra"
    assert links[(0, 1)].busy_s == pytest.approx(22 * US, abs=1e-12)
    assert links[(0, 1)].transfers == 2 and links[(0, 1)].bytes == 3000
    assert links[(1, 2)].busy_s == pytest.approx(16 * US, abs=1e-12)
    assert links[(1, 2)].transfers == 3 and links[(1, 2)].bytes == 13000
    ranks = {x.rank: x for x in r.ranks}
    assert ranks[0].finish_s == pytest.approx(22 * US, abs=1e-12)
    assert ranks[1].finish_s == pytest.approx(25 * US, abs=1e-12)
    assert ranks[1].reduce_s == pytest.approx(0.5 * US, abs=1e-12)
    assert ranks[2].reduce_s == pytest.approx(0.6 * US, abs=1e-12)
    assert ranks[0].busy_s == pytest.approx(22 * US, abs=1e-12)
    assert ranks[1].busy_s == pytest.approx(25 * US, abs=1e-12)
    # rank 2: receiving [0, 13], reducing [13, 13.2], then [22, 25] and [25, 25.4]
    assert ranks[2].busy_s == pytest.approx(16.6 * US, abs=1e-12)
    assert r.algbw == pytest.approx(3000 / (25.4 * US))
    assert r.busbw == pytest.approx(r.algbw * 4 / 3)


def test_result_dict_is_json_ready():
    import json
    s, topo = three_rank_example()
    d = simulate(s, 3000, topo).to_dict()
    again = json.loads(json.dumps(d))
    assert again["time_s"] == pytest.approx(25.4 * US, abs=1e-12)
    assert again["busbw_GBps"] == pytest.approx(3000 / (25.4 * US) * 4 / 3 / 1e9)
    assert [c["released_by"] for c in again["critical_path"]] == ["start", "program", "data", "data"]
    assert {(x["src"], x["dst"]) for x in again["link_busy"]} == {(0, 1), (1, 2)}
    assert [x["rank"] for x in again["ranks"]] == [0, 1, 2]


# ---- semantics --------------------------------------------------------------------------------

def flat(alpha=1e-6, beta=1e-9, gamma=0.0):
    return Topology.flat(alpha=alpha, beta=beta, gamma=gamma)


def test_ring_allreduce_matches_the_ring_formula_and_its_critical_path_is_its_steps():
    a, b, g = 2e-6, 1e-10, 3e-11
    for p in (2, 3, 4, 7, 8):
        n = 1000 * p
        r = simulate(ring_allreduce(p), n, flat(a, b, g))
        formula = 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g
        assert r.time_s == pytest.approx(formula, rel=1e-12)
        path = r.critical_path
        # one step of each index 0..2p-2, each on the next rank round the ring, each released by
        # the data of the step before it
        assert [x.step for x in path] == list(range(2 * p - 1))
        assert [x.type for x in path] == [t.type for t in ring_allreduce(p).gpus[0].tbs[0].steps]
        assert all((y.gpu - x.gpu) % p == 1 for x, y in zip(path, path[1:]))
        assert [x.released_by for x in path[1:]] == ["data"] * (2 * p - 2)
        assert path[-1].end == r.time_s


def test_sender_does_not_wait_for_the_receiver():
    # rank 1 is busy for 50 µs before its receive; rank 0's send still completes at α + bβ
    s = sched("allreduce", 1, [[tb(0, 1, -1, 0, st("s"), st("cpy"))],
                               [tb(0, 2, -1, 0, st("s", 50)), tb(1, -1, 0, 0, st("r", depid=0, deps=0))],
                               [tb(0, -1, 1, 0, st("r", 50))]])
    s.gpus[1].tbs[0].steps[0].hasdep = 1
    r = simulate(s, 1000, flat(1e-6, 1e-9))
    fin = {x.rank: x.finish_s for x in r.ranks}
    assert fin[0] == pytest.approx(2e-6, abs=1e-12)
    assert fin[1] == pytest.approx(51e-6, abs=1e-12)     # the r waits for its dependency only
    assert r.time_s == pytest.approx(51e-6, abs=1e-12)


def test_channels_between_the_same_ranks_share_one_link():
    one = sched("allgather", 2, [[tb(0, 1, -1, 0, st("s"))], [tb(0, -1, 0, 0, st("r"))]])
    two = sched("allgather", 2, [[tb(0, 1, -1, 0, st("s")), tb(1, 1, -1, 1, st("s"))],
                                 [tb(0, -1, 0, 0, st("r")), tb(1, -1, 0, 1, st("r"))]])
    t1 = simulate(one, 2000, flat()).time_s
    t2 = simulate(two, 2000, flat()).time_s
    assert t1 == pytest.approx(1e-6 + 1000e-9, abs=1e-12)
    assert t2 == pytest.approx(2 * t1, abs=1e-12)
    # ... while links to different peers run in parallel
    fan = sched("allgather", 3, [[tb(0, 1, -1, 0, st("s")), tb(1, 2, -1, 0, st("s"))],
                                 [tb(0, -1, 0, 0, st("r"))], [tb(0, -1, 0, 0, st("r"))]])
    assert simulate(fan, 3000, flat()).time_s == pytest.approx(t1, abs=1e-12)


def test_full_duplex_exchange_costs_one_transfer():
    s = sched("allgather", 2, [[tb(0, 1, 1, 0, st("s"), st("r"))], [tb(0, 0, 0, 0, st("s"), st("r"))]])
    assert simulate(s, 2000, flat()).time_s == pytest.approx(2e-6, abs=1e-12)


def test_dependency_is_released_by_a_later_hasdep_step_and_nops_carry_dependencies():
    # tb 0 publishes only at step 2 (hasdep=1), so a wait for step 0 ends at step 2's end
    steps0 = [st("s", 1), st("s", 1), st("s", 1, hasdep=1)]
    g0 = [tb(0, 1, -1, 0, *steps0),
          tb(1, -1, -1, 0, st("cpy", depid=0, deps=0))]
    g1 = [tb(0, -1, 0, 0, st("r"), st("r"), st("r"))]
    r = simulate(sched("allreduce", 1, [g0, g1]), 1000, flat(1e-6, 1e-9))
    assert r.critical_path[-1].released_by == "dependency"
    assert r.time_s == pytest.approx(6e-6, abs=1e-12)
    # two dependencies, one through a nop, one on the step itself: the later one wins
    g0 = [tb(0, 1, -1, 0, st("s", 1, hasdep=1)),
          tb(1, 2, -1, 0, st("s", 5, hasdep=1)),
          tb(2, -1, -1, 0, st("nop", 0, depid=1, deps=0), st("re", 1, depid=0, deps=0))]
    g1 = [tb(0, -1, 0, 0, st("r"))]
    g2 = [tb(0, -1, 0, 0, st("r", 5))]
    r = simulate(sched("allreduce", 1, [g0, g1, g2]), 1000, flat(1e-6, 1e-9, 1e-9))
    # tb 1 ends at 1 + 5 = 6 µs, then the re reduces 1000 B at 1 ns/B: 7 µs
    assert r.time_s == pytest.approx(7e-6, abs=1e-12)
    assert [(x.tb, x.released_by) for x in r.critical_path] == [(1, "start"), (2, "dependency")]


def test_timeline_names_what_released_each_step_and_whose_data_it_took():
    # tb 0 publishes only at step 2, so the cpy waiting for step 0 is released by step 2; the nop
    # carries its dependency on tb 1 to the re after it (tb 1's step 1: its step 0 is a nop)
    g0 = [tb(0, 1, -1, 0, st("s", 1), st("s", 1), st("s", 1, hasdep=1)),
          tb(1, 1, -1, 1, st("nop", 0), st("s", 1, hasdep=1)),
          tb(2, -1, -1, 0, st("cpy", depid=0, deps=0)),
          tb(3, -1, -1, 0, st("nop", 0, depid=1, deps=0), st("re", 1, depid=0, deps=2))]
    g1 = [tb(0, -1, 0, 0, st("r"), st("r"), st("r")), tb(1, -1, 0, 1, st("r"))]
    r = simulate(sched("allreduce", 1, [g0, g1]), 1000, flat(1e-6, 1e-9), record=True)
    spans = {(x.gpu, x.tb, x.step): x for x in r.timeline.spans}
    assert spans[(0, 2, 0)].deps == ((0, 0, 2),)
    assert spans[(0, 3, 1)].deps == ((0, 1, 1), (0, 0, 2))
    # the k-th receive of a connection took the k-th send's data; sends and local steps took none
    assert [spans[(1, 0, k)].sender for k in range(3)] == [(0, 0, 0), (0, 0, 1), (0, 0, 2)]
    assert spans[(1, 1, 0)].sender == (0, 1, 1)
    assert spans[(0, 0, 0)].sender is None and spans[(0, 0, 0)].deps == ()
    assert spans[(0, 3, 1)].to_dict()["deps"] == [[0, 1, 1], [0, 0, 2]]


def test_deadlock_is_reported_with_the_waiting_step():
    # the classic: both ranks receive first, then send (msccl-runtime.md §9.4)
    s = sched("allgather", 2, [[tb(0, 1, 1, 0, st("r"), st("s"))], [tb(0, 0, 0, 0, st("r"), st("s"))]])
    with pytest.raises(SimulationError, match=r"deadlock: gpu 0 tb 0 step 0 \(r\) waits for data from gpu 1 on chan 0 that never arrives"):
        simulate(s, 1000, flat())
    # a dependency on a step that never publishes (hasdep=0) hangs too
    s = sched("allreduce", 1, [[tb(0, -1, -1, 0, st("cpy")), tb(1, -1, -1, 0, st("cpy", depid=0, deps=0))]])
    with pytest.raises(SimulationError, match=r"tb 1 step 0 \(cpy\) waits for tb 0 to reach step 0"):
        simulate(s, 1000, flat())


def test_malformed_schedules_raise_simulation_errors():
    bad_type = sched("allreduce", 1, [[tb(0, -1, -1, 0, st("xx"))]])
    with pytest.raises(SimulationError, match="unknown step type 'xx'"):
        simulate(bad_type, 8, flat())
    no_peer = sched("allreduce", 1, [[tb(0, -1, -1, 0, st("s"))]])
    with pytest.raises(SimulationError, match="sends but the TB has send=-1"):
        simulate(no_peer, 8, flat())
    self_peer = sched("allreduce", 1, [[tb(0, 0, -1, 0, st("s"))]])
    with pytest.raises(SimulationError, match="send peer 0 is not another rank"):
        simulate(self_peer, 8, flat())
    bad_dep = sched("allreduce", 1, [[tb(0, -1, -1, 0, st("cpy", depid=4, deps=0))]])
    with pytest.raises(SimulationError, match="depid 4 is not a TB"):
        simulate(bad_dep, 8, flat())
    zero = sched("allreduce", 0, [[tb(0, -1, -1, 0, st("cpy"))]])
    with pytest.raises(SimulationError, match="nchunksperloop must be > 0"):
        simulate(zero, 8, flat())


def test_unreceived_sends_are_a_warning():
    s = sched("allgather", 2, [[tb(0, 1, -1, 0, st("s"), st("s"))], [tb(0, -1, 0, 0, st("r"))]])
    r = simulate(s, 2000, flat())
    assert r.warnings == ["1 transfer(s) are never received"]


def test_chunk_bytes_follow_nccl_tests_sizes():
    # allgather n = output bytes = the runtime's count×ngpus; gather/scatter n = the root's whole buffer
    assert chunk_bytes("allgather", 8192, 8, 4) == 1024
    assert chunk_bytes("allreduce", 8192, 8, 4) == 1024
    assert chunk_bytes("reducescatter", 8192, 8, 4) == 1024
    assert chunk_bytes("alltoall", 8192, 8, 4) == 1024
    assert chunk_bytes("gather", 8192, 2, 4) == 1024
    assert chunk_bytes("scatter", 8192, 2, 4) == 1024


def test_busbw_factors_are_nccl_tests():
    assert busbw_factor("allreduce", 8) == 2 * 7 / 8
    for c in ("allgather", "reducescatter", "alltoall", "gather", "scatter"):
        assert busbw_factor(c, 8) == 7 / 8
    assert busbw_factor("broadcast", 8) == 1 and busbw_factor("reduce", 8) == 1
    assert busbw_factor("custom", 8) == 1


def test_reductions_use_the_gamma_of_the_receive_links_level():
    topo = Topology.from_groups([1, 1], intra={"gamma": 1e-9}, inter={"gamma": 3e-9})
    s = sched("allreduce", 1, [[tb(0, 1, -1, 0, st("s"))], [tb(0, -1, 0, 0, st("rrc")),
                                                            tb(1, -1, -1, 0, st("re"))]])
    r = simulate(s, 1000, topo)
    red = {x.rank: x.reduce_s for x in r.ranks}
    assert red[1] == pytest.approx(3e-6 + 1e-6, abs=1e-15)


def test_local_copies_cost_memory_bandwidth_on_a_preset_and_nothing_on_dedicated_links():
    """A cpy of b bytes reads and writes them: 2·b / the preset GPU's memory bandwidth (dgx-h100:
    3.35 TB/s); the dedicated-link model (HCCL's formulas) keeps copies free."""
    s = sched("allreduce", 4, [[tb(0, -1, -1, 0, st("cpy", 4 if r == 0 else 2))] for r in range(8)])
    n = 1 << 30
    on_preset = simulate(s, n, load_preset("dgx-h100"))
    assert on_preset.time_s == pytest.approx(2 * n / 3.35e12, rel=1e-12)
    assert simulate(s, n, Topology.flat(alpha=1e-6, beta=1e-9, gamma=1e-12)).time_s == 0.0


def test_topology_must_fit_the_schedule_and_recorded_topology_is_the_default():
    s = ring_allreduce(4)
    with pytest.raises(TopologyError, match="add up to 5 ranks, but the schedule has 4"):
        simulate(s, 4000, Topology.from_groups([2, 3]))
    recorded = Topology.uniform(2, 2, intra={"alpha": 1e-6, "beta": 1e-9},
                                inter={"alpha": 1e-5, "beta": 1e-8})
    s.attrs.update(recorded.to_attrs())
    assert simulate(s, 4000).time_s == simulate(s, 4000, recorded).time_s
    assert simulate(s, 4000).time_s > simulate(s, 4000, flat(1e-6, 1e-9)).time_s
    # flat alpha/beta/gamma override the recorded one; missing ones come from the default
    t = simulate(s, 4000, alpha=1e-6, beta=1e-9, gamma=0).time_s
    assert t == simulate(s, 4000, flat(1e-6, 1e-9, 0)).time_s
    t2 = simulate(s, 4000, alpha=3e-6).time_s
    d = DEFAULT_TOPOLOGY.intra
    assert t2 == simulate(s, 4000, flat(3e-6, d.beta, d.gamma)).time_s
    with pytest.raises(TopologyError):
        simulate(s, 4000, recorded, alpha=1e-6)


def test_busbw_of_a_ring_sweep_grows_toward_the_link_bandwidth():
    p, beta = 8, 1 / 50e9          # 50 GB/s links
    rows = sweep(ring_allreduce(p), size_range(1024, 1 << 30, 4), flat(5e-6, beta, 0.0))
    bus = [r.busbw for r in rows]
    assert all(x < y for x, y in zip(bus, bus[1:]))
    assert bus[-1] <= 50e9 and bus[-1] > 0.99 * 50e9
    assert bus[0] < 0.05 * 50e9


def test_simulation_is_deterministic():
    s, topo = three_rank_example()
    a = simulate(s, 3000, topo).to_dict()
    b = simulate(s, 3000, topo).to_dict()
    assert a == b


# ---- sizes ------------------------------------------------------------------------------------

def test_sizes():
    assert parse_size("1K") == 1024 and parse_size("8M") == 8 << 20 and parse_size("1G") == 1 << 30
    assert parse_size("4096") == 4096 and parse_size("2k") == 2048 and parse_size("8MB") == 8 << 20
    assert parse_size("1.5K") == 1536 and parse_size(12) == 12
    for bad in ("", "abc", "-1K", "1.3", "1Q"):
        with pytest.raises(SizeError):
            parse_size(bad)
    assert size_range(1024, 8192, 2) == [1024, 2048, 4096, 8192]
    assert size_range(1024, 5000, 2) == [1024, 2048, 4096]
    for args in ((0, 8, 2), (16, 8, 2), (8, 16, 1)):
        with pytest.raises(SizeError):
            size_range(*args)
    assert format_size(8 << 20) == "8M" and format_size(1536) == "1536"


# ---- corpus -----------------------------------------------------------------------------------

CORPUS_SAMPLES = ["Azure__msccl-scheduler/ag-8m.xml", "Azure__msccl-executor-nccl/r48ll.xml",
                  "Azure__msccl-scheduler/a2a2ll.xml", "Azure__msccl-executor-nccl/ap2ll.xml"]


@pytest.mark.parametrize("name", CORPUS_SAMPLES)
def test_simulate_corpus_file(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip("corpus not available")
    xmlload = pytest.importorskip("ccxml.loader.reader")
    s = xmlload.load(str(path))
    r = simulate(s, 8 << 20, flat(1e-6, 1e-11, 1e-12))
    assert 0 < r.time_s < float("inf")
    assert r.transfers > 0 and r.critical_path and r.critical_path[-1].end == r.time_s


def test_corpus_deadlock_is_reported():
    path = CORPUS / "spriestgcl__teccl-msccl" / "64MB_msccl_strict.xml"
    if not path.exists():
        pytest.skip("corpus not available")
    pytest.importorskip("ccxml.loader.reader")
    with pytest.raises(SimulationError, match=r"^deadlock: gpu 0 tb 0 step 0 \(r\) waits for data "
                                              r"from gpu 1 on chan 0 that never arrives"):
        simulate(str(path), 64 << 20, flat())
