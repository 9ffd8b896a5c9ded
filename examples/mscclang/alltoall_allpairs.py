"""All-pairs AllToAll, written in MSCCLang (msccl-tools' language).

Every rank copies its block for rank j straight into rank j's output; the compiler places the
transfers in thread blocks and on channels.

    ccxml mscclang alltoall_allpairs.py 8 1
    python alltoall_allpairs.py 8 1           # through msccl-tools, where it is installed
"""
import argparse

from msccl.language import *
from msccl.language.collectives import AllToAll
from msccl.topologies import *


def alltoall_allpairs(size, instances, protocol):
    with MSCCLProgram(f"alltoall_allpairs_{size}", fully_connected(size),
                      AllToAll(size, 1, inplace=False), instances, protocol=protocol):
        for r in range(size):
            for j in range(size):
                chunk(r, Buffer.input, j).copy(j, Buffer.output, r)
        XML()
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_gpus", type=int, help="number of ranks")
parser.add_argument("instances", type=int, help="number of instances")
parser.add_argument("--protocol", default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()
alltoall_allpairs(args.num_gpus, args.instances, args.protocol)
