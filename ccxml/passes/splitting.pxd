# Cython declarations for ccxml/passes/splitting.py (see setup.py): Step/TB as C structs, the
# per-gid tables (array('q') / bytearray in the .py) as typed memoryviews.
cimport cython
from ccxml.ir.nodes cimport Step, TB, GPU, dep_count, pack_deps, step_deps

@cython.locals(tb=TB, d=Step, dtb=TB, others=list)
cpdef Py_ssize_t nop_cost(Step step) except -1

@cython.locals(gpu=GPU, tb=TB, st=Step, used=Py_ssize_t)
cdef bint _all_fit(list gpus, list tbs, Py_ssize_t limit) except -1

@cython.locals(tb=TB, st=Step, to=Step, g=Py_ssize_t, t=Py_ssize_t, p=Py_ssize_t,
               halves_of=dict, many=bint, c=Py_ssize_t)
cdef _index_steps(list tbs, const unsigned char[::1] shared, unsigned char[::1] halves,
                  long long[::1] spart, long long[::1] rpart, long long[::1] tb_of,
                  long long[::1] base, long long[::1] cost)

@cython.locals(curs="long long[::1]", useds="long long[::1]", dirty="long long[::1]",
               last="long long[::1]", reached="long long[::1]", queued="unsigned char[::1]",
               waiting=dict, touched=list, t=Py_ssize_t, d=Py_ssize_t, k=Py_ssize_t,
               size=Py_ssize_t, o=Py_ssize_t, pos=Py_ssize_t, matched=bint, g=Py_ssize_t,
               pt=Py_ssize_t, pi=Py_ssize_t, key=Py_ssize_t)
cdef _settle(Py_ssize_t ntb, Py_ssize_t n, long long[::1] base, long long[::1] tb_of,
             unsigned char[::1] halves, long long[::1] cost, long long[::1] rpart,
             long long[::1] spart, long long[::1] rseg, long long[::1] sseg, Py_ssize_t limit)

@cython.locals(i=Py_ssize_t, oi=Py_ssize_t, cur=Py_ssize_t, used=Py_ssize_t, sid=Py_ssize_t,
               h=Py_ssize_t, unit=Py_ssize_t, m=Py_ssize_t, cost=Py_ssize_t, c=Py_ssize_t,
               p=Py_ssize_t)
cdef (Py_ssize_t, bint) _walk(unsigned char[::1] halves, long long[::1] costs,
                              long long[::1] rpart, long long[::1] spart, long long[::1] rseg,
                              long long[::1] sseg, Py_ssize_t limit, Py_ssize_t b,
                              Py_ssize_t size, Py_ssize_t start, Py_ssize_t stop,
                              long long[::1] curs, long long[::1] useds, Py_ssize_t o,
                              Py_ssize_t k, list touched) except *

@cython.locals(st=Step, send=Step, d=Step, tb=TB, gpu=GPU, deps=list, i=Py_ssize_t)
cdef dict _unfuse_cut_steps(object algo, list cut)

@cython.locals(tb=TB, piece=TB, st=Step, steps=list, run=list, pieces=list, i=Py_ssize_t,
               j=Py_ssize_t, k=Py_ssize_t, b=Py_ssize_t)
cdef _rebuild_gpu(GPU gpu, object rseg, object sseg, dict send_half, Py_ssize_t width)
