"""msccl-tools' own examples through ``ccxml mscclang``, where a checkout is at hand.

``MSCCL_TOOLS_EXAMPLES`` names the ``examples/mscclang`` folder of a microsoft/msccl-tools or
Azure/msccl-tools checkout (ccxml ships none of their code); without it these tests skip. The
whole set and its table: ``python benchmarks/mscclang_examples.py --examples DIR``.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from mscclang_cli import run

from ccxml import verify

FOLDER = os.environ.get("MSCCL_TOOLS_EXAMPLES")

#: a representative set (script, arguments, target), with the arguments of Azure's CI
CASES = [("allreduce_a100_ring.py", "8 8 4", "exec"),        # manual TBs, 8 channels, instances
         ("allgather_recursive_doubling.py", "2 4", "exec"),  # in-place allgather, counts > 1
         ("allreduce_a100_allpairs.py", "2 4", "exec"),       # named scratch, local reductions
         ("alltoall_a100_three_step.py", "2 8 2", "exec"),    # tuple-named scratch, group/split
         ("hierarchical_allreduce.py", "8 2 2", "exec"),      # not interleaved
         ("allreduce_ndv2.py", "1", "exec"),                  # the forms before 2022-05
         ("simple/custom_collective.py", "", "legacy")]       # a custom collective, two XML()s


@pytest.mark.skipif(not FOLDER, reason="MSCCL_TOOLS_EXAMPLES (an msccl-tools examples/mscclang folder) not set")
@pytest.mark.parametrize("script,args,target", CASES)
def test_msccl_tools_example_runs_unchanged_and_proves(script, args, target, tmp_path, monkeypatch):
    path = Path(FOLDER) / script
    if not path.is_file():
        pytest.skip(f"{script} is not in {FOLDER}")
    monkeypatch.chdir(path.parent)
    code, out, err = run(["mscclang", "--target", target, "-o", tmp_path / "x.xml", path, *args.split()])
    assert code == 0, err
    files = sorted(tmp_path.glob("x*.xml"))
    assert files
    for f in files:
        assert verify(f.read_text(), target=target).ok
