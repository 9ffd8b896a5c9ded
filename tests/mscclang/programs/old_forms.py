"""Test program: the MSCCLang forms before 2022-05 (Ref.send, Ref.reduce(rank, buffer, index))."""
from msccl.language import *
from msccl.language.collectives import AllReduce
from msccl.topologies import *

size = 4
with MSCCLProgram("old_forms", ring(size), AllReduce(size, 1, True), 1):
    c = chunk(0, Buffer.input, 0)
    for r in range(1, size):
        c = c.reduce(r, Buffer.input, 0)                  # into rank r, returns rank r's Ref
    for r in range(size - 1):                             # rank 3 -> 0 -> 1 -> 2 around the ring
        c = c.send(r, Buffer.input, 0)
    XML()
    Check()
