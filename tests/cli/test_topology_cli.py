"""--preset/--nodes/--topology FILE.xml on the commands, ``ccxml topology show``, and what
``simulate`` reports on a network."""
from __future__ import annotations

import json
import re

import pytest
from conftest import TOPOLOGIES
from in_process import ccxml


def run(*argv):
    return ccxml(*argv)


def test_topology_show_prints_what_the_model_uses():
    code, out, err = run("topology", "show", "--preset", "dgx-h100", "--nodes", "2")
    assert code == 0, err
    assert out.startswith("# topology: dgx-h100: 2 nodes x 8 GPUs, rail fabric (shared links)")
    assert "#   nvlink      32      450 GB/s" in out and "#   net         16       50 GB/s" in out
    assert "rank 0 -> rank 8 (next node, same local GPU): n0.gpu0 > n0.pcie0 > n0.nic0 > rail0 > n1.nic0" in out
    # NCCL's reading (docs/nic-model.md): the 14 us step is latency, the port's gap 4.65 ns
    assert "alpha 14.00 us (latency 14.00 us + overhead 4.65 ns), bottleneck 50 GB/s" in out
    assert "# nic proxy: nic (NCCL's reading" in out
    # the cuts give 513 (NVLink + PCIe into a GPU); the max-flow bound under the route rule, 500
    assert "max-flow bound below): allreduce 500.0 (max-flow), allgather 500.0 (max-flow)" in out
    assert "alltoall 93.8, broadcast 400.0" in out                  # no exact bound: the cuts
    code, out, _ = run("topology", "show", "--preset", "flat", "--json")
    assert code == 0 and json.loads(out)["topology"]["intra"]["beta"] == 1e-11


def test_topology_show_reports_xml_defects():
    path = TOPOLOGIES / "ncv4-topo.xml"
    if not path.is_file():
        pytest.skip("topology files not available")
    code, out, _ = run("topology", "show", "--topology", str(path))
    assert code == 0
    assert out.count("names its own GPU as target") == 4


@pytest.mark.parametrize("argv, fragment", [
    (["topology", "show"], "give --preset NAME"),
    (["topology", "show", "--preset", "dgx-h200"], "unknown preset 'dgx-h200'"),
    (["select", "-c", "allreduce", "--bytes", "1M", "--preset", "pcie", "--alpha", "1e-6"],
     "either --preset or --alpha/--beta/--gamma"),
    (["select", "-c", "allreduce", "--bytes", "1M", "--nodes", "2", "-n", "8"], "--nodes needs --preset"),
    (["select", "-c", "allreduce", "--bytes", "1M", "--preset", "pcie", "--gpu", "h100"], "--gpu goes with"),
    (["select", "-c", "allreduce", "--bytes", "1M"], "--ranks is required"),
    (["select", "-c", "allreduce", "--bytes", "1M", "--preset", "pcie", "-n", "4"],
     "--ranks 4 disagrees with --preset pcie: 1 node of 8 ranks (8 in all); give --ranks 8 (or leave --ranks out)"),
    (["select", "-c", "allreduce", "--bytes", "1M", "--preset", "dgx-h100", "-n", "16"],
     "--ranks 16 disagrees with --preset dgx-h100: 1 node of 8 ranks (8 in all); give --nodes 2, or --ranks 8"),
    (["tune", "-c", "allreduce", "--preset", "dgx-h100", "--nodes", "2", "-n", "8", "-o", "algos"],
     "--ranks 8 disagrees with --preset dgx-h100 --nodes 2: 2 nodes of 8 ranks (16 in all); give --nodes 1, or --ranks 16"),
    (["generate", "2d-torus", "--preset", "dgx-h100", "--nodes", "2", "--ranks", "8"],
     "--ranks 8 disagrees with --preset dgx-h100 --nodes 2: 2 nodes of 8 ranks (16 in all); give --nodes 1, or --ranks 16"),
    (["generate", "2d-torus", "--servers", "2", "--ranks-per-server", "4", "--ranks", "12"],
     "--ranks 12 disagrees with --servers 2 --ranks-per-server 4: 2 groups of 4 ranks (8 in all); give --ranks 8"),
])
def test_bad_topology_options_are_one_line(argv, fragment):
    code, _, err = run(*argv)
    assert code == 2 and fragment in err and err.count("\n") == 1, err


