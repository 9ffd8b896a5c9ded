"""NHR (algorithms/nhr.py) against hccl-algorithms.md §7 and §13.

* Every generated schedule verifies with the reference interpreter (postcondition, deadlock with
  unbounded and bounded links, races, loader rules): p = 2..33 (default run: one profile per p,
  rotating, and every profile × channels 1, 2 × call form at p = 5, 8) and, in the ``slow`` test,
  every p in 2..33 and 64 with every profile, 1 and 2 channels, both call forms; every root of the
  rooted collectives at p ≤ 9.
* The communication rounds, measured on the compiled XML by :func:`hccl_rounds`, equal §13's
  step counts (ns = ⌈log2 p⌉ per phase) for p = 2..33.
* The transfers of the compiled p = 4 / p = 5 schedules equal §7's worked tables.

:func:`hccl_rounds` reads only the XML. HCCL runs one step at a time per rank and a step is a
handshake, so a step that waits on another thread block (a ``depid`` or a nop) comes one round
after what it waits for, a send comes one round after the data it sends arrived, and a receive
is not before the round its message was sent; the message takes place in the receive's round, on
both ranks (a sender cannot finish a handshake before the receiver is ready). A fused
receive-and-send step (``rcs``, ``rrs``, ``rrcs``) is a receive and the send that forwards it,
one round later; a receive that waits for it may share the send's round (HCCL issues a step's
send and receive together), anything else comes one round after the send.
(tests/schedule_rounds.py counts hops instead, where a rank's sends never advance its count; that
fits Mesh, but not a root that serves one peer per step as NHR/NB Scatter do.) The sweep of every
p × profile × channel count is the ``slow`` test; the default run covers every p once, rotating
profile, channel count and call form.
"""
from __future__ import annotations

import itertools
from functools import lru_cache

import pytest
from dataflow_rounds import replay

from ccxml.algorithms import nhr
from ccxml.frontend.algorithm import Options
from ccxml.interpreter import verify
from ccxml.loader import reader as xmlload
from ccxml.passes.splitting import LimitError
from ccxml.vocab.wire import Coll

MODULE = nhr
TARGETS = ("exec", "rccl", "legacy")
SWEEP = tuple(range(2, 34)) + (64,)
PHASES = {Coll.ALLREDUCE: 2, Coll.BROADCAST: 2, Coll.ALLGATHER: 1, Coll.REDUCESCATTER: 1,
          Coll.SCATTER: 1}


def reference_rounds(coll: Coll, p: int) -> int:
    """§13: NHR and NB take ns = ⌈log2 p⌉ steps per phase; AR and BC have two phases."""
    ns = 0
    while (1 << ns) < p:
        ns += 1
    return PHASES[coll] * ns


# ---- rounds measured on the XML ---------------------------------------------------------------
_RECV = {"r", "rcs", "rrc", "rrs", "rrcs"}
_SEND = {"s", "rcs", "rrs", "rrcs"}
_READS = {"s", "rrc", "rrs", "rrcs", "cpy", "re"}
_WRITES = {"r", "rcs", "rrc", "rrcs", "cpy", "re"}


def hccl_rounds(xml: str) -> tuple[list[list[int]], list[tuple[int, int, int, str, int, int, str]]]:
    """(per rank the sorted rounds it sends or receives in, every message as
    (round, src, dst, dst buffer, dst offset, cnt, receiving step type)). An ``rrs`` stores
    nothing: its buffer and offset are those of its local operand. See the module docstring."""
    sched = xmlload.loads(xml)
    tbs = [(g.id, tb.id) for g in sched.gpus for tb in g.tbs]
    pc = dict.fromkeys(tbs, 0)
    cur = dict.fromkeys(tbs, 1)           # a thread block's rounds never go back
    carried = dict.fromkeys(tbs, (0, 0))  # waits carried by nops to the next step
    # per step, the first round a step waiting for it may run in: (if it sends, if it only receives)
    release, arrived = {}, {}
    per_rank = [set() for _ in sched.gpus]
    messages = []

    def visit(g, key, tb, st, msg):
        pc[key] += 1
        wait = release[(g, st.depid, st.deps)] if st.depid >= 0 else (0, 0)
        wait = tuple(map(max, wait, carried[key]))
        if st.type == "nop":
            carried[key] = wait
            release[(g, key[1], pc[key] - 1)] = (cur[key] + 1, cur[key] + 1)
            return None
        carried[key] = (0, 0)
        r = max(cur[key], wait[0] if st.type in _SEND else wait[1])
        reads = []
        if st.type in _READS:
            reads += [(g, st.srcbuf, st.srcoff + i) for i in range(st.cnt)]
        if st.type == "re":
            reads += [(g, st.dstbuf, st.dstoff + i) for i in range(st.cnt)]
        data = max((arrived.get(c, 0) for c in reads), default=0)
        received = None
        if st.type in _RECV:
            r = received = max(r, msg)
            per_rank[g].add(r)
            per_rank[tb.recv].add(r)         # a transfer is a handshake: both ends' round
            buf, off = (st.srcbuf, st.srcoff) if st.type == "rrs" else (st.dstbuf, st.dstoff)
            messages.append((r, tb.recv, g, buf, off, st.cnt, st.type))
            data = max(data, r)
        if st.type in _SEND:
            r = max(r, data + 1)
        if st.type in _WRITES:
            for i in range(st.cnt):
                arrived[(g, st.dstbuf, st.dstoff + i)] = data
        cur[key] = r
        # a fused receive-and-send step is a receive (round `received`) and the send that
        # forwards it (round r): a receive waiting for it may share the send's round
        release[(g, key[1], pc[key] - 1)] = (
            r + 1, r + 1 if received is None else max(received + 1, r))
        return r

    replay(sched, visit)
    return [sorted(s) for s in per_rank], messages


