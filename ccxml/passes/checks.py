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
from dataclasses import dataclass
from typing import ClassVar

from ccxml.ir.nodes import Algo
from ccxml.passes.base import Pass
from ccxml.vocab.errors import CcxmlError, LimitError, LinkError
from ccxml.vocab.wire import Profile


def check_links(algo: Algo) -> None:
    """Raise LinkError for the first broken link rule (in GPU, TB, link order)."""
    n = algo.ngpus
    sends: dict[tuple[int, int, int], list[int]] = {}       # (from, to, chan) -> cnt sequence
    recvs: dict[tuple[int, int, int], list[int]] = {}
    for gpu in algo.gpus:
        g = gpu.id
        for tb in gpu.tbs:
            s, r, chan = tb.send, tb.recv, tb.chan
            if s >= 0:
                if s == g or s >= n:
                    _peer_error(algo, gpu, tb, "send", s)
                if (g, s, chan) in sends:
                    _twice_error(algo, gpu, tb, "send", s)
            if r >= 0:
                if r == g or r >= n:
                    _peer_error(algo, gpu, tb, "recv", r)
                if (r, g, chan) in recvs:
                    _twice_error(algo, gpu, tb, "recv", r)
            if s >= 0 and r >= 0:
                # both ends in one walk over the steps: two comprehensions cost more for the
                # many 2-step TBs of an alltoall
                sc: list[int] = []
                rc: list[int] = []
                last = None
                for st in tb.steps:
                    t = st.type
                    if t is not last:   # the flags are read again only when the type changes
                        last, t_sends, t_receives = t, t.sends, t.receives
                    if t_sends:
                        sc.append(st.cnt)
                    if t_receives:
                        rc.append(st.cnt)
                sends[g, s, chan] = sc
                recvs[r, g, chan] = rc
            elif s >= 0:
                sends[g, s, chan] = [st.cnt for st in tb.steps if st.type.sends]
            elif r >= 0:
                recvs[r, g, chan] = [st.cnt for st in tb.steps if st.type.receives]
    if sends != recvs:                  # every link declared at both ends with equal cnt sequences?
        _link_error(algo, sends, recvs)


def _link_error(algo: Algo, sends: dict, recvs: dict) -> None:
    """Raise the LinkError for the first link (sends first, deterministic order) that differs."""
    for key in [*sends, *(k for k in recvs if k not in sends)]:      # deterministic order
        a, b, chan = key
        if key not in recvs:
            raise LinkError(f"gpu {a} tb {_tb_of(algo, a, chan, send=b).id} chan {chan} sends to "
                            f"{b}, but gpu {b} has no TB receiving from {a} on channel {chan}")
        if key not in sends:
            raise LinkError(f"gpu {b} tb {_tb_of(algo, b, chan, recv=a).id} chan {chan} receives "
                            f"from {a}, but gpu {a} has no TB sending to {b} on channel {chan}")
        s_cnts, r_cnts = sends[key], recvs[key]
        if s_cnts != r_cnts:
            i = next((i for i, (x, y) in enumerate(zip(s_cnts, r_cnts)) if x != y),
                     min(len(s_cnts), len(r_cnts)))
            raise LinkError(f"link {a}->{b} chan {chan}: gpu {a} tb "
                            f"{_tb_of(algo, a, chan, send=b).id} sends {len(s_cnts)} messages, "
                            f"gpu {b} tb {_tb_of(algo, b, chan, recv=a).id} receives "
                            f"{len(r_cnts)}; they differ at message {i} (cnt "
                            f"{s_cnts[i:i + 1] or 'none'} vs {r_cnts[i:i + 1] or 'none'})")


def _tb_of(algo: Algo, g: int, chan: int, send: int = -1, recv: int = -1):
    """The (first) TB of gpu ``g`` on ``chan`` sending to ``send`` / receiving from ``recv``."""
    return next(tb for tb in algo.gpus[g].tbs if tb.chan == chan
                and (tb.send == send if send >= 0 else tb.recv == recv))


def _peer_error(algo: Algo, gpu, tb, kind: str, peer: int) -> None:
    raise LinkError(f"gpu {gpu.id} tb {tb.id} chan {tb.chan}: {kind} peer {peer} "
                    f"is not another rank of 0..{algo.ngpus - 1}")


