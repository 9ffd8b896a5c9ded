"""The smallest network with a NIC between nodes, for forest's tests (AllGather family and
Broadcast/Reduce): 2 GPUs per node on a PCIe switch (30 GB/s links) with one 10 GB/s NIC."""
from __future__ import annotations

from ccxml.topology import Topology
from ccxml.topology.network import NetworkSpec


def small(nodes: int = 2) -> Topology:
    """2 GPUs per node on a PCIe switch with one 10 GB/s NIC (4 ranks over 2 nodes)."""
    spec = NetworkSpec.model_validate({
        "name": "tiny", "gpus": 2, "nodes": nodes, "fabric": {"kind": "switch"},
        "devices": [{"name": "sw", "kind": "pcie-switch"}, {"name": "nic0", "kind": "nic", "bandwidth": 10e9}],
        "links": [{"a": "gpu{g}", "b": "sw", "bandwidth": 30e9}, {"a": "nic0", "b": "sw", "bandwidth": 30e9}]})
    return Topology(network=spec)