# ---- building -------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def xml_of(module, coll: Coll, p: int, target: str, channels: int = 1, inplace: bool = False,
           root: int | None = None) -> str:
    kw = {"root": root} if coll.rooted else {}
    prog = module.COLLECTIVES[coll](p, options=Options(channels=channels, inplace=inplace), **kw)
    return prog.to_xml(target)


def check_verifies(module, coll: Coll, p: int, target: str, channels: int, inplace: bool,
                   root: int | None = None) -> None:
    if coll is Coll.SCATTER and target == "legacy":
        with pytest.raises(LimitError, match="legacy runtime has no scatter"):
            xml_of(module, coll, p, target, channels, inplace, root)
        return
    rep = verify(xml_of(module, coll, p, target, channels, inplace, root), target=target)
    assert rep.ok, (f"{module.__name__} {coll.value} p={p} {target} channels={channels} "
                    f"inplace={inplace} root={root}: {rep.first_reason}")


def rotation(i: int) -> tuple[str, int, bool]:
    """The i-th combination of (profile, channels, in-place), cycling through all 12."""
    return list(itertools.product(TARGETS, (1, 2), (False, True)))[i % 12]


def sweep_config(coll: Coll, p: int) -> tuple[str, int, bool, int | None]:
    """(profile, channels, in-place, root) the default sweep uses for p; the rounds test reads
    the same compiled files, so each is built once. Channels 2 and p = 64 are covered by
    :func:`check_every_combination` (small p here, every p in the slow test)."""
    target = TARGETS[p % 3]
    if coll is Coll.SCATTER and target == "legacy":
        target = "exec"
    return target, 1, p % 2 == 0, (p - 1 if coll.rooted else None)


def check_sweep(module, coll: Coll, ps=range(2, 34)) -> None:
    for p in ps:
        check_verifies(module, coll, p, *sweep_config(coll, p))


def check_every_combination(module, coll: Coll, ps) -> None:
    for p in ps:
        for target, channels, inplace in map(rotation, range(12)):
            check_verifies(module, coll, p, target, channels, inplace, 0 if coll.rooted else None)


def check_every_root(module, coll: Coll) -> None:
    for p in range(2, 10):
        for root in range(p):
            target, channels, inplace = rotation(p + root)
            check_verifies(module, coll, p, target, channels, inplace, root)


def check_rounds(module, coll: Coll) -> None:
    bad = []
    for p in range(2, 34):
        target, channels, inplace, root = sweep_config(coll, p)
        ranks, _ = hccl_rounds(xml_of(module, coll, p, target, channels, inplace, root))
        want = list(range(1, reference_rounds(coll, p) + 1))
        if coll.rooted:
            # the root takes part in every step; other ranks may sit some out (scatter) or run
            # ahead while idle (HCCL has no global barrier), but none needs an extra round
            ok = ranks[root] == want and all(set(r) <= set(want) for r in ranks)
        else:
            ok = all(r == want for r in ranks)
        if not ok:
            bad.append(f"p={p}: expected rounds 1..{len(want)}, measured {ranks[:4]}...")
    assert not bad, "; ".join(bad[:4])


