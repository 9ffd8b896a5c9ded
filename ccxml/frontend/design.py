"""The framework design's classes — ``Algo → GPU → TB → Step`` and ``Chunk`` — served by ccxml.

Code written to the design ccxml follows (MSCCL-XML-Builder, ../shared/reference/peers.md §A1)
runs as written: it builds an :class:`Algo`, adds :class:`TB` s to its GPUs, issues steps with
:class:`Chunk`'s ``copy`` / ``send`` / ``recv`` / ``copy_diff`` / ``rcs`` (or a raw
:class:`Step` through ``TB.add_step``), then calls ``build_all_dependencies`` and
``save_xml``. Underneath it is ccxml's own machinery, so the result is what ccxml guarantees:

* every step is issued through the Chunk API's :class:`~ccxml.frontend.chunk.Program`, which
  adds the data dependencies (last writer, readers since) to the ones the code declares;
* a step goes into the TB the design's rule picks (the one on its connection, else a new one);
* ``build_all_dependencies(merge_rcs, sort)`` runs ccxml's passes — a deadlock-free order
  (``sort``), ``rcs``/``rrcs``/``rrs`` fusion (``merge_rcs``), the target's limits, nops for
  extra dependencies, numbers from object references — and matches the sends and receives the
  code did not bind with ``peer_step`` (k-th with k-th per link; an end left over is an error
  naming both ranks);
* ``save_xml`` writes through ccxml's writer (atomically); ``TB.to_xml`` / ``GPU.to_xml`` /
  ``Algo.to_xml`` give lxml elements of what the file holds.

The classes here are thin views: the data lives in ccxml's IR (:mod:`ccxml.ir.nodes`), which
answers the design's data names itself (``srcbuf``, ``channel_usage``, ``find_tb``, ...); this
module adds the behaviour, which needs the passes and the writer the IR may not import. TB ids,
``s``, ``depid``/``deps``/``hasdep`` are the compiler's after the build (TBs are renumbered as
real files number them); the ones a raw ``Step(...)`` is given are ignored.
"""
from __future__ import annotations

from ccxml.frontend.chunk import Program, buffer_named
from ccxml.ir import nodes as ir
from ccxml.vocab.errors import ChunkError, IRError
from ccxml.vocab.wire import StepType
from ccxml.writer.msccl import gpu_element, save_xml, tb_element, to_element

#: the algo attributes the design names, as properties over the IR's
_ALGO_ATTRS = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
               "outofplace", "minBytes", "maxBytes")


class Algo:
    """``<algo>``: ``Algo(name, proto, nchannels, nchunksperloop, ngpus, coll, inplace,
    outofplace, minBytes, maxBytes)``; ccxml's own keywords: ``root`` (broadcast, reduce,
    gather, scatter) and ``target``, the runtime whose rules the file meets.

    The buffers do not alias (each step names the buffer it uses); ``inplace``/``outofplace``
    say which call forms the file declares, and the verifier checks each one declared."""

    def __init__(self, name: str, proto: str = "Simple", nchannels: int = 1, nchunksperloop: int = 2,
                 ngpus: int = 2, coll: str = "allgather", inplace: int = 1, outofplace: int = 1,
                 minBytes: int = 0, maxBytes: int = 0, *, root: int | None = None,
                 target: str = "exec"):
        self.program = Program(name, coll, ngpus, nchunksperloop, proto=proto, inplace=False,
                               root=root, min_bytes=minBytes, max_bytes=maxBytes)
        self.ir = self.program.algo
        self.ir.inplace, self.ir.outofplace = (1 if inplace else 0), (1 if outofplace else 0)
        self.ir.nchannels = nchannels
        self.target = target
        self.gpus = [GPU(self, g) for g in self.ir.gpus]
        self._views: dict = {}              # IR object -> its view (one view per object)
        self._built = False

    def get_gpu(self, gpu_id: int) -> "GPU":
        if isinstance(gpu_id, int) and 0 <= gpu_id < len(self.gpus):
            return self.gpus[gpu_id]
        raise IRError(f"GPU {gpu_id} not found (ranks 0..{len(self.gpus) - 1})")

    def build_all_dependencies(self, merge_rcs: bool = False, sort: bool = True) -> None:
        """Compile: match the unbound ends, order (``sort``), fuse (``merge_rcs``), fit the
        target, build the dependencies and number everything."""
        if self._built:
            return
        self.program.compile(self.target, merge_rcs=merge_rcs, sort=sort, consume=True)
        self._built = True

    def _ready(self) -> None:
        if not self._built:
            self.build_all_dependencies()

    def to_xml(self):
        self._ready()
        return to_element(self.ir, self.target)

    def save_xml(self, filename) -> None:
        self._ready()
        save_xml(self.ir, filename, self.target)

    def _view(self, obj, cls):
        v = self._views.get(obj)
        if v is None:
            v = self._views[obj] = cls._of(self, obj)
        return v


