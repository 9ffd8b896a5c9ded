cimport cython
from ccxml.ir cimport Step, TB

@cython.locals(st=Step, d=Step, rf=Step, tb=TB, i=Py_ssize_t, j=Py_ssize_t, n=Py_ssize_t,
               m=Py_ssize_t, t=Py_ssize_t, deg=Py_ssize_t, key=Py_ssize_t, last_send=Py_ssize_t,
               last_recv=Py_ssize_t, nrecv=Py_ssize_t, both=bint, count=Py_ssize_t,
               prio=list, succ=list, indeg=list, tb_of=list, wait_for=list, placed=list,
               recvs_placed=list, steps=list, heap=list)
cpdef _schedule(list tbs, bint whole)
