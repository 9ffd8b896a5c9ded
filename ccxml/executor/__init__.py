"""The MPI executor (``ccxml run``): run a schedule on real processes with real data.

One MPI process per rank runs the thread blocks of its ``<gpu>`` with the runtime's step
semantics, moving chunks of numpy buffers with MPI point-to-point messages, and compares the
result with MPI's own collective. A consumer of the loaded model like the interpreter, whose
lowering (what the runtime's parser makes of the steps) and whose words for a blocked thread
block it shares.

Modules: :mod:`.plan` (a rank's part of the lowered schedule), :mod:`.engine` (running it),
:mod:`.reference` (MPI's collective), :mod:`.data` (inputs and the comparison),
:mod:`.session` (sizes, timing, agreement between ranks), :mod:`.mpi` (the only import of
mpi4py). Only :mod:`.mpi` needs mpi4py, and only when called.
"""
