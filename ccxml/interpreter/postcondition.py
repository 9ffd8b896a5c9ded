"""Compare the final symbolic memory with the collective's definition.

Guarantee: for every (rank, output chunk) that :meth:`ccxml.collectives.Collective.expected`
defines, the chunk must hold exactly the expected contributions, each once. A mismatch yields one
finding naming the rank, buffer, chunk, and the contributions expected and found:

* ``unwritten-output`` — nothing ever wrote the chunk;
* ``double-count`` — a reduction on the way combined a contribution twice;
* ``wrong-contribution`` — the chunk holds contributions it must not hold (wrong offset, wrong
  peer, uninitialised data);
* ``missing-contribution`` — a strict subset of the expected contributions arrived.
"""
from __future__ import annotations

from ccxml.findings import Finding
from ccxml.interpreter.execute import ExecResult, _Reporter, describe_bits
from ccxml.interpreter.program import Program


def check(prog: Program, res: ExecResult, limit: int = 20) -> tuple[list[Finding], dict]:
    """Findings for every output chunk that differs from the definition, plus counts per code."""
    coll = prog.collective
    rep = _Reporter(limit)
    if coll is None:
        return [], {}
    uninit, dup = res.flag_bits
    flags = uninit | dup
    mem = res.memory
    layout = prog.layout
    bits = prog.input_bits
    checked = 0
    masks: dict = {}
    for r, j, contribs in coll.expected():
        checked += 1
        lay = layout.get(r)
        exp = masks.get(contribs)
        if exp is None:
            exp = 0
            for q, idx in contribs:
                first = bits.get(q)
                if first is not None:
                    exp |= 1 << (first + idx)
            masks[contribs] = exp
        if lay is None:
            rep.add(Finding("unwritten-output", f"rank {r} has no <gpu> element, so its output chunk {j} "
                            f"is never written (expected {describe_bits(exp, prog)})", gpu=r))
            continue
        k, base = lay["o"]
        a = base + j
        buf = mem[k]
        v = buf[a] if a < len(buf) else None
        if v == exp:
            continue
        where = f"rank {r} output chunk {j}"
        if v is None:
            rep.add(Finding("unwritten-output", f"{where}: expected {describe_bits(exp, prog)}, found "
                            "nothing (never written)", gpu=r))
        elif v & dup:
            rep.add(Finding("double-count", f"{where}: expected {describe_bits(exp, prog)}, found "
                            f"{describe_bits(v & ~flags, prog)} with a contribution reduced twice", gpu=r))
        elif v & uninit or v & ~exp:
            extra = v & ~exp & ~flags
            note = " and uninitialised data" if v & uninit else ""
            rep.add(Finding("wrong-contribution", f"{where}: expected {describe_bits(exp, prog)}, found "
                            f"{describe_bits(v & ~flags, prog)}{note} (not expected: "
                            f"{describe_bits(extra, prog)})", gpu=r))
        else:
            rep.add(Finding("missing-contribution", f"{where}: expected {describe_bits(exp, prog)}, "
                            f"found {describe_bits(v, prog)} (missing {describe_bits(exp & ~v, prog)})",
                            gpu=r))
    counts = dict(rep.counts)
    counts["_checked"] = checked
    return rep.findings, counts
