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
    cdef public list forwards
    cdef public list members
    cdef public list held
    cdef public list have
    cdef public dict last
    cdef public object own
    cdef public object acc
    cdef public object final
    cdef public object loc
    cdef public object first
    cdef public Py_ssize_t si
    cdef public Py_ssize_t c
    cdef public bint merge
    cdef public bint reduces

    @cython.locals(found=list, locs=list, ha=dict, hb=dict, sa=set, sb=set, ti=Py_ssize_t,
                   move=Py_ssize_t, c=Py_ssize_t, n=Py_ssize_t, members=list, last=dict,
                   sources=list)
    cpdef list step(self, Py_ssize_t si)


@cython.locals(lay=Layout, listed=Listed)
cdef object _at(object where, object r, object j, Py_ssize_t c)
