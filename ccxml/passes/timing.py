"""CPU time and memory per pass, like compilers' ``-time-passes`` (``ccxml generate
--time-passes``, ``benchmarks/bench_passes.py``).

A :class:`PassTimer` is a pipeline hook: each call closes a lap named after the pass that just
ran. Other stages (the Chunk API build, the writer) close laps by name with :meth:`lap`. A lap
records CPU seconds (user + system, this process), wall seconds, the resident set size at its
end, how much it grew during the lap and the process's peak resident size so far (a lap that
raised the peak shows it). Reading the memory figures is excluded from the laps.
"""
from __future__ import annotations

import os
import sys
import time

try:
    import resource
except ImportError:  # pragma: no cover - not a Unix
    resource = None

_MB = 1 << 20


def rss_bytes() -> int:
    """The resident set size of this process now (0 where it cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def peak_rss_bytes() -> int:
    """The highest resident set size this process has had (0 where it cannot be read)."""
    if resource is None:  # pragma: no cover
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024     # bytes there, KiB here


class Lap:
    """One stage's figures (a plain class: a dataclass would cost every ``ccxml generate``
    a millisecond and a half of start-up)."""

    __slots__ = ("name", "cpu", "wall", "rss", "growth", "peak")

    def __init__(self, name: str, cpu: float, wall: float, rss: int, growth: int, peak: int):
        self.name = name
        self.cpu = cpu          # seconds, user + system
        self.wall = wall        # seconds
        self.rss = rss          # bytes at the end of the lap
        self.growth = growth    # bytes the resident set grew (or shrank) during the lap
        self.peak = peak        # the process's peak resident bytes at the end of the lap


class PassTimer:
    """Laps of CPU time, wall time and memory; call it as a pipeline hook."""

    def __init__(self) -> None:
        self.laps: list[Lap] = []
        self.restart()

    def restart(self) -> None:
        """Start the next lap now."""
        self._rss = rss_bytes()
        self._cpu = time.process_time()
        self._wall = time.perf_counter()

    def lap(self, name: str) -> Lap:
        """Close the lap that started at the last :meth:`lap` (or :meth:`restart`)."""
        cpu = time.process_time() - self._cpu
        wall = time.perf_counter() - self._wall
        rss = rss_bytes()
        lap = Lap(name, cpu, wall, rss, rss - self._rss, max(rss, peak_rss_bytes()))
        self.laps.append(lap)
        self.restart()
        return lap

    def __call__(self, pass_, algo) -> None:
        """As a pipeline hook: close the lap of the pass that just ran."""
        self.lap(pass_.name)

    def table(self, title: str = "") -> str:
        """The laps and their total as a table (one line each, the stage name last)."""
        cpu = sum(lap.cpu for lap in self.laps)
        wall = sum(lap.wall for lap in self.laps)
        rule = "=" * 22
        lines = [f"{rule} pass timing{': ' + title if title else ''} {rule}",
                 f"{'cpu s':>9} {'wall s':>9} {'cpu %':>6} {'rss MB':>8} {'+rss MB':>8} "
                 f"{'peak MB':>8}  stage"]
        for lap in self.laps:
            share = 100 * lap.cpu / cpu if cpu else 0.0
            lines.append(f"{lap.cpu:9.4f} {lap.wall:9.4f} {share:6.1f} {lap.rss / _MB:8.1f} "
                         f"{lap.growth / _MB:+8.1f} {lap.peak / _MB:8.1f}  {lap.name}")
        peak = max((lap.peak for lap in self.laps), default=0)
        lines.append(f"{cpu:9.4f} {wall:9.4f} {100.0 if cpu else 0.0:6.1f} {'':>8} {'':>8} "
                     f"{peak / _MB:8.1f}  total")
        return "\n".join(lines)
