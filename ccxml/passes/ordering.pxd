cimport cython
from ccxml.ir.nodes cimport Step, TB, dep_count, step_deps

cdef bint _COMPILED
cdef int _SENDS, _RECEIVES, _HOLDABLE, _HELD, _FORCED, _AFTER_SEND, _AFTER_RECV

@cython.locals(st=Step, d=Step, rf=Step, tb=TB, i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t,
               e=Py_ssize_t, n=Py_ssize_t, nt=Py_ssize_t, m=Py_ssize_t, t=Py_ssize_t,
               deg=Py_ssize_t, key=Py_ssize_t, top=Py_ssize_t, nwaits=Py_ssize_t, ne=Py_ssize_t,
               size=Py_ssize_t, end=Py_ssize_t, s0=Py_ssize_t, next_send=Py_ssize_t,
               next_recv=Py_ssize_t, after_send=bint, after_recv=bint, both=bint, fits=bint,
               f=int, last_kind=int, other_kind=int, count=Py_ssize_t,
               entry=cython.longlong, w=cython.longlong,
               start="long long[::1]", prio="long long[::1]", indeg="int[::1]",
               tb_of="int[::1]", flags="unsigned char[::1]", waits="int[::1]", first="int[::1]",
               after="int[::1]", ready="long long[::1]", order="int[::1]",
               cursor="long long[::1]", recvs_placed="long long[::1]",
               steps=list, old=list, heap=list, held_order=list, big=list)
cpdef _schedule(list tbs, bint whole)

@cython.locals(j=Py_ssize_t)
cdef Py_ssize_t _next_with(const unsigned char[::1] flags, Py_ssize_t i, Py_ssize_t end,
                          int bit)

@cython.locals(pos=Py_ssize_t, parent=Py_ssize_t, p=cython.longlong)
cdef Py_ssize_t _heap_push(long long[::1] heap, Py_ssize_t size, long long x)

@cython.locals(pos=Py_ssize_t, child=Py_ssize_t, top=cython.longlong, x=cython.longlong)
cdef long long _heap_pop(long long[::1] heap, Py_ssize_t size)