def _algo_attr(name: str) -> property:
    return property(lambda self: getattr(self.ir, name) if name != "coll" else _coll(self.ir),
                    doc=f"the ``{name}`` attribute")


def _coll(algo) -> str:
    return getattr(algo.coll, "value", algo.coll)


for _name in _ALGO_ATTRS:
    setattr(Algo, _name, _algo_attr(_name))
del _name


class GPU:
    """``<gpu>``: a view of one IR GPU of an :class:`Algo`."""

    def __init__(self, algo: Algo, gpu: ir.GPU):
        self.algo = algo
        self.ir = gpu

    @property
    def id(self) -> int:
        return self.ir.id

    @property
    def tbs(self) -> list["TB"]:
        return [self.algo._view(tb, TB) for tb in self.ir.tbs]

    @property
    def channel_usage(self) -> dict[int, dict[str, list[int]]]:
        return self.ir.channel_usage

    def get_next_tb_id(self) -> int:
        return len(self.ir.tbs)

    def add_tb(self, tb: "TB") -> None:
        """Add ``tb`` (id None: the next one; else it must be the next one); a second TB on one
        (channel, peer) connection is refused (IRError)."""
        if tb.ir.gpu >= 0:
            raise IRError(f"TB {tb} is already on gpu {tb.ir.gpu}")
        n = len(self.ir.tbs)
        if tb.requested_id is not None and tb.requested_id != n:
            raise IRError(f"TB id={tb.requested_id} is not continuous. Expected {n}")
        self.ir.add_tb(tb.ir)
        tb.ir.id = n
        tb.algo = self.algo
        self.algo._views[tb.ir] = tb

    def find_tb(self, send: int | None = None, recv: int | None = None,
                chan: int | None = None) -> "TB | None":
        tb = self.ir.find_tb(send, recv, chan)
        return None if tb is None else self.algo._view(tb, TB)

    def to_xml(self):
        self.algo._ready()
        return gpu_element(self.ir)

    def __repr__(self) -> str:
        return f"<GPU {self.id}: {len(self.ir.tbs)} TBs>"


class TB:
    """``<tb>``: ``TB(id=None, send=-1, recv=-1, chan=0)``, a view of one IR TB."""

    def __init__(self, id: int | None = None, send: int = -1, recv: int = -1, chan: int = 0):
        self.ir = ir.TB(send, recv, chan)
        self.requested_id = id
        self.algo: Algo | None = None

    @classmethod
    def _of(cls, algo: Algo, tb: ir.TB) -> "TB":
        view = cls.__new__(cls)
        view.ir, view.requested_id, view.algo = tb, None, algo
        return view

    id = property(lambda self: self.ir.id if self.ir.id >= 0 else self.requested_id)
    send = property(lambda self: self.ir.send)
    recv = property(lambda self: self.ir.recv)
    chan = property(lambda self: self.ir.chan)
    send_index = property(lambda self: self.ir.send_index, doc="the index its next send gets")
    recv_index = property(lambda self: self.ir.recv_index, doc="the index its next receive gets")

    @property
    def steps(self) -> list["Step"]:
        if self.algo is None:
            return []
        return [self.algo._view(st, Step) for st in self.ir.steps]

    def get_next_step_id(self) -> int:
        return len(self.ir.steps)

    def add_step(self, step: "Step") -> "Step":
        """Issue ``step`` (built by ``Step(...)`` or a Chunk method) into this TB: its peers are
        this TB's, its dependencies the ones it declares plus its data dependencies."""
        if self.algo is None:
            raise IRError("add the TB to a GPU (GPU.add_tb) before adding steps to it")
        if step.ir is not None:
            raise IRError(f"{step} is already in a TB")
        step._issue(self)
        return step

    def to_xml(self):
        if self.algo is not None:
            self.algo._ready()
        return tb_element(self.ir)

    def __repr__(self) -> str:
        return f"<TB id={self.id} send={self.send} recv={self.recv} chan={self.chan}>"


