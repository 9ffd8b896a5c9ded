"""The ``chakra`` backend: one Chakra execution trace per rank, for ASTRA-sim's custom collectives.

``ccxml export chakra SOURCE --bytes B -o PREFIX`` writes ``PREFIX.<rank>.et``; ASTRA-sim runs
them for a collective named in its system configuration
(``"all-reduce-implementation-custom": ["PREFIX"]``, docs/export.md).

The mapping is the one of astra-sim/collectiveapi's ``chakra_converter/mscclang2chakra_converter.py``
(``MSCCL2ChakraConverter``), which reads an MSCCL XML file; ccxml reads the loaded schedule
instead, with the same result on every file that converter accepts (tests/export compare the
two on an 8-rank ring, node by node and byte by byte):

* per rank, node ids count from 0 in document order (TB by TB, step by step); every ``<step>``
  takes one id, a ``nop`` too (it writes no node), and a step writing more than one node takes
  one more id for each further node;
* a step that receives writes a ``COMM_RECV_NODE_tb<T>_step<S>`` (attributes ``comm_type`` =
  6 (int64), ``comm_src`` = the TB's ``recv`` peer, ``comm_tag`` = the TB's channel,
  ``msg_chunk_cnt`` = cnt, ``msg_chunk_idx`` and ``chunk_offset`` = dstoff, ``total_chunk_cnt`` =
  the rank's ``i_chunks`` or, when 0, ``o_chunks``, ``local_time_step`` = S, ``is_rrc`` (bool)
  when the step reduces what it receives, ``hasdep``, ``deps``, ``depid``, ``tb_id``, all int32);
  a step that reduces writes a ``COMP_NODE_tb<T>_step<S>`` (no attributes) depending on it; a
  step that sends writes a ``COMM_SEND_NODE_tb<T>_step<S>`` (``comm_type`` = 5, ``comm_dst`` =
  the TB's ``send`` peer, ``chunk_offset`` and ``msg_chunk_idx`` = srcoff, the rest as above);
* a step's first node depends (``data_deps``) on its ``depid``/``deps`` step, then on the
  previous step of its thread block (the last node of each, a ``nop`` standing for what it
  waits for); the nodes of one step depend each on the one before.

What ccxml adds, where upstream has nothing or stops:

* ``comm_size`` (int64, bytes) on every send and receive: cnt × the chunk size at ``--bytes B``
  (:func:`ccxml.vocab.sizes.chunk_bytes`, nccl-tests' size convention, rounded up to a whole
  byte). ASTRA-sim's ``CustomAlgorithm`` reads it where the chunk attributes are absent or
  invalid (older releases read only it); recent releases size each message from
  ``msg_chunk_cnt``/``total_chunk_cnt`` and the workload's collective size instead.
* the fused steps, which upstream does not convert: ``rcs`` writes receive, send; ``rrs`` and
  ``rrcs`` receive, reduce, send; ``cpy`` and ``re`` a ``COMP_NODE`` (a local copy or reduction);
  upstream requires srcoff = dstoff, ccxml does not;
* a dependency on a ``nop`` stands for the nop's own dependencies (upstream reports an error
  and drops it), and repeated dependencies are written once.
"""
from __future__ import annotations

import math

from ccxml.export.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, frame, messages
from ccxml.loader.model import Schedule
from ccxml.vocab.sizes import chunk_bytes

#: GlobalMetadata's ``schema`` attribute, as the upstream converter writes it
SCHEMA = "1.0.2-chakra.0.0.4"

#: the nodes each step type writes, in order: R(eceive), C(omputation: reduce or copy), S(end)
PARTS = {"s": "S", "r": "R", "rrc": "RC", "rcs": "RS", "rrs": "RCS", "rrcs": "RCS", "cpy": "C",
         "re": "C", "nop": ""}
_REDUCES_RECEIVED = {"rrc", "rrs", "rrcs"}


class ExportError(ValueError):
    """The schedule cannot be written as a Chakra trace (one line)."""


