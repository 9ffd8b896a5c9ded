"""RHD (algorithms/rhd.py) against hccl-algorithms.md §4 and §13.

* Every generated schedule verifies (postcondition, deadlock with unbounded and bounded links,
  races, loader rules) with the reference interpreter.
* The per-rank transfer sequences of the compiled schedules equal the worked tables of §4
  (p = 4 and p = 5), which are copied here verbatim: every rank's column, in order.
* The number of communication rounds, measured on the compiled XML, equals the step count of
  §13 for p = 2..33.

Rounds are measured without the builder, by ``hccl_rounds`` of tests/test_alg_nhr.py: messages
are matched on the compiled schedule's links and each gets a round, HCCL-style (one step at a time
per rank, a step a handshake): one round after the data it carries arrived or after the step of
its rank it waits for, and not before its receiver is ready. The pieces of one transfer and both
directions of an exchange share a round.
"""
from __future__ import annotations

import re
from collections import defaultdict

import pytest
from test_alg_nhr import hccl_rounds

from ccxml.algorithms import build, rhd
from ccxml.frontend.algorithm import AlgorithmError, Options
from ccxml.interpreter import verify
from ccxml.vocab.wire import Coll, StepType

COLLS = list(rhd.COLLECTIVES)
TARGETS = ["exec", "rccl", "legacy"]
#: maxBytes for the large sweeps: a 1 MiB window lets one Simple call move a whole exchange
#: message, so schedules stay small; p ≤ 12 is checked with the default (unbounded) window
BIG_WINDOW = 1 << 20


# ---- step counts from §13 (independent of the builder) -----------------------------------------
def reference_steps(coll: Coll, p: int) -> int:
    """§13: AR 2m (+2), AG m (+2), RS m (+2), BC m (+1), RD 2m (+1); m = ⌊log2 p⌋, the extra
    steps only when p is not a power of two."""
    m = p.bit_length() - 1
    folded = p != 1 << m
    return {Coll.ALLREDUCE: 2 * m + 2 * folded, Coll.ALLGATHER: m + 2 * folded,
            Coll.REDUCESCATTER: m + 2 * folded, Coll.BROADCAST: m + folded,
            Coll.REDUCE: 2 * m + folded}[coll]


# ---- reading the compiled schedule ---------------------------------------------------------------
def logical(coll: Coll, k: int, rank: int, buf: str, off: int) -> int:
    """Index of a chunk in the algorithm's working vector (out-of-place buffers)."""
    if coll is Coll.REDUCESCATTER and buf == "o":
        return off + rank * k
    if coll is Coll.ALLGATHER and buf == "i":
        return off + rank * k
    return off


def rounds_per_rank(xml: str) -> list[int]:
    """How many rounds each rank sends or receives in (:func:`test_alg_nhr.hccl_rounds`)."""
    return [len(r) for r in hccl_rounds(xml)[0]]


# ---- every schedule verifies ----------------------------------------------------------------------
def _check(coll: Coll, p: int, target: str, *, channels: int, inplace: bool, root=None, max_bytes=0):
    opts = Options(channels=channels, inplace=inplace, max_bytes=max_bytes)
    kw = {"root": root} if coll.rooted else {}
    xml = build("rhd", coll, p, options=opts, **kw).to_xml(target)
    rep = verify(xml, target=target)
    where = f"{coll.value} p={p} K={channels} inplace={inplace} root={root} maxBytes={max_bytes} {target}"
    assert rep.ok, f"{where}: {rep.first_reason}"
    form = "in-place" if inplace else "out-of-place"
    assert rep.stats["per_form"][form]["chunks_checked"] > 0, where


def _sweep(coll: Coll, p: int, target: str) -> None:
    """Channels 1 and 2 and in-place/out-of-place alternate with p; the root is p − 1;
    p ≤ 12 with an unbounded maxBytes (every transfer cut into one-chunk messages)."""
    _check(coll, p, target, channels=1 + p % 2, inplace=p % 3 == 0, root=p - 1,
           max_bytes=0 if p <= 12 else BIG_WINDOW)


@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_every_schedule_verifies(coll):
    """p = 2..33 and 64: postcondition, no deadlock with unbounded or bounded links, no race,
    loader rules; the profile rotates with p, and p = 5, 8, 9 run on every profile."""
    for p in [*range(2, 34), 64]:
        for target in (TARGETS if p in (5, 8, 9) else [TARGETS[p % 3]]):
            _sweep(coll, p, target)


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_every_schedule_verifies_on_every_profile(coll, target):
    for p in [*range(2, 34), 64]:
        _sweep(coll, p, target)


@pytest.mark.parametrize("coll", [Coll.BROADCAST, Coll.REDUCE], ids=lambda c: c.value)
def test_every_root_verifies(coll):
    """Every root at p ≤ 9, channels 1 and 2, both call forms (exec)."""
    for p in range(2, 10):
        for root in range(p):
            for channels in (1, 2):
                _check(coll, p, "exec", channels=channels, inplace=(p + root) % 2 == 0, root=root)


