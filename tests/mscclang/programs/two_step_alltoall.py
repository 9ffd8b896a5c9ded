"""Test program: a two-step AllToAll over named scratch buffers (MSCCLang, msccl-tools style).

Ranks are in nodes of G; every chunk bound for another node is first gathered on the local rank
that talks to that node, into a scratch buffer named after the node pair (a tuple name), grouped
into one Ref, split again on the far side and delivered by its symbolic destination
(get_dst_rank / get_dst_index). Exercises scratch names, copy without an index (append),
group, split and the chunk provenance getters.
"""
import argparse

from msccl.language import *
from msccl.language.collectives import AllToAll
from msccl.topologies import *

parser = argparse.ArgumentParser()
parser.add_argument("nodes", type=int)
parser.add_argument("per_node", type=int)
args = parser.parse_args()
N, G = args.nodes, args.per_node
n = N * G

with MSCCLProgram("two_step_alltoall", fully_connected(n), AllToAll(n, 1, False), 1):
    gathered = {}
    for src in range(n):
        for dst in range(n):
            c = chunk(src, Buffer.input, dst)
            if src // G == dst // G:
                c.copy(c.get_dst_rank(), Buffer.output, c.get_dst_index())
                continue
            key = (src // G, dst // G)
            relay = (src // G) * G + (dst % G)             # the local rank facing dst's node
            if relay != src:
                c = c.copy(relay, key)
            else:
                c = c.copy(relay, key)                     # a local copy into the scratch buffer
            gathered[relay, key] = gathered[relay, key].group(c) if (relay, key) in gathered else c
    for (relay, key), block in gathered.items():
        far = key[1] * G + relay % G
        landed = block.copy(far, f"in_{key[0]}")
        for piece in landed.split(landed.size):
            piece.copy(piece.get_dst_rank(), Buffer.output, piece.get_dst_index())
    XML()
    Check()
