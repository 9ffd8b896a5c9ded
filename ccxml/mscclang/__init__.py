"""MSCCLang: msccl-tools' program API, compiled by ccxml.

Programs written for microsoft/msccl-tools or Azure/msccl-tools (``from msccl.language import *``)
run here unchanged: ``ccxml mscclang SCRIPT.py ARGS`` serves ``msccl.language``,
``msccl.language.collectives`` and ``msccl.topologies`` from this package for that run
(:mod:`.runner`), and each ``XML()`` becomes a file every current runtime loads. Code may also
import the API from here directly.

* :mod:`.program` — ``MSCCLProgram``, ``chunk``, ``Ref.copy``/``reduce``/``split``/``group``,
  ``XML``, ``Check``
* :mod:`.collectives` — ``AllReduce``, ``AllGather``, ``ReduceScatter``, ``AllToAll``,
  ``Broadcast``, and ``Collective`` for custom ones
* :mod:`.topologies` — ``fully_connected`` and the other builders msccl-tools' examples use
* :mod:`.chunks` — the symbolic data: ``Buffer``, ``Chunk``, ``ReduceChunk``, ``BufferSlice``
* :mod:`.lower` — the recorded program through ccxml's Chunk API, passes and writer
* :mod:`.runner` — the import hook and the script runner behind ``ccxml mscclang``
"""
from __future__ import annotations

from ccxml.mscclang import collectives, topologies
from ccxml.mscclang.chunks import Buffer, BufferSlice, Chunk, ReduceChunk, ThreadblockPolicy
from ccxml.mscclang.collectives import (
    AllGather,
    AllReduce,
    AllToAll,
    Broadcast,
    Collective,
    ReduceScatter,
)
from ccxml.mscclang.program import (
    XML,
    Check,
    ChunkRef,
    MSCCLProgram,
    Print,
    Ref,
    Session,
    chunk,
    create_scratch,
    session,
)
from ccxml.mscclang.topologies import Topology, fully_connected

#: what ``msccl.language`` offers a script (``from msccl.language import *``)
LANGUAGE = ("Buffer", "BufferSlice", "Check", "Chunk", "ChunkRef", "MSCCLProgram", "Print",
            "ReduceChunk", "Ref", "ThreadblockPolicy", "XML", "chunk", "create_scratch")

__all__ = ["XML", "AllGather", "AllReduce", "AllToAll", "Broadcast", "Buffer", "BufferSlice",
           "Check", "Chunk", "ChunkRef", "Collective", "LANGUAGE", "MSCCLProgram", "Print",
           "ReduceChunk", "ReduceScatter", "Ref", "Session", "ThreadblockPolicy", "Topology",
           "chunk", "collectives", "create_scratch", "fully_connected", "session", "topologies"]
