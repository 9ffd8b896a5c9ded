"""Cluster topology (bottom layer): how ranks are grouped into servers, what each link costs.

The model is :mod:`.model` (files of it and NCCL's XML: :mod:`.files`); this package re-exports
their public names.
"""
from __future__ import annotations

from ccxml.topology.files import load_topology
from ccxml.topology.model import (
                                  ATTR_GROUPS,
                                  ATTR_LINKS,
                                  INTER,
                                  INTRA,
                                  LEVELS,
                                  LinkLevel,
                                  Topology,
                                  encode_groups,
                                  load_preset,
                                  parse_groups,
                                  preset_names,
)
from ccxml.topology.network import Network, NetworkSpec, Route
from ccxml.vocab.errors import TopologyError

__all__ = ["ATTR_GROUPS", "ATTR_LINKS", "INTER", "INTRA", "LEVELS", "LinkLevel", "Topology",
           "TopologyError", "encode_groups", "load_topology", "parse_groups", "load_preset", "preset_names",
           "Network", "NetworkSpec", "Route"]