class Step:
    """``<step>``: ``Step(s, type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep)``.

    Until ``TB.add_step`` it holds what it was given; then it is a view of the IR step issued
    for it, and ``s``, ``depid``, ``deps`` and ``hasdep`` are the compiler's (the ones given
    are not used). A send names its own source, a receive its own destination; the other side
    (what the file shows of the peer) comes from the step it is matched with."""

    def __init__(self, s: int | None = None, type: str = "nop", srcbuf: str = "i", srcoff: int = -1,
                 dstbuf: str = "o", dstoff: int = -1, cnt: int = 0, depid: int = -1, deps: int = -1,
                 hasdep: int = 0):
        self.ir: ir.Step | None = None
        self.algo: Algo | None = None
        self._given = (StepType(type), srcbuf, srcoff, dstbuf, dstoff, cnt)
        self._deps: list[Step] = []
        self._peer: Step | None = None
        self.position_fixed = False

    @classmethod
    def _of(cls, algo: Algo, st: ir.Step) -> "Step":
        view = cls.__new__(cls)
        view.ir, view.algo, view._given, view._deps, view._peer = st, algo, None, [], None
        view.position_fixed = True
        return view

    # ---- issue -------------------------------------------------------------------------
    def _issue(self, tb: TB) -> None:
        algo = tb.algo
        prog = algo.program
        t, srcbuf, srcoff, dstbuf, dstoff, cnt = self._given
        gpu = tb.ir.gpu
        src = prog.chunk(gpu, srcbuf, srcoff, max(cnt, 1)).ref if t.reads_src else None
        dst = prog.chunk(gpu, dstbuf, dstoff, max(cnt, 1)).ref if t.writes_dst else None
        send_peer = tb.send if t.sends else -1
        recv_peer = tb.recv if t.receives else -1
        if t.sends and send_peer < 0 or t.receives and recv_peer < 0:
            raise IRError(f"a {t.value} step needs a TB with a {'send' if t.sends else 'recv'} peer; "
                          f"{tb} has none")
        if t.sends or t.receives:
            st = prog._issue_end(t, gpu, src, dst, cnt, send_peer, recv_peer, tb.ir.chan)
        else:
            st = prog._issue(t, gpu, src, dst, cnt, -1, -1, tb.ir.chan)
        pending = prog.algo.gpus[gpu].pending      # placed here, not by the compiler
        pending.pop() if pending and pending[-1] is st else pending.remove(st)
        tb.ir.add_step(st)
        self.ir, self.algo, self.position_fixed = st, algo, True
        algo._views[st] = self
        for d in self._deps:
            self.add_dep(d)
        if self._peer is not None:
            self.peer_step = self._peer

    def _bound(self) -> ir.Step:
        if self.ir is None:
            raise IRError(f"{self} is not in a TB yet (TB.add_step)")
        return self.ir

    # ---- the design's names ------------------------------------------------------------
    @property
    def type(self) -> str:
        return (self.ir.type if self.ir is not None else self._given[0]).value

    @property
    def cnt(self) -> int:
        return self.ir.cnt if self.ir is not None else self._given[5]

    @property
    def s(self) -> int:
        st = self._bound()
        return st.s if st.s >= 0 else st.tb.steps.index(st)

    srcbuf = property(lambda self: self._bound().srcbuf if self.ir is not None else self._given[1])
    srcoff = property(lambda self: self._bound().srcoff if self.ir is not None else self._given[2])
    dstbuf = property(lambda self: self._bound().dstbuf if self.ir is not None else self._given[3])
    dstoff = property(lambda self: self._bound().dstoff if self.ir is not None else self._given[4])
    depid = property(lambda self: self._bound().depid)
    deps = property(lambda self: self._bound().deps)
    hasdep = property(lambda self: self._bound().hasdep)
    send_index = property(lambda self: self._bound().send_index)
    recv_index = property(lambda self: self._bound().recv_index)

    @property
    def dep_list(self) -> list["Step"]:
        if self.ir is None:
            return list(self._deps)
        return [self.algo._view(d, Step) for d in self.ir.dep_list]

    @property
    def depended_by_list(self) -> list["Step"]:
        """The steps of this GPU whose dependencies include this one."""
        st = self._bound()
        gpu = self.algo.ir.gpus[st.gpu]
        return [self.algo._view(other, Step) for tb in gpu.tbs for other in tb.steps
                if other is not st and st in ir.step_deps(other)]

    @property
    def peer_step(self) -> "Step | None":
        if self.ir is None:
            return self._peer
        peer = self.ir.peer_step
        return None if peer is None else self.algo._view(peer, Step)

    @peer_step.setter
    def peer_step(self, other: "Step") -> None:
        if self.ir is None or other.ir is None:
            self._peer = other          # bound when both are issued
            if other._peer is None:
                other._peer = self
            return
        ir.link_steps(self.ir, other.ir)

    def add_dep(self, dep_step: "Step") -> None:
        """This step runs after ``dep_step`` (a step of the same GPU)."""
        if self.ir is None or dep_step.ir is None:
            if dep_step not in self._deps:
                self._deps.append(dep_step)
            return
        self.ir.add_dep(dep_step.ir)

    def remove_dep(self, dep_step: "Step") -> None:
        if self.ir is None or dep_step.ir is None:
            if dep_step in self._deps:
                self._deps.remove(dep_step)
            return
        self.ir.remove_dep(dep_step.ir)

    def __repr__(self) -> str:
        if self.ir is None:
            return f"<Step {self.type} (not in a TB)>"
        return f"<Step {self.ir.describe()}>"


