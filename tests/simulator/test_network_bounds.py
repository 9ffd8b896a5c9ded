"""Must hold on the network model: no generated schedule beats the physical cut bounds of a preset;
the bounds are tight where they should be; select on dgx-h100 x 4 does not put flat Mesh first."""
from __future__ import annotations

import functools
import json

import pytest
from in_process import ccxml

from ccxml.driver import algorithm_schedule
from ccxml.simulator import busbw_bound, simulate_schedule
from ccxml.topology import Topology, load_preset
from ccxml.topology.bounds import cut_bytes, lower_bound


def cases():
    """(algorithm, collective) for every algorithm and every collective it builds (alltoallv needs
    a counts matrix: its uniform case is alltoall)."""
    from ccxml.algorithms import registry
    return [(name, c.value) for name, alg in registry.available().items() for c in alg.builders
            if c.value != "alltoallv"]


@functools.lru_cache(maxsize=None)
def topo(preset: str, nodes: int) -> Topology:
    return load_preset(preset, nodes)


def check_bound(alg: str, coll: str, preset: str, nodes: int, n: int) -> bool:
    """Assert the simulated time is not below the bound; False when ``alg`` cannot build this."""
    t = topo(preset, nodes)
    p = t.nranks or 8
    try:
        sched = algorithm_schedule(alg, coll, p, topology=t, max_bytes=n)
    except ValueError:
        return False
    r = simulate_schedule(sched, n, t)
    b = lower_bound(t, coll, p, n)
    assert b.time_s > 0
    assert r.time_s >= b.time_s * (1 - 1e-9), (f"{alg} {coll} on {preset} x {nodes}: {r.time_s:.6e} s "
                                                f"beats the bound {b.time_s:.6e} s ({b.cut})")
    return True


def check_or_skip(alg: str, coll: str, shapes) -> None:
    built = [check_bound(alg, coll, *shape) for shape in shapes]
    if not any(built):
        pytest.skip(f"{alg} cannot build {coll} on any of {shapes}")


@pytest.mark.parametrize("alg, coll", cases())
def test_no_schedule_beats_the_cut_bounds_of_dgx_h100(alg, coll):
    check_or_skip(alg, coll, [("dgx-h100", 2, 16 << 20)])


@pytest.mark.parametrize("alg, coll", [c for c in cases() if c[1] in ("allreduce", "alltoall", "broadcast")])
def test_no_schedule_beats_the_cut_bounds_of_pcie(alg, coll):
    check_or_skip(alg, coll, [("pcie", 2, 16 << 20)])


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["dgx-h100", "dgx-a100", "mi300x", "ascend-910b", "pcie", "flat"])
@pytest.mark.parametrize("alg, coll", cases())
def test_no_schedule_beats_the_cut_bounds_of_any_preset(preset, alg, coll):
    check_or_skip(alg, coll, [(preset, nodes, n) for nodes in (1, 4) for n in (64 << 10, 256 << 20)])


def test_cut_bytes_follow_the_collectives():
    n, p = 3200.0, 32
    assert cut_bytes("allgather", p, n, 8, False) == (8 / 32 * n, 24 / 32 * n)
    assert cut_bytes("reducescatter", p, n, 8, False) == (24 / 32 * n, 8 / 32 * n)
    assert cut_bytes("alltoall", p, n, 8, False) == (8 * 24 / 32 * n,) * 2
    assert cut_bytes("allreduce", p, n, 1, True) == (n, n)
    assert cut_bytes("broadcast", p, n, 8, True) == (n, 0.0) and cut_bytes("broadcast", p, n, 8, False) == (0.0, n)
    assert cut_bytes("gather", p, n, 1, False) == (n / 32, 0.0)
    assert cut_bytes("allreduce", p, n, p, True) == (0.0, 0.0)


