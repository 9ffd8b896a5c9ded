"""Compare the final symbolic memory with the collective's definition.

Guarantee: for every (rank, output chunk) that :meth:`ccxml.vocab.collectives.Collective.expected`
defines, the chunk must hold exactly the expected contributions, each once. A mismatch yields one
finding naming the rank, buffer, chunk, and the contributions expected and found:

* ``unwritten-output`` — nothing ever wrote the chunk;
* ``double-count`` — a reduction on the way combined a contribution twice;
* ``wrong-contribution`` — the chunk holds contributions it must not hold (wrong offset, wrong
  peer, uninitialised data);
* ``missing-contribution`` — a strict subset of the expected contributions arrived.

For the collectives whose definition is one index per output chunk, contributed by all ranks or
by one (every :class:`~ccxml.vocab.wire.Coll` but alltoallv), the expected values of a rank's output
are built as one list and compared with the memory in one go; the per-chunk walk over
``Collective.expected()`` (same order, same findings) runs only where they differ.
"""
from __future__ import annotations

import numpy as np

from ccxml.interpreter.execute import ExecResult
from ccxml.interpreter.program import Program
from ccxml.interpreter.values import Reporter
from ccxml.vocab.findings import Finding
from ccxml.vocab.wire import Coll


def _rank_rows(coll, value_of):
    """(rank, [expected value per output chunk 0..n-1]) in ``Collective.expected()`` order, or
    None when the collective has no such row form (then the generic walk is used)."""
    p, c, kind = coll.ngpus, coll.nchunksperloop, coll.coll
    b = coll.per_rank
    every = tuple(range(p))
    if kind in (Coll.ALLREDUCE, Coll.REDUCE):
        row = [value_of(j, every) for j in range(c)]
        return [(r, row) for r in (every if kind is Coll.ALLREDUCE else (coll.root,))]
    if kind is Coll.BROADCAST:
        row = [value_of(j, (coll.root,)) for j in range(c)]
        return [(r, row) for r in every]
    if kind in (Coll.ALLGATHER, Coll.GATHER):
        row = [value_of(j, (q,)) for q in every for j in range(b)]
        return [(r, row) for r in (every if kind is Coll.ALLGATHER else (coll.root,))]
    if kind is Coll.REDUCESCATTER:
        return [(r, [value_of(r * b + j, every) for j in range(b)]) for r in every]
    if kind is Coll.SCATTER:
        return [(r, [value_of(r * b + j, (coll.root,)) for j in range(b)]) for r in every]
    if kind is Coll.ALLTOALL:
        return [(r, [value_of(r * b + j, (q,)) for q in every for j in range(b)]) for r in every]
    return None


def _mask_of(pos: dict):
    """ranks -> the rank mask of their gpu positions (memoised; ranks without a gpu count 0)."""
    masks: dict = {}

    def mask_of(ranks: tuple) -> int:
        m = masks.get(ranks)
        if m is None:
            m = 0
            for q in ranks:
                p_ = pos.get(q)
                if p_ is not None:
                    m |= 1 << p_
            masks[ranks] = m
        return m
    return mask_of


def _split_matches(prog: Program, res) -> int | None:
    """For a result whose memory is split into chunk indices and rank masks (the level prover's):
    the number of output chunks checked when every one equals the definition, else None."""
    coll = prog.collective
    mask_of = _mask_of(prog.gpu_pos)

    def value_of(j: int, ranks: tuple):
        return j, mask_of(ranks)

    rows = _rank_rows(coll, value_of)
    if rows is None:
        return None
    index, got = res.index, res.masks
    arrays: dict = {}
    checked = 0
    for r, row in rows:
        lay = prog.layout.get(r)
        if lay is None:
            return None
        k, base = lay["o"]
        b = prog.buffers[k]
        a, n = b.loc_base + base, len(row)
        if a + n > b.loc_base + b.size:
            return None
        want = arrays.get(id(row))
        if want is None:
            js = np.array([j for j, _ in row], np.int64)
            ms = np.empty(n, dtype=object)
            ms[:] = [m for _, m in row]
            if n and not all(ms):
                return None
            want = arrays[id(row)] = (js, ms, row)
        if not np.array_equal(index[a:a + n], want[0]) or not (got[a:a + n] == want[1]).all():
            return None
        checked += n
    return checked


