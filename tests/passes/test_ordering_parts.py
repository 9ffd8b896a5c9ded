"""The ordering pass's parts: the compiled ready heap (a flat array of C integers) and its exact
twin on heapq pop the same entries in the same order."""
from __future__ import annotations

import random

import pytest

from ccxml import _native
from ccxml.passes import ordering
from ccxml.passes.ordering import HeapqReady, ReadyHeap, ready_heap


def _drain(heap, script):
    """Run ``script`` (an entry to push, or None to pop) on ``heap``; return what it popped."""
    out = []
    for op in script:
        if op is None:
            if heap.size:
                out.append(heap.pop())
        else:
            heap.push(op)
    while heap.size:
        out.append(heap.pop())
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_array_heap_pops_what_heapq_pops(seed):
    rng = random.Random(seed)
    entries = rng.sample(range(1 << 62), 5000)   # distinct, up to 62 bits; past the first room
    script = []
    for x in entries:
        script.append(x)
        if rng.random() < 0.4:
            script.append(None)
    array_order = _drain(ReadyHeap(), script)
    assert array_order == _drain(HeapqReady(), script)
    assert len(array_order) == len(entries)


def test_the_compiled_module_uses_the_array_heap():
    compiled = _native.is_compiled(ordering.__file__)
    assert isinstance(ready_heap(), ReadyHeap if compiled else HeapqReady)
