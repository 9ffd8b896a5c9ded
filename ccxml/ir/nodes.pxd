# Cython declarations for ccxml/ir.py (see setup.py): the IR's classes as C structs.
cimport cython

cdef class Step:
    # the object fields first, then the 32-bit ones: no padding (160 bytes with the GC header)
    cdef public object type
    cdef public object src
    cdef public object dst
    cdef public object tb
    cdef public object recv_from
    cdef public object send_to
    cdef public object _dep_pack
    cdef public object dep
    cdef public object merged_into
    cdef public object readers_after
    cdef public object overwritten_by
    cdef public int gpu
    cdef public int cnt
    cdef public int send_peer
    cdef public int recv_peer
    cdef public int chan
    cdef public int original_index
    cdef public int send_index
    cdef public int recv_index
    cdef public int _s
    cdef public bint publish


cdef class TB:
    cdef public Py_ssize_t id
    cdef public Py_ssize_t send
    cdef public Py_ssize_t recv
    cdef public Py_ssize_t chan
    cdef public list steps
    cdef public Py_ssize_t send_count
    cdef public Py_ssize_t recv_count
    cdef public Py_ssize_t gpu
    cdef public object origin
    cdef public Py_ssize_t segment

    @cython.locals(st=Step, ns=Py_ssize_t, nr=Py_ssize_t, sends=bint, receives=bint)
    cpdef number_links(self)


cdef class GPU:
    cdef public Py_ssize_t id
    cdef public list tbs
    cdef public dict _usage
    cdef public list pending
    cdef public object input_chunks
    cdef public object output_chunks
    cdef public object scratch_chunks
    cdef public dict _index


cpdef Step new_step(object type, int gpu, object src, object dst, int cnt, int send_peer,
                    int recv_peer, int chan, int original_index)
cdef _fill(Step st, object type, int gpu, object src, object dst, int cnt, int send_peer,
           int recv_peer, int chan, int original_index)
cpdef tuple step_deps(Step step)
cpdef Py_ssize_t dep_count(Step step) except -1
@cython.locals(n=Py_ssize_t)
cpdef object pack_deps(deps)
@cython.locals(src=tuple, dst=tuple, n=Py_ssize_t)
cpdef bint step_reads_chunk(Step step, buf, Py_ssize_t c) except -1
