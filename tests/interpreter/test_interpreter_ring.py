"""Every Ring schedule from the generator verifies: p = 2..16, every collective, every profile."""
from __future__ import annotations

import pytest

from ccxml.algorithms import ring
from ccxml.frontend.algorithm import Options
from ccxml.interpreter import verify
from ccxml.passes.splitting import LimitError
from ccxml.vocab.wire import PROFILES

PS = list(range(2, 17))


@pytest.mark.parametrize("target", sorted(PROFILES))
@pytest.mark.parametrize("coll", list(ring.COLLECTIVES), ids=lambda c: c.value)
def test_every_ring_schedule_verifies(coll, target):
    build = ring.COLLECTIVES[coll]
    checked = 0
    for p in PS:
        for inplace in (False, True):
            kw = {"root": p - 1} if coll.rooted else {}
            try:
                text = build(p, options=Options(inplace=inplace, channels=1 + p % 2), **kw).to_xml(target)
            except LimitError:
                continue           # the target cannot express this collective (e.g. legacy gather)
            rep = verify(text, target=target)
            assert rep.ok, f"p={p} inplace={inplace}: {rep.first_reason}"
            form = "in-place" if inplace else "out-of-place"
            assert rep.stats["per_form"][form]["chunks_checked"] > 0
            checked += 1
    if target != "legacy" or coll.value in ("allreduce", "allgather", "reducescatter", "broadcast", "reduce"):
        assert checked == 2 * len(PS)
