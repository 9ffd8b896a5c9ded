"""The MSCCL XML writer: the only module that knows the attribute names ccxml writes.

Two serialisers produce the same bytes: :func:`to_element` builds an lxml tree (the reference,
checked against the schema in the tests), and :func:`to_xml` streams
the text directly, an order of magnitude faster on large schedules (lxml spends about a
microsecond per attribute validating it; a 130,000-step file has 1.3 million). A test asserts
that both give byte-identical output.

Output follows the runtimes' hand-written tokenizer (msccl-runtime.md §2, §13): no XML
declaration, no tabs, one element per line with two-space indentation, ``k="v"`` with double
quotes and single spaces, plain decimal integers, self-closing ``<step/>``, nops written as real
files do (``srcbuf="i" srcoff="-1" dstbuf="o" dstoff="-1" cnt="0"``). The same IR always gives
the same bytes.
"""
from __future__ import annotations

from collections.abc import Iterator

from ccxml.ir.nodes import GPU, TB, Algo, Step, wire_operands
from ccxml.vocab.errors import LimitError
from ccxml.vocab.wire import (
    CUSTOM_COLL,
    INPUT,
    LEGACY_COLL_NAMES,
    NOP,
    OUTPUT,
    RECV,
    RECV_REDUCE_SEND,
    SCRATCH,
    SEND,
    Buffer,
    Coll,
    StepType,
)
from ccxml.writer.files import write_atomic

LEGACY_COLLS = {Coll.ALLREDUCE, Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.ALLTOALL,
                Coll.BROADCAST, Coll.REDUCE}
LEGACY_DEFAULT_MAX_BYTES = 2**31 - 1
ALGO_ATTRS = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
              "outofplace", "minBytes", "maxBytes")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
              "hasdep")


_NOP = (INPUT, -1), (OUTPUT, -1), 0


def step_values(step: Step) -> tuple:
    """The ``<step>`` attribute values, in the order of :data:`STEP_ATTRS` (the operands by
    :func:`ccxml.ir.nodes.wire_operands`: a send names the receiver's destination, a receive
    the sender's source)."""
    t = step.type
    src, dst = wire_operands(step)
    dep = step.dep
    return (step._s, t._value_, src[0]._value_, src[1], dst[0]._value_, dst[1],
            _NOP[2] if t is NOP else step.cnt,
            -1 if dep is None else dep.tb.id, -1 if dep is None else dep._s,    # type: ignore[union-attr]  # placed
            1 if step.publish else 0)


def step_attrs(step: Step) -> dict[str, str]:
    """The ``<step>`` attributes, in the order real files use."""
    return dict(zip(STEP_ATTRS, map(str, step_values(step))))


def step_element(step: Step):
    from lxml import etree
    return etree.Element("step", step_attrs(step))


def scratch_chunks(gpu: GPU) -> int:
    top = 0
    for tb in gpu.tbs:
        for st in tb.steps:
            src, dst = st.src, st.dst
            if src is not None and src[0] is SCRATCH and st.type is not NOP:
                top = max(top, src[1] + st.cnt)
            if dst is not None and dst[0] is SCRATCH and st.type is not NOP:
                top = max(top, dst[1] + st.cnt)
    return top


def algo_attrs(algo: Algo, target: str) -> dict[str, str]:
    max_bytes = algo.maxBytes
    if algo.coll == CUSTOM_COLL:
        if target != "legacy":
            raise LimitError(f'{algo.name}: coll="custom" (a collective no runtime call names) '
                             f"loads only in the legacy runtime: use --target legacy")
        coll = CUSTOM_COLL
    else:
        coll = algo.coll.value                  # type: ignore[union-attr]  # a Coll: not custom
    if target == "legacy":
        if coll != CUSTOM_COLL and algo.coll not in LEGACY_COLLS:
            raise LimitError(f"the legacy runtime has no {coll} collective: use --target exec")
        coll = LEGACY_COLL_NAMES.get(algo.coll, coll)     # type: ignore[arg-type]
        if max_bytes == 0:          # legacy's upper bound is exclusive and 0 would match nothing
            max_bytes = LEGACY_DEFAULT_MAX_BYTES
    attrs = {"name": algo.name, "proto": algo.proto.value, "nchannels": str(algo.nchannels),
             "nchunksperloop": str(algo.nchunksperloop), "ngpus": str(algo.ngpus), "coll": coll,
             "inplace": str(algo.inplace), "outofplace": str(algo.outofplace),
             "minBytes": str(algo.minBytes), "maxBytes": str(max_bytes)}
    if algo.root is not None:
        attrs["root"] = str(algo.root)
    for key, value in algo.extra_attrs.items():
        if key in attrs:
            raise ValueError(f"extra attribute {key!r} would overwrite a runtime attribute")
        attrs[key] = value
    if len(attrs) > 16:
        raise LimitError(f"<algo> would carry {len(attrs)} attributes; the runtime reads 16")
    return attrs


