"""Two-level (BlueConnect-style) AllReduce, written in MSCCLang (msccl-tools' language).

Ranks are numbered node by node. The buffer is G·N chunks (G ranks per node, N nodes): a ring
reduce-scatter inside each node leaves local rank g with the node's sum of block g (N chunks); a
ring reduce-scatter and all-gather across the nodes, between the ranks with the same local rank,
make that block the sum over all ranks; a ring all-gather inside each node spreads the blocks.

    ccxml mscclang hierarchical_allreduce.py 4 2 1      # 4 ranks per node, 2 nodes
    python hierarchical_allreduce.py 4 2 1              # through msccl-tools, where installed
"""
import argparse

from msccl.language import *
from msccl.language.collectives import AllReduce
from msccl.topologies import *


def ring_reduce_scatter(ranks, index_of, size):
    """Block b ends reduced over ``ranks`` on ranks[b]; block b is ``size`` chunks at index_of(b)."""
    k = len(ranks)
    for hop in range(k - 1):
        for b in range(k):
            src, dst = ranks[(b + 1 + hop) % k], ranks[(b + 2 + hop) % k]
            chunk(dst, Buffer.input, index_of(b), size).reduce(chunk(src, Buffer.input, index_of(b), size))


def ring_all_gather(ranks, index_of, size):
    """Block b, held by ranks[b], is copied around ``ranks``."""
    k = len(ranks)
    for hop in range(k - 1):
        for b in range(k):
            src, dst = ranks[(b + hop) % k], ranks[(b + hop + 1) % k]
            chunk(src, Buffer.input, index_of(b), size).copy(dst, Buffer.input, index_of(b))


def hierarchical_allreduce(per_node, nodes, instances, protocol):
    n = per_node * nodes
    with MSCCLProgram(f"hierarchical_allreduce_{per_node}x{nodes}", fully_connected(n),
                      AllReduce(n, per_node * nodes, True), instances, protocol=protocol,
                      interleaved_replication=False):
        local = [[node * per_node + g for g in range(per_node)] for node in range(nodes)]
        across = [[node * per_node + g for node in range(nodes)] for g in range(per_node)]
        for ranks in local:
            ring_reduce_scatter(ranks, lambda g: g * nodes, nodes)
        for g, ranks in enumerate(across):
            ring_reduce_scatter(ranks, lambda m, g=g: g * nodes + m, 1)
            ring_all_gather(ranks, lambda m, g=g: g * nodes + m, 1)
        for ranks in local:
            ring_all_gather(ranks, lambda g: g * nodes, nodes)
        XML()
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("per_node", type=int, help="ranks per node")
parser.add_argument("nodes", type=int, help="number of nodes")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
hierarchical_allreduce(args.per_node, args.nodes, args.instances, args.protocol)
