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


def _check_slots(prog, buffer, expected) -> bool:
    """Whether every (rank, index, want) of ``expected`` holds: the chunk at ``index`` of
    ``buffer`` on ``rank`` is the input chunk ``want`` = (origin rank, origin index), or equals
    ``want`` when it is a ReduceChunk. Each wrong chunk is printed, as msccl-tools' checks print
    them (their output is part of a script's output)."""
    ok = True
    for r, index, want in expected:
        chunk = prog.buffers[r][buffer][index]
        if type(want) is tuple:
            right = chunk is not None and (chunk.origin_rank, chunk.origin_index) == want
        else:
            right = chunk is not None and chunk == want
        if not right:
            print(f"Rank {r} chunk {index} is incorrect should be {want} given {chunk}")
            ok = False
    return ok


def _sum_of(num_ranks: int, index: int) -> ReduceChunk:
    """Input chunk ``index`` of every rank, reduced."""
    return ReduceChunk(-1, [Chunk(q, index) for q in range(num_ranks)])


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
        k = self.chunk_factor
        return _check_slots(prog, Buffer.output, ((r, i * k + c, (i, r * k + c))
                                                  for r in range(self.num_ranks)
                                                  for i in range(self.num_ranks) for c in range(k)))


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
        k = self.chunk_factor
        return _check_slots(prog, Buffer.output, ((r, i * k + c, (i, c))
                                                  for r in range(self.num_ranks)
                                                  for i in range(self.num_ranks) for c in range(k)))

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
        sums = [_sum_of(self.num_ranks, c) for c in range(self.chunk_factor)]
        return _check_slots(prog, Buffer.input if self.inplace else Buffer.output,
                            ((r, c, sums[c]) for r in range(self.num_ranks)
                             for c in range(self.chunk_factor)))

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
        return _check_slots(prog, Buffer.input if self.inplace else Buffer.output,
                            ((r, r * k + c if self.inplace else c, _sum_of(self.num_ranks, r * k + c))
                             for r in range(self.num_ranks) for c in range(k)))

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
        return _check_slots(prog, Buffer.output, ((r, c, (self.root, c)) for r in range(self.num_ranks)
                                                  for c in range(self.chunk_factor)))


__all__ = ["AllGather", "AllReduce", "AllToAll", "Broadcast", "CCXML_COLLS", "Collective",
           "ReduceScatter"]