def carried_blocks(xml: str) -> list[list[int]]:
    """Per message, in :func:`hccl_rounds`' order (the same replay), the blocks it carries.

    A chunk of a rank's input or output is block = its offset (one chunk per block), and so
    is a chunk of scratch (Scatter receivers keep every block there at its index) until a step
    writes it: a receive or a ``cpy`` into scratch gives it the blocks of what it received or
    copied, so blocks that travel packed through staging scratch keep their names."""
    sched = xmlload.loads(xml)
    names: dict[tuple[int, str, int], int] = {}
    out: list[list[int]] = []

    def read(g, buf, off, cnt):
        return [names.get((g, buf, off + i), off + i) for i in range(cnt)]

    def visit(g, key, tb, st, msg):
        got = None
        if st.type in _RECV:
            got = msg
            out.append(msg)
            if st.type != "rrs" and st.dstbuf == "s":
                for i, b in enumerate(msg):
                    names[(g, st.dstbuf, st.dstoff + i)] = b
        elif st.type == "cpy" and st.dstbuf == "s":
            for i, b in enumerate(read(g, st.srcbuf, st.srcoff, st.cnt)):
                names[(g, st.dstbuf, st.dstoff + i)] = b
        if st.type in _SEND:
            return got if got is not None else read(g, st.srcbuf, st.srcoff, st.cnt)
        return None

    replay(sched, visit)
    return out


def table(module, coll: Coll, p: int, root: int | None = None) -> list[dict[int, set]]:
    """Per round, rank -> set of (direction, peer, sorted blocks) read off the compiled XML
    (the blocks of :func:`carried_blocks`)."""
    xml = xml_of(module, coll, p, "exec", 1, False, root)
    _, messages = hccl_rounds(xml)
    steps: dict[int, dict[int, dict]] = {}
    for (rnd, src, dst, *_), carried in zip(messages, carried_blocks(xml)):
        blocks = set(carried)
        for rank, key in ((src, ("to", dst)), (dst, ("from", src))):
            steps.setdefault(rnd, {}).setdefault(rank, {}).setdefault(key, set()).update(blocks)
    return [{r: {(k[0], k[1], tuple(sorted(v))) for k, v in cells.items()}
             for r, cells in steps[rnd].items()} for rnd in sorted(steps)]


def per_rank(rounds: list[dict[int, set]]) -> dict[int, list[set]]:
    """Each rank's non-idle cells, in round order (what §0.3 calls normative: the order of a
    rank's transfers and their pairing, not the global step numbers)."""
    out: dict[int, list[set]] = {}
    for step in rounds:
        for rank, cells in step.items():
            out.setdefault(rank, []).append(cells)
    return out


def parse_table(rows: list[str]) -> list[dict[int, set]]:
    """Rows like ``"0: >4 2,1 <1 0,4 | 1: ..."`` (the §7/§8 table cells) into :func:`table` form."""
    out = []
    for row in rows:
        step: dict[int, set] = {}
        for cell in row.split("|"):
            rank, _, rest = cell.partition(":")
            items = rest.split()
            cells = set()
            for arrow, blocks in zip(items[::2], items[1::2]):
                direction = "to" if arrow[0] == ">" else "from"
                cells.add((direction, int(arrow[1:]), tuple(sorted(map(int, blocks.split(","))))))
            if cells:
                step[int(rank)] = cells
        out.append(step)
    return out


# ---- the tests --------------------------------------------------------------------------------------
class BlockAlgorithmChecks:
    """The checks every block algorithm (NHR, NB) passes; a subclass names its ``MODULE``."""

    MODULE = None

    def pytest_generate_tests(self, metafunc):
        colls = list(self.MODULE.COLLECTIVES)
        if getattr(metafunc.function, "rooted_only", False):
            colls = [c for c in colls if c.rooted]
        metafunc.parametrize("coll", colls, ids=lambda c: c.value)

    def test_every_p_verifies(self, coll):
        check_sweep(self.MODULE, coll)

    def test_every_profile_channel_count_and_call_form_verifies(self, coll):
        check_every_combination(self.MODULE, coll, (5, 8))

    def test_every_root_verifies(self, coll):
        check_every_root(self.MODULE, coll)
    test_every_root_verifies.rooted_only = True

    @pytest.mark.slow
    def test_every_p_profile_and_channel_count_verifies(self, coll):
        check_every_combination(self.MODULE, coll, SWEEP)

    def test_rounds_equal_the_reference_step_count(self, coll):
        check_rounds(self.MODULE, coll)


class TestNHR(BlockAlgorithmChecks):
    MODULE = MODULE