class Chunk:
    """``Chunk(gpu_id, chunk_type, index, size, algo)``: ``size`` chunks at ``index`` of buffer
    ``chunk_type`` ("input"/"output"/"scratch" or i/o/s) on rank ``gpu_id``."""

    def __init__(self, gpu_id: int, chunk_type: str, index: int, size: int, algo: Algo):
        self.gpu_id = gpu_id
        self.chunk_type = chunk_type
        self.index = index
        self.size = size
        self.algo = algo
        self._buf = buffer_named(chunk_type).value

    def _get_buf_name(self) -> str:
        return self._buf

    def _same_size(self, other: "Chunk", what: str) -> None:
        if other.size != self.size:
            raise ChunkError(f"{what} needs chunks of the same size: {self.size} and {other.size}")

    def _step(self, type, src: "Chunk | None", dst: "Chunk | None", tb: TB, dep_steps) -> Step:
        side = src or dst
        st = Step(type=type.value,
                  srcbuf=src._buf if src else side._buf, srcoff=src.index if src else -1,
                  dstbuf=dst._buf if dst else side._buf, dstoff=dst.index if dst else -1,
                  cnt=self.size)
        for d in dep_steps or ():
            st.add_dep(d)
        return tb.add_step(st)

    def _tb(self, rank: int, send: int, recv: int, chan: int) -> TB:
        gpu = self.algo.get_gpu(rank)
        tb = TB(send=send, recv=recv, chan=chan)
        gpu.add_tb(tb)
        return tb

    def copy(self, dest_chunk: "Chunk", channel_id: int = 0, tb: TB | None = None,
             dep_steps=None) -> Step:
        """A ``cpy`` on this chunk's rank, in ``tb`` or the rank's local TB of ``channel_id``."""
        if dest_chunk.gpu_id != self.gpu_id:
            raise ChunkError("Copy operation requires chunks on the same GPU (copy_diff: two ranks)")
        self._same_size(dest_chunk, "copy")
        if tb is None:
            tb = (self.algo.get_gpu(self.gpu_id).find_tb(send=-1, recv=-1, chan=channel_id)
                  or self._tb(self.gpu_id, -1, -1, channel_id))
        return self._step(StepType.COPY, self, dest_chunk, tb, dep_steps)

    def send(self, dest_rank: int, channel_id: int = 0, dep_steps=None, bidirectional: bool = True) -> Step:
        """One ``s`` of this chunk to ``dest_rank``, in the TB sending there on ``channel_id``
        (a new one: also receiving from ``dest_rank`` when ``bidirectional``)."""
        gpu = self.algo.get_gpu(self.gpu_id)
        tb = gpu.find_tb(send=dest_rank, chan=channel_id)
        if tb is None:
            if bidirectional and gpu.find_tb(recv=dest_rank, chan=channel_id) is not None:
                raise IRError(f"Channel {channel_id} already has recv from rank {dest_rank}")
            tb = self._tb(self.gpu_id, dest_rank, dest_rank if bidirectional else -1, channel_id)
        return self._step(StepType.SEND, self, None, tb, dep_steps)

    def recv(self, src_rank: int, channel_id: int = 0, dep_steps=None, bidirectional: bool = True) -> Step:
        """One ``r`` into this chunk from ``src_rank``, in the TB receiving from there."""
        gpu = self.algo.get_gpu(self.gpu_id)
        tb = gpu.find_tb(recv=src_rank, chan=channel_id)
        if tb is None:
            if bidirectional and gpu.find_tb(send=src_rank, chan=channel_id) is not None:
                raise IRError(f"Channel {channel_id} already has send to rank {src_rank}")
            tb = self._tb(self.gpu_id, src_rank if bidirectional else -1, src_rank, channel_id)
        return self._step(StepType.RECV, None, self, tb, dep_steps)

    def copy_diff(self, dest_chunk: "Chunk", channel_id: int = 0, dep_steps=None,
                  bidirectional: bool = True) -> tuple[Step, Step]:
        """A send here and a receive into ``dest_chunk`` on its rank, bound to each other."""
        if dest_chunk.gpu_id == self.gpu_id:
            raise ChunkError("copy_diff requires chunks on different GPUs")
        self._same_size(dest_chunk, "copy_diff")
        send = self.send(dest_chunk.gpu_id, channel_id, dep_steps, bidirectional)
        recv = dest_chunk.recv(self.gpu_id, channel_id, None, bidirectional)
        send.peer_step = recv
        return send, recv

    def rcs(self, dest_chunk: "Chunk", intermediate_rank: int, channel_id: int = 0,
            dep_steps=None) -> Step:
        """One ``rcs`` on ``intermediate_rank``: it receives this chunk from this chunk's rank,
        stores it at ``dest_chunk``'s buffer and index there and forwards it to
        ``dest_chunk``'s rank. The ends outside are this rank's ``send`` and the destination's
        ``recv``."""
        if len({self.gpu_id, dest_chunk.gpu_id, intermediate_rank}) != 3:
            raise ChunkError("RCS operation requires three different GPU ranks")
        self._same_size(dest_chunk, "rcs")
        gpu = self.algo.get_gpu(intermediate_rank)
        tb = gpu.find_tb(send=dest_chunk.gpu_id, recv=self.gpu_id, chan=channel_id)
        if tb is None:
            if gpu.find_tb(send=dest_chunk.gpu_id, chan=channel_id) is not None:
                raise IRError(f"Channel {channel_id} already has send to rank {dest_chunk.gpu_id}")
            if gpu.find_tb(recv=self.gpu_id, chan=channel_id) is not None:
                raise IRError(f"Channel {channel_id} already has recv from rank {self.gpu_id}")
            tb = self._tb(intermediate_rank, dest_chunk.gpu_id, self.gpu_id, channel_id)
        return self._step(StepType.RECV_COPY_SEND, None, dest_chunk, tb, dep_steps)

    def __repr__(self) -> str:
        return f"Chunk(rank={self.gpu_id}, {self.chunk_type}[{self.index}:+{self.size}])"


__all__ = ["GPU", "TB", "Algo", "Chunk", "Step"]
