"""Every size limit ccxml puts on its inputs, in one place (docs/limits.md explains each).

A file or an option may *declare* any size; ccxml checks each declared size against these limits,
and against the real content of the file, before it allocates anything for it, so that work and
memory grow with what the input holds and not with what it claims. A refusal is one line on
stderr and exit code 2 (unusable input), or 1 where ``verify`` judges a wrong schedule.

Where a limit comes from the MSCCL runtimes (msccl-runtime.md §2 and §5), it is named here
after the runtime's constant; the others are ccxml's own, set well above anything the runtimes
or ccxml's generators produce.
"""
from __future__ import annotations

from typing import BinaryIO

# ---- schedules (MSCCL XML) ----------------------------------------------------------------
#: largest schedule file the loader reads (a 1M-step file is about 110 MB)
MAX_SCHEDULE_BYTES = 512 * 1024 * 1024
#: largest ``ngpus`` ccxml interprets, simulates or shows (the runtimes keep at most 1024
#: ``<gpu>`` elements, MAX_SUBS, msccl-runtime.md §2.14)
MAX_RANKS = 8192
#: int16 offsets (< 32768) plus the largest cnt (71): no step reaches a chunk past this, so a
#: larger ``nchunksperloop``/``i_chunks``/``o_chunks``/``s_chunks`` holds chunks no step can use
MAX_CHUNKS = 32768 + 71
#: ranks × chunks per rank a file may declare without steps to match (the interpreter keeps
#: state per chunk of every rank); beyond it the file must hold at least one step per
#: :data:`CELLS_PER_STEP` of them
FREE_CELLS = 1 << 22
CELLS_PER_STEP = 128
#: the sum of every step's cnt may exceed 72 per step by at most this (cnt < 72 in every
#: runtime, MSCCL_MAX_COUNT): the work of a step grows with its cnt
FREE_COUNT = 1 << 20
COUNT_PER_STEP = 72

# ---- message sizes ------------------------------------------------------------------------
#: largest message size any option accepts (``-b``/``-e``/``--bytes``/``--size``): 1 PiB
MAX_MESSAGE_BYTES = 1 << 50
#: most sizes in one ``-b MIN -e MAX -f FACTOR`` sweep
#: simulate/select/show/export prove an algorithm they build in memory up to this many ranks; above
#: it the interpreter's symbolic values grow as p³ (pipeline AllReduce on dgx-h100: 256 ranks take
#: 1.8 GB to prove, 512 more than 23 GB) and the built schedule is used unproved, with a note
#: (ccxml's algorithms are proved by its tests; a file is always proved)
MAX_PROVED_BUILT_RANKS = 128
MAX_SWEEP_POINTS = 256
#: smallest sweep factor (a factor closer to 1 is a sweep of near-identical sizes)
MIN_SWEEP_FACTOR = 1.001

# ---- topologies ---------------------------------------------------------------------------
#: largest topology file (NCCL XML, TOML or JSON) read; read with a cap, so that /dev/zero or
#: a growing file cannot exhaust memory
MAX_TOPOLOGY_BYTES = 4 * 1024 * 1024
#: most GPUs a topology may describe (all nodes together)
MAX_TOPOLOGY_GPUS = 4096
#: most nodes (servers) a topology may describe
MAX_TOPOLOGY_NODES = 512
#: most GPUs in one node (server) of a ``[network]`` or NCCL XML topology (its links may join
#: every pair: 128 GPUs are 8,128 links)
MAX_NODE_GPUS = 128
#: a ``[network]`` topology's GPUs per node × GPUs in all: the routes its cut bounds take (about
#: 7 s at the limit: 512 nodes of 8 GPUs, or 2 nodes of 128 GPUs joined pair by pair)
MAX_ROUTE_PAIRS = 32768
#: deepest nesting of tables/arrays (TOML, JSON) or elements (NCCL XML) in a topology file
MAX_TOPOLOGY_DEPTH = 32
#: most digits in a number of a topology file
MAX_NUMBER_DIGITS = 30

# ---- counts files (alltoallv --counts) ----------------------------------------------------
#: largest counts file read
MAX_COUNTS_BYTES = 16 * 1024 * 1024
#: largest count in a counts file (chunks one rank sends another)
MAX_COUNT_CHUNKS = MAX_CHUNKS


def read_capped(path: str, cap: int, what: str = "file") -> bytes:
    """The bytes of ``path``, reading at most ``cap + 1`` of them: a ValueError (one line) when
    there are more (a device such as /dev/zero, a huge or growing file), OSError as ``open``
    raises it. Read in blocks, so that memory follows what the file holds, not the cap
    (``read(cap + 1)`` reserves the whole cap at once)."""
    with open(path, "rb") as fh:
        return read_capped_from(fh, cap, f"{path}: {what}")


def read_capped_from(fh: BinaryIO, cap: int, what: str) -> bytes:
    """:func:`read_capped` of an open binary file ``fh``; ``what`` starts the error message."""
    parts: list[bytes] = []
    got = 0
    while got <= cap:
        block = fh.read(min(1 << 20, cap + 1 - got))
        if not block:
            break
        parts.append(block)
        got += len(block)
    if got > cap:
        raise ValueError(f"{what} is larger than {cap} bytes (the limit)")
    return b"".join(parts)