# §7's worked tables (physical block numbers; "0: >4 2,1 <1 0,4" = rank 0 sends blocks 2,1 to 4
# and receives blocks 0,4 from 1)
NHR_AR5 = [
    "0: >4 2,1 <1 0,4 | 1: >0 0,4 <2 3,2 | 2: >1 3,2 <3 1,0 | 3: >2 1,0 <4 4,3 | 4: >3 4,3 <0 2,1",
    "0: >3 4 <2 0 | 1: >4 2 <3 3 | 2: >0 0 <4 1 | 3: >1 3 <0 4 | 4: >2 1 <1 2",
    "0: >1 3 <4 0 | 1: >2 1 <0 3 | 2: >3 4 <1 1 | 3: >4 2 <2 4 | 4: >0 0 <3 2",
    "0: >4 0 <1 3 | 1: >0 3 <2 1 | 2: >1 1 <3 4 | 3: >2 4 <4 2 | 4: >3 2 <0 0",
    "0: >2 0 <3 4 | 1: >3 3 <4 2 | 2: >4 1 <0 0 | 3: >0 4 <1 3 | 4: >1 2 <2 1",
    "0: >1 0,4 <4 2,1 | 1: >2 3,2 <0 0,4 | 2: >3 1,0 <1 3,2 | 3: >4 4,3 <2 1,0 | 4: >0 2,1 <3 4,3",
]
NHR_AG5 = [
    "0: >4 0 <1 1 | 1: >0 1 <2 2 | 2: >1 2 <3 3 | 3: >2 3 <4 4 | 4: >3 4 <0 0",
    "0: >2 0 <3 3 | 1: >3 1 <4 4 | 2: >4 2 <0 0 | 3: >0 3 <1 1 | 4: >1 4 <2 2",
    "0: >1 0,3 <4 4,2 | 1: >2 1,4 <0 0,3 | 2: >3 2,0 <1 1,4 | 3: >4 3,1 <2 2,0 | 4: >0 4,2 <3 3,1",
]
NHR_AG4 = [
    "0: >2 0 <2 2 | 1: >3 1 <3 3 | 2: >0 2 <0 0 | 3: >1 3 <1 1",
    "0: >1 0,2 <3 3,1 | 1: >2 1,3 <0 0,2 | 2: >3 2,0 <1 1,3 | 3: >0 3,1 <2 2,0",
]
NHR_BC5_SCATTER = [        # the first half of Broadcast, p = 5, root 0 (tree map)
    "0: >4 2,1 | 4: <0 2,1",
    "0: >3 4 | 2: <4 1 | 3: <0 4 | 4: >2 1",
    "0: >1 3 | 1: <0 3",
]


@pytest.mark.parametrize("coll,p,rows", [(Coll.ALLREDUCE, 5, NHR_AR5), (Coll.ALLGATHER, 5, NHR_AG5),
                                         (Coll.ALLGATHER, 4, NHR_AG4)],
                         ids=["allreduce-5", "allgather-5", "allgather-4"])
def test_transfers_equal_the_worked_tables(coll, p, rows):
    assert table(MODULE, coll, p) == parse_table(rows)


NHR_SC5 = [                # stand-alone Scatter, p = 5, root 0 (identity map)
    "0: >4 4,2 | 4: <0 4,2",
    "0: >3 3 | 2: <4 2 | 3: <0 3 | 4: >2 2",
    "0: >1 1 | 1: <0 1",
]


def test_scatter_equals_the_worked_table():
    """Stand-alone Scatter: every step of §7's table."""
    got = table(MODULE, Coll.SCATTER, 5, root=0)
    assert got == parse_table(NHR_SC5)


def test_broadcast_starts_with_the_worked_scatter_table():
    """Broadcast = Scatter + AllGather (tree map): every rank's first transfers are its column of
    §7's scatter table, in order. Global rounds are not compared: HCCL has no barrier between
    the phases (§0.3), so ranks idle in the last scatter step (3 and 4 at p = 5) start the
    all-gather while 0 still sends to 1."""
    got, want = per_rank(table(MODULE, Coll.BROADCAST, 5, root=0)), per_rank(parse_table(NHR_BC5_SCATTER))
    assert set(got) == set(range(5))
    for rank, cells in want.items():
        assert got[rank][:len(cells)] == cells, f"rank {rank}"


def test_legacy_scatter_is_a_clear_error():
    with pytest.raises(LimitError, match="legacy runtime has no scatter collective"):
        MODULE.scatter(5).to_xml("legacy")


def test_tree_map_matches_the_reference_values():
    assert [nhr.slice_map(p) for p in (2, 3, 4, 5, 6, 7, 8)] == [
        [0, 1], [0, 1, 2], [0, 2, 1, 3], [0, 3, 1, 4, 2], [0, 3, 1, 4, 2, 5],
        [0, 4, 1, 5, 2, 6, 3], [0, 4, 2, 6, 1, 5, 3, 7]]
