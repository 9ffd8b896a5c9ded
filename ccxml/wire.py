"""The MSCCL XML wire vocabulary: step types, buffers, protocols, collectives, target profiles.

This is the lowest layer of ccxml. Enums carry the exact strings the runtimes read, and
:class:`Profile` carries the limits of each runtime (../shared/reference/msccl-runtime.md §3-§10).
Every other layer (Chunk API, IR, passes, writer, loader, interpreter, simulator) imports its
vocabulary from here and nothing here imports from them.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class StepType(str, Enum):
    """A ``<step type=...>``; the member name says what the kernel primitive does."""

    SEND = "s"
    RECV = "r"
    RECV_COPY_SEND = "rcs"
    RECV_REDUCE_COPY = "rrc"
    RECV_REDUCE_SEND = "rrs"
    RECV_REDUCE_COPY_SEND = "rrcs"
    COPY = "cpy"
    REDUCE = "re"
    NOP = "nop"

    @property
    def sends(self) -> bool:
        """The step pushes data to the TB's send peer."""
        return self in _SENDING

    @property
    def receives(self) -> bool:
        """The step pulls data from the TB's recv peer."""
        return self in _RECEIVING

    @property
    def reads_src(self) -> bool:
        """The step reads the local buffer named by srcbuf/srcoff."""
        return self in _READS_SRC

    @property
    def writes_dst(self) -> bool:
        """The step writes the local buffer named by dstbuf/dstoff."""
        return self in _WRITES_DST

    @property
    def reduces(self) -> bool:
        """The step combines two values with the collective's operator."""
        return self in _REDUCING


_SENDING = frozenset({StepType.SEND, StepType.RECV_COPY_SEND, StepType.RECV_REDUCE_SEND,
                      StepType.RECV_REDUCE_COPY_SEND})
_RECEIVING = frozenset({StepType.RECV, StepType.RECV_COPY_SEND, StepType.RECV_REDUCE_SEND,
                        StepType.RECV_REDUCE_COPY, StepType.RECV_REDUCE_COPY_SEND})
_READS_SRC = frozenset({StepType.SEND, StepType.RECV_REDUCE_SEND, StepType.RECV_REDUCE_COPY,
                        StepType.RECV_REDUCE_COPY_SEND, StepType.COPY, StepType.REDUCE})
_WRITES_DST = frozenset({StepType.RECV, StepType.RECV_COPY_SEND, StepType.RECV_REDUCE_COPY,
                         StepType.RECV_REDUCE_COPY_SEND, StepType.COPY, StepType.REDUCE})
_REDUCING = frozenset({StepType.RECV_REDUCE_COPY, StepType.RECV_REDUCE_SEND,
                       StepType.RECV_REDUCE_COPY_SEND, StepType.REDUCE})


class Buffer(str, Enum):
    """A ``srcbuf``/``dstbuf`` value."""

    INPUT = "i"
    OUTPUT = "o"
    SCRATCH = "s"


class Proto(str, Enum):
    """The ``proto`` attribute (exact case)."""

    SIMPLE = "Simple"
    LL = "LL"
    LL128 = "LL128"


class Coll(str, Enum):
    """The ``coll`` attribute, in the names msccl-executor-nccl and RCCL accept."""

    ALLREDUCE = "allreduce"
    ALLGATHER = "allgather"
    REDUCESCATTER = "reducescatter"
    ALLTOALL = "alltoall"
    ALLTOALLV = "alltoallv"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"

    @property
    def rooted(self) -> bool:
        return self in (Coll.BROADCAST, Coll.REDUCE, Coll.GATHER, Coll.SCATTER)


#: step types each runtime can execute
ALL_STEP_TYPES = frozenset(StepType)
RCCL_STEP_TYPES = frozenset({StepType.SEND, StepType.RECV, StepType.COPY, StepType.REDUCE,
                             StepType.NOP})

#: link slots a Simple call uses / the FIFO depth; LL and LL128 calls use one slot each
NCCL_STEPS = 8
#: pending primitive calls a link buffers before its sender blocks (§9.5)
LINK_CALLS = {Proto.SIMPLE: 2, Proto.LL: 8, Proto.LL128: 8}
#: largest chunk count one primitive call moves
MAX_COUNT_PER_CALL = 71
#: ``chunkEffectiveSize`` with NCCL's default buffers, bytes (§6)
CHUNK_EFFECTIVE_BYTES = {Proto.SIMPLE: 2 * 1024 * 1024, Proto.LL: 32 * 1024, Proto.LL128: 576000}
#: fused ``re`` operands the kernel accepts
MAX_REDUCE_FUSION = 16


@dataclass(frozen=True)
class Profile:
    """What one runtime's loader and kernel accept (msccl-runtime.md §5, §10)."""

    name: str
    description: str
    step_types: frozenset
    max_steps_per_tb: int
    max_tbs: int           # TB ids per GPU must be < max_tbs
    max_dep_tb: int        # depid must be <= this (int8 in the kernel)
    max_chan: int          # chan must be <= this (safe value, not the off-by-one)
    max_cnt: int           # cnt must be <= this
    max_nodes: int         # 1 + ngpus + tbs(rank) + steps(rank) must be <= this
    max_tbs_per_chan_dir: int = 32   # TBs with a send (recv) peer on one channel
    max_attrs: int = 16

    @property
    def fused_types_allowed(self) -> bool:
        return StepType.RECV_COPY_SEND in self.step_types


PROFILES: dict[str, Profile] = {
    "exec": Profile("exec", "msccl-executor-nccl (NVIDIA)", ALL_STEP_TYPES,
                    max_steps_per_tb=64, max_tbs=1024, max_dep_tb=127, max_chan=31, max_cnt=71,
                    max_nodes=4095),
    "rccl": Profile("rccl", "RCCL's MSCCL (AMD): s r cpy re nop only", RCCL_STEP_TYPES,
                    max_steps_per_tb=64, max_tbs=64, max_dep_tb=63, max_chan=127, max_cnt=71,
                    max_nodes=4095),
    "legacy": Profile("legacy", "microsoft/msccl 0.1 runtime", ALL_STEP_TYPES,
                      max_steps_per_tb=256, max_tbs=216, max_dep_tb=127, max_chan=31, max_cnt=71,
                      max_nodes=4095),
}

#: legacy spells these collectives differently
LEGACY_COLL_NAMES = {Coll.REDUCESCATTER: "reduce_scatter"}


def profile(name: str) -> Profile:
    """The profile called ``name``; ValueError naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(PROFILES)}") from None