def test_bad_parameters():
    with pytest.raises(AlgorithmError, match="--ranks"):
        rhd.allreduce(1)
    with pytest.raises(AlgorithmError, match="--root 5 is out of range"):
        rhd.broadcast(5, root=5)
    with pytest.raises(AlgorithmError, match="rhd does not support scatter; it supports allreduce"):
        build("rhd", "scatter", 4)


# ---- the worked tables of §4, verbatim ----------------------------------------------------------
TABLES = {
    ("allreduce", 4, None): """
| RS0 | →2 {2,3}<br>⊕←2 {0,1} | →3 {2,3}<br>⊕←3 {0,1} | →0 {0,1}<br>⊕←0 {2,3} | →1 {0,1}<br>⊕←1 {2,3} |
| RS1 | →1 {1}<br>⊕←1 {0} | →0 {0}<br>⊕←0 {1} | →3 {3}<br>⊕←3 {2} | →2 {2}<br>⊕←2 {3} |
| AG0 | →1 {0}<br>←1 {1} | →0 {1}<br>←0 {0} | →3 {2}<br>←3 {3} | →2 {3}<br>←2 {2} |
| AG1 | →2 {0,1}<br>←2 {2,3} | →3 {0,1}<br>←3 {2,3} | →0 {2,3}<br>←0 {0,1} | →1 {2,3}<br>←1 {0,1} |
""",
    ("allreduce", 5, None): """
| fold | ⊕←1 {0-3} | →0 {0-3} | · | · | · |
| RS0 | →3 {2,3}<br>⊕←3 {0,1} | · | →4 {2,3}<br>⊕←4 {0,1} | →0 {0,1}<br>⊕←0 {2,3} | →2 {0,1}<br>⊕←2 {2,3} |
| RS1 | →2 {1}<br>⊕←2 {0} | · | →0 {0}<br>⊕←0 {1} | →4 {3}<br>⊕←4 {2} | →3 {2}<br>⊕←3 {3} |
| AG0 | →2 {0}<br>←2 {1} | · | →0 {1}<br>←0 {0} | →4 {2}<br>←4 {3} | →3 {3}<br>←3 {2} |
| AG1 | →3 {0,1}<br>←3 {2,3} | · | →4 {0,1}<br>←4 {2,3} | →0 {2,3}<br>←0 {0,1} | →2 {2,3}<br>←2 {0,1} |
| unfold | →1 {0-3} | ←0 {0-3} | · | · | · |
""",
    ("reducescatter", 5, None): """
| fold | ⊕←1 {0-4} | →0 {0-4} | · | · | · |
| HD0 | →3 {3,4}<br>⊕←3 {0-2} | · | →4 {3,4}<br>⊕←4 {0-2} | →0 {0-2}<br>⊕←0 {3,4} | →2 {0-2}<br>⊕←2 {3,4} |
| HD1 | →2 {2}<br>⊕←2 {0,1} | · | →0 {0,1}<br>⊕←0 {2} | →4 {4}<br>⊕←4 {3} | →3 {3}<br>⊕←3 {4} |
| unfold | →1 {1} | ←0 {1} | · | · | · |
""",
    ("allgather", 5, None): """
| fold | ←1 {1} | →0 {1} | · | · | · |
| HD0 | →2 {0,1}<br>←2 {2} | · | →0 {2}<br>←0 {0,1} | →4 {3}<br>←4 {4} | →3 {4}<br>←3 {3} |
| HD1 | →3 {0-2}<br>←3 {3,4} | · | →4 {0-2}<br>←4 {3,4} | →0 {3,4}<br>←0 {0-2} | →2 {3,4}<br>←2 {0-2} |
| unfold | →1 {0-4} | ←0 {0-4} | · | · | · |
""",
    ("broadcast", 5, 0): """
| HD0 | →3 {0} | · | · | ←0 {0} | · |
| HD1 | →2 {0} | · | ←0 {0} | →4 {0} | ←3 {0} |
| pair | →1 {0} | ←0 {0} | · | · | · |
""",
    ("broadcast", 5, 1): """
| HD0 | · | →3 {0} | · | ←1 {0} | · |
| HD1 | · | →2 {0} | ←1 {0} | →4 {0} | ←3 {0} |
| pair | ←1 {0} | →0 {0} | · | · | · |
""",
    ("reduce", 5, 0): """
| fold | ⊕←1 {0-3} | →0 {0-3} | · | · | · |
| RS0 | →3 {2,3}<br>⊕←3 {0,1} | · | →4 {2,3}<br>⊕←4 {0,1} | →0 {0,1}<br>⊕←0 {2,3} | →2 {0,1}<br>⊕←2 {2,3} |
| RS1 | →2 {1}<br>⊕←2 {0} | · | →0 {0}<br>⊕←0 {1} | →4 {3}<br>⊕←4 {2} | →3 {2}<br>⊕←3 {3} |
| G0 | ←2 {1} | · | →0 {1} | ←4 {3} | →3 {3} |
| G1 | ←3 {2,3} | · | · | →0 {2,3} | · |
""",
}

