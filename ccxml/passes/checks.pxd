# Cython declarations for ccxml/passes/checks.py (see setup.py): the walks over TBs and steps typed.
cimport cython
from ccxml.ir.nodes cimport GPU, TB, Step

@cython.locals(n=Py_ssize_t, g=Py_ssize_t, s=Py_ssize_t, r=Py_ssize_t, chan=Py_ssize_t,
               sends=dict, recvs=dict, gpu=GPU, tb=TB, st=Step, sc=list, rc=list, t_sends=bint,
               t_receives=bint)
cpdef check_links(algo)

@cython.locals(max_cnt=Py_ssize_t, max_dep_tb=Py_ssize_t, max_steps=Py_ssize_t, gpu=GPU, tb=TB,
               st=Step, dep=Step, steps=list, tbs=list, nodes=Py_ssize_t)
cpdef check_limits(algo, profile)
