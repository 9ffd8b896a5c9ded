cimport cython
from ccxml.ir.nodes cimport Step, TB, GPU, dep_count, step_deps

@cython.locals(st=Step, tb=TB, peer=Py_ssize_t, local_steps=bint, steps=list, chans=list,
               groups=dict, group=list, send_tb=dict, recv_tb=dict, peers=dict, chan=Py_ssize_t,
               sends=set, recvs=set, entry=tuple)
cpdef _assign_gpu(GPU gpu, bint one_way=*)

@cython.locals(t=object)
cdef _append(TB tb, Step st)

@cython.locals(st=Step, tb=TB, dep=Step, local_steps=list, consumer=dict, local_tb=dict)
cpdef _place_local_steps(GPU gpu, list steps, bint one_way=*)

@cython.locals(st=Step, dep=Step, out=dict)
cpdef _first_consumers(list steps)

@cython.locals(dep=Step, lo=Py_ssize_t, hi=Py_ssize_t)
cdef object _source_writer_tb(Step st)
