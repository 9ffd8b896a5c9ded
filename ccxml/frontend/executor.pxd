# Cython declarations for ccxml/frontend/executor.py (see setup.py).
cimport cython
from ccxml.frontend.chunk cimport Chunk, Program, piece
from ccxml.tables.plan cimport Steps

@cython.locals(a=Chunk, b=Chunk, src=tuple, into=tuple)
cdef _issue(Program prog, Py_ssize_t s, Py_ssize_t d, tuple msg, Py_ssize_t chan, Py_ssize_t lane)

@cython.locals(found=list, msgs=list, t=Py_ssize_t, s=Py_ssize_t, d=Py_ssize_t, c=Py_ssize_t,
               ch=Py_ssize_t, lane=Py_ssize_t, m=tuple)
cdef _step(Program prog, list per_c, object chan, object placer, str send, str order)

@cython.locals(ti=Py_ssize_t, s=Py_ssize_t, d=Py_ssize_t, ch=Py_ssize_t, msgs=list, m=tuple, same=bint)
cdef _stream(Program prog, Steps steps, Py_ssize_t si, list moves, Py_ssize_t c, object chan)
