"""Topology files: :func:`load_topology` reads a ``.json`` / ``.toml`` file of the model
(:mod:`ccxml.topology.model`) or an NCCL topology ``.xml`` file (:mod:`ccxml.topology.ncclxml`).

It sits above both readers so that the model does not import the NCCL reader, which builds a
model :class:`~ccxml.topology.model.Topology` (no import circle inside the package).
"""
from __future__ import annotations

import json
import os
import re
import tomllib

from ccxml.topology.model import Topology
from ccxml.topology.ncclxml import load_nccl_topology
from ccxml.vocab import limits
from ccxml.vocab.errors import TopologyError


def load_topology(path: str | os.PathLike, *, gpu: str | None = None, nodes: int | None = None) -> Topology:
    """Read a topology from a ``.json`` or ``.toml`` file (other suffixes: JSON, then TOML), or
    an NCCL topology ``.xml`` file (:mod:`ccxml.topology.ncclxml`; ``gpu`` and ``nodes`` apply
    to it). ``nodes`` also sets the node count of a ``[network]`` file."""
    path = os.fspath(path)
    if os.path.splitext(path)[1].lower() == ".xml":
        return load_nccl_topology(path, gpu=gpu, nodes=nodes or 1).topology
    if gpu is not None:
        raise TopologyError(f"--gpu applies to an NCCL topology .xml file, not {path}")
    try:
        raw = limits.read_capped(path, limits.MAX_TOPOLOGY_BYTES, "a topology file")
    except OSError as e:
        raise TopologyError(f"cannot read topology {path}: {e.strerror or e}") from None
    except ValueError as e:             # /dev/zero, a growing file: more than the cap
        raise TopologyError(str(e)) from None
    suffix = os.path.splitext(path)[1].lower()
    data = None
    errors = []
    kinds = ["toml"] if suffix == ".toml" else ["json"] if suffix == ".json" else ["json", "toml"]
    for kind in kinds:
        try:
            text = raw.decode("utf-8")
            _check_nesting(text)
            data = json.loads(text) if kind == "json" else tomllib.loads(text)
            break
        except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
            errors.append(f"{kind}: {str(e).splitlines()[0]}")
        except (ValueError, RecursionError) as e:      # too deep, a number too long
            raise TopologyError(f"topology {path}: {str(e).splitlines()[0]}") from None
    if data is None:
        raise TopologyError(f"topology {path} is not valid {' or '.join(kinds).upper()} ({'; '.join(errors)})")
    try:
        if nodes is not None:
            if not isinstance(data, dict) or ("network" not in data and "preset" not in data):
                raise TopologyError("--nodes applies to a preset or a [network] topology; this file "
                                    "gives its groups itself")
            data = {**data, "nodes": nodes}
        topo = Topology.from_dict(data)
        if topo.is_network:
            topo.graph()                # the links are sound (no self link, every GPU reached)
        return topo
    except TopologyError as e:
        raise TopologyError(f"topology {path}: {e}") from None


_DIGITS = re.compile(r"[0-9_]{%d,}" % (limits.MAX_NUMBER_DIGITS + 1))


def _check_nesting(text: str) -> None:
    """ValueError when brackets (JSON arrays/objects, TOML arrays/inline tables) open deeper than
    MAX_TOPOLOGY_DEPTH, or a run of digits is longer than MAX_NUMBER_DIGITS, before a parser
    recurses into them (brackets inside strings count too: a topology has no use for them)."""
    depth = top = 0
    for c in re.findall(r"[\[\]{}]", text):
        depth += 1 if c in "[{" else -1
        top = max(top, depth)
    if top > limits.MAX_TOPOLOGY_DEPTH:
        raise ValueError(f"nested {top} deep (limit {limits.MAX_TOPOLOGY_DEPTH})")
    m = _DIGITS.search(text)
    if m:
        raise ValueError(f"a number of {len(m.group())} digits (limit {limits.MAX_NUMBER_DIGITS})")


__all__ = ["load_topology"]
