# Cython declarations for ccxml/export.py (see setup.py): the streamed writer's loop on C structs.
cimport cython
from ccxml.ir.nodes cimport Step, TB, GPU

@cython.locals(tb=TB, st=Step, peer=Step, dep=Step, steps=list, nums=list,
               step_open=list, cnt_piece=list, depid_piece=list, type_piece=dict,
               srcbuf_piece=dict, dstbuf_piece=dict, hasdep_piece=tuple, nop_piece=str,
               no_dep=str, opening=str, depid=str, deps=str, at=Py_ssize_t, top=Py_ssize_t,
               cnt=Py_ssize_t, srcoff=Py_ssize_t, dstoff=Py_ssize_t, s=Py_ssize_t,
               i=Py_ssize_t, j=Py_ssize_t, kept=Py_ssize_t)
cpdef _gpu_pieces(GPU gpu, list out, Py_ssize_t kept)
