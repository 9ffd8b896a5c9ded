# Cython declarations for ccxml/chunk.py (see setup.py): Chunk and Program as C structs, the
# step issue and the per-rank access tables typed.
cimport cython
from ccxml.ir.nodes cimport GPU, Step, new_step, pack_deps

cdef class Program

cdef Py_ssize_t _READS_SRC, _READS_DST, _WRITES_DST, _ACCESS_DST
cdef dict _ACCESS, _CODE
cdef Py_ssize_t _INT32_MAX

cdef Py_ssize_t _buffer_code(object buf) except -1
@cython.locals(c=Chunk)
cdef Chunk _new_chunk(Program program, Py_ssize_t gpu_id, chunk_type, Py_ssize_t index,
                      Py_ssize_t size)

@cython.locals(refs=list, ref=tuple)
cdef tuple _shared_ref(Program program, object chunk_type, Py_ssize_t index)

cdef object _gather(object held, object item)

cpdef Chunk piece(Program program, Py_ssize_t rank, object buffer, Py_ssize_t index, Py_ssize_t size)


cdef class Chunk:
    cdef public Py_ssize_t gpu_id
    cdef public object chunk_type
    cdef public Py_ssize_t index
    cdef public Py_ssize_t size
    cdef public Program program
    cdef public object ref

    cpdef _check_size(self, Chunk other)
    cpdef copy(self, Chunk dst, chan=*, lane=*)
    cpdef copy_diff(self, Chunk dst, chan=*)
    cpdef _transfer(self, Chunk dst, chan, lane)
    @cython.locals(prog=Program, send=Step, recv=Step, limit=Py_ssize_t)
    cpdef reduce(self, Chunk dst, chan=*, Chunk out=*, lane=*)


cdef class Program:
    cdef dict __dict__
    cdef public object collective
    cdef public object inplace
    cdef public object algo
    cdef public Py_ssize_t message_cap
    cdef public Py_ssize_t _ngpus
    cdef public list _in_sizes
    cdef public list _out_sizes
    cdef public list _pending
    cdef public object _aliased
    cdef public object _alias
    cdef public list _alias_shift
    cdef public list _round_mark
    cdef public bytearray _issued_on
    cdef public list _issued_ranks
    cdef public list _round_last
    cdef public Py_ssize_t _seq
    cdef public list _writer
    cdef public list _readers
    cdef public list _refs
    cdef public list _deps
    cdef public object _compiled

    @cython.locals(limit=Py_ssize_t)
    cdef Chunk _chunk(self, Py_ssize_t rank, object buffer, Py_ssize_t index, Py_ssize_t size)
    @cython.locals(step=Step, access=Py_ssize_t, src_key=Py_ssize_t, dst_key=Py_ssize_t,
                   deps=list)
    cpdef Step _issue(self, object type, Py_ssize_t gpu, src=*, dst=*, Py_ssize_t cnt=*,
                      Py_ssize_t send_peer=*, Py_ssize_t recv_peer=*, Py_ssize_t chan=*,
                      Py_ssize_t lane=*)
    @cython.locals(index=Py_ssize_t, key=Py_ssize_t, end=Py_ssize_t, grow=list)
    cdef Py_ssize_t _key(self, Py_ssize_t gpu, tuple side, Py_ssize_t cnt) except -1
    @cython.locals(w=Step, readers=list)
    cdef _read_one(self, Step step, Py_ssize_t key, Py_ssize_t gpu)
    @cython.locals(writer=list, readers=list, deps=list, w=Step, key=Py_ssize_t)
    cdef _read(self, Step step, Py_ssize_t lo, Py_ssize_t cnt, Py_ssize_t gpu)
    @cython.locals(i=Py_ssize_t)
    cdef _write(self, Step step, Py_ssize_t index, Py_ssize_t lo, Py_ssize_t cnt, Py_ssize_t gpu)
    @cython.locals(writer=list, readers=list, deps=list, w=Step, rs=object, reader=Step)
    cdef _write_one(self, Step step, Py_ssize_t i, Py_ssize_t key, Py_ssize_t gpu)
    @cython.locals(marks=list, gpus=list, ranks=list, r=Py_ssize_t, gpu=GPU, pending=list,
                   fresh=list, first=dict, last=dict, st=Step, before=Step, previous=list)
    cpdef next_round(self, receives=*)
