"""Bruck AllToAll (Bruck, Ho, Kipnis, Upfal & Weathersby, IEEE TPDS 8(11), 1997; the short-message
all-to-all of MPICH, Thakur, Rabenseifner & Gropp 2005 §4.4): ⌈log2 p⌉ steps for any p.

1. Local rotation: slot i of rank r takes r's data for r+i (``cpy`` steps).
2. Step k = 0 … ⌈log2 p⌉−1: rank r sends the slots whose index has bit k set to r + 2^k, which
   keeps them at the same index (tables: :mod:`ccxml.tables.bruck`).
3. Inverse rotation: slot i now holds the data of r−i for r, copied to output block r−i.

An MSCCL transfer moves one range, so each step's slots are packed: rank r keeps, per step, an
outbox and an inbox in scratch, each the step's slots side by side (``bruck.packed``); the
rotation copies each slot to the outbox of the first step that sends it, and after each step the
inbox is copied on to the outbox of the slot's next step, or to the output (the inverse rotation).
Every step is then one message each way. ``channels`` = K: every block is K chunks and instance c
has chunk c of each, with its own outboxes and inboxes.

Each step ends with ``next_round``; its transfers go out interleaved, so where r + 2^k = r − 2^k
(the last step of a power of two) the exchange alternates on its thread block (bounded links).

Cost (the paper's, n = one rank's send buffer): Σ_k (α + s_k·n/p·β) with s_k the slots sent in
step k (= p/2 for p a power of two: ⌈lg p⌉α + ⌈lg p⌉·n/2·β). The local copies are not charged:
the simulator's model makes ``cpy`` free (at a rank's memory bandwidth they cost about as much
data again per step).
"""
from __future__ import annotations

from ccxml.frontend.algorithm import Options, program
from ccxml.frontend.chunk import Program
from ccxml.frontend.executor import run
from ccxml.frontend.registry import algorithm, registry
from ccxml.tables import bruck
from ccxml.tables.plan import Copy
from ccxml.vocab.wire import Buffer, Coll

S = Buffer.SCRATCH


@algorithm("bruck", Coll.ALLTOALL)
def alltoall(p: int, *, options: Options = Options()) -> Program:
    k = options.channels
    prog = program("bruck", Coll.ALLTOALL, p, p * k, options)
    prog.split_directions()     # one message per step and peer at any size: no cut to one chunk
    outbox, inbox, size = bruck.packed(p)
    out = lambda r, j, c: (S, c * size + outbox[bruck.slot(j)], 1)   # noqa: E731
    into = lambda r, j, c: (S, c * size + inbox[bruck.slot(j)], 1)   # noqa: E731

    def place(r: int, i: int, c: int, after: int):
        """Where slot i of rank r goes once step ``after`` (−1: the rotation) has brought it:
        the outbox of its next step, or its output block."""
        nxt = bruck.next_step(i, after)
        if nxt is None:
            return prog.output(r, (r - i) % p * k + c)
        return prog.scratch(r, c * size + outbox[nxt * p + i])

    for r in range(p):
        prog.input(r, r * k, k).copy(prog.output(r, r * k, k))
        for i in range(1, p):
            for c in range(k):
                prog.input(r, (r + i) % p * k + c).copy(place(r, i, c, -1))
    for s, step in enumerate(bruck.alltoall(p)):
        run(prog, Copy([step], loc=into, first=out), instances=k, rounds=True, send="interleave")
        for r in range(p):
            for c in range(k):
                for i in bruck.sent(p, s):
                    prog.scratch(r, c * size + inbox[s * p + i]).copy(place(r, i, c, s))
    return prog


COLLECTIVES = registry.get("bruck").builders

if __name__ == "__main__":
    from ccxml.cli import run_script  # the script as a program: ccxml generate NAME ARGS
    run_script("bruck")
