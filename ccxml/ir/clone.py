"""A copy of an IR schedule that shares no mutable object with the original, so that the passes
can compile the copy and leave the original as the Chunk API recorded it
(:meth:`ccxml.frontend.chunk.Program.compile` compiles one program for several targets this way;
xDSL's ``ModulePass.apply_to_clone`` in ``xdsl/passes.py`` is the same idea).

:func:`clone_algo` is the fast path: it copies every field of every step by name, in one loop,
and maps the references between steps (links, dependencies, the Chunk API's read/overwrite
records) and to thread blocks onto the copies. Its exact twin is ``copy.deepcopy`` (the tests
compare the two, and check that the fields copied here are all of :class:`Step`'s slots).
"""
from __future__ import annotations

from typing import Any

from ccxml.ir.nodes import GPU, TB, Algo, Step

#: the Step slots clone_algo copies as they are (immutable values: ints, enums, operand tuples)
STEP_VALUES = ("type", "gpu", "src", "dst", "cnt", "send_peer", "recv_peer", "chan",
               "original_index", "send_index", "recv_index", "publish", "_s")
#: the Step slots that refer to other steps or to a TB (mapped onto the copies)
STEP_REFERENCES = ("tb", "recv_from", "send_to", "_dep_pack", "dep", "merged_into",
                   "readers_after", "overwritten_by")


def _remap(held: Any, new: dict[Step, Step]) -> Any:
    """A record of the Chunk API (None, a step, an (index, step) pair, or a list/tuple of those)
    with every step replaced by its copy."""
    if held is None:
        return None
    kind = type(held)
    if kind is Step:
        return new[held]
    if kind is tuple and len(held) == 2 and type(held[0]) is int:
        return (held[0], new[held[1]])
    return kind(_remap(x, new) for x in held)


def clone_algo(algo: Algo) -> Algo:
    """A copy of ``algo`` (GPUs, TBs, pending and placed steps) sharing no mutable object."""
    out = Algo.__new__(Algo)
    out.__dict__.update(algo.__dict__)
    out.extra_attrs = dict(algo.extra_attrs)
    out.lane_groups = list(algo.lane_groups)
    new: dict[Step, Step] = {}
    new_step = Step.__new__
    old_steps: list[Step] = []
    for gpu in algo.gpus:
        steps = list(gpu.pending)
        for tb in gpu.tbs:
            steps += tb.steps
        for st in steps:
            if st in new:
                continue
            c = new_step(Step)
            c.type, c.gpu, c.src, c.dst, c.cnt = st.type, st.gpu, st.src, st.dst, st.cnt
            c.send_peer, c.recv_peer, c.chan = st.send_peer, st.recv_peer, st.chan
            c.original_index, c.send_index, c.recv_index = (st.original_index, st.send_index,
                                                             st.recv_index)
            c.publish, c._s = st.publish, st._s
            c.readers_after = c.overwritten_by = None
            new[st] = c
            old_steps.append(st)
    tbs: dict[int, TB] = {}
    out.gpus = [_clone_gpu(gpu, new, tbs) for gpu in algo.gpus]
    for tb in tbs.values():
        if tb.origin is not tb:
            tb.origin = tbs[id(tb.origin)]
    for st in old_steps:
        c = new[st]
        t = st.tb
        c.tb = None if t is None else tbs[id(t)]
        d = st.recv_from
        c.recv_from = None if d is None else new[d]
        d = st.send_to
        c.send_to = None if d is None else new[d]
        p = st._dep_pack
        c._dep_pack = None if p is None else new[p] if type(p) is Step else _remap(p, new)
        d = st.dep
        c.dep = None if d is None else new[d]
        d = st.merged_into
        c.merged_into = None if d is None else new[d]
        d = st.readers_after
        if d is not None:
            c.readers_after = new[d] if type(d) is Step else _remap(d, new)
        d = st.overwritten_by
        if d is not None:
            c.overwritten_by = _remap(d, new)
    return out


def _clone_gpu(gpu: GPU, new: dict[Step, Step], tbs: dict[int, TB]) -> GPU:
    g = GPU(gpu.id, gpu.input_chunks, gpu.output_chunks)
    g.scratch_chunks = gpu.scratch_chunks
    g.pending = [new[st] for st in gpu.pending]
    for tb in gpu.tbs:
        c = TB.__new__(TB)
        c.id, c.send, c.recv, c.chan, c.gpu = tb.id, tb.send, tb.recv, tb.chan, tb.gpu
        c.send_count, c.recv_count, c.segment = tb.send_count, tb.recv_count, tb.segment
        c.origin = tb.origin                    # mapped once every TB has its copy
        c.steps = [new[st] for st in tb.steps]
        tbs[id(tb)] = c
        g.tbs.append(c)
    g._index = {key: tbs[id(tb)] for key, tb in gpu._index.items()}
    g._usage = {chan: (set(sends), set(recvs)) for chan, (sends, recvs) in gpu._usage.items()}
    return g
