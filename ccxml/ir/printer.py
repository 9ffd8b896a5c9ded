"""The IR as text: one line per step, for ``ccxml generate --dump-after PASS`` and for messages.

A line names where the step is, what it does and what it waits on::

    gpu 0 tb s1/r3/c0 #2 rrc src i[3] dst i[3] cnt 1 deps [s-1/r-1/c0#0] peer <3#1

* ``tb s1/r3/c0``: its thread block by send peer, recv peer and channel (-1: none). That triple
  is unique on a GPU and, unlike the TB id, exists before numbering, so dumps taken after two
  passes can be diffed;
* ``#2``: its position in the TB;
* ``src``/``dst``: the local operands as buffer[chunk] (``-`` where the type has none);
* ``deps [...]``: the same-GPU steps it waits on as the Chunk API collected them; once the
  dependency pass has run, ``dep X`` is the one the runtime sees and ``hasdep`` marks a step
  others wait on; a step folded by fusion is shown as ``folded:`` the step it was folded into;
* ``peer <3#1``: receives message 1 of the link from GPU 3; ``>1#0``: sends message 0 of the
  link to GPU 1 (a fused step has both, receive first).

Steps a GPU issued that are in no TB yet (before the thread-block pass) are ``pending #k``, with
their channel at the end of the line. Plain data in, text out: the printer reads the IR and changes nothing.
"""
from __future__ import annotations

from typing import Iterator

from ccxml.ir.nodes import TB, Algo, Step, step_deps
from ccxml.vocab.wire import Buffer, Coll


def tb_label(tb: TB) -> str:
    """``s<send>/r<recv>/c<chan>``: a TB's name on its GPU."""
    return f"s{tb.send}/r{tb.recv}/c{tb.chan}"


class StepNames:
    """Where each step of ``algo`` is — ``s1/r3/c0#2`` in a TB, ``pending#5`` among the steps
    its GPU issued before the thread-block pass — looked up by identity."""

    def __init__(self, algo: Algo):
        self._at: dict[int, tuple[str, int]] = {}
        for gpu in algo.gpus:
            for tb in gpu.tbs:
                label = tb_label(tb)
                for pos, st in enumerate(tb.steps):
                    self._at[id(st)] = label, pos
            for pos, st in enumerate(gpu.pending):
                self._at[id(st)] = "pending", pos

    def position(self, step: Step) -> int:
        """The step's index in its TB (or pending list); -1 when it is in none."""
        at = self._at.get(id(step))
        return -1 if at is None else at[1]

    def ref(self, step: Step) -> str:
        """A step another step refers to: ``s1/r3/c0#2`` (the GPU is the referring step's)."""
        at = self._at.get(id(step))
        if at is not None:
            return f"{at[0]}#{at[1]}"
        if step.merged_into is not None:
            return "folded:" + self.ref(step.resolved())
        return f"unplaced:{step.type.value}@{step.original_index}"

    def where(self, step: Step) -> str:
        """``gpu 0 tb s1/r3/c0 #2 rrc``: a step named in a message."""
        place = self.ref(step).replace("#", " #", 1)
        if not place.startswith("pending"):
            place = "tb " + place
        return f"gpu {step.gpu} {place} {step.type.value}"


def _operand(side: tuple[Buffer, int] | None) -> str:
    return "-" if side is None else f"{side[0].value}[{side[1]}]"


def _link(peer: int, index: int) -> str:
    return f"{peer}#{index}" if index >= 0 else str(peer)


def step_line(step: Step, names: StepNames) -> str:
    """One step as a line (see the module docstring)."""
    deps = ",".join(names.ref(d) for d in step_deps(step))
    line = (f"{names.where(step)} src {_operand(step.src)} dst {_operand(step.dst)} "
            f"cnt {step.cnt} deps [{deps}]")
    if step.dep is not None:
        line += f" dep {names.ref(step.dep)}"
    if step.publish:
        line += " hasdep"
    peer = []
    if step.recv_peer >= 0:
        peer.append("<" + _link(step.recv_peer, step.recv_index))
    if step.send_peer >= 0:
        peer.append(">" + _link(step.send_peer, step.send_index))
    if peer:
        line += " peer " + " ".join(peer)
    if step.tb is None:
        line += f" chan {step.chan}"
    return line


def format_ir(algo: Algo, title: str = "") -> Iterator[str]:
    """The schedule as lines (without newlines): a header, then every step, GPU by GPU and TB by
    TB in their current order, then the steps a GPU issued that are in no TB yet."""
    coll = algo.coll.value if isinstance(algo.coll, Coll) else algo.coll     # or CUSTOM_COLL
    head = (f"# {algo.name}: {coll}, {algo.ngpus} gpus, {algo.nchunksperloop} chunks "
            f"per loop, proto {algo.proto.value}")
    yield f"{head} ({title})" if title else head
    names = StepNames(algo)
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for st in tb.steps:
                yield step_line(st, names)
        for st in gpu.pending:
            yield step_line(st, names)
