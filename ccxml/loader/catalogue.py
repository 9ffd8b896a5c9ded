"""The loader rules, each once: its finding code, what it means and where the runtime does it.

Two kinds of rule, kept apart because only the first decides the loader verdict:

(a) **Runtime verdict** — what makes the runtime's loader reject the file or its first launch
    fail (RCCL without full ops). These reproduce the ``exec``/``rccl``/``legacy`` columns of the
    corpus INDEX.md.
(b) **Schedule safety** — what the parser lets through but makes the schedule hang, corrupt data or
    write out of bounds. The reference interpreter adds deadlocks, races and postconditions on
    top (it simulates; the loader rules only inspect).

``ref`` names the section of ../shared/reference/msccl-runtime.md that describes what the
runtime does. The limits the rules share (collectives, step types, buffers, per-type bounds
checks) and the profile helpers are here too. The two checkers apply this catalogue:
:mod:`ccxml.loader.rules_exact` (step by step, the reference) and its fast twin
:mod:`ccxml.loader.rules_fast` (the same findings, proven on columns where no rule can fire).
"""
from __future__ import annotations

from typing import NamedTuple

from ccxml.loader.model import ScheduleGPU
from ccxml.vocab.wire import PROFILES, Profile, StepType


class Rule(NamedTuple):
    code: str
    kind: str        # "reject" (a), "launch" (a: loads, first launch fails) or "safety" (b)
    what: str
    ref: str         # msccl-runtime.md section(s)


RULES = (
    # (a) the runtime refuses to load the file
    Rule("lexical", "reject", "the runtime's tokenizer fails on the text (tab, declaration, quotes, ...)",
         "§2"),
    Rule("missing-attribute", "reject", "a required attribute is absent (or beyond the 16 attribute "
         "slots)", "§2.5, §3"),
    Rule("bad-coll", "reject", "coll is not a collective this runtime knows", "§3"),
    Rule("bad-proto", "reject", "proto is not Simple, LL or LL128", "§3"),
    Rule("bad-nthreads", "reject", "legacy nthreads is not a multiple of 32", "§3"),
    Rule("nchannels-too-large", "reject", "nchannels exceeds the runtime's MAXCHANNELS", "§5, §10"),
    Rule("negative-scratch", "reject", "s_chunks < 0", "§3"),
    Rule("too-many-children", "reject", "more than 1024 <gpu> elements, or <tb>/<step> children of one "
         "element", "§2.14"),
    Rule("tb-id-range", "reject", "TB id negative or not below the runtime's TB limit", "§3, §5"),
    Rule("tb-id-duplicate", "reject", "two TBs of one GPU share an id", "§3"),
    Rule("tb-id-gap", "reject", "TB ids are not exactly 0..n-1", "§3"),
    Rule("peer-is-self", "reject", "a TB's send or recv peer is its own GPU", "§3"),
    Rule("peer-invalid", "reject", "a peer below -1 (legacy: or not below ngpus)", "§3, §10"),
    Rule("chan-invalid", "reject", "chan outside what the runtime accepts", "§3, §5, §9.7"),
    Rule("too-many-tbs-per-channel", "reject", "more than 32 TBs with a send (recv) peer on one "
         "channel", "§5"),
    Rule("too-many-steps", "reject", "a step index s, or the number of steps, over the per-TB limit",
         "§5"),
    Rule("step-index-negative", "reject", "s < 0", "§3"),
    Rule("bad-step-type", "reject", "type is not a step type the runtime parses", "§4"),
    Rule("bad-buffer", "reject", "srcbuf/dstbuf not i, o or s", "§3"),
    Rule("offset-out-of-range", "reject", "an offset the runtime bounds-checks is not in "
         "-1..nchunks-1", "§3, §4"),
    Rule("cnt-out-of-range", "reject", "cnt not in 0..71", "§3, §5"),
    Rule("hasdep-invalid", "reject", "hasdep not 0 or 1", "§3"),
    Rule("nop-chain-no-dep", "reject", "the step after a run of nops has no depid of its own",
         "§8 rule 3"),
    Rule("node-budget", "reject", "1 + gpus + tbs + steps of one rank over the 4095 XML nodes",
         "§2.14"),
    # (a) the file loads, but its first launch fails
    Rule("rccl-full-ops", "launch", "uses rcs/rrs/rrc/rrcs, which RCCL's reduced-ops kernels refuse "
         "at launch", "§4, §10"),
    # (b) loads, but the schedule is unsafe (severity "error") or suspicious ("warning")
    Rule("gpu-missing", "safety", "a rank has no <gpu> element: it runs an empty program", "§3"),
    Rule("gpu-duplicate", "safety", "two <gpu> elements with one id", "§1"),
    Rule("gpu-id-out-of-range", "safety", "a <gpu> id not in 0..ngpus-1: no rank reads it", "§1"),
    Rule("ngpus-invalid", "safety", "ngpus < 1", "§3"),
    Rule("peer-out-of-range", "safety", "a send/recv peer >= ngpus: the connection is silently "
         "skipped", "§5"),
    Rule("chan-not-connected", "safety", "chan >= nchannels: only channels below nchannels get "
         "connections", "§5, §6"),
    Rule("chan-out-of-bounds", "safety", "chan equals MAXCHANNELS: accepted, but written out of "
         "bounds", "§5"),
    Rule("step-without-peer", "safety", "a sending (receiving) step in a TB with send=-1 (recv=-1)",
         "§4"),
    Rule("step-index", "safety", "s is not the step's position 0..n-1 (dependency flags use "
         "positions)", "§3, §8 rule 1"),
    Rule("dangling-nop", "safety", "the TB ends with nops whose dependencies no step carries: the "
         "kernel ignores them (warning)", "§8"),
    Rule("nop-without-dep", "safety", "a nop with depid=-1 is dropped uncounted and shifts every "
         "later flag", "§8 rule 2"),
    Rule("depid-too-large", "safety", "depid over the int8 the kernel stores it in", "§5"),
    Rule("dep-target-missing", "safety", "depid/deps name no step of this GPU", "§8"),
    Rule("dep-self-wait", "safety", "a TB waits on its own step at or after the waiting one: hangs",
         "§8"),
    Rule("dep-never-released", "safety", "neither the target step nor a later one of its TB "
         "publishes (hasdep=1)", "§8"),
    Rule("dep-released-late", "safety", "the target has hasdep=0; a later step of its TB releases "
         "the waiter", "§8"),
    Rule("two-tbs-one-connection", "safety", "two TBs of one GPU on one (chan, send peer) or (chan, "
         "recv peer)", "§9 rule 1"),
    Rule("link-undeclared", "safety", "a connection is declared at only one end", "§9 rule 2"),
    Rule("link-cnt-mismatch", "safety", "send and receive cnt sequences differ on a (sender, "
         "receiver, chan)", "§9 rule 3"),
    Rule("re-chain-too-long", "safety", "more than 16 fused re steps (kernel array overflow)",
         "§4, §5"),
    Rule("re-chain-cnt-mismatch", "safety", "fused re steps with different cnt (the last cnt is used "
         "for all)", "§4"),
    Rule("offset-past-buffer", "safety", "off..off+cnt of a buffer a step touches is outside the "
         "buffer", "§3, §13"),
    Rule("cnt-zero", "safety", "a data step with cnt=0 moves nothing (legacy indexes chunk -1)",
         "§3, §5"),
)

