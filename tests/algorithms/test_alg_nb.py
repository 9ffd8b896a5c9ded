"""NB (algorithms/nb.py) against hccl-algorithms.md §8 and §13.

Same checks as tests/test_alg_nhr.py (whose helpers this file uses): every schedule verifies
(p = 2..33 and 64, every root at p ≤ 9, every profile, 1 and 2 channels, both call forms), the
rounds measured on the XML equal §13's ns = ⌈log2 p⌉ per phase for p = 2..33, and the compiled
p = 4 / p = 5 / p = 7 schedules move exactly the blocks of §8's worked tables (Scatter: the
useful-data rule).
"""
from __future__ import annotations

import pytest
from test_alg_nhr import BlockAlgorithmChecks, parse_table, table

from ccxml.algorithms import nb
from ccxml.passes.splitting import LimitError
from ccxml.vocab.wire import Coll

MODULE = nb


class TestNB(BlockAlgorithmChecks):
    MODULE = MODULE


# §8's worked tables ("0: >1 1,3 <4 0,2" = rank 0 sends blocks 1,3 to 1, receives 0,2 from 4)
NB_AR5 = [
    "0: >1 1,3 <4 0,2 | 1: >2 2,4 <0 1,3 | 2: >3 3,0 <1 2,4 | 3: >4 4,1 <2 3,0 | 4: >0 0,2 <3 4,1",
    "0: >2 2 <3 0 | 1: >3 3 <4 1 | 2: >4 4 <0 2 | 3: >0 0 <1 3 | 4: >1 1 <2 4",
    "0: >4 4 <1 0 | 1: >0 0 <2 1 | 2: >1 1 <3 2 | 3: >2 2 <4 3 | 4: >3 3 <0 4",
    "0: >1 0 <4 4 | 1: >2 1 <0 0 | 2: >3 2 <1 1 | 3: >4 3 <2 2 | 4: >0 4 <3 3",
    "0: >2 0,4 <3 3,2 | 1: >3 1,0 <4 4,3 | 2: >4 2,1 <0 0,4 | 3: >0 3,2 <1 1,0 | 4: >1 4,3 <2 2,1",
    "0: >4 0 <1 1 | 1: >0 1 <2 2 | 2: >1 2 <3 3 | 3: >2 3 <4 4 | 4: >3 4 <0 0",
]
NB_AR4 = [
    "0: >1 1,3 <3 0,2 | 1: >2 2,0 <0 1,3 | 2: >3 3,1 <1 2,0 | 3: >0 0,2 <2 3,1",
    "0: >2 2 <2 0 | 1: >3 3 <3 1 | 2: >0 0 <0 2 | 3: >1 1 <1 3",
    "0: >1 0 <3 3 | 1: >2 1 <0 0 | 2: >3 2 <1 1 | 3: >0 3 <2 2",
    "0: >2 0,3 <2 2,1 | 1: >3 1,0 <3 3,2 | 2: >0 2,1 <0 0,3 | 3: >1 3,2 <1 1,0",
]
NB_SC7 = [        # the first half of Broadcast p = 7, root 0: the useful-data Scatter rule
    "0: >1 1,3,5 | 1: <0 1,3,5",
    "0: >2 2,6 | 1: >3 3 | 2: <0 2,6 | 3: <1 3",
    "0: >4 4 | 1: >5 5 | 2: >6 6 | 4: <0 4 | 5: <1 5 | 6: <2 6",
]


NB_SC5 = [        # stand-alone Scatter, p = 5, root 0
    "0: >1 1,3 | 1: <0 1,3",
    "0: >2 2 | 1: >3 3 | 2: <0 2 | 3: <1 3",
    "0: >4 4 | 4: <0 4",
]


def test_scatter_equals_the_worked_table():
    assert table(MODULE, Coll.SCATTER, 5, root=0) == parse_table(NB_SC5)


@pytest.mark.parametrize("p,rows", [(5, NB_AR5), (4, NB_AR4)], ids=["p5", "p4"])
def test_allreduce_transfers_equal_the_worked_tables(p, rows):
    assert table(MODULE, Coll.ALLREDUCE, p) == parse_table(rows)


def test_scatter_uses_the_useful_data_rule():
    """The first three rounds of Broadcast p = 7 are §8's useful-data Scatter table (rank 1 → 3
    carries block 3 only); a rank that received in one step receives the all-gather's data
    only after it (one step at a time, as HCCL's stream), so rank 4's first cell is ←0 {4}."""
    assert table(MODULE, Coll.BROADCAST, 7, root=0)[:3] == parse_table(NB_SC7)


def test_legacy_scatter_is_a_clear_error():
    with pytest.raises(LimitError, match="legacy runtime has no scatter collective"):
        MODULE.scatter(5).to_xml("legacy")
