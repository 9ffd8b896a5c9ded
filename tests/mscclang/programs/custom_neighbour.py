"""Test program: a custom collective (every rank's chunks go to the next rank), MSCCLang style."""
import sys

from msccl.language import *
from msccl.language.collectives import Collective
from msccl.topologies import *


class ToNext(Collective):
    def init_buffers(self):
        out = []
        for r in range(self.num_ranks):
            inp = [Chunk(r, c, (r + 1) % self.num_ranks, c) for c in range(self.chunk_factor)]
            out.append({Buffer.input: inp, Buffer.output: [None] * self.chunk_factor})
        return out

    def check(self, prog):
        ok = True
        for r in range(self.num_ranks):
            for c in range(self.chunk_factor):
                got = prog.buffers[r][Buffer.output][c]
                if got is None or got.origin_rank != (r - 1) % self.num_ranks:
                    print(f"rank {r} chunk {c}: {got}")
                    ok = False
        return ok


size = int(sys.argv[1]) if len(sys.argv) > 1 else 4
broken = len(sys.argv) > 2 and sys.argv[2] == "broken"
with MSCCLProgram("to_next", fully_connected(size), ToNext(size, 2, False), 1):
    for r in range(size):
        nxt = (r + 1) % size
        if broken and r == 0:
            nxt = 2                                        # rank 1 never gets its chunks
        chunk(r, Buffer.input, 0, 2).copy(nxt, Buffer.output, 0)
    XML()
    Check()
