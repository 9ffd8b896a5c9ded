"""The exact reader: MSCCL XML text → :class:`~ccxml.loader.model.Schedule`, one tag at a time.

Every tag is read twice: the XML way (lenient, what the author meant, so the model is useful
even when the runtime would fail) and, unless it is in the canonical form both read alike, the
runtime's way (:mod:`ccxml.loader.tokenizer`). Everything the runtimes would choke on becomes a
:class:`~ccxml.loader.model.LexicalIssue` with its line number; the model holds what the runtime
would see: only the first 16 attribute slots of an element, integers as ``strtol`` reads them.
Unusable input raises :class:`~ccxml.vocab.errors.LoadError`. Every pass is linear in the input.

Fast twin: :class:`ccxml.loader.fast.FastReader` is this reader with one method overridden,
:meth:`ExactReader.tb_body`, which reads a canonical ``<tb>`` body in one go (from the numpy
scan's table, :mod:`ccxml.loader.scan`, or one regex pass) where this reader reads its steps tag
by tag. They must build equal models with equal lexical issues (tests/test_twins.py;
``ccxml.loader.reader.loads(..., fast=False)`` reads with this reader alone).
"""
from __future__ import annotations

import re

from ccxml.loader.model import (
    PLAIN_INT,
    LexicalIssue,
    MissingAttribute,
    Schedule,
    ScheduleGPU,
    ScheduleStep,
    ScheduleTB,
    strtol0,
)
from ccxml.loader.tokenizer import NAME_END, RUNTIME_ATTR_SLOTS, RUNTIME_STR_LEN, TokenizerError, read_tag
from ccxml.vocab.errors import LoadError

MAX_DEPTH = 32
MAX_ATTRS = 256
MAX_VALUE_CHARS = 65536

INT32 = (-(2 ** 31), 2 ** 31 - 1)
INT64 = (-(2 ** 63), 2 ** 63 - 1)

ALGO_INT_ATTRS = {"ngpus": INT32, "nchannels": INT32, "nchunksperloop": INT32, "inplace": INT32,
                  "outofplace": INT32, "minBytes": INT64, "maxBytes": INT64, "nthreads": INT32,
                  "root": INT32}
GPU_ATTRS = ("id", "i_chunks", "o_chunks", "s_chunks")
TB_ATTRS = ("id", "send", "recv", "chan")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")
STEP_STR_ATTRS = frozenset({"type", "srcbuf", "dstbuf"})

#: number strings every load knows (a reader's ``ints`` starts as a copy)
INT_CACHE = {str(k): k for k in range(-1, 4097)}
#: most distinct number strings a load caches
INT_CACHE_MAX = 1 << 20

# Lenient (XML-like) reading: what the author meant; the runtime view decides what counts.
_TOKEN = re.compile(r"""
    (?P<ws>[ \r\n]+)
  | (?P<comment><!--)
  | (?P<close></(?P<cname>[^\s<>/]*)\s*>)
  | (?P<tag><(?P<name>[A-Za-z_][^\s<>/="']*)(?P<attrs>(?:[^<>"']|"[^"]*"|'[^']*')*)>)
  | (?P<pi><\?)
  | (?P<markup><!)
  | (?P<text>[^<]+|<)
""", re.VERBOSE)
_XML_ATTR = re.compile(r"""\s*([^\s=/"'<>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')|\s*(/)\s*$|\s+$""")
_CANON_TAG = re.compile(r'<([A-Za-z_][\w.:-]*)((?: [A-Za-z_][\w.:-]{0,200}="[^"\n\r\t]{0,255}")*)( ?/)?>')
_CANON_ATTR = re.compile(r' ([^=]+)="([^"]*)"')


def line_of(text: str, pos: int) -> int:
    """1-based line number of ``text[pos]``."""
    return text.count("\n", 0, pos) + 1


