"""Mutation test: single-point mutants of generated schedules must be rejected when they change
the result or the ordering guarantees.

Whether a mutant changes the result is decided independently of the verifier, by a deliberately
naive oracle in this file: it runs the schedule step by step (XML steps, no fusion) with random
interleavings and unbounded FIFO links, holding multisets of contributions, and compares the
output with ``Collective.expected()``. A mutant is "changed" if some run hangs, reads unwritten
memory or ends with a wrong output. Every changed mutant must be rejected. Mutants the oracle
cannot tell apart (e.g. a dependency removed where the random runs happen to be ordered anyway)
may be rejected too (the verifier is exact about races); the kill rate over all mutants is
printed.
"""
from __future__ import annotations

import copy
import random
from collections import Counter, deque

from ccxml.algorithms import ring
from ccxml.frontend.algorithm import Options
from ccxml.interpreter import collective_for, verify
from ccxml.loader import reader as xmlload
from ccxml.vocab.collectives import Collective
from ccxml.vocab.wire import Coll

RECV = {"r", "rcs", "rrs", "rrc", "rrcs"}
SEND = {"s", "rcs", "rrs", "rrcs"}


def oracle(schedule, coll: Collective, inplace: bool, rng: random.Random):
    """One random interleaving; returns None if the output is right, else a reason."""
    mem = {}
    for g in schedule.gpus:
        r = g.id
        n_in, n_out = coll.input_chunks(r), coll.output_chunks(r)
        i = [Counter({(r, j): 1}) for j in range(n_in)]
        if inplace:
            d = coll.inplace_input_offset(r)
            size = max(n_out, n_in + d) if d >= 0 else max(n_in, n_out - d)
            base = [None] * size
            ioff, ooff = (d, 0) if d >= 0 else (0, -d)
            base[ioff:ioff + n_in] = i
            mem[r] = {"i": (base, ioff), "o": (base, ooff)}
        else:
            mem[r] = {"i": (i, 0), "o": ([None] * n_out, 0)}
        mem[r]["s"] = ([None] * max(g.s_chunks, 0), 0)
    tbs = [(g.id, tb) for g in schedule.gpus for tb in g.tbs]
    key = {(g, tb.id): k for k, (g, tb) in enumerate(tbs)}
    pc = [0] * len(tbs)
    done = [set() for _ in tbs]
    links: dict = {}

    def read(r, buf, off, cnt):
        arr, base = mem[r][buf]
        if off < 0 or base + off + cnt > len(arr):
            raise ValueError("out of bounds")
        vals = arr[base + off:base + off + cnt]
        if any(v is None for v in vals):
            raise ValueError("uninitialised read")
        return vals

    def write(r, buf, off, vals):
        arr, base = mem[r][buf]
        if off < 0 or base + off + len(vals) > len(arr):
            raise ValueError("out of bounds")
        arr[base + off:base + off + len(vals)] = vals

    def ready(k):
        g, tb = tbs[k]
        if pc[k] >= len(tb.steps):
            return False
        st = tb.steps[pc[k]]
        if st.depid >= 0:
            x = key.get((g, st.depid))
            if x is None or not any(s >= st.deps for s in done[x]):
                return False
        if st.type in RECV and st.cnt > 0 and not links.get((tb.recv, g, tb.chan)):
            return False
        return True

    while True:
        cands = [k for k in range(len(tbs)) if ready(k)]
        if not cands:
            break
        k = rng.choice(cands)
        g, tb = tbs[k]
        st = tb.steps[pc[k]]
        pc[k] += 1
        t, c = st.type, st.cnt
        try:
            if t != "nop" and c > 0:
                got = links[(tb.recv, g, tb.chan)].popleft() if t in RECV else None
                if t == "s":
                    out = read(g, st.srcbuf, st.srcoff, c)
                elif t in ("r", "rcs"):
                    out = got[:c]
                    write(g, st.dstbuf, st.dstoff, out)
                elif t in ("rrs", "rrc", "rrcs"):
                    out = [a + b for a, b in zip(got, read(g, st.srcbuf, st.srcoff, c))]
                    if t != "rrs":
                        write(g, st.dstbuf, st.dstoff, out)
                elif t == "cpy":
                    write(g, st.dstbuf, st.dstoff, read(g, st.srcbuf, st.srcoff, c))
                elif t == "re":
                    write(g, st.dstbuf, st.dstoff, [a + b for a, b in zip(read(g, st.dstbuf, st.dstoff, c),
                                                                          read(g, st.srcbuf, st.srcoff, c))])
                if t in SEND:
                    links.setdefault((g, tb.send, tb.chan), deque()).append(out)
        except ValueError as e:
            return str(e)
        if st.hasdep and t != "nop":
            done[k].add(st.s)
    if any(pc[k] < len(tb.steps) for k, (_, tb) in enumerate(tbs)):
        return "hang"
    if any(links.values()):
        return "leftover message"
    for r, j, contribs in coll.expected():
        arr, base = mem[r]["o"]
        if arr[base + j] != Counter(contribs):
            return f"wrong output rank {r} chunk {j}"
    return None


