# Cython declarations for ccxml/passes/ordering.py (see setup.py): the list scheduling typed,
# then its parts as final C structs whose hot methods are inline C functions.
cimport cython
from ccxml.ir.nodes cimport Step, TB, dep_count, step_deps

cdef int _SENDS, _RECEIVES, _HOLDABLE, _HELD, _FORCED

@cython.locals(start="long long[::1]", n=Py_ssize_t, m=Py_ssize_t, top=Py_ssize_t,
               nwaits=Py_ssize_t, members=list, flags="unsigned char[::1]", waits=WaitTable,
               entries=Entries, placement=Placement, ready=ReadyHeap, held=HeldSends,
               recvs_placed="long long[::1]", i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t,
               t=Py_ssize_t, f=int, entry=cython.longlong, w=cython.longlong, waiting=list)
cpdef _schedule(list tbs, bint whole)

@cython.locals(tb=TB, st=Step, nt=Py_ssize_t, t=Py_ssize_t, n=Py_ssize_t, m=Py_ssize_t,
               top=Py_ssize_t, nwaits=Py_ssize_t, start="long long[::1]")
cdef tuple _number(list tbs)

@cython.locals(tb=TB, st=Step, d=Step, rf=Step, i=Py_ssize_t, f=int, after_send=bint,
               after_recv=bint, both=bint, kinds=KindMemo)
cdef _read_steps(list tbs, list members, unsigned char[::1] flags, WaitTable waits,
                 Entries entries)

@cython.locals(j=Py_ssize_t)
cdef bint _is_member(Step st, list members) except -1

cdef long long _seed_key(int f, Step st)

@cython.locals(st=Step)
cdef bint _waits_for_receive(TB tb, Py_ssize_t position, Py_ssize_t recvs_placed) except -1

@cython.locals(j=Py_ssize_t)
cdef Py_ssize_t _next_with(const unsigned char[::1] flags, Py_ssize_t i, Py_ssize_t end,
                          int bit)

cdef bint _COMPILED

@cython.final
cdef class Entries:
    cdef public Py_ssize_t n
    cdef public Py_ssize_t m
    cdef public bint fits
    cdef public long long[::1] entry
    cdef public list big

    cdef inline void put(self, Py_ssize_t i, long long key, long long index)
    cdef void _put_big(self, Py_ssize_t i, long long key, long long index)
    cdef void seal(self)

@cython.locals(r=Py_ssize_t, i=Py_ssize_t)
cdef _rank_entries(list big, long long[::1] entry, Py_ssize_t n)

@cython.final
cdef class WaitTable:
    cdef public int[::1] open
    cdef public unsigned char[::1] unrecorded
    cdef public int[::1] waits
    cdef public Py_ssize_t size
    cdef public int[::1] first
    cdef public int[::1] after

    cdef inline void wait(self, Py_ssize_t i, Py_ssize_t j) noexcept
    cdef inline void wait_unrecorded(self, Py_ssize_t i) noexcept
    @cython.locals(n=Py_ssize_t, first="int[::1]", after="int[::1]", waits="int[::1]",
                   k=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, e=Py_ssize_t)
    cdef seal(self)
    cdef inline bint release(self, Py_ssize_t j) noexcept

@cython.final
cdef class ReadyHeap:
    cdef public object room
    cdef public long long[::1] items
    cdef public Py_ssize_t size

    cpdef inline void push(self, long long x)
    cdef void _grow(self)
    cpdef inline long long pop(self) noexcept

@cython.final
cdef class HeapqReady:
    cdef public list items
    cdef public Py_ssize_t size

    cpdef void push(self, long long x)
    cpdef long long pop(self)

@cython.locals(pos=Py_ssize_t, parent=Py_ssize_t, p=cython.longlong)
cdef Py_ssize_t _heap_push(long long[::1] heap, Py_ssize_t size, long long x) noexcept

@cython.locals(pos=Py_ssize_t, child=Py_ssize_t, top=cython.longlong, x=cython.longlong)
cdef long long _heap_pop(long long[::1] heap, Py_ssize_t size) noexcept

@cython.final
cdef class HeldSends:
    cdef public unsigned char[::1] flags
    cdef public Py_ssize_t n
    cdef public int bit
    cdef public dict by_tb
    cdef public list order
    cdef public Py_ssize_t count

    cdef void hold(self, Py_ssize_t t, long long entry)
    @cython.locals(entries=list, e=cython.longlong)
    cdef list release(self, Py_ssize_t t)
    @cython.locals(entry=cython.longlong, i=Py_ssize_t, t=Py_ssize_t, entries=list)
    cdef long long let_go(self, int[::1] tb_of)

@cython.final
cdef class Placement:
    cdef public long long[::1] start
    cdef public int[::1] order
    cdef public long long[::1] cursor
    cdef public int[::1] tb_of
    cdef public Py_ssize_t placed

    cdef inline void place(self, Py_ssize_t i) noexcept
    @cython.locals(start="long long[::1]", order="int[::1]", t=Py_ssize_t, s0=Py_ssize_t,
                   k=Py_ssize_t, old=list, tb=TB, st=Step)
    cdef apply(self, list tbs)

@cython.locals(t=Py_ssize_t, i=Py_ssize_t)
cdef _fill_tbs(long long[::1] start, long long[::1] cursor, int[::1] tb_of)

@cython.final
cdef class KindMemo:
    cdef object kind
    cdef object last
    cdef object other
    cdef int last_kind
    cdef int other_kind

    cdef inline int of(self, object t) except -1
