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

from ccxml.ir.nodes import GPU, TB, Algo, Step, dep_count, step_deps


def assign_threadblocks(algo: Algo) -> None:
    for gpu in algo.gpus:
        _assign_gpu(gpu)


def _assign_gpu(gpu: GPU) -> None:
    steps = gpu.pending
    # one walk over the steps (they are scattered in memory): each channel's send and recv peers
    peers: dict[int, tuple[set[int], set[int]]] = {}
    chan = -1
    sends = recvs = None
    for st in steps:
        if st.chan != chan or sends is None:
            chan = st.chan
            entry = peers.get(chan)
            if entry is None:
                entry = peers[chan] = (set(), set())
            sends, recvs = entry
        if st.send_peer >= 0:
            sends.add(st.send_peer)
        if st.recv_peer >= 0:
            recvs.add(st.recv_peer)
    chans = sorted(peers)
    if len(chans) == 1:
        groups = {chans[0]: steps}
    else:
        groups = {chan: [] for chan in chans}
        for st in steps:
            groups[st.chan].append(st)

    # communicating steps go to the TB of their connection, appended in issue order; each TB
    # lives on one channel, so the issue order within a channel's group is the TB's order
    local_steps = False
    for chan, group in groups.items():
        send_tb, recv_tb = _channel_tbs(gpu, chan, *peers[chan])
        for st in group:
            peer = st.send_peer
            if peer >= 0:
                tb = send_tb[peer]
            else:
                peer = st.recv_peer
                if peer < 0:
                    local_steps = True
                    continue
                tb = recv_tb[peer]
            st.tb = tb
            _append(tb, st)
    if local_steps:
        _place_local_steps(gpu, steps)
    gpu.pending = []


def _append(tb: TB, st: Step) -> None:
    """TB.add_step without its peer checks: the peers match by construction."""
    t = st.type
    if t.sends:
        st.send_index = tb.send_count
        tb.send_count += 1
    if t.receives:
        st.recv_index = tb.recv_count
        tb.recv_count += 1
    tb.steps.append(st)


def _channel_tbs(gpu: GPU, chan: int, sends: set[int], recvs: set[int]
                 ) -> tuple[dict[int, TB], dict[int, TB]]:
    """Create the TBs of one channel, whose steps send to ``sends`` and receive from ``recvs``;
    return {send peer: TB} and {recv peer: TB}."""
    send_tb: dict[int, TB] = {}
    recv_tb: dict[int, TB] = {}
    if len(sends) <= 1 and len(recvs) <= 1:
        if sends or recvs:
            s = next(iter(sends), -1)
            r = next(iter(recvs), -1)
            tb = gpu.add_tb(TB(s, r, chan))
            if s >= 0:
                send_tb[s] = tb
            if r >= 0:
                recv_tb[r] = tb
        return send_tb, recv_tb
    for peer in sorted(sends & recvs):
        send_tb[peer] = recv_tb[peer] = gpu.add_tb(TB(peer, peer, chan))
    for peer in sorted(sends - recvs):
        send_tb[peer] = gpu.add_tb(TB(peer, -1, chan))
    for peer in sorted(recvs - sends):
        recv_tb[peer] = gpu.add_tb(TB(-1, peer, chan))
    return send_tb, recv_tb


def _place_local_steps(gpu: GPU, steps: list[Step]) -> None:
    """Give each local step (the steps without a TB yet) a TB: the producer of its source, else
    the next consumer of its output, else the channel's first TB, else a TB of its own; then
    restore issue order in the TBs that received one."""
    local_steps = [st for st in steps if st.tb is None]     # in issue order: producers first
    consumer = _first_consumers(steps)
    first_tb: dict[int, TB] | None = None
    local_tb: dict[int, TB] = {}
    for st in local_steps:
        tb = None
        for dep in reversed(step_deps(st)):        # the latest producer first
            tb = dep.tb
            if tb is not None:
                break
        if tb is None:
            tb = consumer.get(st)
        if tb is None:
            if first_tb is None:        # each channel's first TB (the earliest write wins)
                first_tb = {t.chan: t for t in reversed(gpu.tbs)}
            tb = first_tb.get(st.chan)
        if tb is None:
            tb = local_tb.get(st.chan)
            if tb is None:
                tb = local_tb[st.chan] = gpu.add_tb(TB(-1, -1, st.chan))
        st.tb = tb
    changed = {st.tb for st in local_steps}     # membership only: never iterated into output
    for tb in changed:
        tb.steps = []
        tb.send_count = tb.recv_count = 0
    for st in [st for st in steps if st.tb in changed]:
        _append(st.tb, st)


def _first_consumers(steps: list[Step]) -> dict[Step, TB]:
    """For each local step (no TB yet), the TB of the first communicating step depending on it."""
    out: dict[Step, TB] = {}
    for st in filter(dep_count, steps):                    # the steps with dependencies
        tb = st.tb
        if tb is None:
            continue
        for dep in step_deps(st):
            if dep.tb is None and dep not in out:
                out[dep] = tb
    return out