def export(schedule: Schedule, out: str, *, nbytes: int, source_text: str = "", **_) -> list[tuple[str, bytes]]:
    """The files of ``schedule`` as Chakra traces: ``[(f"{out}.{rank}.et", bytes)]`` in the
    order of the ``<gpu>`` elements. ``nbytes`` sizes ``comm_size`` (nccl-tests' size of the
    collective); ``source_text`` is stored as GlobalMetadata's ``input_file`` as upstream does.
    Raises :class:`ExportError` for a schedule that has no consistent trace, MissingProtobuf
    (an ImportError) without ``protobuf``."""
    m = messages()
    if not schedule.gpus:
        raise ExportError("the schedule has no <gpu>")
    C = schedule.nchunksperloop
    if C <= 0:
        raise ExportError(f"nchunksperloop must be > 0 to size chunks, got {C}")
    if nbytes < 0:
        raise ExportError(f"message size must be >= 0 bytes, got {nbytes}")
    chunk = chunk_bytes(schedule.coll, nbytes, C, schedule.ngpus or len(schedule.gpus))
    meta = m.GlobalMetadata(attr=[m.AttributeProto(name="schema", string_val=SCHEMA),
                                  m.AttributeProto(name="input_file", string_val=source_text),
                                  m.AttributeProto(name="collective", string_val=schedule.coll)])
    head = frame(meta)
    files, seen = [], set()
    for gpu in schedule.gpus:
        if gpu.id in seen:
            raise ExportError(f"gpu id {gpu.id} appears twice")
        seen.add(gpu.id)
        nodes = rank_nodes(gpu, chunk, m)
        files.append((f"{out}.{gpu.id}.et", head + b"".join(map(frame, nodes))))
    return files


def rank_nodes(gpu, chunk: float, m=None) -> list:
    """The Node messages of one rank, in the order they are written."""
    m = m or messages()
    total = gpu.i_chunks or gpu.o_chunks
    tbs: dict[int, tuple] = {}       # tb id -> (tb, steps, [node ids of each step])
    next_id = 0
    for tb in gpu.tbs:
        if tb.id in tbs:
            raise ExportError(f"gpu {gpu.id} has two TBs with id {tb.id}")
        steps = tb.read_steps()
        ids = []
        for i, st in enumerate(steps):
            if st.s != i:
                raise ExportError(f"gpu {gpu.id} tb {tb.id}: step {i} is numbered s={st.s}")
            parts = PARTS.get(st.type)
            if parts is None:
                raise ExportError(f"gpu {gpu.id} tb {tb.id} step {i}: unknown step type {st.type!r}")
            if "S" in parts and tb.send < 0:
                raise ExportError(f"gpu {gpu.id} tb {tb.id} step {i}: {st.type} sends but the TB has no send peer")
            if "R" in parts and tb.recv < 0:
                raise ExportError(f"gpu {gpu.id} tb {tb.id} step {i}: {st.type} receives but the TB has no "
                                  f"recv peer")
            # every step takes an id, a nop too (as upstream); further nodes of a step take more
            ids.append(list(range(next_id, next_id + len(parts))))
            next_id += max(1, len(parts))
        tbs[tb.id] = (tb, steps, ids)
    done = _Done(gpu.id, tbs)
    Node = m.Node
    nodes = []
    for tb_id, (tb, steps, ids) in tbs.items():
        for i, st in enumerate(steps):
            if not ids[i]:
                continue
            deps = []
            if st.depid != -1:
                deps += done.of(st.depid, st.deps, (tb_id, i))
            if i > 0:
                deps += done.of(tb_id, i - 1, (tb_id, i))
            prev = None
            for kind, nid in zip(PARTS[st.type], ids[i]):
                # attributes as dicts in the constructor: 1.7x faster than messages appended
                try:
                    node = Node(id=nid, type=_TYPE[kind], name=f"{_NAME[kind]}_tb{tb_id}_step{i}",
                                data_deps=list(dict.fromkeys(deps)) if prev is None else [prev],
                                attr=() if kind == "C" else _comm_attrs(kind, tb, st, total, chunk))
                except ValueError as e:         # an attribute outside int32 (int64 for comm_size)
                    raise ExportError(f"gpu {gpu.id} tb {tb_id} step {i}: {e} (Chakra's attributes are "
                                      f"int32, comm_size int64)") from None
                nodes.append(node)
                prev = nid
    _check_acyclic(gpu.id, nodes)
    return nodes