_TRANSFER = re.compile(r"(→|⊕←|←)(\d+) \{([\d,\-]+)\}")


def _blocks(text: str) -> frozenset[int]:
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def table_cells(table: str, p: int) -> list[list[frozenset]]:
    """Per rank, its non-idle cells in step order; a cell is a set of transfers
    (kind, peer, blocks)."""
    cells: list[list[frozenset]] = [[] for _ in range(p)]
    for line in table.strip().splitlines():
        row = [c.strip() for c in line.strip().strip("|").split("|")][1:]
        assert len(row) == p
        for r, cell in enumerate(row):
            found = frozenset((kind, int(peer), _blocks(b)) for kind, peer, b in _TRANSFER.findall(cell))
            if found:
                cells[r].append(found)
    return cells


def schedule_cells(xml: str, coll: Coll, p: int, k: int) -> list[list[frozenset]]:
    """Per rank, one cell per round it communicates in, in round order. Blocks as the docstring
    of rhd.py lays them out: chunk c·B + u is block-slice u (AR, Reduce), chunk u·K + c is
    block u (RS, AG, BC)."""
    big = 1 << (p.bit_length() - 1)
    block = (lambda j: j % big) if coll in (Coll.ALLREDUCE, Coll.REDUCE) else (lambda j: j // k)
    cells: list[dict[int, dict]] = [{} for _ in range(p)]
    for rnd, src, dst, buf, off, cnt, kind in hccl_rounds(xml)[1]:
        first = logical(coll, k, dst, buf, off)
        blocks = {block(j) for j in range(first, first + cnt)}
        reduces = StepType(kind).reduces
        cells[src].setdefault(rnd, defaultdict(set))[("→", dst)] |= blocks
        cells[dst].setdefault(rnd, defaultdict(set))[("⊕←" if reduces else "←", src)] |= blocks
    return [[frozenset((kind, peer, frozenset(b)) for (kind, peer), b in per[rnd].items())
             for rnd in sorted(per)] for per in cells]


@pytest.mark.parametrize("key", TABLES, ids=lambda k: f"{k[0]}-p{k[1]}" + (f"-root{k[2]}" if k[2] is not None else ""))
@pytest.mark.parametrize("target", ["exec", "legacy"])
def test_worked_tables(key, target, channels=1):
    """Every rank does exactly the transfers of §4's tables, in the tables' order: same peers,
    blocks, copy/reduce, grouped into the same steps. Each rank's column is compared, not the
    global step numbers (§0.3: HCCL has no barrier, a rank idle in the fold starts the
    halving-doubling at once)."""
    name, p, root = key
    coll = Coll(name)
    kw = {"root": root} if root is not None else {}
    xml = rhd.COLLECTIVES[coll](p, options=Options(channels=channels), **kw).to_xml(target)
    assert schedule_cells(xml, coll, p, channels) == table_cells(TABLES[key], p)


# ---- rounds against §13 ------------------------------------------------------------------------
@pytest.mark.parametrize("coll", COLLS, ids=lambda c: c.value)
def test_rounds_equal_reference_step_count(coll):
    """p = 2..33: rank 0 (the root, for rooted collectives) performs §13's number of rounds, and
    no rank performs more."""
    for p in range(2, 34):
        kw = {"root": 0} if coll.rooted else {}
        xml = rhd.COLLECTIVES[coll](p, options=Options(max_bytes=BIG_WINDOW), **kw).to_xml("exec")
        per_rank = rounds_per_rank(xml)
        want = reference_steps(coll, p)
        assert per_rank[0] == want, f"p={p}: rank 0 performs {per_rank[0]} rounds, §13 says {want}"
        assert max(per_rank) == want, f"p={p}: rounds per rank {per_rank}, §13 says {want}"


def test_rounds_every_root():
    """Rooted collectives, every root at p ≤ 9: the root's rounds are §13's count when it is
    in the fold pairs (or p is a power of two); a root above the pairs skips the fold/pair step.
    No rank performs more than §13's count."""
    for coll in (Coll.BROADCAST, Coll.REDUCE):
        for p in range(2, 10):
            m = p.bit_length() - 1
            rr = p - (1 << m)
            for root in range(p):
                per_rank = rounds_per_rank(rhd.COLLECTIVES[coll](p, root=root).to_xml("exec"))
                want = reference_steps(coll, p)
                if rr and root >= 2 * rr:
                    want -= 1
                assert per_rank[root] == want, (coll.value, p, root, per_rank)
                assert max(per_rank) <= reference_steps(coll, p), (coll.value, p, root, per_rank)