def changes_result(schedule, coll, inplace, runs=12, seed=0):
    rng = random.Random(seed)
    for _ in range(runs):
        why = oracle(schedule, coll, inplace, rng)
        if why:
            return why
    return None


def mutants(schedule, rng: random.Random, n: int):
    """Yield (description, mutated schedule)."""
    spots = [(gi, ti, si) for gi, g in enumerate(schedule.gpus) for ti, tb in enumerate(g.tbs)
             for si, _ in enumerate(tb.steps)]
    kinds = ["drop", "offset", "cnt", "dep", "swap"]
    for m in range(n):
        kind = kinds[m % len(kinds)]
        for _ in range(50):
            gi, ti, si = rng.choice(spots)
            mut = copy.deepcopy(schedule)
            tb = mut.gpus[gi].tbs[ti]
            st = tb.steps[si]
            if kind == "drop":
                del tb.steps[si]
                for k, s2 in enumerate(tb.steps):
                    s2.s = k
                desc = f"drop gpu {gi} tb {tb.id} step {si}"
            elif kind == "offset":
                side = rng.choice(["srcoff", "dstoff"])
                setattr(st, side, getattr(st, side) + rng.choice([-1, 1]))
                desc = f"shift {side} gpu {gi} tb {tb.id} step {si}"
            elif kind == "cnt":
                st.cnt = st.cnt + 1 if st.cnt <= 1 or rng.random() < 0.5 else st.cnt - 1
                desc = f"cnt gpu {gi} tb {tb.id} step {si}"
            elif kind == "dep":
                if st.depid < 0:
                    continue
                if rng.random() < 0.5:
                    st.depid, st.deps = -1, -1
                    desc = f"remove dep gpu {gi} tb {tb.id} step {si}"
                else:
                    others = [t.id for t in mut.gpus[gi].tbs if t.id not in (tb.id, st.depid)]
                    if not others:
                        continue
                    st.depid = rng.choice(others)
                    desc = f"retarget dep gpu {gi} tb {tb.id} step {si}"
            else:
                if si + 1 >= len(tb.steps):
                    continue
                a, b = tb.steps[si], tb.steps[si + 1]
                tb.steps[si], tb.steps[si + 1] = b, a
                a.s, b.s = b.s, a.s
                desc = f"swap gpu {gi} tb {tb.id} steps {si},{si + 1}"
            yield desc, mut
            break


CASES = [
    (Coll.ALLREDUCE, 3, False), (Coll.ALLREDUCE, 4, True), (Coll.ALLGATHER, 4, False),
    (Coll.REDUCESCATTER, 3, False), (Coll.BROADCAST, 3, False), (Coll.REDUCE, 4, False),
    (Coll.GATHER, 3, False), (Coll.SCATTER, 3, True),
]


def test_mutants_that_change_the_result_are_rejected(capsys):
    rng = random.Random(1234)
    total = killed = changed = 0
    missed = []
    for coll, p, inplace in CASES:
        build = ring.COLLECTIVES[coll]
        kw = {"root": 1} if coll.rooted else {}
        text = build(p, options=Options(channels=2, inplace=inplace), **kw).to_xml("exec")
        base = xmlload.loads(text)
        collective, _ = collective_for(base)
        assert verify(base, inplace=inplace).ok
        assert changes_result(base, collective, inplace) is None
        for desc, mut in mutants(base, rng, 25):
            total += 1
            why = changes_result(mut, collective, inplace)
            rep = verify(mut, inplace=inplace)
            if not rep.ok:
                killed += 1
            if why:
                changed += 1
                if rep.ok:
                    missed.append(f"{coll.value} p={p}: {desc}: oracle says {why}")
    with capsys.disabled():
        print(f"\nmutation: {killed}/{total} mutants rejected ({100 * killed / total:.1f}%), "
              f"{changed} change the result (all must be rejected)")
    assert not missed, missed
    assert total >= 150