def _check_acyclic(gpu: int, nodes: list) -> None:
    """ExportError when the rank's dependencies form a cycle (ASTRA-sim would wait forever)."""
    waiting = {n.id: len(n.data_deps) for n in nodes}
    users: dict[int, list[int]] = {}
    for n in nodes:
        for d in n.data_deps:
            users.setdefault(d, []).append(n.id)
    ready = [i for i, k in waiting.items() if k == 0]
    freed = 0
    while ready:
        i = ready.pop()
        freed += 1
        for u in users.get(i, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if freed != len(nodes):
        stuck = next(n for n in nodes if waiting[n.id])
        raise ExportError(f"gpu {gpu}: the steps' dependencies form a cycle (through {stuck.name})")


_TYPE = {"S": COMM_SEND_NODE, "R": COMM_RECV_NODE, "C": COMP_NODE}
_NAME = {"S": "COMM_SEND_NODE", "R": "COMM_RECV_NODE", "C": "COMP_NODE"}


def _comm_attrs(kind: str, tb, st, total: int, chunk: float) -> list[dict]:
    send = kind == "S"
    off = st.srcoff if send else st.dstoff
    out = [{"name": "comm_type", "int64_val": COMM_SEND_NODE if send else COMM_RECV_NODE},
           {"name": "comm_dst", "int32_val": tb.send} if send else {"name": "comm_src", "int32_val": tb.recv},
           {"name": "comm_tag", "int32_val": tb.chan},
           {"name": "msg_chunk_cnt", "int32_val": st.cnt},
           {"name": "msg_chunk_idx", "int32_val": off},
           {"name": "total_chunk_cnt", "int32_val": total},
           {"name": "local_time_step", "int32_val": st.s},
           {"name": "chunk_offset", "int32_val": off}]
    if not send and st.type in _REDUCES_RECEIVED:
        out.append({"name": "is_rrc", "bool_val": True})
    out += [{"name": "hasdep", "int32_val": st.hasdep}, {"name": "deps", "int32_val": st.deps},
            {"name": "depid", "int32_val": st.depid}, {"name": "tb_id", "int32_val": tb.id},
            {"name": "comm_size", "int64_val": math.ceil(st.cnt * chunk)}]
    return out


class _Done:
    """The node ids that stand for "step (tb, s) has finished": its last node, or for a nop
    what the nop waits for (its dependency and the step before it), resolved without
    recursion; a cycle of nops is an ExportError."""

    def __init__(self, gpu: int, tbs: dict):
        self.gpu, self.tbs = gpu, tbs
        self.memo: dict[tuple[int, int], list[int]] = {}

    def of(self, tb: int, s: int, frm) -> list[int]:
        entry = self.tbs.get(tb)
        if entry is None or not 0 <= s < len(entry[1]):
            raise ExportError(f"gpu {self.gpu} tb {frm[0]} step {frm[1]}: depends on tb {tb} step {s}, "
                              f"which does not exist")
        key = (tb, s)
        if key in self.memo:
            return self.memo[key]
        stack, active = [key], set()
        while stack:
            t, i = stack[-1]
            if (t, i) in self.memo:
                stack.pop()
                continue
            _, steps, ids = self.tbs[t]
            if ids[i]:
                self.memo[(t, i)] = [ids[i][-1]]
                stack.pop()
                continue
            st = steps[i]                                  # a nop: what it waits for
            waits = []
            if st.depid != -1:
                e = self.tbs.get(st.depid)
                if e is None or not 0 <= st.deps < len(e[1]):
                    raise ExportError(f"gpu {self.gpu} tb {t} step {i}: depends on tb {st.depid} step "
                                      f"{st.deps}, which does not exist")
                waits.append((st.depid, st.deps))
            if i > 0:
                waits.append((t, i - 1))
            todo = [w for w in waits if w not in self.memo]
            if todo:
                if (t, i) in active:
                    raise ExportError(f"gpu {self.gpu} tb {t} step {i}: nops that wait for each other")
                active.add((t, i))
                stack.extend(todo)
                continue
            self.memo[(t, i)] = list(dict.fromkeys(x for w in waits for x in self.memo[w]))
            stack.pop()
        return self.memo[key]
