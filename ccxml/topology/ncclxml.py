"""NCCL topology XML (what ``NCCL_TOPO_DUMP_FILE`` writes and ``NCCL_TOPO_FILE`` reads) as a network.

One file describes one server; ``nodes`` copies are joined by one non-blocking switch (the file
says nothing about the fabric). What is read, with NCCL's own numbers (NVIDIA/nccl
``src/graph/topo.cc``, ``topo.h``, ``xml.h``):

* ``<cpu numaid vendor arch familyid modelid>`` — a CPU socket; every pair of sockets is joined by
  a link of NCCL's inter-socket bandwidth (``ncclTopoGetInterCpuBw``: Intel by model — 40 GB/s
  Emerald Rapids, 22 Sapphire Rapids, 10 Skylake, 6 Broadwell; AMD 16; Zhaoxin 6 or 9; POWER 32;
  ARM 6; otherwise 5000);
* ``<pci busid class link_speed link_width>`` — a PCI device under its parent, joined by a link of
  ``width × speed / 80`` GB/s (NCCL's table: per lane 2.5 GT/s → 15, 5 → 30, 8 → 60, 16 → 120,
  32 → 240, 64 → 480 in units of 100 Mb/s; unknown speed → 60, width 0 → 16). Class ``0x0604…`` is
  a PCIe switch, ``0x03…`` a GPU, ``0x02…`` (or a ``<nic>`` child) a NIC;
* ``<gpu dev sm>`` with ``<nvlink target count tclass>`` — NVLink to a peer GPU (``tclass``
  ``0x03…``) or to an NVSwitch (``0x068000``; every switch of the server is one vertex, as in
  NCCL), ``count × ncclTopoNVLinkBw(sm)`` GB/s per direction (20.6 per link for sm 90, 20 for 80
  and 70, 12 for 86, 18 for 60, 40.1 for 100+);
* ``<nic>`` / ``<net speed>`` — a NIC port of ``speed`` Mb/s (``speed / 8000`` GB/s; ≤ 0 → 10000,
  as NCCL does); a ``<nic>`` directly under a ``<cpu>`` hangs off the socket with NCCL's local
  bandwidth (5000 GB/s).

**Skeleton files** (cloud images: GPUs and NICs by PCI class only, NVLink found at run time) need
``gpu`` = ``h100`` | ``a100`` | ``v100`` for the NVLink side: H100 — every GPU on NVSwitch with 18
links, A100 — 12 links, V100 — the hybrid cube-mesh of DGX-1 / Azure ND40rs v2 as ``nvidia-smi
topo -m`` shows it there (GPUs in file order; :data:`CUBE_MESH`: two links 0-3, 0-4, 1-2, 1-5,
2-3, 4-7, 5-6, 6-7, one link 0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7 — six per GPU). A NIC
without ``<net>`` gets its PCIe link's bandwidth as its port speed.

Latencies, per-message NIC overhead and γ are the presets' (``presets/dgx-h100.toml``): NVLink
3.4 µs per GPU-to-GPU route, PCIe 5.7 µs, network 14 µs (NCCL ``tuning.cc``) with a 4.65 ns
per-message gap in the port, or with ``proxy = "serial"`` 2.7 µs + 11.3 µs per message serialised
(docs/nic-model.md), γ = 3 bytes / memory bandwidth (H100 3.35 TB/s, A100 2.039 TB/s, V100 0.9 TB/s).

Defects (an NVLink that names its own GPU, a missing or one-sided peer, a bad number) are each
reported in one line in :attr:`NcclTopology.notes` and the defective element is left out; a file
that cannot describe a server at all raises :class:`~ccxml.vocab.errors.TopologyError`. Parsing is
safe: lxml without DTDs, entities or network access, the file capped at :data:`MAX_FILE_BYTES`
and its nesting at :data:`MAX_DEPTH`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ccxml.topology.model import Topology
from ccxml.topology.network import NetworkSpec
from ccxml.vocab import limits
from ccxml.vocab.errors import TopologyError

MAX_FILE_BYTES = limits.MAX_TOPOLOGY_BYTES
MAX_DEPTH = limits.MAX_TOPOLOGY_DEPTH

#: NCCL topo.h: NVLink GB/s per link by compute capability
def nvlink_bw(sm: int) -> float:
    return (40.1 if sm >= 100 else 20.6 if sm >= 90 else 12.0 if sm == 86 else 20.0 if sm >= 80
            else 20.0 if sm >= 70 else 18.0 if sm >= 60 else 20.0)


#: NCCL topo.cc kvDictPciGen: x 100 Mb/s per lane
PCI_GEN = {"2.5 GT/s": 15, "5 GT/s": 30, "8 GT/s": 60, "16 GT/s": 120, "32 GT/s": 240,
           "2.5 GT/s PCIe": 15, "5.0 GT/s PCIe": 30, "8.0 GT/s PCIe": 60, "16.0 GT/s PCIe": 120,
           "32.0 GT/s PCIe": 240, "64.0 GT/s PCIe": 480}
LOC_BW = 5000.0
NVSWITCH_CLASS = "0x068000"

#: per GPU class: (sm, NVLink links to the NVSwitch or None for the cube-mesh, memory bandwidth B/s)
GPU_CLASSES = {"h100": (90, 18, 3.35e12), "a100": (80, 12, 2.039e12), "v100": (70, None, 0.9e12)}
#: DGX-1 / ND40rs v2 hybrid cube-mesh: (gpu a, gpu b, links)
CUBE_MESH = ((0, 1, 1), (0, 2, 1), (0, 3, 2), (0, 4, 2), (1, 2, 2), (1, 3, 1), (1, 5, 2), (2, 3, 2),
             (2, 6, 1), (3, 7, 1), (4, 5, 1), (4, 6, 1), (4, 7, 2), (5, 6, 2), (5, 7, 1), (6, 7, 2))
NVLINK_ROUTE_LATENCY = 3.4e-6
PCI_ROUTE_LATENCY = 5.7e-6
NIC_LATENCY, NIC_OVERHEAD, NIC_PROXY_OVERHEAD = 7e-6, 4.65e-9, 11.3e-6


@dataclass
class NcclTopology:
    """What :func:`load_nccl_topology` read: the topology and one line per defect or assumption."""
    topology: Topology
    notes: list[str] = field(default_factory=list)


def _parse(path: str):
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise TopologyError(f"{path}: {size} bytes; an NCCL topology file is at most "
                                f"{MAX_FILE_BYTES} bytes here")
        raw = limits.read_capped(path, MAX_FILE_BYTES, "an NCCL topology file")
    except OSError as e:
        raise TopologyError(f"cannot read topology {path}: {e.strerror or e}") from None
    except ValueError as e:             # /dev/zero, a growing file: more than the cap
        raise TopologyError(str(e)) from None
    if b"<!DOCTYPE" in raw or b"<!ENTITY" in raw:
        raise TopologyError(f"{path}: DOCTYPE/ENTITY declarations are not allowed in a topology file")
    from lxml import etree
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as e:
        raise TopologyError(f"{path}: not well-formed XML: {str(e).splitlines()[0]}") from None
    if root.tag != "system":
        raise TopologyError(f"{path}: the root element is <{root.tag}>, not NCCL's <system>")

    def depth(el, d):
        if d > MAX_DEPTH:
            raise TopologyError(f"{path}: elements nested deeper than {MAX_DEPTH}")
        for c in el:
            depth(c, d + 1)
    depth(root, 1)
    return root


def _int(el, name: str, default=None):
    v = el.get(name)
    if v is None or v.strip() == "":
        return default
    shown = v if len(v) <= 40 else v[:40] + "..."
    if len(v.strip()) > limits.MAX_NUMBER_DIGITS:
        raise TopologyError(f"<{el.tag}> {name}={shown!r}: a number of more than "
                            f"{limits.MAX_NUMBER_DIGITS} digits")
    try:
        n = int(v, 0)
    except ValueError:
        raise TopologyError(f"<{el.tag}> {name}={shown!r} is not a number") from None
    if not -(1 << 31) <= n < 1 << 31:
        raise TopologyError(f"<{el.tag}> {name}={shown!r} is outside the C int range")
    return n


def _inter_cpu_bw(cpu) -> float:
    arch, vendor = cpu.get("arch", ""), cpu.get("vendor", "")
    if arch == "ppc64":
        return 32.0
    if arch == "arm64":
        return 6.0
    if arch == "x86_64":
        if vendor == "GenuineIntel":
            fam, model = _int(cpu, "familyid", 0), _int(cpu, "modelid", 0)
            if fam == 6 and model >= 0xCF:
                return 40.0
            if fam == 6 and model >= 0x8F:
                return 22.0
            if fam == 6 and model >= 0x55:
                return 10.0
            return 6.0
        if vendor == "AuthenticAMD":
            return 16.0
        if vendor in ("CentaurHauls", "  Shanghai  "):
            return 9.0 if (_int(cpu, "familyid", 0), _int(cpu, "modelid", 0)) == (7, 0x5B) else 6.0
    return LOC_BW


class _Reader:
    def __init__(self, path: str, gpu: str | None):
        self.path = path
        self.name = os.path.basename(path)
        self.gpu_class = gpu
        self.notes: list[str] = []
        self.devices: list[dict] = []
        self.links: dict[tuple[str, str], dict] = {}
        self.gpus: list[dict] = []        # {busid, sm, nvlinks: [(target, count, tclass)], parent, bw}
        self.nics: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(f"{self.name}: {text}")

    def link(self, a: str, b: str, gbps: float, kind: str, latency: float = 0.0) -> None:
        key = (min(a, b), max(a, b))
        if key in self.links:
            self.links[key]["bandwidth"] += gbps * 1e9
        else:
            self.links[key] = {"a": a, "b": b, "bandwidth": gbps * 1e9, "kind": kind, "latency": latency}

    def device(self, name: str, kind: str, **port) -> None:
        self.devices.append({"name": name, "kind": kind, **port})

    # -- the tree ------------------------------------------------------------------------------
    def read(self, root) -> None:
        cpus = [c for c in root if c.tag == "cpu"]
        if not cpus:
            raise TopologyError(f"{self.path}: no <cpu> element; not an NCCL topology file")
        names = []
        for i, cpu in enumerate(cpus):
            name = f"cpu{_int(cpu, 'numaid', i)}"
            if name in names:
                raise TopologyError(f"{self.path}: two <cpu> elements with numaid {name[3:]}")
            names.append(name)
            self.device(name, "cpu")
            for child in cpu:
                if child.tag == "pci":
                    self.pci(child, name)
                elif child.tag == "nic":
                    self.nic_ports(child, name, LOC_BW, f"{name}-nic")
        for i in range(len(cpus)):
            for j in range(i + 1, len(cpus)):
                self.link(names[i], names[j], _inter_cpu_bw(cpus[i]), "sys")

    def pci_bw(self, el) -> float:
        width = _int(el, "link_width", 0) or 16
        if width < 0:
            self.note(f"pci {el.get('busid')}: link_width {width} is not a lane count; taken as 16")
            width = 16
        speed = el.get("link_speed")
        per_lane = PCI_GEN.get(speed or "", 60)
        if speed is not None and speed not in PCI_GEN and speed != "":
            self.note(f"pci {el.get('busid')}: link_speed {speed!r} is not in NCCL's table; "
                      f"taken as 8 GT/s")
        return width * per_lane / 80.0

    def pci(self, el, parent: str) -> None:
        busid = el.get("busid")
        if not busid:
            self.note(f"a <pci> under {parent} has no busid; left out")
            return
        cls = (el.get("class") or "").lower()
        bw = self.pci_bw(el)
        gpu_el = next((c for c in el if c.tag == "gpu"), None)
        nic_el = next((c for c in el if c.tag == "nic"), None)
        if gpu_el is not None or cls.startswith("0x03"):
            if len(self.gpus) >= limits.MAX_NODE_GPUS:
                raise TopologyError(f"{self.path}: more than {limits.MAX_NODE_GPUS} GPUs (the "
                                    "limit of one server)")
            self.gpus.append({"busid": busid.lower(), "el": gpu_el, "parent": parent, "bw": bw})
            return
        if nic_el is not None or cls.startswith("0x02"):
            if nic_el is not None and any(c.tag == "net" for c in nic_el):
                hub = f"pci:{busid}"
                self.device(hub, "switch")
                self.link(hub, parent, bw, "pcie")
                self.nic_ports(nic_el, hub, bw, f"nic:{busid}")
            else:
                name = f"nic:{busid}"
                self.device(name, "nic", bandwidth=bw * 1e9, latency=NIC_LATENCY, overhead=NIC_OVERHEAD,
                            proxy_overhead=NIC_PROXY_OVERHEAD)
                self.nics.append(name)
                self.link(name, parent, bw, "pcie")
                self.note(f"nic {busid}: no <net speed>; its PCIe link's {bw:g} GB/s taken as its "
                          f"network speed")
            return
        if cls == NVSWITCH_CLASS:
            return                        # NVSwitches are reached through <nvlink>
        name = f"pci:{busid}"
        self.device(name, "pcie-switch")
        self.link(name, parent, bw, "pcie")
        for child in el:
            if child.tag == "pci":
                self.pci(child, name)

    def nic_ports(self, nic_el, parent: str, bw: float, prefix: str) -> None:
        for k, net in enumerate(c for c in nic_el if c.tag == "net"):
            mbps = _int(net, "speed", 0) or 0
            if mbps <= 0:
                self.note(f"{prefix}: <net {net.get('name', '')}> speed {net.get('speed')!r}; taken as "
                          f"10000 Mb/s, as NCCL does")
                mbps = 10000
            name = f"{prefix}:{net.get('name') or k}"
            self.device(name, "nic", bandwidth=mbps / 8000.0 * 1e9, latency=NIC_LATENCY,
                        overhead=NIC_OVERHEAD, proxy_overhead=NIC_PROXY_OVERHEAD)
            self.nics.append(name)
            self.link(name, parent, bw, "pcie")

    # -- GPUs and NVLink -----------------------------------------------------------------------
    def finish(self, nodes: int) -> NetworkSpec:
        if not self.gpus:
            raise TopologyError(f"{self.path}: no GPU (PCI class 0x03...) in the file")
        full = [g for g in self.gpus if g["el"] is not None]
        if full and len(full) != len(self.gpus):
            self.note(f"{len(self.gpus) - len(full)} GPU(s) have no <gpu> element; they get no NVLink")
        order = sorted(range(len(self.gpus)),
                       key=lambda i: (_int(self.gpus[i]["el"], "dev", i) if self.gpus[i]["el"] is not None
                                      else i, i))
        self.gpus = [self.gpus[i] for i in order]
        index = {g["busid"]: i for i, g in enumerate(self.gpus)}
        sms = set()
        for i, g in enumerate(self.gpus):
            lat = PCI_ROUTE_LATENCY / 2
            self.link(f"gpu{i}", g["parent"], g["bw"], "pcie", lat)
            if g["el"] is not None and g["el"].get("sm") is not None:
                sms.add(_int(g["el"], "sm"))
        if full:
            if self.gpu_class is not None:
                raise TopologyError(f"{self.path} has <gpu> elements, which give the NVLink side; "
                                    f"--gpu is for skeleton files that give only the PCI tree")
            sm = max(sms) if sms else 80
            if len(sms) > 1:
                self.note(f"GPUs of several kinds (sm {sorted(sms)}); gamma of sm {sm}")
            self.nvlinks_from_file(index)
            mem = next((m for s, _, m in GPU_CLASSES.values() if s == sm), GPU_CLASSES["a100"][2])
        else:
            if self.gpu_class is None:
                raise TopologyError(f"{self.path} gives only the PCI tree (no <gpu> elements): add "
                                    f"--gpu h100|a100|v100 for the NVLink side")
            if self.gpu_class not in GPU_CLASSES:
                raise TopologyError(f"--gpu {self.gpu_class!r}: use one of {', '.join(GPU_CLASSES)}")
            sm, mem = self.nvlinks_from_class(self.gpu_class)
        return NetworkSpec.model_validate({
            "name": f"xml:{self.name}",
            "description": f"{self.name}: {len(self.gpus)} GPUs, {len(self.nics)} NIC port(s) (NCCL topology XML)",
            "gpus": len(self.gpus), "nodes": nodes, "gamma": 3.0 / mem,
            "devices": self.devices, "links": list(self.links.values()),
            "fabric": {"kind": "switch" if nodes > 1 else "none"}})

    def nvlinks_from_file(self, index: dict[str, int]) -> None:
        seen: dict[tuple[int, int], int] = {}
        nvswitch = False
        for i, g in enumerate(self.gpus):
            sm = _int(g["el"], "sm", 80)
            for nv in (c for c in g["el"] if c.tag == "nvlink"):
                target = (nv.get("target") or "").lower()
                count = _int(nv, "count", 0)
                tclass = (nv.get("tclass") or "").lower()
                if count is None or count <= 0:
                    self.note(f"gpu {g['busid']}: <nvlink target={target}> has count {nv.get('count')!r}; left out")
                    continue
                if tclass == NVSWITCH_CLASS or (not tclass and target not in index):
                    if not nvswitch:
                        self.device("nvswitch", "nvswitch")
                        nvswitch = True
                    self.link(f"gpu{i}", "nvswitch", count * nvlink_bw(sm), "nvlink", NVLINK_ROUTE_LATENCY / 2)
                    continue
                if not tclass.startswith("0x03"):
                    self.note(f"gpu {g['busid']}: <nvlink> to a device of class {tclass} is not modelled; left out")
                    continue
                if target == g["busid"]:
                    self.note(f"gpu {g['busid']}: <nvlink> names its own GPU as target (count {count}); left out")
                    continue
                j = index.get(target)
                if j is None:
                    self.note(f"gpu {g['busid']}: <nvlink target={target}>: no GPU with that bus id in the "
                              f"file; left out")
                    continue
                seen[(i, j)] = count
        for (i, j), count in sorted(seen.items()):
            back = seen.get((j, i))
            if back is None:
                self.note(f"gpu {self.gpus[i]['busid']} lists {count} NVLink(s) to gpu {self.gpus[j]['busid']}, "
                          f"which lists none back; used as given")
            elif back != count and i > j:
                self.note(f"gpus {self.gpus[j]['busid']} and {self.gpus[i]['busid']} list {back} and {count} "
                          f"NVLinks to each other; the smaller is used")
            if i < j or back is None:
                sm = _int(self.gpus[i]["el"], "sm", 80)
                n = count if back is None else min(count, back)
                self.link(f"gpu{i}", f"gpu{j}", n * nvlink_bw(sm), "nvlink", NVLINK_ROUTE_LATENCY)

    def nvlinks_from_class(self, gpu_class: str) -> tuple[int, float]:
        sm, links, mem = GPU_CLASSES[gpu_class]
        bw = nvlink_bw(sm)
        if links is not None:
            self.device("nvswitch", "nvswitch")
            for i in range(len(self.gpus)):
                self.link(f"gpu{i}", "nvswitch", links * bw, "nvlink", NVLINK_ROUTE_LATENCY / 2)
        else:
            if len(self.gpus) != 8:
                raise TopologyError(f"{self.path}: --gpu v100 gives the 8-GPU hybrid cube-mesh; the file "
                                    f"has {len(self.gpus)} GPUs")
            for a, b, n in CUBE_MESH:
                self.link(f"gpu{a}", f"gpu{b}", n * bw, "nvlink", NVLINK_ROUTE_LATENCY)
        return sm, mem


def load_nccl_topology(path: str | os.PathLike, *, gpu: str | None = None, nodes: int = 1) -> NcclTopology:
    """Read an NCCL topology XML file as a :class:`~ccxml.topology.model.Topology` of ``nodes``
    copies of the server it describes (see the module docstring)."""
    path = os.fspath(path)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise TopologyError(f"--nodes must be an integer >= 1, got {nodes!r}")
    if nodes > limits.MAX_TOPOLOGY_NODES:
        raise TopologyError(f"--nodes {nodes} is over the limit of {limits.MAX_TOPOLOGY_NODES} nodes")
    reader = _Reader(path, gpu.lower() if gpu else None)
    try:
        reader.read(_parse(path))
        spec = reader.finish(nodes)
    except TopologyError as e:
        msg = str(e)
        raise TopologyError(msg if msg.startswith(path) else f"{path}: {msg}") from None
    try:
        topo = Topology.from_dict({"network": spec})
        topo.graph()                          # routes exist, every GPU reaches the others
    except TopologyError as e:
        raise TopologyError(f"{path}: {e}") from None
    if nodes > 1:
        reader.note(f"one file describes one server: {nodes} copies joined by one non-blocking switch")
    return NcclTopology(topo, reader.notes)


__all__ = ["NcclTopology", "load_nccl_topology", "nvlink_bw", "GPU_CLASSES", "CUBE_MESH"]
