"""Pass: place each rank's issued steps into thread blocks.

Guarantees, per GPU and channel:

* every TB has at most one send peer and one recv peer, and no two TBs share a (channel, send
  peer) or a (channel, recv peer) connection (``GPU.add_tb`` enforces it);
* a rank that on a channel sends to one peer and receives from one peer gets a single TB for
  both (a ring or chain link), and a peer it both sends to and receives from gets a full-duplex
  TB (send == recv), so that receive+send pairs can later fuse into ``rcs``/``rrs``/``rrcs``;
* local steps (``cpy``, ``re``) join the TB that produced their source, else the TB that next
  consumes their destination, else the channel's first TB, else a TB of their own;
* each TB's steps are in issue order, which is a topological order of every dependency and
  matched send/receive pair (so the untouched schedule cannot deadlock).
"""
from __future__ import annotations

from ccxml.ir import GPU, TB, Algo, Step


def assign_threadblocks(algo: Algo) -> None:
    for gpu in algo.gpus:
        _assign_gpu(gpu)


def _assign_gpu(gpu: GPU) -> None:
    steps = gpu.pending
    by_chan: dict[int, tuple[set[int], set[int]]] = {}
    for st in steps:
        peers = by_chan.get(st.chan)
        if peers is None:
            peers = by_chan[st.chan] = (set(), set())
        if st.send_peer >= 0:
            peers[0].add(st.send_peer)
        if st.recv_peer >= 0:
            peers[1].add(st.recv_peer)

    send_tb: dict[tuple[int, int], TB] = {}
    recv_tb: dict[tuple[int, int], TB] = {}
    for chan in sorted(by_chan):
        sends, recvs = by_chan[chan]
        if len(sends) <= 1 and len(recvs) <= 1 and (sends or recvs):
            s = next(iter(sends), -1)
            r = next(iter(recvs), -1)
            tb = gpu.add_tb(TB(s, r, chan))
            if s >= 0:
                send_tb[(chan, s)] = tb
            if r >= 0:
                recv_tb[(chan, r)] = tb
            continue
        for peer in sorted(sends & recvs):
            tb = gpu.add_tb(TB(peer, peer, chan))
            send_tb[(chan, peer)] = recv_tb[(chan, peer)] = tb
        for peer in sorted(sends - recvs):
            send_tb[(chan, peer)] = gpu.add_tb(TB(peer, -1, chan))
        for peer in sorted(recvs - sends):
            recv_tb[(chan, peer)] = gpu.add_tb(TB(-1, peer, chan))

    # local steps: follow the producer of their source, else the next consumer of their output
    local_steps = False
    for st in steps:
        if st.send_peer >= 0:
            st.tb = send_tb[(st.chan, st.send_peer)]
        elif st.recv_peer >= 0:
            st.tb = recv_tb[(st.chan, st.recv_peer)]
        else:
            local_steps = True
    if local_steps:
        consumer = _first_consumers(steps)
        local_tb: dict[int, TB] = {}
        for st in steps:
            if st.tb is not None:
                continue
            tb = None
            for dep in reversed(st.dep_list):          # the latest producer first
                tb = dep.tb
                if tb is not None:
                    break
            if tb is None:
                tb = consumer.get(st)
            if tb is None:
                tb = next((t for t in gpu.tbs if t.chan == st.chan), None)
            if tb is None:
                tb = local_tb.get(st.chan)
                if tb is None:
                    tb = local_tb[st.chan] = gpu.add_tb(TB(-1, -1, st.chan))
            st.tb = tb

    for st in steps:           # TB.add_step, inlined: the peers match by construction
        tb = st.tb
        t = st.type
        if t.sends:
            st.send_index = tb.send_count
            tb.send_count += 1
        if t.receives:
            st.recv_index = tb.recv_count
            tb.recv_count += 1
        tb.steps.append(st)
    gpu.pending = []


def _first_consumers(steps: list[Step]) -> dict[Step, TB]:
    """For each local step (no TB yet), the TB of the first communicating step depending on it."""
    out: dict[Step, TB] = {}
    for st in steps:
        tb = st.tb
        if tb is None:
            continue
        for dep in st.dep_list:
            if dep.tb is None and dep not in out:
                out[dep] = tb
    return out