def _twice_error(algo: Algo, gpu, tb, kind: str, peer: int) -> None:
    other = (_tb_of(algo, gpu.id, tb.chan, send=peer) if kind == "send"
             else _tb_of(algo, gpu.id, tb.chan, recv=peer))
    raise LinkError(f"gpu {gpu.id} chan {tb.chan}: TBs {other.id} and {tb.id} both {kind} "
                    f"{'to' if kind == 'send' else 'from'} {peer}")


def check_limits(algo: Algo, profile: Profile) -> None:
    """Raise LimitError for the first limit broken: channels, then per GPU its TBs, TBs per
    channel and direction, XML nodes, then TB by TB its step count and its steps."""
    p = profile
    if algo.nchannels - 1 > p.max_chan:
        raise LimitError(f"channel {algo.nchannels - 1} exceeds the {p.name} limit of {p.max_chan}: "
                         f"use fewer --channels")
    types, max_cnt, max_dep_tb, max_steps = p.step_types, p.max_cnt, p.max_dep_tb, p.max_steps_per_tb
    for gpu in algo.gpus:
        tbs = gpu.tbs
        if len(tbs) > p.max_tbs:
            raise LimitError(f"gpu {gpu.id} has {len(tbs)} thread blocks; the {p.name} limit is "
                             f"{p.max_tbs}: use fewer --channels or --target exec")
        if len(tbs) > p.max_tbs_per_chan_dir:       # else no channel can hold too many
            _check_tbs_per_channel(gpu, p)
        nodes = 1 + algo.ngpus + len(tbs)
        for tb in tbs:
            nodes += len(tb.steps)
        if nodes > p.max_nodes:
            raise LimitError(f"gpu {gpu.id} needs {nodes} XML nodes; the runtime keeps at most "
                             f"{p.max_nodes} per rank: use fewer --channels or fewer ranks")
        for tb in tbs:
            steps = tb.steps
            if len(steps) > max_steps:
                raise LimitError(f"gpu {gpu.id} tb {tb.id} has {len(steps)} steps; the {p.name} "
                                 f"limit is {max_steps}: use --target legacy")
            for st in steps:
                dep = st.dep
                if (st.cnt > max_cnt or st.type not in types
                        or (dep is not None and dep.tb.id > max_dep_tb)):
                    _step_limit_error(gpu, tb, st, p)


def _check_tbs_per_channel(gpu, p: Profile) -> None:
    """Raise LimitError if a channel of ``gpu`` has more TBs with a send (recv) peer than the
    runtime allows."""
    tbs = gpu.tbs
    for kind, counts in (("send", Counter(tb.chan for tb in tbs if tb.send >= 0)),
                         ("recv", Counter(tb.chan for tb in tbs if tb.recv >= 0))):
        for chan, count in sorted(counts.items()):
            if count > p.max_tbs_per_chan_dir:
                raise LimitError(
                    f"gpu {gpu.id} has {count} TBs with a {kind} peer on channel {chan}; "
                    f"the runtime allows {p.max_tbs_per_chan_dir}: spread the peers over "
                    f"more channels (chan=...)")


def _step_limit_error(gpu, tb, st, p: Profile) -> None:
    """Raise the LimitError for the first limit step ``st`` breaks (type, cnt, depid)."""
    if st.type not in p.step_types:
        raise LimitError(f"gpu {gpu.id} tb {tb.id} step {st.s}: type {st.type.value} is "
                         f"not executed by {p.name}")
    if st.cnt > p.max_cnt:
        raise LimitError(f"gpu {gpu.id} tb {tb.id} step {st.s}: cnt {st.cnt} exceeds "
                         f"{p.max_cnt}: use more chunks per loop (smaller chunks)")
    raise LimitError(f"gpu {gpu.id} tb {tb.id} step {st.s} depends on tb "
                     f"{st.depid}; the {p.name} limit for depid is {p.max_dep_tb}: "
                     f"use fewer --channels")


# ---- the pass (registered in ccxml.passes.registry) ----------------------------------------
@dataclass(frozen=True)
class CheckLinksAndLimits(Pass):
    """Every link is declared at both ends with equal ``cnt`` sequences and one TB per
    connection, and every limit of the target holds (raises LinkError / LimitError naming the
    first that does not)."""

    name: ClassVar[str] = "checks"

    def run(self, algo: Algo, profile: Profile) -> None:
        check_links(algo)
        check_limits(algo, profile)

    def check(self, algo: Algo, profile: Profile) -> str | None:
        try:
            self.run(algo, profile)
        except CcxmlError as e:
            return str(e)
        return None
