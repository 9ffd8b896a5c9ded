"""What one rank executes: its thread blocks' instructions, addressed in chunks of its memory.

The schedule is lowered by the interpreter's :func:`~ccxml.interpreter.program.lower`, so the
executor runs exactly the instructions the runtime's parser makes (msccl-runtime.md §4, §8): a
``nop`` is not an instruction and hands its dependency to the next real step, consecutive
``re`` steps fuse, and each instruction publishes the kernel's step counter. The interpreter's
:func:`~ccxml.interpreter.program.place` lays out the call form's buffers with the runtime's
in-place aliasing (§7). This module keeps only the rank's own part: its buffers as one block of
``nchunks`` chunks, and per thread block the instructions with chunk offsets into that block.

Nothing here moves data or needs MPI; :mod:`ccxml.executor.engine` does.
"""
from __future__ import annotations

from dataclasses import dataclass

from ccxml.interpreter.plain import lower_plain
from ccxml.interpreter.program import K_NONE, KIND_NAME, Program, place
from ccxml.loader.model import Schedule
from ccxml.loader.rules import check as loader_check
from ccxml.vocab.collectives import Collective
from ccxml.vocab.findings import Finding

#: findings that leave a rank nothing sensible to execute: a step on a peer that does not exist
#: (the loader's peer rules; a rank with no <gpu> element), or an access outside its buffer in
#: the call form (the GPU would read or write foreign memory)
UNRUNNABLE = frozenset({"step-without-peer", "peer-out-of-range", "peer-is-self", "peer-invalid",
                        "gpu-missing", "out-of-bounds"})


@dataclass(frozen=True, slots=True)
class Instr:
    """One instruction of a thread block (offsets in chunks of the rank's memory block).

    ``kind`` is the interpreter's data kind (``K_NONE`` when ``cnt`` <= 0: nothing moves, no
    message); ``src``/``dst`` are -1 where the kind does not read/write; ``srcs`` holds every
    source offset of a fused ``re`` (else ``(src,)``); ``deps`` are (global tb, value) pairs;
    ``pub`` the value published on completion, -1 for none; ``g`` the global instruction id,
    ``s`` the XML ``s`` of its (first) step and ``type`` its step type."""
    g: int
    s: int
    type: str
    kind: int
    cnt: int
    src: int
    dst: int
    srcs: tuple
    deps: tuple | None
    pub: int


@dataclass(slots=True)
class LocalTB:
    t: int                 # global tb id in the Program
    id: int
    send_peer: int         # rank, -1 for none
    recv_peer: int
    chan: int
    in_link: int           # Program link index, -1 for none
    instrs: list


@dataclass(slots=True)
class RankPlan:
    """The rank's part of a lowered, placed schedule."""
    rank: int
    nchunks: int           # memory block: input, output (aliased in-place) and scratch, in chunks
    input: tuple           # (first chunk, chunks) of the input buffer in the block
    output: tuple          # (first chunk, chunks) of the output buffer
    tbs: list              # LocalTB in document order


def lower_for_run(schedule: Schedule, collective: Collective, inplace: bool,
                  max_tag: int = 32767) -> tuple[Program, list[Finding]]:
    """The schedule lowered and placed for ``collective`` in one call form, and the findings
    that make it unrunnable for any rank: :data:`UNRUNNABLE`, and ``bad-channel`` for a TB with
    a peer whose channel is not a message tag in 0..``max_tag`` (messages carry it as their
    tag). Raises NotExecutable."""
    prog = lower_plain(schedule)
    placed = place(prog, collective, inplace)
    bad = [f for f in (*loader_check(schedule, "exec"), *placed) if f.code in UNRUNNABLE]
    bad.extend(Finding("bad-channel", f"chan {tb.chan} is not in 0..{max_tag}", gpu=tb.gpu, tb=tb.id,
                       line=tb.line or None)
               for tb in prog.tbs if (tb.send >= 0 or tb.recv >= 0) and not 0 <= tb.chan <= max_tag)
    return prog, bad


def rank_plan(prog: Program, rank: int) -> RankPlan:
    """The part of the placed ``prog`` that ``rank`` runs (its ``<gpu id=rank>``)."""
    mine = [b for b in prog.buffers if b.gpu == rank]
    base = mine[0].loc_base if mine else 0
    nchunks = sum(b.size for b in mine)
    lay = prog.layout.get(rank)
    if lay is None:
        io: tuple[tuple[int, int], ...] = ((0, 0), (0, 0))
    else:
        io = tuple((prog.buffers[lay[x][0]].loc_base + lay[x][1] - base, lay["_sizes"][x]) for x in "io")
    links = prog.links
    fused = prog.fused
    tbs = []
    for t, tb in enumerate(prog.tbs):
        if tb.gpu != rank:
            continue
        instrs = []
        for g in range(tb.start, tb.end):
            kind = prog.dkind[g]
            s, d = prog.src_loc[g], prog.dst_loc[g]
            src = s - base if s >= 0 and kind != K_NONE else -1
            dst = d - base if d >= 0 and kind != K_NONE else -1
            offs = fused.get(g)
            srcs = (src,) if offs is None or src < 0 else tuple(src + o - offs[0] for o in offs)
            instrs.append(Instr(g, prog.s[g], KIND_NAME[prog.kind[g]], kind, prog.cnt[g], src, dst, srcs,
                                prog.deps[g], prog.pub[g]))
        out_l = links[tb.out_link] if tb.out_link >= 0 else None
        in_l = links[tb.in_link] if tb.in_link >= 0 else None
        tbs.append(LocalTB(t, tb.id, out_l.dst if out_l else -1, in_l.src if in_l else -1, tb.chan,
                           tb.in_link, instrs))
    return RankPlan(rank, nchunks, io[0], io[1], tbs)
