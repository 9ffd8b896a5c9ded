"""The one place ccxml imports mpi4py: ccxml installs and runs without it; ``ccxml run`` then
stops with one line that says how to get it."""
from __future__ import annotations

from ccxml.vocab.errors import ExecutionError

INSTALL_HINT = "pip install 'ccxml[mpi]' (mpi4py and the mpich wheel, which brings mpiexec)"


def load_mpi():
    """``mpi4py.MPI``, initialised. Raises ExecutionError with the install command when mpi4py
    or its MPI library is missing.

    The thread level stays mpi4py's default (``MPI_THREAD_MULTIPLE``) although the executor
    runs one thread: MPICH then yields the CPU while it waits, and with more processes than
    cores (mpiexec -n 4 on 2 cores) ``MPI_THREAD_SINGLE`` made MPI_Allreduce of 1 MB take
    2.1-2.4 s instead of 10-12 ms."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise ExecutionError(f"ccxml run needs mpi4py and an MPI library: {INSTALL_HINT}") from None
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as e:       # mpi4py without a loadable libmpi
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ExecutionError(f"mpi4py cannot load an MPI library ({why}): {INSTALL_HINT}") from None
    return MPI


def library_version(MPI) -> str:
    """The MPI library's name and version, one line (e.g. ``MPICH Version: 5.0.2``)."""
    text = MPI.Get_library_version().strip().splitlines()
    return " ".join(text[0].split()) if text else "unknown MPI"
