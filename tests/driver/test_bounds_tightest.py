"""The bound ccxml prints beside a figure is the tighter of the port/NIC cuts and the exact
max-flow bound under the runtime's route rule (issue 23 §1): never the looser one."""
import pytest

from ccxml.driver import EXACT_CUT, bound_at, exact_bound_of
from ccxml.simulator import busbw_bound
from ccxml.topology import load_preset

pytest.importorskip("networkx")
pytest.importorskip("scipy")

GIB = 1 << 30


@pytest.mark.parametrize("preset,nodes", [("dgx-h100", 1), ("dgx-h100", 2), ("dgx-h100", 4), ("mi300x", 2),
                                          ("pcie", 1)])
@pytest.mark.parametrize("coll", ["allgather", "reducescatter", "allreduce"])
def test_bound_at_is_the_tighter_of_the_two(preset, nodes, coll):
    topo = load_preset(preset, nodes)
    p = topo.nranks
    cuts = busbw_bound(topo, coll, p, GIB)
    exact = exact_bound_of(topo, coll)
    b = bound_at(topo, coll, p, GIB, 0, exact)
    assert b.time_s == pytest.approx(max(cuts.time_s, exact.time_s(GIB)))
    assert b.busbw <= cuts.busbw * (1 + 1e-12) and b.busbw <= exact.busbw * (1 + 1e-12)
    assert (b.cut == EXACT_CUT) == (exact.time_s(GIB) > cuts.time_s)


def test_off_node_data_binds_through_the_nic_on_dgx_h100():
    topo = load_preset("dgx-h100", 4)
    b = bound_at(topo, "allgather", 32, GIB, 0, exact_bound_of(topo, "allgather"))
    assert busbw_bound(topo, "allgather", 32, GIB).busbw / 1e9 == pytest.approx(513.0)
    assert b.busbw / 1e9 == pytest.approx(500.0) and b.cut == EXACT_CUT


def test_no_exact_bound_for_alltoall_nor_dedicated_links():
    assert exact_bound_of(load_preset("dgx-h100", 2), "alltoall") is None
    assert exact_bound_of(load_preset("flat", 1), "allgather") is None
    topo = load_preset("dgx-h100", 2)
    assert bound_at(topo, "alltoall", 16, GIB, 0, None) == busbw_bound(topo, "alltoall", 16, GIB)