def test_simulate_on_a_preset_shows_bound_links_and_model():
    code, out, err = run("simulate", "ring", "--preset", "dgx-h100", "--nodes", "2",
                         "--coll", "allgather", "--bytes", "64M", "--links", "3")
    assert code == 0, err
    rows = [ln.split() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(rows) == 1 and len(rows[0]) == 5
    busbw, bound = float(rows[0][3]), float(rows[0][4])
    # the ports into a GPU sum to 513 GB/s, but off-node data all comes through the 50 GB/s NIC:
    # the exact max-flow bound (500) is the tighter one, printed once with its cut
    assert 0 < busbw < bound == 500.0
    assert "# bound at 64M" not in out
    assert "# exact bound (allgather, max-flow): busbw 500.0 GB/s; this schedule reaches" in out
    # a 16-rank ring crosses nodes on one rail pair: that NIC is the busiest link
    assert "# busiest link at 64M: n0.nic7->rail7 (net)" in out
    listed = [ln for ln in out.splitlines() if re.match(r"#   \S+->\S+ ", ln)]
    assert len(listed) == 3 and "more links (--links N, or --json)" in out
    code, out, _ = run("simulate", "ring", "--preset", "dgx-h100", "--nodes", "2",
                       "--coll", "allgather", "--bytes", "64M", "--json")
    doc = json.loads(out)
    assert doc["model"] == "shared" and doc["bounds"][0]["busbw_GBps"] == 500.0
    assert doc["busiest_link"]["link"] == "n0.nic7->rail7"
    assert {ln["kind"] for ln in doc["links"]} >= {"nvlink", "pcie", "net"}


def test_generate_takes_servers_from_a_preset_and_simulate_reads_it_back(tmp_path):
    out = tmp_path / "t.xml"
    code, _, err = run("generate", "2d-torus", "--preset", "dgx-h100", "--nodes", "2", "-o", str(out))
    assert code == 0, err
    assert 'topology="2x8" topology_links="network:dgx-h100"' in out.read_text().splitlines()[0]
    code, text, _ = run("simulate", str(out), "--bytes", "1M")
    assert code == 0 and "# topology: dgx-h100: 2 nodes x 8 GPUs" in text


def test_a_shape_only_recorded_topology_gets_the_default_links(tmp_path):
    out = tmp_path / "t.xml"
    run("generate", "2d-torus", "--servers", "2", "--ranks-per-server", "4", "-o", str(out))
    code, text, _ = run("simulate", str(out), "--bytes", "1M")
    rows = [ln.split() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    assert code == 0 and float(rows[0][1]) > 0                 # not the zero-cost links it records
    assert "# topology: 2x4 (intra a=1e-06 b=1e-11 g=1e-12)" in text


def test_tune_on_a_preset_records_simulated_busbw_and_the_bound(tmp_path):
    out = tmp_path / "algos"
    code, _, err = run("tune", "--preset", "dgx-h100", "--nodes", "2", "-a", "ring,rhd,pipeline",
                       "-c", "allreduce", "--forms", "outofplace", "--min-bytes", "64K",
                       "--max-bytes", "256M", "-f", "64", "-q", "-o", str(out))
    assert code == 0, err
    doc = json.loads((tmp_path / "algos.manifest.json").read_text())
    assert doc["ranks"] == 16 and doc["topology"]["network"]["name"] == "dgx-h100"
    assert any("The topology is a network" in n for n in doc["notes"])
    for e in doc["files"]:
        for point in e["simulated"].values():
            assert 0 < point["busbw_GBps"] <= point["bound_busbw_GBps"] == 500.0
    assert doc["files"][-1]["algorithm"] == "pipeline"          # large: the hierarchical one
