"""Pipeline's slot tables (hccl-algorithms.md §10): an intra-server full mesh overlapped with an
inter-server ring.

S servers × M members each, member (s, i) = s·M + i; inter-server links join the S members with
the same local index i, inside a server every pair is linked. A slot is one step of the table;
its inter-server moves come first in gathers, its intra-server moves first in reductions.
"""
from __future__ import annotations

from ccxml.tables import Table


def gather(s_: int, m_: int, direction: int) -> Table:
    """All-gather of the member blocks, S slots: in slot t member (s, i) sends block
    (s − direction·t, i) to (s + direction, i) (t < S−1) and the same block to every local peer
    (s, j): the intra moves of slot t forward what the inter move of slot t−1 delivered."""
    def rank(s: int, i: int) -> int:
        return (s % s_) * m_ + i

    out = []
    for t in range(s_):
        held = {(s, i): rank(s - direction * t, i) for s in range(s_) for i in range(m_)}
        moves = []
        if t < s_ - 1:
            moves += [(rank(s, i), rank(s + direction, i), [held[(s, i)]]) for s in range(s_) for i in range(m_)]
        if m_ > 1:
            moves += [(rank(s, i), rank(s, j), [held[(s, i)]])
                      for s in range(s_) for i in range(m_) for j in range(m_) if j != i]
        out.append(moves)
    return out


def reduce(s_: int, m_: int) -> Table:
    """Reduce-scatter of the member blocks, S slots: X_t = block (s+1+t, i). In slot t every local
    peer reduces its contribution to X_t into (s, i)'s copy, then (from slot 1) (s+1, i)'s sum of
    the same block arrives over the ring; after slot S−1, X_{S−1} = (s, i) is complete."""
    def rank(s: int, i: int) -> int:
        return (s % s_) * m_ + i

    out = []
    for t in range(s_):
        x = {(s, i): rank(s + 1 + t, i) for s in range(s_) for i in range(m_)}
        moves = []
        if m_ > 1:
            moves += [(rank(s, j), rank(s, i), [x[(s, i)]])
                      for s in range(s_) for i in range(m_) for j in range(m_) if j != i]
        if t >= 1:
            moves += [(rank(s + 1, i), rank(s, i), [x[(s, i)]]) for s in range(s_) for i in range(m_)]
        out.append(moves)
    return out


def alltoall(s_: int, m_: int) -> Table:
    """All-to-all, S slots: inter = pairwise over servers, intra = mesh. Block 2·(o·p + d) + leg
    is the data of member o for member d on its inter-server leg (leg 0: to (server of d, local
    index of o)) or its last, intra-server leg (leg 1). In slot t, (s, i) sends its M blocks for
    server s+1+t to (s+1+t, i); then every (s, j) hands (s, i) the block for it that came in
    during slot t−1 from server s−t (slot 0: its own data), itself included."""
    p = s_ * m_
    def rank(s: int, i: int) -> int:
        return (s % s_) * m_ + i

    out = []
    for t in range(s_):
        moves = []
        if t < s_ - 1:
            for s in range(s_):
                for i in range(m_):
                    d = (s + 1 + t) % s_
                    moves.append((rank(s, i), rank(d, i), [2 * (rank(s, i) * p + rank(d, j)) for j in range(m_)]))
        for s in range(s_):
            for i in range(m_):
                for j in range(m_):
                    moves.append((rank(s, j), rank(s, i), [2 * (rank(s - t, j) * p + rank(s, i)) + 1]))
        out.append(moves)
    return out
