"""MSCCLang's collectives: their buffers (the precondition), in-place aliasing and check.

Each class lays out its symbolic buffers as msccl-tools does (``init_buffers``) and aliases the
in-place buffers the same way (``get_buffer_index``), so a program addresses exactly the slots it
addresses under msccl-tools. ``name`` says which ccxml collective the lowering compiles it as
(:data:`CCXML_COLLS`); any other name — a subclass of :class:`Collective` written by the
program — is a custom collective: written ``coll="custom"`` and checked by its own ``check``.

``chunk_factor`` is chunks per rank-block: AllReduce(n, k) has k chunks per rank, AllGather(n, k)
k input and n·k output chunks, ReduceScatter(n, k) n·k input and k output chunks, AllToAll(n, k)
n·k chunks each way.
"""
from __future__ import annotations

from ccxml.mscclang.chunks import Buffer, Chunk, ReduceChunk
from ccxml.vocab.wire import Coll

#: MSCCLang collective name -> the ccxml collective it compiles as
CCXML_COLLS = {"allreduce": Coll.ALLREDUCE, "allgather": Coll.ALLGATHER,
               "reduce_scatter": Coll.REDUCESCATTER, "reducescatter": Coll.REDUCESCATTER,
               "alltoall": Coll.ALLTOALL, "broadcast": Coll.BROADCAST}


class Collective:
    """A custom collective: subclass it and define ``init_buffers`` and ``check``."""

    def __init__(self, num_ranks: int, chunk_factor: int, inplace: bool, root: int = 0,
                 num_ranks_per_node: int = -1, **kwargs):
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = inplace
        self.root = root
        self.name = "custom"
        self.num_ranks_per_node = num_ranks if num_ranks_per_node == -1 else num_ranks_per_node
        self.num_chunk_groups = kwargs.get("num_chunk_groups", 1)

    def init_buffers(self):
        return None

    def check(self, prog) -> bool:
        return True

    def get_buffer_index(self, rank: int, buffer, index: int):
        return buffer, index


def _check_report(r: int, c: int, what: str) -> None:
    # msccl-tools prints each wrong chunk (its check's output is part of a script's output)
    print(f"Rank {r} chunk {c} is incorrect {what}")


