"""The timeline view: rows, steps, dependencies, peers and link slices from a recorded simulation."""
from __future__ import annotations

import pytest
from show_pages import RCS, RCS_DEP, RCS_PEERS, small_xml

from ccxml.driver import algorithm_schedule
from ccxml.loader.reader import loads
from ccxml.show.view import LINK_BINS, bin_utilization, build_view, category, time_tick
from ccxml.simulator import simulate
from ccxml.topology.model import Topology, load_preset


def small_view():
    sched = loads(small_xml())
    res = simulate(sched, 3000, Topology.flat(1e-6, 1e-9, 0.0), record=True)
    return sched, res, build_view(sched, res, label="small.xml", topology="flat")


def ref(view, k):
    st = view.steps[k]
    row = view.rows[st.row]
    return row.gpu, row.tb, st.index


def test_one_row_per_thread_block_in_rank_order_with_its_real_steps():
    sched, res, view = small_view()
    tbs = sorted((g.id, tb.id) for g in sched.gpus for tb in g.tbs)
    assert [(r.gpu, r.tb) for r in view.rows] == tbs          # the nop-only TB keeps its row
    assert [(r.first, r.end) for r in view.rows] == [(0, 2), (2, 4), (4, 5), (5, 5), (5, 6)]
    # every simulated step once, in its row, at its simulated time
    spans = {(s.gpu, s.tb, s.step): s for s in res.timeline.spans}
    assert sorted(ref(view, k) for k in range(len(view.steps))) == sorted(spans)
    for k, st in enumerate(view.steps):
        sp = spans[ref(view, k)]
        assert st.type == sp.type
        assert st.start * view.tick == pytest.approx(sp.start, abs=view.tick)
        assert st.end * view.tick == pytest.approx(sp.end, abs=view.tick)
    assert view.makespan * view.tick == pytest.approx(res.time_s, rel=1e-8)
    # the file's own columns ride along for the details
    rcs = view.steps[[ref(view, k) for k in range(len(view.steps))].index(RCS)]
    x = rcs.xml
    assert (x.type, x.srcbuf, x.srcoff, x.dstbuf, x.dstoff, x.cnt, x.depid, x.deps, x.hasdep) == \
        ("rcs", "i", 1, "o", 1, 1, 1, 0, 0)
    assert view.steps[1].xml.dstbuf == "<b>&amp;"             # raw, as the runtime reads it


def test_dependencies_and_peers_point_at_the_steps_that_released_and_fed_them():
    _, res, view = small_view()
    ids = {ref(view, k): k for k in range(len(view.steps))}
    rcs = ids[RCS]
    assert [(ref(view, a), ref(view, b)) for a, b in view.deps] == [((1, 0, 1), RCS_DEP), ((1, 1, 1), (1, 0, 0))]
    sender, receiver = RCS_PEERS
    assert view.sender[rcs] == ids[sender] and view.receiver[rcs] == ids[receiver]
    # receiver is sender's inverse, and only receiving steps have a sender
    assert all(view.sender[view.receiver[k]] == k for k in range(len(view.steps)) if view.receiver[k] >= 0)
    assert {view.steps[k].type for k in range(len(view.steps)) if view.sender[k] >= 0} == {"r", "rcs"}
    assert [ref(view, k) for k in view.critical] == [(s.gpu, s.tb, s.step) for s in res.critical_path]


def test_a_view_needs_a_recorded_simulation():
    sched = loads(small_xml())
    with pytest.raises(ValueError, match="record=True"):
        build_view(sched, simulate(sched, 3000), label="x")


def test_step_kinds_follow_the_legend():
    assert [category(t) for t in ("s", "r", "rcs", "rrc", "rrs", "rrcs", "cpy", "re")] == [0, 1, 2, 2, 2, 2, 3, 4]


@pytest.mark.parametrize("makespan, tick", [(4.4656e-3, 1e-11), (1.0, 1e-8), (3e-6, 1e-14), (0.0, 1e-12)])
def test_time_tick_makes_the_run_1e8_to_1e9_ticks(makespan, tick):
    assert time_tick(makespan) == pytest.approx(tick, rel=1e-9)
    if makespan:
        assert 1e8 <= makespan / time_tick(makespan) < 1e9


def test_link_slices_average_utilisation_exactly():
    # 100% over [0, 1), 50% over [2.5, 3.5), idle after: 4 slices of 1
    pts = [(0.0, 1.0), (1.0, 0.0), (2.5, 0.5), (3.5, 0.0)]
    assert bin_utilization(pts, 4.0, 4) == [1.0, 0.0, 0.25, 0.25]
    # a slice boundary inside a busy stretch, and a stretch past the makespan is cut
    assert bin_utilization([(0.5, 1.0), (5.0, 0.0)], 2.0, 2) == [0.5, 1.0]
    assert bin_utilization([], 1.0, 3) == [0.0, 0.0, 0.0]


def test_links_are_sliced_busiest_first_and_slices_average_to_the_time_in_use():
    sched = algorithm_schedule("ring", "allgather", 16, max_bytes=1 << 20)
    for topo in (load_preset("dgx-h100", 2), Topology.flat(1e-6, 1e-11, 0.0)):
        res = simulate(sched, 1 << 20, topo, record=True)
        view = build_view(sched, res, label="ring allgather", topology=topo.describe())
        assert {ln.name for ln in view.links} == {ln.name for ln in res.net_links}
        assert all(len(ln.bins) == LINK_BINS and all(0 <= b <= 100 for b in ln.bins) for ln in view.links)
        loads_ = [ln.load for ln in view.links]
        assert loads_ == sorted(loads_, reverse=True)
        stats = {ln.name: ln for ln in res.net_links}
        for ln in view.links:
            assert ln.utilization == stats[ln.name].utilization(res.time_s)
            assert ln.transfers == stats[ln.name].transfers
            assert sum(ln.bins) / LINK_BINS / 100 == pytest.approx(ln.load, abs=0.005)
    # a dedicated link is in use, wholly, while a transfer occupies it: its load is its busy time
    for ln in view.links:
        assert ln.load == pytest.approx(stats[ln.name].busy_s / res.time_s, rel=1e-9)
