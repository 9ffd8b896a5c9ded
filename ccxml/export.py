"""The MSCCL XML writer: the only module that knows the attribute names ccxml writes.

Two serialisers produce the same bytes: :func:`to_element` builds an lxml tree (the reference,
used by ``Step.to_xml`` and checked against the schema in the tests), and :func:`to_xml` streams
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

import os
import tempfile

from ccxml.ir import Algo, GPU, Step
from ccxml.passes.splitting import LimitError
from ccxml.wire import (INPUT, LEGACY_COLL_NAMES, NOP, OUTPUT, RECV, RECV_REDUCE_SEND, SCRATCH,
                        SEND, Buffer, Coll)

LEGACY_COLLS = {Coll.ALLREDUCE, Coll.ALLGATHER, Coll.REDUCESCATTER, Coll.ALLTOALL,
                Coll.BROADCAST, Coll.REDUCE}
LEGACY_DEFAULT_MAX_BYTES = 2**31 - 1
ALGO_ATTRS = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
              "outofplace", "minBytes", "maxBytes")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
              "hasdep")


def _side(step: Step | None, which: str) -> tuple[Buffer, int] | None:
    if step is None:
        return None
    return step.src if which == "src" else step.dst


_NOP = (INPUT, -1), (OUTPUT, -1), 0


def step_values(step: Step) -> tuple:
    """The ``<step>`` attribute values, in the order of :data:`STEP_ATTRS`."""
    t = step.type
    if t is NOP:
        src, dst, cnt = _NOP
    else:
        src, dst, cnt = step.src, step.dst, step.cnt
        if t is SEND:          # the sender names the receiver's destination
            dst = _side(step.send_to, "dst") or src
        elif t is RECV:        # the receiver names the sender's source
            src = _side(step.recv_from, "src") or _side(step.recv_from, "dst") or dst
        elif t is RECV_REDUCE_SEND and dst is None:
            dst = _side(step.send_to, "dst") or src
        src = src or dst
        dst = dst or src
    dep = step.dep
    return (step._s, t._value_, src[0]._value_, src[1], dst[0]._value_, dst[1], cnt,
            -1 if dep is None else dep.tb.id, -1 if dep is None else dep._s,
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
    coll = algo.coll.value
    max_bytes = algo.maxBytes
    if target == "legacy":
        if algo.coll not in LEGACY_COLLS:
            raise LimitError(f"the legacy runtime has no {coll} collective: use --target exec")
        coll = LEGACY_COLL_NAMES.get(algo.coll, coll)
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


def to_element(algo: Algo, target: str = "exec"):
    """The file as an lxml tree."""
    from lxml import etree
    root = etree.Element("algo", algo_attrs(algo, target))
    for gpu in algo.gpus:
        g = etree.SubElement(root, "gpu", {"id": str(gpu.id), "i_chunks": str(gpu.input_chunks),
                                            "o_chunks": str(gpu.output_chunks),
                                            "s_chunks": str(scratch_chunks(gpu))})
        for tb in gpu.tbs:
            t = etree.SubElement(g, "tb", {"id": str(tb.id), "send": str(tb.send),
                                           "recv": str(tb.recv), "chan": str(tb.chan)})
            for st in tb.steps:
                etree.SubElement(t, "step", step_attrs(st))
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


def to_xml(algo: Algo, target: str = "exec") -> str:
    """The file's text (compile the algo first); byte-identical to :func:`to_xml_lxml`."""
    lines = [_open_tag("algo", algo_attrs(algo, target), "")]
    append = lines.append
    for gpu in algo.gpus:
        append(None)                # the <gpu> line, once the walk knows s_chunks
        at = len(lines) - 1
        top = 0                     # scratch_chunks(gpu), computed on the same walk
        for tb in gpu.tbs:
            steps = tb.steps
            if not steps:
                append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}"/>')
                continue
            append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">')
            for st in steps:
                # step_values, inlined: a call per step would cost a fifth of the writer;
                # test_export checks this text against the lxml tree built from step_values
                t = st.type
                if t is NOP:
                    src, dst, cnt = _NOP
                else:
                    src, dst, cnt = st.src, st.dst, st.cnt
                    if src is not None and src[0] is SCRATCH and src[1] + cnt > top:
                        top = src[1] + cnt
                    if dst is not None and dst[0] is SCRATCH and dst[1] + cnt > top:
                        top = dst[1] + cnt
                    if t is SEND or (t is RECV_REDUCE_SEND and dst is None):
                        peer = st.send_to       # the sender names the receiver's destination
                        dst = (None if peer is None else peer.dst) or src
                    elif t is RECV:             # the receiver names the sender's source
                        peer = st.recv_from
                        src = (None if peer is None else peer.src or peer.dst) or dst
                    src = src or dst
                    dst = dst or src
                dep = st.dep
                if dep is None:
                    depid = deps = -1
                else:
                    depid, deps = dep.tb.id, dep._s
                append(f'      <step s="{st._s}" type="{t._value_}" srcbuf="{src[0]._value_}" '
                       f'srcoff="{src[1]}" dstbuf="{dst[0]._value_}" dstoff="{dst[1]}" '
                       f'cnt="{cnt}" depid="{depid}" deps="{deps}" hasdep="{1 if st.publish else 0}"/>')
            append("    </tb>")
        gpu_attrs = {"id": str(gpu.id), "i_chunks": str(gpu.input_chunks),
                     "o_chunks": str(gpu.output_chunks), "s_chunks": str(top)}
        if len(lines) - 1 == at:    # no TBs
            lines[at] = _open_tag("gpu", gpu_attrs, "  ", "/>")
        else:
            lines[at] = _open_tag("gpu", gpu_attrs, "  ")
            append("  </gpu>")
    append("</algo>")
    return "\n".join(lines) + "\n"


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ccxml-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~current_umask())     # mkstemp makes 0600; a written file is 0644-like
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save_xml(algo: Algo, path, target: str = "exec") -> None:
    write_atomic(path, to_xml(algo, target))