class AllToAll(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "alltoall"

    def init_buffers(self):
        n = self.num_ranks * self.chunk_factor
        out = []
        for r in range(self.num_ranks):
            inp = [Chunk(r, i, i // self.chunk_factor, i % self.chunk_factor + r * self.chunk_factor)
                   for i in range(n)]
            out.append({Buffer.input: inp, Buffer.output: inp if self.inplace else [None] * n})
        return out

    def check(self, prog) -> bool:
        ok = True
        for r in range(self.num_ranks):
            output = prog.buffers[r][Buffer.output]
            for i in range(self.num_ranks):
                for c in range(self.chunk_factor):
                    index = c + i * self.chunk_factor
                    chunk = output[index]
                    want = c + r * self.chunk_factor
                    if chunk is None or chunk.origin_rank != i or chunk.origin_index != want:
                        _check_report(r, index, f"should be chunk({i},{want}) given {chunk}")
                        ok = False
        return ok


class AllGather(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace, create_all_chunks=False):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "allgather"
        self.create_all_chunks = create_all_chunks

    def init_buffers(self):
        k = self.chunk_factor
        out = []
        for r in range(self.num_ranks):
            if self.inplace:
                output = [None] * (self.num_ranks * k)
                for q in (range(self.num_ranks) if self.create_all_chunks else (r,)):
                    for c in range(k):
                        output[q * k + c] = Chunk(q, c, -1, q * k + c)
                out.append({Buffer.input: output[r * k:(r + 1) * k], Buffer.output: output})
            else:
                out.append({Buffer.input: [Chunk(r, c, -1, r * k + c) for c in range(k)],
                            Buffer.output: [None] * (self.num_ranks * k)})
        return out

    def check(self, prog) -> bool:
        ok = True
        for r in range(self.num_ranks):
            output = prog.buffers[r][Buffer.output]
            for i in range(self.num_ranks):
                for c in range(self.chunk_factor):
                    index = i * self.chunk_factor + c
                    chunk = output[index]
                    if chunk is None or chunk.origin_rank != i or chunk.origin_index != c:
                        _check_report(r, index, f"should be ({i}, {c}) given {chunk}")
                        ok = False
        return ok

    def get_buffer_index(self, rank, buffer, index):
        # in place, the input is the rank's block of the output
        if self.inplace and buffer == Buffer.input:
            return Buffer.output, index + rank * self.chunk_factor
        return buffer, index


class AllReduce(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace, num_ranks_per_node=-1, **kwargs):
        Collective.__init__(self, num_ranks, chunk_factor, inplace, 0, num_ranks_per_node, **kwargs)
        self.name = "allreduce"

    def init_buffers(self):
        out = []
        for r in range(self.num_ranks):
            inp = [Chunk(r, c, -1, c) for c in range(self.chunk_factor)]
            out.append({Buffer.input: inp,
                        Buffer.output: inp if self.inplace else [None] * self.chunk_factor})
        return out

    def check(self, prog) -> bool:
        buf = Buffer.input if self.inplace else Buffer.output
        ok = True
        for r in range(self.num_ranks):
            output = prog.buffers[r][buf]
            for c in range(self.chunk_factor):
                want = ReduceChunk(-1, [Chunk(q, c) for q in range(self.num_ranks)])
                if output[c] is None or output[c] != want:
                    _check_report(r, c, f"should be ReduceChunk index {c} from all ranks, "
                                        f"given {output[c]}")
                    ok = False
        return ok

    def get_buffer_index(self, rank, buffer, index):
        if self.inplace and buffer == Buffer.output:
            return Buffer.input, index
        return buffer, index


class ReduceScatter(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
        self.name = "reduce_scatter"

    def init_buffers(self):
        k = self.chunk_factor
        out = []
        for r in range(self.num_ranks):
            inp = [Chunk(r, i * k + c, i, c) for i in range(self.num_ranks) for c in range(k)]
            out.append({Buffer.input: inp} if self.inplace
                       else {Buffer.input: inp, Buffer.output: [None] * k})
        return out

    def check(self, prog) -> bool:
        k = self.chunk_factor
        buf = Buffer.input if self.inplace else Buffer.output
        ok = True
        for r in range(self.num_ranks):
            output = prog.buffers[r][buf]
            for c in range(k):
                j = r * k + c
                at = j if self.inplace else c
                want = ReduceChunk(-1, [Chunk(q, j) for q in range(self.num_ranks)])
                if output[at] is None or output[at] != want:
                    _check_report(r, at, f"should be index {j} from all ranks given {output[at]}")
                    ok = False
        return ok

    def get_buffer_index(self, rank, buffer, index):
        # in place, the output is the rank's block of the input
        if self.inplace and buffer == Buffer.output:
            return Buffer.input, index + rank * self.chunk_factor
        return buffer, index


class Broadcast(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace, root, create_all_chunks=False):
        Collective.__init__(self, num_ranks, chunk_factor, inplace, root)
        self.name = "broadcast"

    def init_buffers(self):
        k = self.chunk_factor
        out = []
        for r in range(self.num_ranks):
            if self.inplace:
                inp = [Chunk(self.root, c, -1, c) for c in range(k)]
                out.append({Buffer.input: inp, Buffer.output: inp})
            else:
                inp = [Chunk(self.root, c, -1, c) if r == self.root else None for c in range(k)]
                out.append({Buffer.input: inp, Buffer.output: [None] * k})
        return out

    def check(self, prog) -> bool:
        ok = True
        for r in range(self.num_ranks):
            output = prog.buffers[r][Buffer.output]
            for c in range(self.chunk_factor):
                chunk = output[c]
                if chunk is None or chunk.origin_rank != self.root or chunk.origin_index != c:
                    _check_report(r, c, f"should be ({self.root}, {c}) given {chunk}")
                    ok = False
        return ok


__all__ = ["AllGather", "AllReduce", "AllToAll", "Broadcast", "CCXML_COLLS", "Collective",
           "ReduceScatter"]
