"""How fast this machine runs plain Python right now, to read the other benchmarks' figures by.

On a shared or virtual machine the same command can take twice as long from one minute to the
next; a figure printed beside this one says whether the machine or the code changed.
"""
from __future__ import annotations

import time


def calibration() -> float:
    """CPU seconds for 3M iterations of ``x += i`` (about 0.1 s on a typical 2024 desktop core)."""
    t = time.process_time()
    x = 0
    for i in range(3_000_000):
        x += i
    return time.process_time() - t


def calibration_line() -> str:
    return (f"calibration: 3M-iteration Python loop in {calibration():.3f} s cpu "
            f"(typical desktop core ~0.1 s)")
