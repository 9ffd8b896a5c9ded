# Cython declarations for ccxml/passes/fusion.py (see setup.py): the walk over a TB's steps
# with Step/TB as C structs.
cimport cython
from ccxml.ir.nodes cimport Step, TB, GPU, step_deps, step_reads_chunk

@cython.locals(tb=TB, r=Step, s=Step, steps=list, out=list, i=Py_ssize_t, n=Py_ssize_t)
cpdef fuse_gpu(GPU gpu)

@cython.locals(d=Step)
cdef bint _fusable(Step r, Step s) except -1

cdef _merge(Step r, Step s, object fused)

@cython.locals(w=Step, over=object, readers=object, lo=Py_ssize_t, c=Py_ssize_t)
cdef bint _store_is_dead(Step r, Step s) except -1
