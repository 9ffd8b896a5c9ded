"""Schedules lowered in bulk: a compact, columnar twin of the Chunk API + passes + writer.

The object path (Chunk API → IR → passes → writer) makes a Python object per chunk operation and
per step: 4.2 million for ring AllReduce on 1024 ranks (docs/compile-scale.md). Where a table of
moves describes a whole phase the same way on every rank, the schedule is a *lane*: one thread
block's steps as columns (type, buffers, the block each step touches relative to the rank, the
step its send half is matched with), the same on every rank up to a rotation of the ranks. The
passes then run once on the lane instead of once per rank, and the writer stamps the lane's text
out per rank (:mod:`ccxml.bulk.ring`: ring AllReduce, AllGather and ReduceScatter).

:func:`lower` returns such a schedule, or None for anything it does not cover (the caller then
takes the object path, which stays the reference: ``tests/bulk`` compares the two byte for byte).
"""
from __future__ import annotations

from ccxml.bulk.ring import BulkSchedule, lower

__all__ = ["BulkSchedule", "lower"]