def test_the_bound_is_reached_where_it_should_be():
    """Dedicated links: Mesh AllGather moves every block once over its own link, so it takes the
    bound plus one α; on dgx-h100, AllGather's bound is each GPU's ports (NVLink + PCIe)."""
    p, n = 8, float(8 << 20)
    flat = Topology.flat(2e-6, 1e-10, 0.0)
    r = simulate_schedule(algorithm_schedule("mesh", "allgather", p, max_bytes=int(n)), n, flat)
    assert r.time_s - 2e-6 == pytest.approx(lower_bound(flat, "allgather", p, n).time_s, rel=1e-9)
    b = busbw_bound(topo("dgx-h100", 4), "allgather", 32, n)
    assert b.busbw == pytest.approx(450e9 + 63e9) and b.cut.startswith("rank")
    # multi-node all-to-all is NIC-bound: 8 GPUs x 24/32 of their data over 8 x 50 GB/s
    b = busbw_bound(topo("dgx-h100", 4), "alltoall", 32, n)
    assert b.time_s == pytest.approx(8 * 24 / 32 * n / 400e9) and "NIC" in b.cut


def select(coll: str, nbytes: str) -> dict:
    code, out, err = ccxml("select", "--preset", "dgx-h100", "--nodes", "4", "--coll", coll,
                           "--bytes", nbytes, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("coll", ["allreduce", "allgather"])
def test_select_on_dgx_h100_x4_does_not_put_flat_mesh_first_at_64M(coll):
    """Large messages are NIC-bound: flat Mesh sends 24/32 of every rank's data through its NIC
    and ranks behind the hierarchical algorithms (Pipeline first), whichever way the NIC's
    per-message cost is read."""
    doc = select(coll, "64M")
    ranking = [r["algorithm"] for r in doc["ranking"]]
    assert "mesh" in ranking and ranking[0] == "pipeline", ranking
    assert doc["model"] == "shared" and doc["bound"]["busbw_GBps"] >= doc["ranking"][0]["busbw_GBps"]
    assert doc["proxy"]["reading"] == "nic" and doc["proxy"]["other_first"] == "pipeline"
    assert not any("winner depends" in n for n in doc["notes"])


@pytest.mark.parametrize("coll, nbytes", [("allgather", "4K"), ("alltoall", "4K"),
                                          ("alltoall", "64K"), ("alltoall", "1M")])
def test_select_on_dgx_h100_x4_says_when_the_nic_reading_decides(coll, nbytes):
    """Issue 27. With NCCL's reading (tuning.cc: a network step's 14 µs are latency, overlapping
    across messages in flight; docs/nic-model.md) flat Mesh needs one network step and ranks
    first at small sizes: AllToAll 1M 29.9 µs against Pipeline's 61.7 (SimGrid agrees with Mesh's
    time within 10%, benchmarks/simgrid_check.py). Read as a serial proxy (11.3 µs per message,
    one at a time in the NIC port: before issue 27, the default) Mesh's 24 network messages per
    rank queue up (289.7 µs) and Pipeline, 3 messages per rank, ranks first; select says so."""
    doc = select(coll, nbytes)
    ranking = [r["algorithm"] for r in doc["ranking"]]
    assert ranking[0] == "mesh", ranking
    proxy = doc["proxy"]
    assert proxy["reading"] == "nic" and proxy["other"] == "serial"
    assert proxy["first"] == "mesh" and proxy["other_first"] != "mesh"
    other = {r["algorithm"]: r["time_s"] for r in proxy["other_ranking"]}
    assert other["mesh"] > 2.5 * doc["ranking"][0]["time_s"]
    assert any(n.startswith("the winner depends on how the NIC's per-message cost is read: with "
                            'proxy = "serial"') and proxy["other_first"] in n for n in doc["notes"])
    if coll == "alltoall":
        assert proxy["other_first"] == "pipeline"


def test_select_on_dgx_h100_x4_alltoall_64M_is_nic_bound_either_way():
    """At 64M flat Mesh AllToAll is 2% over the NIC-bound bound (8 GPUs x 24/32 of their data
    over 8 x 50 GB/s: 1007 µs) and ranks first (1022 µs; Pipeline 1085); the serial-proxy
    reading adds 24 x 11.3 µs of queueing per port (1282 µs) and puts Pipeline first."""
    doc = select("alltoall", "64M")
    times = {r["algorithm"]: r["time_s"] for r in doc["ranking"]}
    assert doc["ranking"][0]["algorithm"] == "mesh" and times["mesh"] < times["pipeline"]
    assert times["mesh"] == pytest.approx(doc["bound"]["time_s"], rel=0.03)
    assert doc["proxy"]["other_first"] == "pipeline"


def test_select_on_a_serial_proxy_file_names_nccls_winner(tmp_path):
    """A user who measured a proxy-bound NIC sets proxy = "serial" in the NIC table: the old
    figures come back (AllToAll 1M: Pipeline 61.6 µs first, Mesh 289.7 µs) and select names the
    winner under NCCL's reading. The flat model has no NIC: no "proxy" entry, no note."""
    spec = topo("dgx-h100", 4).network.with_proxy("serial")
    f = tmp_path / "serial.json"
    f.write_text(json.dumps(Topology.from_dict({"network": spec}).to_dict()))
    code, out, err = ccxml("select", "--topology", f, "--coll", "alltoall", "--bytes", "1M", "--json")
    assert code == 0, err
    doc = json.loads(out)
    times = {r["algorithm"]: r["time_s"] for r in doc["ranking"]}
    assert doc["ranking"][0]["algorithm"] == "pipeline"
    assert times["pipeline"] == pytest.approx(61.6e-6, rel=0.01)
    assert times["mesh"] == pytest.approx(289.7e-6, rel=0.01)
    assert doc["proxy"]["reading"] == "serial" and doc["proxy"]["other_first"] == "mesh"
    assert any('with proxy = "nic" (NCCL\'s reading' in n and 'uses proxy = "serial"' in n
               for n in doc["notes"])
    code, out, err = ccxml("select", "--ranks", "8", "--coll", "alltoall", "--bytes", "1M", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["proxy"] is None and not any("winner depends" in n for n in doc["notes"])


def test_alltoall_across_an_ecmp_spine_prefers_the_rail_aligned_pipeline(tmp_path):
    """Where switches hash flows onto spine links (static ECMP, plain RoCE fabrics - HCCL's reason
    for PairWise and Pipeline), Mesh's cross-rail transfers collide on spine links, and the
    rail-aligned Pipeline (it only talks to the same local rank of other servers) wins a large
    all-to-all; the rule's Pipeline-if-faster then applies."""
    spec = topo("dgx-h100", 4).network
    t = Topology.from_dict({"network": spec.model_copy(
        update={"fabric": spec.fabric.model_copy(update={"spine": "ecmp"})})})
    f = tmp_path / "ecmp.json"
    f.write_text(json.dumps(t.to_dict()))
    n = 64 << 20
    code, out, err = ccxml("select", "--topology", f, "--coll", "alltoall", "--bytes", n, "--json")
    assert code == 0, err
    doc = json.loads(out)
    times = {r["algorithm"]: r["time_s"] for r in doc["ranking"]}
    assert doc["ranking"][0]["algorithm"] == "pipeline" and times["mesh"] > times["pipeline"]
    # the rule: large all-to-all -> PairWise, unless the model shows Pipeline is faster: it does
    assert doc["rule"]["algorithms"][0] == "pairwise" and doc["rule"]["pick"] == "pipeline"
    assert "gives way to pipeline" in doc["notes"][0]
    # the rail-aligned pipeline does not notice the spine: same time as on the adaptive fabric
    sched = algorithm_schedule("pipeline", "alltoall", 32, topology=t, max_bytes=n)
    assert times["pipeline"] == simulate_schedule(sched, n, topo("dgx-h100", 4)).time_s
