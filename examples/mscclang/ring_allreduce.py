"""Ring AllReduce, written in MSCCLang (msccl-tools' language).

Chunk i is reduced hop by hop around the ring, starting at rank i and ending fully reduced at
rank i-1 (a reduce-scatter), then copied on around the ring to every other rank (an all-gather).
Each rank sends to its successor and receives from its predecessor in thread block 0.

    ccxml mscclang ring_allreduce.py 8 1      # through ccxml (any checkout)
    python ring_allreduce.py 8 1              # through msccl-tools, where it is installed
"""
import argparse

from msccl.language import *
from msccl.language.collectives import AllReduce
from msccl.topologies import *


def ring_allreduce(size, instances, protocol):
    topology = fully_connected(size)
    collective = AllReduce(size, size, True)
    with MSCCLProgram(f"ring_allreduce_{size}", topology, collective, instances,
                      protocol=protocol, threadblock_policy=ThreadblockPolicy.manual):
        for hop in range(size - 1):                     # reduce-scatter
            for i in range(size):
                src, dst = (i + hop) % size, (i + hop + 1) % size
                chunk(dst, Buffer.input, i).reduce(chunk(src, Buffer.input, i),
                                                   sendtb=0, recvtb=0, ch=0)
        for hop in range(size - 1):                     # all-gather
            for i in range(size):
                src, dst = (i + hop - 1) % size, (i + hop) % size
                chunk(src, Buffer.input, i).copy(dst, Buffer.input, i, sendtb=0, recvtb=0, ch=0)
        XML()
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of ranks")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
ring_allreduce(args.num_gpus, args.instances, args.protocol)