class ExactReader:
    """Reads one file's text (latin-1 decoded bytes) into a Schedule: :meth:`run`."""

    __slots__ = ("text", "path", "sched", "pos", "line", "lpos", "stack", "ints", "seen_algo")

    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.sched = Schedule(attrs={}, path=path)
        self.pos = 0
        self.line = 1
        self.lpos = 0          # position up to which ``line`` is counted
        self.stack: list = []  # (name, line, payload)
        self.ints = dict(INT_CACHE)
        self.seen_algo = False

    # -- helpers ---------------------------------------------------------------------------
    def at(self, pos: int) -> int:
        """Line number of ``pos`` (positions must be non-decreasing between calls)."""
        if pos > self.lpos:
            self.line += self.text.count("\n", self.lpos, pos)
            self.lpos = pos
        return self.line

    def file_line(self, pos: int) -> int:
        """The file's line number of ``text[pos]`` (any position, in any order)."""
        return line_of(self.text, pos)

    def error(self, pos: int, what: str) -> LoadError:
        return LoadError(self.path, self.file_line(pos), what)

    def lex(self, line: int, message: str, fatal: bool = True, code: str = "lexical") -> None:
        self.sched.lexical.append(LexicalIssue(line, message, fatal, code))

    def number(self, raw: str, limits, line: int, what: str) -> int:
        v = self.ints.get(raw)
        if v is not None:
            return v
        if not PLAIN_INT.fullmatch(raw):
            v = strtol0(raw)
            self.lex(line, f"{what}={raw!r} is not a plain decimal number; the runtime's "
                           f"strtol(..., 0) reads it as {v}")
        else:
            v = int(raw)
        if not limits[0] <= v <= limits[1]:
            raise LoadError(self.path, line, f"{what}={raw[:40]!r} is out of range "
                                             f"({limits[0]}..{limits[1]})")
        if PLAIN_INT.fullmatch(raw) and len(self.ints) < INT_CACHE_MAX:
            self.ints[raw] = v
        return v

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> Schedule:
        text = self.text
        if text.startswith("\xef\xbb\xbf"):
            self.lex(1, "UTF-8 byte-order mark before <algo> (runtime: expecting '<')")
            self.pos = 3
        done_algo = False
        tok = _TOKEN.match
        n = len(text)
        while self.pos < n:
            pos = self.pos
            m = tok(text, pos)
            kind = m.lastgroup
            if kind == "ws":
                self.pos = m.end()
                continue
            line = self.at(pos)
            if kind == "comment":
                self.comment(pos, line, done_algo)
                continue
            if kind == "text" or kind is None:
                chunk = m.group()
                if chunk == "<":
                    raise self.error(pos, "'<' not followed by an element name: not an MSCCL XML file")
                stripped = chunk.strip(" \r\n")
                if "\t" in chunk and not stripped.strip("\t\f\v"):
                    self.lex(line + chunk[:chunk.index("\t")].count("\n"),
                             "tab between elements (runtime: expecting '<', got '\\t')")
                elif not self.seen_algo and not self.stack and pos == 0 and stripped:
                    raise self.error(pos, "not an MSCCL XML file (text where <algo> should start)")
                else:
                    where = "after </algo>" if done_algo else "between elements"
                    self.lex(line + chunk[:len(chunk) - len(chunk.lstrip(" \t\r\n"))].count("\n"),
                             f"text {where}: {stripped[:30]!r} (runtime: expecting '<')")
                self.pos = m.end()
                continue
            if kind == "pi":
                end = text.find("?>", pos)
                if end < 0:
                    raise self.error(pos, "unterminated <? ... ?> (truncated file?)")
                what = "XML declaration" if text.startswith("<?xml", pos) else "processing instruction"
                self.lex(line, f"{what} (runtime: expected >, got '?'); the file must start with "
                               f"<algo> or a comment")
                self.pos = end + 2
                continue
            if kind == "markup":
                head = text[pos:pos + 12]
                what = ("DOCTYPE" if head.startswith("<!DOCTYPE") else
                        "ENTITY declaration" if head.startswith("<!ENTITY") else
                        "CDATA section" if head.startswith("<![CDATA[") else "markup declaration")
                raise self.error(pos, f"{what} is not allowed in MSCCL XML (no DTDs or entities)")
            if kind == "close":
                self.close(m, pos, line)
                if self.seen_algo and not self.stack:
                    done_algo = True
                continue
            # an element
            if done_algo:
                self.lex(line, "element after </algo> (runtime: every rank fails)")
            self.element(m, pos, line)
            if self.seen_algo and not self.stack:
                done_algo = True
        if self.stack:
            name, line, _ = self.stack[-1]
            raise LoadError(self.path, line, f"<{name}> opened here is never closed (truncated file?)")
        if not self.seen_algo:
            raise LoadError(self.path, None, "no <algo> element: not an MSCCL XML file")
        return self.sched

    def comment(self, pos: int, line: int, done_algo: bool) -> None:
        text = self.text
        end = text.find("-->", pos + 4)
        if end < 0:
            raise self.error(pos, "unterminated comment (truncated file?)")
        # the runtime reads the text right after '<!--' as a tag name
        m = NAME_END.search(text, pos + 1)
        if m is not None and m.group() == "=" and m.start() < end:
            self.lex(line, f"comment starting {text[pos:m.start() + 1]!r} is read as an attribute "
                           f"by the runtime (write '<!-- ' with a space)")
        elif m is None or m.start() - pos - 1 >= RUNTIME_STR_LEN - 1:
            self.lex(line, "comment whose first word is 255+ characters (runtime: name too long)")
        self.pos = end + 3

    def close(self, m, pos: int, line: int) -> None:
        name = m.group("cname")
        if not self.stack:
            raise self.error(pos, f"</{name}> without an open element")
        top, oline, payload = self.stack[-1]
        if name != top:
            raise self.error(pos, f"</{name}> closes <{top}> opened on line {oline}")
        if m.group() != f"</{name}>":
            self.lex(line, f"space inside closing tag </{name}> (runtime: unexpected trailing)")
        self.stack.pop()
        self.pos = m.end()

    def runtime_attrs(self, pos: int, line: int, name: str, raw: str, end: int):
        """Attributes of a tag as the runtime sees them, noting every lexical deviation.

        Returns (attrs, dropped): the attributes in the runtime's first 16 slots (first
        occurrence wins) and the names present in the tag that the runtime drops.
        """
        text = self.text
        if end - pos > MAX_ATTRS * 1024 + 4 * MAX_VALUE_CHARS:
            raise self.error(pos, f"<{name}> tag is {end - pos} characters long")
        # the author's view
        attrs: dict[str, str] = {}
        order: list[str] = []
        for am in _XML_ATTR.finditer(raw):
            key = am.group(1)
            if key is None:
                continue
            value = am.group(2) if am.group(2) is not None else am.group(3)
            if len(key) > MAX_VALUE_CHARS or len(value) > MAX_VALUE_CHARS:
                raise self.error(pos, f"attribute {key[:30]!r} of <{name}> is over "
                                      f"{MAX_VALUE_CHARS} characters")
            order.append(key)
            if key not in attrs:
                attrs[key] = value
            if len(order) > MAX_ATTRS:
                raise self.error(pos, f"<{name}> has more than {MAX_ATTRS} attributes")
        if "&" in raw and re.search(r"&[A-Za-z_#][^;\s]*;", raw):
            self.lex(line, f"entity reference in <{name}>: the runtime does not expand entities",
                     fatal=False, code="lexical-note")
        # the runtime's view
        dropped: set[str] = set()
        try:
            kind, _, slots, rt_end = read_tag(text, pos)
            if rt_end != end:
                raise TokenizerError("tag read differently from XML (unbalanced quotes)")
            if len(slots) > RUNTIME_ATTR_SLOTS:
                lost = [k for k, _ in slots[RUNTIME_ATTR_SLOTS:] if k]
                self.lex(line, f"<{name}> has {len(slots)} attribute slots; the runtime keeps "
                               f"{RUNTIME_ATTR_SLOTS} and ignores {', '.join(lost) or 'the rest'}",
                         fatal=False, code="lexical-note")
                kept: dict[str, str] = {}
                for k, v in slots[:RUNTIME_ATTR_SLOTS]:
                    if k and k not in kept:
                        kept[k] = v
                dropped = {k for k in attrs if k not in kept}
                attrs = {k: v for k, v in attrs.items() if k in kept}
            if len(order) != len(set(order)):
                self.lex(line, f"<{name}> repeats an attribute; the runtime uses the first",
                         fatal=False, code="lexical-note")
        except TokenizerError as exc:
            self.lex(line, f"<{name}>: runtime tokenizer fails: {exc}")
        return attrs, dropped

    def element(self, m, pos: int, line: int) -> None:
        name = m.group("name")
        end = m.end()
        c = _CANON_TAG.fullmatch(self.text, pos, end)
        if c is not None and c.group(1) == name:
            # the form the runtime reads exactly like XML: no emulation needed
            pairs = _CANON_ATTR.findall(c.group(2))
            attrs = dict(pairs)
            single = c.group(3) is not None
            dropped: set[str] = set()
            if len(pairs) + (c.group(3) == " /") > RUNTIME_ATTR_SLOTS or len(attrs) != len(pairs):
                attrs, dropped = self.runtime_attrs(pos, line, name, m.group("attrs"), end)
        else:
            attrs, dropped = self.runtime_attrs(pos, line, name, m.group("attrs"), end)
            single = m.group("attrs").rstrip(" \r\n\t").endswith("/")
        self.pos = end
        parent = self.stack[-1] if self.stack else None
        pname = parent[0] if parent else None
        if len(self.stack) >= MAX_DEPTH:
            raise self.error(pos, f"elements nested more than {MAX_DEPTH} deep")
        handled = True
        if pname is None:
            if name == "algo":
                if self.seen_algo:
                    self.lex(line, "second <algo> element")
                else:
                    self.seen_algo = True
                    self.algo(attrs, line)
            else:
                handled = False
        elif pname == "algo" and parent[2] is not None and name == "gpu":
            payload = self.gpu(attrs, dropped, line)
            if not single:
                self.stack.append((name, line, payload))
            return
        elif pname == "gpu" and parent[2] is not None and name == "tb":
            tb = self.tb(parent[2], attrs, dropped, line)
            if not single:
                self.stack.append((name, line, (parent[2], tb)))
                self.tb_body(tb, line)
            return
        elif pname == "tb" and parent[2] is not None and name == "step":
            self.step(parent[2][0], parent[2][1], attrs, dropped, line)
            if not single:
                self.stack.append((name, line, "step"))
            return
        elif pname == "step":
            self.lex(line, f"<{name}> inside <step> (the runtime dereferences a NULL handler: crash)")
            handled = False
        else:
            handled = False
        if not handled:
            od = self.sched.other_elements
            od[name] = od.get(name, 0) + 1
            if od[name] == 1 and pname != "step":
                self.lex(line, f"<{name}> is not read by the runtime (skipped)", fatal=False,
                         code="lexical-note")
        if not single:
            self.stack.append((name, line, self.sched if handled else None))

    # -- element builders ------------------------------------------------------------------
    def algo(self, attrs: dict[str, str], line: int) -> None:
        for key, limits in ALGO_INT_ATTRS.items():
            if key in attrs:
                self.number(attrs[key], limits, line, key)
        self.sched.attrs.update(attrs)
        self.sched.line = line

    def ints_of(self, attrs, names, dropped, element, line, gpu=None, tb=None, step=None):
        out = []
        for key in names:
            raw = attrs.get(key)
            if raw is None:
                self.sched.missing.append(MissingAttribute(element, key, line, gpu, tb, step,
                                                           key in dropped))
                out.append(0)
            else:
                out.append(self.number(raw, INT32, line, f"{element} {key}"))
        return out

    def gpu(self, attrs, dropped, line) -> ScheduleGPU:
        gid, ic, oc, sc = self.ints_of(attrs, GPU_ATTRS, dropped, "gpu", line)
        if "id" not in attrs:
            gid = -1
        g = ScheduleGPU(gid, ic, oc, sc, [], line)
        self.sched.gpus.append(g)
        return g

    def tb(self, g: ScheduleGPU, attrs, dropped, line) -> ScheduleTB:
        tid, send, recv, chan = self.ints_of(attrs, TB_ATTRS, dropped, "tb", line, gpu=g.id)
        tb = ScheduleTB(tid, send, recv, chan, [], line)
        g.tbs.append(tb)
        return tb

    def step(self, g: ScheduleGPU, tb: ScheduleTB, attrs, dropped, line) -> None:
        idx = len(tb.steps)
        vals = []
        for key in STEP_ATTRS:
            raw = attrs.get(key)
            if raw is None:
                self.sched.missing.append(MissingAttribute("step", key, line, g.id, tb.id, idx,
                                                           key in dropped))
                vals.append("" if key in STEP_STR_ATTRS else 0)
            elif key in STEP_STR_ATTRS:
                vals.append(raw)
            else:
                vals.append(self.number(raw, INT32, line, f"step {key}"))
        tb.steps.append(ScheduleStep(*vals, line))

    def tb_body(self, tb: ScheduleTB, line: int) -> None:
        """Called right after the ``<tb>`` tag on ``line`` opens ``tb``: the exact reader reads
        the body tag by tag (nothing to do here); the fast twin overrides this."""
