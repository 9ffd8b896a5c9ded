# Cython declarations for ccxml/tables/plan.py (see setup.py): the planner typed.
cimport cython

cdef class Layout:
    cdef public object buffer
    cdef public Py_ssize_t per_block
    cdef public Py_ssize_t per_instance
    cdef public Py_ssize_t offset
    cdef public Py_ssize_t width
    cdef public object perm

    @cython.locals(b=Py_ssize_t)
    cpdef tuple at(self, Py_ssize_t j, Py_ssize_t c)


cdef class Listed:
    cdef public list places


cdef class Steps:
    cdef public list table
    cdef public list two_way
    cdef public list members
    cdef public list held
    cdef public list have
    cdef public list last
    cdef public object own
    cdef public object acc
    cdef public object final
    cdef public object loc
    cdef public object first
    cdef public Py_ssize_t si
    cdef public Py_ssize_t c
    cdef public bint merge
    cdef public bint reduces
    cdef public bint staged

    @cython.locals(found=list, ti=Py_ssize_t)
    cpdef list step(self, Py_ssize_t si)
    @cython.locals(locs=list, ha=list, hb=list, sa=bytearray, sb=bytearray, move=Py_ssize_t,
                   c=Py_ssize_t, last=list, staged=bint, j=Py_ssize_t)
    cpdef tuple move(self, Py_ssize_t si, Py_ssize_t ti, Py_ssize_t a, Py_ssize_t b, blocks)


@cython.locals(lay=Layout, listed=Listed)
cdef object _at(object where, object r, object j, Py_ssize_t c)


@cython.locals(top=Py_ssize_t, nb=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t, j=Py_ssize_t)
cpdef tuple _extent(list table)
