"""Checks over the compiled IR: link rules and the target profile's limits.

These are the compiler's own guarantees, checked after every pass has run, so a schedule that
breaks a runtime rule never reaches the writer:

* :func:`check_links` — at most one TB per (GPU, channel, send peer) and per (GPU, channel, recv
  peer); every link declared at both ends; the ordered ``cnt`` sequence of the sends on each link
  equals that of the receives on the other end. Violations raise :class:`LinkError` naming the
  GPU, TB and channel.
* :func:`check_limits` — steps per TB, TBs per GPU, ``depid``, channels, ``cnt``, nodes per rank
  and step types. Violations raise :class:`LimitError` naming the limit, the value and the
  option that would fix it.
"""
from __future__ import annotations

from collections import Counter

from ccxml.ir import Algo
from ccxml.passes.splitting import LimitError
from ccxml.wire import Profile


class LinkError(ValueError):
    """A link rule is broken (two TBs on one connection, one-sided link, cnt mismatch)."""


def check_links(algo: Algo) -> None:
    if not _links_hold(algo):
        _raise_link_error(algo)


def _links_hold(algo: Algo) -> bool:
    """The verdict of :func:`_raise_link_error` without its diagnosis, in one cheap walk: the
    rules hold iff no peer is out of range or the TB's own GPU, no connection end is declared
    twice, and the map of send ends equals the map of receive ends (same links, same ``cnt``
    sequences)."""
    n = algo.ngpus
    sends: dict[tuple[int, int, int], list[int]] = {}
    recvs: dict[tuple[int, int, int], list[int]] = {}
    ends = 0
    for gpu in algo.gpus:
        g = gpu.id
        for tb in gpu.tbs:
            s, r, chan = tb.send, tb.recv, tb.chan
            if s == g or r == g or s >= n or r >= n:
                return False
            if s >= 0:
                if r >= 0:
                    # both ends in one walk over the steps: two comprehensions cost more for
                    # the many 2-step TBs of an alltoall
                    sc: list[int] = []
                    rc: list[int] = []
                    for st in tb.steps:
                        t = st.type
                        if t.sends:
                            sc.append(st.cnt)
                        if t.receives:
                            rc.append(st.cnt)
                    sends[g, s, chan] = sc
                    recvs[r, g, chan] = rc
                    ends += 2
                    continue
                sends[g, s, chan] = [st.cnt for st in tb.steps if st.type.sends]
                ends += 1
            if r >= 0:
                recvs[r, g, chan] = [st.cnt for st in tb.steps if st.type.receives]
                ends += 1
    return len(sends) + len(recvs) == ends and sends == recvs


def _raise_link_error(algo: Algo) -> None:
    """Raise the LinkError for the first broken link rule (in GPU, TB, link order)."""
    sends: dict[tuple[int, int, int], tuple[object, list[int]]] = {}
    recvs: dict[tuple[int, int, int], tuple[object, list[int]]] = {}
    n = algo.ngpus
    for gpu in algo.gpus:
        g = gpu.id
        for tb in gpu.tbs:
            if tb.send >= 0:
                key = (g, tb.send, tb.chan)
                if key in sends or not 0 <= tb.send < n or tb.send == g:
                    _connection_error(algo, gpu, tb, "send", tb.send, sends.get(key))
                sends[key] = (tb, [st.cnt for st in tb.steps if st.type.sends])
            if tb.recv >= 0:
                key = (tb.recv, g, tb.chan)
                if key in recvs or not 0 <= tb.recv < n or tb.recv == g:
                    _connection_error(algo, gpu, tb, "recv", tb.recv, recvs.get(key))
                recvs[key] = (tb, [st.cnt for st in tb.steps if st.type.receives])
    for key in [*sends, *(k for k in recvs if k not in sends)]:      # deterministic order
        a, b, chan = key
        if key not in recvs:
            tb = sends[key][0]
            raise LinkError(f"gpu {a} tb {tb.id} chan {chan} sends to {b}, but gpu {b} has no TB "
                            f"receiving from {a} on channel {chan}")
        if key not in sends:
            tb = recvs[key][0]
            raise LinkError(f"gpu {b} tb {tb.id} chan {chan} receives from {a}, but gpu {a} has "
                            f"no TB sending to {b} on channel {chan}")
        s_tb, s_cnts = sends[key]
        r_tb, r_cnts = recvs[key]
        if s_cnts != r_cnts:
            i = next((i for i, (x, y) in enumerate(zip(s_cnts, r_cnts)) if x != y),
                     min(len(s_cnts), len(r_cnts)))
            raise LinkError(f"link {a}->{b} chan {chan}: gpu {a} tb {s_tb.id} sends {len(s_cnts)} "
                            f"messages, gpu {b} tb {r_tb.id} receives {len(r_cnts)}; they differ "
                            f"at message {i} (cnt {s_cnts[i:i + 1] or 'none'} vs "
                            f"{r_cnts[i:i + 1] or 'none'})")


