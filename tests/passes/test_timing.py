"""PassTimer (``ccxml generate --time-passes``): laps of CPU time and memory."""
from __future__ import annotations

import sys

import pytest

from ccxml.passes.timing import PassTimer, rss_bytes


@pytest.mark.skipif(not sys.platform.startswith("linux") or not rss_bytes(),
                    reason="the resident set size is read from /proc")
def test_a_lap_sees_the_memory_it_allocated_and_the_cpu_it_spent():
    timer = PassTimer()
    block = bytearray(64 << 20)             # zero-filled: every page is touched
    alloc = timer.lap("alloc")
    sum(range(200_000))
    spin = timer.lap("spin")
    assert alloc.growth > 48 << 20 and alloc.peak >= alloc.rss > 64 << 20
    assert spin.cpu > 0 and abs(spin.growth) < 8 << 20
    del block
    table = timer.table("t").splitlines()
    assert table[-1].split()[-1] == "total" and [r.split()[-1] for r in table[2:4]] == ["alloc", "spin"]


def test_as_a_hook_a_lap_is_named_after_the_pass():
    class Fake:
        name = "ordering"
    timer = PassTimer()
    timer(Fake(), None)
    assert [lap.name for lap in timer.laps] == ["ordering"]
