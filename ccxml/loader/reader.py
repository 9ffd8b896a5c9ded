"""Safe, fast loader for MSCCL XML files: :func:`load`/:func:`loads`, text →
:class:`ccxml.loader.model.Schedule`. This module picks the reader; the readers are

* :mod:`.exact` — the exact reader, tag by tag (the reference);
* :mod:`.fast` — its fast twin: the same reader with canonical ``<tb>`` bodies read in one go,
  from the step table of :mod:`.scan` (numpy, the whole file at once) or in one regex pass;
* :mod:`.tokenizer` — the port of the runtime's tokenizer both use for the runtime's view.

Guarantees:

* **Safe.** A hand-written tokenizer, not an XML library: no DTD, no entity expansion (``&x;``
  stays literal text), no network or file access besides reading the one input, input capped at
  :data:`MAX_FILE_BYTES`, element nesting at :data:`~ccxml.loader.exact.MAX_DEPTH`, attributes
  per element at :data:`~ccxml.loader.exact.MAX_ATTRS` and attribute names/values at
  :data:`~ccxml.loader.exact.MAX_VALUE_CHARS`. Every pass is linear in the input, so it cannot
  hang.
* **Runtime-faithful.** Each tag the exact path reads is also read by a port of NCCL's tokenizer
  (``xmlGetNode``/``xmlGetToken``, msccl-runtime.md §2), so everything the runtimes would choke
  on (XML declaration, BOM, tabs, text between elements, single quotes, ``<!--a=b-->``, newline
  inside a tag, 16-attribute slots, child inside ``<step>``, text after ``</algo>``, numbers
  that ``strtol(..., 0)`` reads differently from decimal) becomes a
  :class:`~ccxml.loader.model.LexicalIssue` with its line number. The model holds what the runtime
  would see: only the first 16 attribute slots of an element, integers as ``strtol`` reads them.
  :mod:`ccxml.loader.rules` turns lexical issues into verdicts.
* **Unusable input raises** :class:`LoadError` (a ValueError) with one line naming the file,
  the line and what is wrong: binary data, not MSCCL XML (no ``<algo>``), truncated file,
  DOCTYPE/ENTITY/CDATA, mismatched closing tag, absurd nesting, numbers outside the C ``int``
  (``int64`` for minBytes/maxBytes) range.
* **Fast, and exactly as the exact reader.** :func:`loads` scans the canonical step lines of the
  whole file (:func:`~ccxml.loader.scan.scan_steps`), reads the text with the TB bodies that are
  runs of such lines cut out (:func:`~ccxml.loader.scan.cut_bodies`), and falls back to reading
  the whole text when a cut body is not where a TB reads it. Every path gives the exact reader's
  model (``loads(..., fast=False)``; tests/test_twins.py).
"""
from __future__ import annotations

import gc
import mmap
import os
import re

from ccxml.loader.exact import MAX_ATTRS, MAX_DEPTH, MAX_VALUE_CHARS, ExactReader, line_of
from ccxml.loader.fast import FastReader
from ccxml.loader.model import Schedule
from ccxml.loader.scan import cut_bodies, scan_steps
from ccxml.vocab import limits
from ccxml.vocab.errors import LoadError

