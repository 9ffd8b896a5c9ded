"""One line per generated file: case and MD5 of its XML — to show a speed change alters nothing.

    python benchmarks/output_hashes.py > before.txt
    ... change the compiler ...
    python benchmarks/output_hashes.py > after.txt && diff before.txt after.txt

Cases: every flat algorithm × every collective it supports × 2, 3, 4, 5, 8, 13 and 33 ranks × the
three targets, the hierarchical algorithms on 2×3, 3×4 and 4×4 servers × ranks, and a few large
ones (ring and pairwise 256, ring 128 legacy). A case the generator rejects prints its error
instead of a hash, so a changed verdict shows too. ``--quick`` skips the large cases. Where
``ccxml generate`` lowers the schedule in bulk (ccxml/bulk: ring AllReduce, AllGather and
ReduceScatter on exec and legacy) the hash is of the bulk lowering's text, so the object path's
hashes check it.
"""
from __future__ import annotations

import argparse
import hashlib
import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))  # this checkout

from build_check import announce  # noqa: E402 - benchmarks/build_check.py

from ccxml.algorithms import registry  # noqa: E402
from ccxml.bulk import lower  # noqa: E402
from ccxml.driver import generate_text
from ccxml.topology.model import Topology
from ccxml.vocab.wire import profile

FLAT = ("ring", "mesh", "rhd", "pairwise", "star", "nhr", "nb", "bidir-ring", "recursive-doubling", "bruck")
RANKS = (2, 3, 4, 5, 8, 13, 33)
SHAPES = ((2, 3), (3, 4), (4, 4))
LARGE = (("ring", "allreduce", 256, "exec"), ("pairwise", "alltoall", 256, "exec"),
         ("ring", "allreduce", 128, "legacy"))


def line(label: str, alg: str, coll: str, ranks: int, target: str, **kw) -> str:
    try:
        text = None if kw else bulk_text(alg, coll, ranks, target)
        if text is None:
            text, _ = generate_text(alg, coll, ranks, target=target, **kw)
        digest = hashlib.md5(text.encode()).hexdigest()
    except ValueError as e:
        digest = f"error: {e}"
    return f"{label} {target}: {digest}"


def bulk_text(alg: str, coll: str, ranks: int, target: str) -> str | None:
    """The file as ``ccxml generate`` writes it where it lowers the schedule in bulk (ccxml/bulk:
    ring AllReduce, AllGather, ReduceScatter), so that its hashes are the bulk lowering's; None
    elsewhere."""
    sched = lower(alg, coll, ranks, profile=profile(target))
    return None if sched is None else "".join(sched.xml_parts(target))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the large cases")
    args = ap.parse_args()
    announce(times_native=False, stream=_sys.stderr)     # stdout is the hashes, to diff
    for alg in FLAT:
        for coll in registry.get(alg).builders:
            for p in RANKS:
                for target in ("exec", "rccl", "legacy"):
                    print(line(f"{alg} {coll.value} {p}", alg, coll.value, p, target), flush=True)
    for alg in (n for n in registry.names() if n not in FLAT):
        for coll in registry.get(alg).builders:
            for servers, per in SHAPES:
                topo = Topology.uniform(servers, per)
                print(line(f"{alg} {coll.value} {servers}x{per}", alg, coll.value, servers * per,
                           "exec", topology=topo), flush=True)
    if not args.quick:
        for alg, coll, p, target in LARGE:
            print(line(f"{alg} {coll} {p}", alg, coll, p, target), flush=True)


if __name__ == "__main__":
    main()