def tb_element(tb: TB):
    """One ``<tb>`` and its steps as an lxml element."""
    from lxml import etree
    t = etree.Element("tb", {"id": str(tb.id), "send": str(tb.send), "recv": str(tb.recv),
                             "chan": str(tb.chan)})
    for st in tb.steps:
        etree.SubElement(t, "step", step_attrs(st))
    return t


def gpu_element(gpu: GPU):
    """One ``<gpu>`` and its thread blocks as an lxml element."""
    from lxml import etree
    g = etree.Element("gpu", {"id": str(gpu.id), "i_chunks": str(gpu.input_chunks),
                              "o_chunks": str(gpu.output_chunks),
                              "s_chunks": str(scratch_chunks(gpu))})
    for tb in gpu.tbs:
        g.append(tb_element(tb))
    return g


def to_element(algo: Algo, target: str = "exec"):
    """The file as an lxml tree."""
    from lxml import etree
    root = etree.Element("algo", algo_attrs(algo, target))
    for gpu in algo.gpus:
        root.append(gpu_element(gpu))
    return root


def to_xml_lxml(algo: Algo, target: str = "exec") -> str:
    """The file's text through an lxml tree (the reference serialiser)."""
    from lxml import etree
    return etree.tostring(to_element(algo, target), pretty_print=True, encoding="unicode")


def _open_tag(name: str, attrs: dict[str, str], indent: str, close: str = ">") -> str:
    body = " ".join(f'{k}="{_escape(v)}"' for k, v in attrs.items())
    return f"{indent}<{name} {body}{close}"


def _escape(value: str) -> str:
    if any(c in value for c in '&<>"'):
        return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                .replace('"', "&quot;"))
    return value


# The constant pieces of a ``<step>`` line around its numbers, per step type, per buffer and per
# hasdep, so the loop in :func:`to_xml` formats only integers (a ``_value_`` lookup on an Enum
# member costs more than a dict lookup): '" type="s" srcbuf="', 'i" srcoff="', '" dstbuf="o"
# dstoff="', '" hasdep="1"/>\n'; a nop's operands are always the same
_TYPE_PIECE = {t: f'" type="{t._value_}" srcbuf="' for t in StepType}
_SRCBUF_PIECE = {b: f'{b._value_}" srcoff="' for b in Buffer}
_DSTBUF_PIECE = {b: f'" dstbuf="{b._value_}" dstoff="' for b in Buffer}
_HASDEP_PIECE = ('" hasdep="0"/>\n', '" hasdep="1"/>\n')
_NOP_PIECE = (f'" type="{NOP._value_}" srcbuf="{_NOP[0][0]._value_}" srcoff="{_NOP[0][1]}" '
              f'dstbuf="{_NOP[1][0]._value_}" dstoff="{_NOP[1][1]}" cnt="{_NOP[2]}" depid="')
_NO_DEP = '-1" deps="-1'
# ... and the pieces holding a small number i, made once for every i below a bound that grows
# with the schedules written (most numbers in a file are small: step and TB numbers, chunk
# offsets and counts); a larger number is formatted where it occurs
_NUMBERS: list[str] = []            # f"{i}"
_STEP_OPEN: list[str] = []          # f'      <step s="{i}'
_CNT_PIECE: list[str] = []          # f'" cnt="{i}" depid="'
_DEPID_PIECE: list[str] = []        # f'{i}" deps="'


def _number_pieces(want: int) -> int:
    """Extend the number pieces to cover 0..want-1; return how many there are."""
    have = len(_NUMBERS)
    if have < want:
        new = range(have, want)
        _NUMBERS.extend([f"{i}" for i in new])
        _STEP_OPEN.extend([f'      <step s="{i}' for i in new])
        _CNT_PIECE.extend([f'" cnt="{i}" depid="' for i in new])
        _DEPID_PIECE.extend([f'{i}" deps="' for i in new])
        have = want
    return have


def _numbers_for(algo: Algo) -> int:
    """Number pieces for 0 <= i < the returned bound, enough for most numbers in ``algo``'s
    file: no string is formatted (and freed) per number."""
    return _number_pieces(min(max(1024, 8 * algo.ngpus), 1 << 16))


def xml_parts(algo: Algo, target: str = "exec") -> Iterator[str]:
    """The file's text in parts, one per GPU between the ``<algo>`` lines: what :func:`to_xml`
    joins. A writer that streams them (:func:`write_atomic`) never holds the whole file, which
    for a 2M-step schedule is 254 MB of text plus 170 MB of pieces. What the target cannot take
    raises here, before any part is made."""
    head = _open_tag("algo", algo_attrs(algo, target), "", ">\n")
    return _parts(algo, head, _numbers_for(algo))