__all__ = ["MAX_ATTRS", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_VALUE_CHARS", "LoadError", "load", "loads"]

MAX_FILE_BYTES = limits.MAX_SCHEDULE_BYTES

_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BAD_BYTES = bytes([*range(0, 9), 11, 12, *range(14, 32), 127])
_GOOD_BYTES = bytes(x for x in range(256) if x not in _BAD_BYTES)
_NOT_BLANK_BYTES = re.compile(rb"[^ \r\n\t]")


def loads(data: str | bytes | mmap.mmap, path: str = "<string>", *, fast: bool = True) -> Schedule:
    """Parse MSCCL XML from ``data`` (text, bytes, or a file mapped read-only as
    :func:`load` maps it); see the module docstring for what is guaranteed.

    ``fast=False`` reads with the exact reader alone (no scan, no table, no regex pass): the
    reference the fast path is tested against. Same model and errors, several times slower."""
    if isinstance(data, str):
        if len(data) > MAX_FILE_BYTES:
            raise LoadError(path, None, f"input is {len(data)} characters (limit {MAX_FILE_BYTES})")
        data = data.encode("utf-8", "surrogatepass")
    if not isinstance(data, (bytes, mmap.mmap)):
        data = bytes(data)
    if len(data) > MAX_FILE_BYTES:
        raise LoadError(path, None, f"file is {len(data)} bytes (limit {MAX_FILE_BYTES})")
    # the scan counts control characters in the part of the file it reads (reading a binary
    # file is harmless: memory stays bounded and nothing raises)
    scan, span = scan_steps(data) if fast else (None, None)
    if span is None:
        controls = bytes(data).translate(None, _GOOD_BYTES)    # what is left: control characters
    else:
        controls = (data[:span[0]].translate(None, _GOOD_BYTES)
                    or data[span[1]:].translate(None, _GOOD_BYTES))
    if controls:
        text = str(data, "latin-1")
        bad = _BAD_CHARS.search(text)
        raise LoadError(path, line_of(text, bad.start()),
                        f"binary data (byte 0x{ord(bad.group()):02x}): not an MSCCL XML file")
    if not _NOT_BLANK_BYTES.search(data):
        raise LoadError(path, None, "empty file: not an MSCCL XML file")
    # the model has no reference cycles: cyclic GC passes over millions of fresh steps only cost
    enabled = gc.isenabled()
    gc.disable()
    try:
        return check_sizes(_read(data, path, fast, scan))
    finally:
        if enabled:
            gc.enable()


def _read(data, path: str, fast: bool, scan) -> Schedule:
    if not fast:
        return ExactReader(str(data, "latin-1"), path).run()
    if scan is not None:
        # read the file with its canonical TB bodies cut out (they are in the table); if a
        # cut body is not where a TB reads it, read the whole text instead
        text, marks = cut_bodies(data, scan)
        if marks[0]:
            try:
                reader = FastReader(text, path, scan, marks)
                sched = reader.run()
                if reader.consumed == len(marks[0]):
                    return sched
            except LoadError:
                pass
            scan = scan_steps(data)[0]    # fresh table rows for the second reading
    # latin-1 maps bytes 1:1, so positions are byte offsets and nothing can fail to decode
    return FastReader(str(data, "latin-1"), path, scan).run()


def check_sizes(s: Schedule) -> Schedule:
    """``s``, or a LoadError when a size it declares is over a limit of
    :mod:`ccxml.vocab.limits` or out of proportion to what the file holds: ``ngpus`` over
    MAX_RANKS, a chunk count over MAX_CHUNKS, ranks × chunks beyond what its steps could
    fill, a cnt over MAX_CHUNKS or cnts summing far past 72 per step. Everything after the
    loader (interpreter, simulator, show, run) allocates per rank, per chunk and per cnt, so
    this keeps their work and memory in proportion to the file. Both readers' models pass here
    (the twins agree on it)."""
    where = s.path or "<string>"
    ngpus = s.ngpus
    if ngpus > limits.MAX_RANKS:
        raise LoadError(where, s.line or None, f"ngpus={ngpus} is over ccxml's limit of "
                        f"{limits.MAX_RANKS} ranks (the file defines {len(s.gpus)} <gpu> elements)")
    chunks = [("nchunksperloop", s.nchunksperloop, s.line)]
    for g in s.gpus:
        chunks += [("i_chunks", g.i_chunks, g.line), ("o_chunks", g.o_chunks, g.line),
                   ("s_chunks", g.s_chunks, g.line)]
    widest = 0
    for name, value, line in chunks:
        if value > limits.MAX_CHUNKS:
            raise LoadError(where, line or None, f"{name}={value} is over the {limits.MAX_CHUNKS} "
                            "chunks int16 offsets can reach")
        widest = max(widest, value)
    nsteps = s.nsteps
    cells = max(ngpus, len(s.gpus)) * widest
    if cells > max(limits.FREE_CELLS, limits.CELLS_PER_STEP * nsteps):
        raise LoadError(where, s.line or None, f"declares {max(ngpus, len(s.gpus))} ranks x {widest} "
                        f"chunks for only {nsteps} steps (limit: {limits.FREE_CELLS} rank-chunks, "
                        f"or {limits.CELLS_PER_STEP} per step)")
    top, total = _cnt_extent(s)
    if top > limits.MAX_CHUNKS or total > limits.FREE_COUNT + limits.COUNT_PER_STEP * nsteps:
        raise LoadError(where, None, f"step counts add up to {total} chunks (largest cnt {top}) for "
                        f"{nsteps} steps: cnt must be below {limits.COUNT_PER_STEP}")
    return s


def _cnt_extent(s: Schedule) -> tuple[int, int]:
    """(largest cnt, sum of the positive cnts) over every step of ``s``."""
    tab = s.step_table()
    if tab is not None:
        cnt = tab[0].cnt[tab[1][0]:tab[1][-1]]
        if not len(cnt):
            return 0, 0
        return int(cnt.max()), int(cnt[cnt > 0].sum(dtype="int64"))
    top = total = 0
    for g in s.gpus:
        for tb in g.tbs:
            col = tb.columns()[6]
            if len(col):
                top = max(top, max(col))
                total += sum(c for c in col if c > 0)
    return top, total


def load(path: str | os.PathLike, *, mapped: bool = False, fast: bool = True) -> Schedule:
    """Parse the MSCCL XML file at ``path`` (read once, at most MAX_FILE_BYTES); ``fast`` as for
    :func:`loads`.

    ``mapped`` maps a non-empty file instead of reading it into fresh memory (a 254 MB file: 1.4
    s of system time less on a virtual machine). Only for a file that no other process rewrites
    in place, such as one this process has just written through a rename: a mapped file cut
    short under the reader ends the process with SIGBUS."""
    p = os.fspath(path)
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise LoadError(p, None, f"file is {size} bytes (limit {MAX_FILE_BYTES})")
            if mapped and size:
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            else:
                try:
                    data = limits.read_capped_from(fh, MAX_FILE_BYTES, "file")
                except ValueError:        # a device or a growing file: more than the cap
                    raise LoadError(p, None, f"file is larger than {MAX_FILE_BYTES} bytes (the "
                                    "limit)") from None
    except OSError as exc:
        raise LoadError(p, None, f"cannot read: {exc.strerror or exc}") from None
    return loads(data, p, fast=fast)
