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

    # Flags set on every member below (plain attributes: they sit on hot loops):
    # ``sends`` (pushes to the TB's send peer), ``receives`` (pulls from its recv peer),
    # ``reads_src`` / ``writes_dst`` (touches the local srcbuf/dstbuf range), ``reduces``.
    sends: bool
    receives: bool
    reads_src: bool
    writes_dst: bool
    reduces: bool
    __hash__ = str.__hash__


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
for _member in StepType:
    _member.sends = _member in _SENDING
    _member.receives = _member in _RECEIVING
    _member.reads_src = _member in _READS_SRC
    _member.writes_dst = _member in _WRITES_DST
    _member.reduces = _member in _REDUCING
del _member


class Buffer(str, Enum):
    """A ``srcbuf``/``dstbuf`` value."""

    INPUT = "i"
    OUTPUT = "o"
    SCRATCH = "s"

    __hash__ = str.__hash__


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

    __hash__ = str.__hash__

    @property
    def rooted(self) -> bool:
        return self in (Coll.BROADCAST, Coll.REDUCE, Coll.GATHER, Coll.SCATTER)


#: the ``coll`` of a collective ccxml does not define (MSCCLang's custom collectives): only the
#: legacy runtime loads it, and there is no postcondition to check it against
CUSTOM_COLL = "custom"

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


def max_allowed_count(proto: "Proto | str", max_bytes: int, nchunksperloop: int) -> int:
    """Chunks one primitive call moves (runtime §6): max(1, min(71, chunkEffectiveSize /
    bytesPerChunk)) with bytesPerChunk = maxBytes / nchunksperloop. ``max_bytes`` 0 (no upper
    bound) is the worst case: one chunk per call."""
    if max_bytes <= 0 or nchunksperloop <= 0:
        return 1
    per_chunk = max_bytes / nchunksperloop
    return max(1, min(MAX_COUNT_PER_CALL, int(CHUNK_EFFECTIVE_BYTES[Proto(proto)] // per_chunk)))


def message_cap(proto: "Proto | str", max_bytes: int, nchunksperloop: int) -> int:
    """Largest message (in chunks) that cannot wedge a link: one call less than the link buffers
    (runtime §9.5: a receive-and-send needs room to send before it receives), at most
    :data:`MAX_COUNT_PER_CALL`. With no upper bound on the size (``max_bytes`` 0) a call moves one
    chunk, so messages are 1 chunk long. The Chunk API cuts every transfer to it."""
    calls = LINK_CALLS[Proto(proto)] - 1
    return max(1, min(MAX_COUNT_PER_CALL, calls * max_allowed_count(proto, max_bytes, nchunksperloop)))


def link_calls(cnt: int, allowed: int) -> int:
    """Primitive calls a step of ``cnt`` chunks issues (ceil(cnt / maxAllowedCount))."""
    return -(-cnt // allowed) if cnt > 0 else 0


@dataclass(frozen=True)
class Profile:
    """What one runtime's loader and kernel accept (msccl-runtime.md §5, §10)."""

    name: str
    description: str
    step_types: frozenset[StepType]
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


#: no runtime's limits at all (every step type, as many steps, TBs, channels, XML nodes as a
#: schedule needs): what ``ccxml simulate`` and ``ccxml select`` build a schedule for when a
#: target's limits stop it, to still time it (the simulator has no limit). Not a runtime: it is
#: not in :data:`PROFILES`, so no ``--target`` offers it and no file is written for it.
UNBOUNDED = Profile("unbounded", "no runtime's limits (for timing only)", ALL_STEP_TYPES,
                    max_steps_per_tb=1 << 62, max_tbs=1 << 62, max_dep_tb=1 << 62, max_chan=1 << 62,
                    max_cnt=1 << 62, max_nodes=1 << 62, max_tbs_per_chan_dir=1 << 62, max_attrs=1 << 62)


def profile(name: str) -> Profile:
    """The profile called ``name`` (a runtime of :data:`PROFILES`, or :data:`UNBOUNDED`);
    ValueError naming the known ones otherwise."""
    if name == UNBOUNDED.name:
        return UNBOUNDED
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(PROFILES)}") from None


# The members as plain module constants for hot loops (a member lookup on its Enum class costs
# about ten times a global lookup): ``from ccxml.vocab.wire import SEND, RECV, INPUT``.
(SEND, RECV, RECV_COPY_SEND, RECV_REDUCE_COPY, RECV_REDUCE_SEND, RECV_REDUCE_COPY_SEND, COPY,
 REDUCE, NOP) = StepType
INPUT, OUTPUT, SCRATCH = Buffer
