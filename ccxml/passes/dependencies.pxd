cimport cython
from ccxml.ir.nodes cimport Step, TB, GPU, step_deps

@cython.locals(tb=TB, st=Step, target=Step, i=Py_ssize_t, steps=list, out=list, deps=tuple,
               targets=list, reduces=Py_ssize_t, capped=list)
cpdef build_gpu_dependencies(GPU gpu)

@cython.locals(tb=TB, dtb=TB, d=Step, cur=Step, best=dict)
cpdef list _targets(Step st)

cpdef bint reduce_fuses(Step prev, Step st) except -1
