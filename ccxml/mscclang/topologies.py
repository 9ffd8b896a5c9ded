"""MSCCLang's topologies: which ranks a program may copy between.

A :class:`Topology` is msccl-tools' link matrix (``links[dst][src]`` = bandwidth, 0 = no link);
``Ref.copy`` and ``Ref.reduce`` refuse a transfer between ranks without a link. Only the
connectivity matters here (ccxml's cost model has its own topology, :mod:`ccxml.topology`); the
builders are the ones msccl-tools' examples use: ``fully_connected``, ``ring``, ``line``,
``star``, ``hub_and_spoke``, ``dgx1``, ``dgx_a100``, ``amd4``, ``amd8``,
``distributed_fully_connected``, ``distributed_hub_and_spoke``, ``reverse_topology`` and
``binarize_topology``.
"""
from __future__ import annotations

from ccxml.vocab.errors import MSCCLangError


class Topology:
    """``links[dst][src]``: the bandwidth from ``src`` to ``dst`` (0: no link)."""

    def __init__(self, name: str, links, switches=()):
        self.name = name
        self.links = [list(row) for row in links]
        self.switches = list(switches)
        n = len(self.links)
        if any(len(row) != n for row in self.links):
            raise MSCCLangError(f"topology {name}: the link matrix must be {n}x{n}")
        for _, _, bw, switch in self.switches:
            if bw <= 0:
                raise MSCCLangError(f"topology {name}: switch {switch} has bandwidth {bw}; "
                                    f"switch bandwidths must be > 0")

    def sources(self, dst: int):
        for src, bw in enumerate(self.links[dst]):
            if bw > 0:
                yield src

    def destinations(self, src: int):
        for dst, row in enumerate(self.links):
            if row[src] > 0:
                yield dst

    def link(self, src: int, dst: int):
        return self.links[dst][src]

    def num_nodes(self) -> int:
        return len(self.links)

    def nodes(self):
        return range(self.num_nodes())

    def bandwidth_constraints(self):
        for dst, row in enumerate(self.links):
            for src, bw in enumerate(row):
                if bw > 0:
                    yield [src], [dst], bw, f"{src}→{dst}"
        yield from self.switches

    def __repr__(self) -> str:
        return f"Topology({self.name})"


def fully_connected(num_nodes: int) -> Topology:
    return Topology(f"FullyConnected(n={num_nodes})",
                    [[0 if x == y else 1 for x in range(num_nodes)] for y in range(num_nodes)])


def hub_and_spoke(num_nodes: int) -> Topology:
    links = [[0 if x == y else 1 for x in range(num_nodes)] for y in range(num_nodes)]
    switches = []
    for node in range(num_nodes):
        others = [o for o in range(num_nodes) if o != node]
        switches.append(([node], others, 1, f"node_{node}_out"))
        switches.append((others, [node], 1, f"node_{node}_in"))
    return Topology(f"HubAndSpoke(n={num_nodes})", links, switches)


def ring(num_nodes: int) -> Topology:
    links = []
    for i in range(num_nodes):
        row = [0] * num_nodes
        row[(i + 1) % num_nodes] = row[(i - 1) % num_nodes] = 1
        links.append(row)
    return Topology(f"Ring(n={num_nodes})", links)


def line(num_nodes: int) -> Topology:
    links = [[1 if abs(i - j) == 1 else 0 for j in range(num_nodes)] for i in range(num_nodes)]
    return Topology(f"Line(n={num_nodes})", links)


def star(num_nodes: int, non_blocking: bool = True) -> Topology:
    links = [[0 if i == 0 else 1 for i in range(num_nodes)]]
    links += [[1 if j == 0 else 0 for j in range(num_nodes)] for _ in range(1, num_nodes)]
    switches = []
    if not non_blocking:
        points = list(range(1, num_nodes))
        switches = [([0], points, 1, "to_points"), (points, [0], 1, "from_points")]
    return Topology(f"Star(n={num_nodes})", links, switches)