def _connection_error(algo: Algo, gpu, tb, kind: str, peer: int, other) -> None:
    if not 0 <= peer < algo.ngpus or peer == gpu.id:
        raise LinkError(f"gpu {gpu.id} tb {tb.id} chan {tb.chan}: {kind} peer {peer} "
                        f"is not another rank of 0..{algo.ngpus - 1}")
    raise LinkError(f"gpu {gpu.id} chan {tb.chan}: TBs {other[0].id} and {tb.id} both {kind} "
                    f"{'to' if kind == 'send' else 'from'} {peer}")


def check_limits(algo: Algo, profile: Profile) -> None:
    p = profile
    if algo.nchannels - 1 > p.max_chan:
        raise LimitError(f"channel {algo.nchannels - 1} exceeds the {p.name} limit of {p.max_chan}: "
                         f"use fewer --channels")
    for gpu in algo.gpus:
        if not _gpu_fits(algo, gpu, p):
            _raise_limit_error(algo, gpu, p)


def _gpu_fits(algo: Algo, gpu, p: Profile) -> bool:
    """The verdict of :func:`_raise_limit_error` for one GPU, in one walk over its steps."""
    tbs = gpu.tbs
    if len(tbs) > p.max_tbs:
        return False
    limit = p.max_tbs_per_chan_dir
    if len(tbs) > limit:            # else no channel can hold too many
        for counts in (Counter(tb.chan for tb in tbs if tb.send >= 0),
                       Counter(tb.chan for tb in tbs if tb.recv >= 0)):
            if counts and max(counts.values()) > limit:
                return False
    types, max_cnt, max_dep_tb, max_steps = p.step_types, p.max_cnt, p.max_dep_tb, p.max_steps_per_tb
    nsteps = 0
    for tb in tbs:
        steps = tb.steps
        if len(steps) > max_steps:
            return False
        nsteps += len(steps)
        for st in steps:
            dep = st.dep
            if (st.cnt > max_cnt or st.type not in types
                    or (dep is not None and dep.tb.id > max_dep_tb)):
                return False
    return 1 + algo.ngpus + len(tbs) + nsteps <= p.max_nodes


def _raise_limit_error(algo: Algo, gpu, p: Profile) -> None:
    """Raise the LimitError for the first limit ``gpu`` breaks, in a fixed order: TBs, TBs per
    channel and direction, XML nodes, then TB by TB its steps."""
    if len(gpu.tbs) > p.max_tbs:
        raise LimitError(f"gpu {gpu.id} has {len(gpu.tbs)} thread blocks; the {p.name} limit is "
                         f"{p.max_tbs}: use fewer --channels or --target exec")
    per_chan = {"send": {}, "recv": {}}
    nsteps = 0
    for tb in gpu.tbs:
        for kind, peer in (("send", tb.send), ("recv", tb.recv)):
            if peer >= 0:
                counts = per_chan[kind]
                counts[tb.chan] = counts.get(tb.chan, 0) + 1
        nsteps += len(tb.steps)
    for kind, counts in per_chan.items():
        for chan, count in sorted(counts.items()):
            if count > p.max_tbs_per_chan_dir:
                raise LimitError(f"gpu {gpu.id} has {count} TBs with a {kind} peer on channel "
                                 f"{chan}; the runtime allows {p.max_tbs_per_chan_dir}: spread "
                                 f"the peers over more channels (chan=...)")
    nodes = 1 + algo.ngpus + len(gpu.tbs) + nsteps
    if nodes > p.max_nodes:
        raise LimitError(f"gpu {gpu.id} needs {nodes} XML nodes; the runtime keeps at most "
                         f"{p.max_nodes} per rank: use fewer --channels or fewer ranks")
    types, max_cnt, max_dep_tb = p.step_types, p.max_cnt, p.max_dep_tb
    for tb in gpu.tbs:
        if len(tb.steps) > p.max_steps_per_tb:
            raise LimitError(f"gpu {gpu.id} tb {tb.id} has {len(tb.steps)} steps; the {p.name} "
                             f"limit is {p.max_steps_per_tb}: use --target legacy")
        for st in tb.steps:
            if st.type not in types:
                raise LimitError(f"gpu {gpu.id} tb {tb.id} step {st.s}: type {st.type.value} is "
                                 f"not executed by {p.name}")
            if st.cnt > max_cnt:
                raise LimitError(f"gpu {gpu.id} tb {tb.id} step {st.s}: cnt {st.cnt} exceeds "
                                 f"{p.max_cnt}: use more chunks per loop (smaller chunks)")
            if st.dep is not None and st.dep.tb.id > max_dep_tb:
                raise LimitError(f"gpu {gpu.id} tb {tb.id} step {st.s} depends on tb "
                                 f"{st.depid}; the {p.name} limit for depid is {p.max_dep_tb}: "
                                 f"use fewer --channels")