#: (a) codes: the runtime refuses to load the file
REJECT_CODES = {r.code: r.what for r in RULES if r.kind == "reject"}
#: (a) codes: the file loads, but its first launch fails
LAUNCH_CODES = {r.code: r.what for r in RULES if r.kind == "launch"}
#: (b) codes: loads, but the schedule is unsafe (severity "error") or suspicious ("warning")
SAFETY_CODES = {r.code: r.what for r in RULES if r.kind == "safety"}
ALL_CODES = {**REJECT_CODES, **LAUNCH_CODES, **SAFETY_CODES}

EXEC_COLLS = frozenset({"allreduce", "allgather", "reducescatter", "alltoall", "alltoallv",
                        "broadcast", "reduce", "send", "recv", "gather", "scatter"})
LEGACY_COLLS = frozenset({"allreduce", "allgather", "reduce", "broadcast", "alltoall",
                          "reduce_scatter", "custom"})
PROTOS = frozenset({"Simple", "LL", "LL128"})
STEP_TYPES = frozenset(t.value for t in StepType)
BUFFERS = frozenset({"i", "o", "s"})
MAX_SUBS = 1024
MAX_COUNT = 72
MAX_TBS_PER_CHAN_DIR = 32
#: per type: (runtime bounds-checks src, runtime bounds-checks dst), §4
BOUNDS_CHECKED = {"s": (True, False), "r": (False, True), "rcs": (False, True),
                  "rrs": (True, False), "rrc": (False, False), "rrcs": (True, True),
                  "cpy": (True, True), "re": (True, True), "nop": (False, False)}
SENDS = frozenset(t.value for t in StepType if t.sends)
RECEIVES = frozenset(t.value for t in StepType if t.receives)
READS = frozenset(t.value for t in StepType if t.reads_src)
WRITES = frozenset(t.value for t in StepType if t.writes_dst)


def profile_of(profile: Profile | str) -> Profile:
    """The :class:`~ccxml.vocab.wire.Profile` named ``profile`` (ValueError: no such target)."""
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        raise ValueError(f"unknown target {profile!r}; choose one of {', '.join(PROFILES)}") from None


def is_legacy(p: Profile) -> bool:
    return p.name.startswith("legacy")


def chan_accepted(p: Profile) -> int:
    """Largest chan the loader accepts: exec/RCCL test ``chan > MAXCHANNELS`` (off by one)."""
    return p.max_chan if is_legacy(p) else p.max_chan + 1


def buffer_chunks(g: ScheduleGPU, buf: str) -> int:
    """Chunks of buffer ``buf`` ("i", "o" or "s") on ``g``."""
    return g.i_chunks if buf == "i" else g.o_chunks if buf == "o" else g.s_chunks