def _parts(algo: Algo, head: str, kept: int) -> Iterator[str]:
    yield head
    out: list = []
    for gpu in algo.gpus:
        _gpu_pieces(gpu, out, kept)
        yield "".join(out)
        out.clear()
    yield "</algo>\n"


def to_xml(algo: Algo, target: str = "exec") -> str:
    """The file's text (compile the algo first); byte-identical to :func:`to_xml_lxml`."""
    kept = _numbers_for(algo)
    # the text as a list of pieces joined once at the end: no string per line
    out = [_open_tag("algo", algo_attrs(algo, target), "", ">\n")]
    for gpu in algo.gpus:
        _gpu_pieces(gpu, out, kept)
    out.append("</algo>\n")
    return "".join(out)


def _gpu_pieces(gpu: GPU, out: list, kept: int) -> None:
    """Append the pieces of ``gpu``'s lines to ``out``; numbers below ``kept`` come from the
    number pieces (see :func:`_number_pieces`)."""
    type_piece, srcbuf_piece, dstbuf_piece = _TYPE_PIECE, _SRCBUF_PIECE, _DSTBUF_PIECE
    hasdep_piece, nop_piece, no_dep = _HASDEP_PIECE, _NOP_PIECE, _NO_DEP
    nop, send, recv, rrs, scratch = NOP, SEND, RECV, RECV_REDUCE_SEND, SCRATCH
    nums, step_open, cnt_piece, depid_piece = _NUMBERS, _STEP_OPEN, _CNT_PIECE, _DEPID_PIECE
    out.append(None)                # the <gpu> line, once the walk knows s_chunks
    at = len(out) - 1
    top = 0                         # scratch_chunks(gpu), computed on the same walk
    for tb in gpu.tbs:
        steps = tb.steps
        if not steps:
            out.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" '
                       f'chan="{tb.chan}"/>\n')
            continue
        out.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">\n')
        for st in steps:
            # step_values, inlined: a call per step would cost a fifth of the writer;
            # test_export checks this text against the lxml tree built from step_values
            s = st._s
            opening = step_open[s] if 0 <= s < kept else f'      <step s="{s}'
            dep = st.dep
            if dep is None:
                depid, deps = no_dep, ""
            else:
                i, j = dep.tb.id, dep._s             # type: ignore[union-attr]  # placed
                depid = depid_piece[i] if 0 <= i < kept else f'{i}" deps="'
                deps = nums[j] if 0 <= j < kept else f"{j}"
            t = st.type
            if t is nop:
                out.extend((opening, nop_piece, depid, deps, hasdep_piece[st.publish]))
                continue
            src, dst, cnt = st.src, st.dst, st.cnt
            if src is not None and src[0] is scratch and src[1] + cnt > top:
                top = src[1] + cnt
            if dst is not None and dst[0] is scratch and dst[1] + cnt > top:
                top = dst[1] + cnt
            if t is send or (t is rrs and dst is None):
                peer = st.send_to           # the sender names the receiver's destination
                dst = (None if peer is None else peer.dst) or src
            elif t is recv:                 # the receiver names the sender's source
                peer = st.recv_from
                src = (None if peer is None else peer.src or peer.dst) or dst
            src = src or dst
            dst = dst or src
            srcbuf, srcoff = src                # type: ignore[misc]  # a step has an operand
            dstbuf, dstoff = dst                # type: ignore[misc]
            out.extend((opening, type_piece[t], srcbuf_piece[srcbuf],
                        nums[srcoff] if 0 <= srcoff < kept else f"{srcoff}",
                        dstbuf_piece[dstbuf],
                        nums[dstoff] if 0 <= dstoff < kept else f"{dstoff}",
                        cnt_piece[cnt] if 0 <= cnt < kept else f'" cnt="{cnt}" depid="',
                        depid, deps, hasdep_piece[st.publish]))
        out.append("    </tb>\n")
    gpu_attrs = {"id": str(gpu.id), "i_chunks": str(gpu.input_chunks),
                 "o_chunks": str(gpu.output_chunks), "s_chunks": str(top)}
    if len(out) - 1 == at:      # no TBs
        out[at] = _open_tag("gpu", gpu_attrs, "  ", "/>\n")
    else:
        out[at] = _open_tag("gpu", gpu_attrs, "  ", ">\n")
        out.append("  </gpu>\n")


def save_xml(algo: Algo, path, target: str = "exec") -> None:
    write_atomic(path, to_xml(algo, target))
