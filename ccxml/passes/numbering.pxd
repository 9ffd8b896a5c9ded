cimport cython
from ccxml.ir.nodes cimport Step, TB, GPU

@cython.locals(gpu=GPU, tb=TB, st=Step, dep=Step, s=Py_ssize_t, i=Py_ssize_t, tbs=list,
               targets=set, first=list, rest=list)
cpdef number_steps(algo)