def dgx1() -> Topology:
    # (0 1 2 3) (4 5 6 7) are the two sockets; 0 1 3 2 and 4 5 7 6 the double NVLink chains
    links = [[0, 2, 1, 1, 2, 0, 0, 0],
             [2, 0, 1, 2, 0, 1, 0, 0],
             [1, 1, 0, 2, 0, 0, 2, 0],
             [1, 2, 2, 0, 0, 0, 0, 1],
             [2, 0, 0, 0, 0, 2, 1, 1],
             [0, 1, 0, 0, 2, 0, 1, 2],
             [0, 0, 2, 0, 1, 1, 0, 2],
             [0, 0, 0, 1, 1, 2, 2, 0]]
    return Topology("DGX1", links)


def dgx_a100() -> Topology:
    return Topology("DGX_A100", [[0 if i == j else 12 for j in range(8)] for i in range(8)])


def amd4() -> Topology:
    return Topology("AMD4", [[0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 0, 1], [0, 1, 1, 0]])


def amd8() -> Topology:
    links = [[0, 5, 6, 6, 5, 6, 5, 5],
             [5, 0, 5, 5, 6, 5, 6, 6],
             [6, 5, 0, 6, 5, 6, 5, 5],
             [6, 5, 6, 0, 5, 6, 5, 5],
             [5, 6, 5, 5, 0, 5, 6, 6],
             [6, 5, 6, 6, 5, 0, 5, 5],
             [5, 6, 5, 5, 6, 5, 0, 6],
             [5, 6, 5, 5, 6, 5, 6, 0]]
    return Topology("AMD8", links)


def nvlink_only(nvidia_smi_topo=None) -> Topology:
    raise MSCCLangError("nvlink_only() reads the local GPUs (nvidia-smi topo -m); give the "
                        "program a topology such as fully_connected(n) instead")


def _copy_links(remote_bw, num_local: int, num_dist: int, local_links):
    return [[remote_bw if src // num_local != dst // num_local
             else local_links[dst % num_local][src % num_local]
             for src in range(num_dist)] for dst in range(num_dist)]


def _copy_switches(num_local: int, copies: int, local_switches):
    return [([s + i * num_local for s in srcs], [d + i * num_local for d in dsts], bw,
             f"copy_{i}_{name}_local")
            for srcs, dsts, bw, name in local_switches for i in range(copies)]


def distributed_fully_connected(local_topology: Topology, num_copies: int, remote_bw) -> Topology:
    n = local_topology.num_nodes()
    return Topology(f"DistributedFullyConnected(local={local_topology.name},copies={num_copies},"
                    f"bw={remote_bw})", _copy_links(remote_bw, n, n * num_copies, local_topology.links),
                    _copy_switches(n, num_copies, local_topology.switches))


def distributed_hub_and_spoke(local_topology: Topology, num_copies: int, remote_bw) -> Topology:
    """:func:`distributed_fully_connected` whose copies reach the others through one switch each."""
    base = distributed_fully_connected(local_topology, num_copies, remote_bw)
    n = local_topology.num_nodes()
    switches = list(base.switches)
    for i in range(num_copies):
        local = [j + i * n for j in range(n)]
        remote = [k for k in range(n * num_copies) if k // n != i]
        switches.append((local, remote, remote_bw, f"copy_{i}_out_remote"))
        switches.append((remote, local, remote_bw, f"copy_{i}_in_remote"))
    return Topology(f"DistributedHubAndSpoke(local={local_topology.name},copies={num_copies},"
                    f"bw={remote_bw})", base.links, switches)


def reverse_topology(topology: Topology) -> Topology:
    n = topology.num_nodes()
    links = [[topology.links[src][dst] for src in range(n)] for dst in range(n)]
    switches = [(dsts, srcs, bw, f"{name}_reversed") for srcs, dsts, bw, name in topology.switches]
    return Topology(f"Reverse{topology.name}", links, switches)


def binarize_topology(topology: Topology) -> Topology:
    n = topology.num_nodes()
    links = [[1 if topology.links[src][dst] > 0 else 0 for src in range(n)] for dst in range(n)]
    return Topology(f"Binarized{topology.name}", links, [])


__all__ = ["Topology", "amd4", "amd8", "binarize_topology", "dgx1", "dgx_a100",
           "distributed_fully_connected", "distributed_hub_and_spoke", "fully_connected",
           "hub_and_spoke", "line", "nvlink_only", "reverse_topology", "ring", "star"]