def check(prog: Program, res: ExecResult, limit: int = 20) -> tuple[list[Finding], dict]:
    """Findings for every output chunk that differs from the definition, plus counts per code.

    A result without ``memory`` (the level prover's split form) is compared in bulk first; its
    memory is joined only when some chunk differs."""
    coll = prog.collective
    rep = Reporter(limit)
    if coll is None:
        return [], {}
    if res.memory is None:
        checked = _split_matches(prog, res)
        if checked is not None:
            return [], {"_checked": checked}
        from ccxml.interpreter.levels import memory_list
        res.memory = memory_list(res)
    V = res.values
    mem = res.memory
    pos = prog.gpu_pos
    SH = V.SH
    mask_of = _mask_of(pos)

    def value_of(j: int, ranks: tuple) -> int:
        m = mask_of(ranks)
        return (j << SH) | m if m else 0

    def out_base(r: int):
        lay = prog.layout.get(r)
        if lay is None:
            return None, 0
        k, base = lay["o"]
        b = prog.buffers[k]
        return b.loc_base + base, b.loc_base + b.size

    checked = 0
    rows = _rank_rows(coll, value_of)
    if rows is not None:
        for r, row in rows:
            n = len(row)
            a, end = out_base(r)
            checked += n
            if a is not None and a + n <= end and mem[a:a + n] == row:
                continue
            for j in range(n):
                _chunk(prog, V, rep, r, j, row[j], mem, a, end)
    else:
        exps: dict = {}
        for r, j, contribs in coll.expected():
            checked += 1
            exp = exps.get(contribs)
            if exp is None:
                d: dict = {}
                for q, idx in contribs:
                    p_ = pos.get(q)
                    if p_ is not None:
                        d[idx] = d.get(idx, 0) | (1 << p_)
                exp = exps[contribs] = V.encode(0, d)
            a, end = out_base(r)
            _chunk(prog, V, rep, r, j, exp, mem, a, end)
    counts = dict(rep.counts)
    counts["_checked"] = checked
    return rep.findings, counts


def _chunk(prog, V, rep, r, j, exp, mem, a, end) -> None:
    if a is None:
        if rep.skip("unwritten-output"):
            return
        rep.add(Finding("unwritten-output", f"rank {r} has no <gpu> element, so its output chunk {j} "
                        f"is never written (expected {V.describe(exp)})", gpu=r))
        return
    v = mem[a + j] if a + j < end else None
    if v == exp:
        return
    where = f"rank {r} output chunk {j}"
    if v is None:
        if rep.skip("unwritten-output"):
            return
        rep.add(Finding("unwritten-output", f"{where}: expected {V.describe(exp)}, found "
                        "nothing (never written)", gpu=r))
        return
    flags = V.decode(v)[0]
    if flags & 2 and rep.skip("double-count"):
        return
    found = V.pairs(v)
    want = V.pairs(exp)
    if flags & 2:
        rep.add(Finding("double-count", f"{where}: expected {V.describe_pairs(want)}, found "
                        f"{V.describe_pairs(found)} with a contribution reduced twice", gpu=r))
        return
    wanted = set(want)
    extra = [x for x in found if x not in wanted]
    if flags & 1 or extra:
        note = " and uninitialised data" if flags & 1 else ""
        rep.add(Finding("wrong-contribution", f"{where}: expected {V.describe_pairs(want)}, found "
                        f"{V.describe_pairs(found)}{note} (not expected: "
                        f"{V.describe_pairs(extra)})", gpu=r))
    else:
        have = set(found)
        rep.add(Finding("missing-contribution", f"{where}: expected {V.describe_pairs(want)}, "
                        f"found {V.describe_pairs(found)} (missing "
                        f"{V.describe_pairs([x for x in want if x not in have])})", gpu=r))
