"""Safe, fast loader for MSCCL XML files: text → :class:`ccxml.loader.model.Schedule`.

Guarantees:

* **Safe.** This is a hand-written tokenizer, not an XML library: no DTD, no entity expansion
  (``&x;`` stays literal text), no network or file access besides reading the one input, input
  capped at :data:`MAX_FILE_BYTES`, element nesting at :data:`MAX_DEPTH`, attributes per element
  at :data:`MAX_ATTRS` and attribute names/values at :data:`MAX_VALUE_CHARS`. Every pass is linear
  in the input, so it cannot hang.
* **Runtime-faithful.** Each tag the slow path reads is also read by a port of NCCL's tokenizer
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
* **Fast.** Step lines written the canonical way (one ``<step .../>`` per line, attributes in
  the usual order, plain decimal numbers of at most 8 digits, known step types and buffers —
  what ccxml and MSCCLang write) are found and checked byte by byte for the whole file at once
  with numpy (:func:`_scan_steps`, in blocks, so memory stays proportional to the file) into a
  :class:`~ccxml.loader.model.StepTable`; a TB whose body is such a run of lines gets its rows of
  the table, and the tokenizer reads the file with those bodies cut out. Other TB bodies are
  read with one regex pass per TB, and anything else by the exact path, line by line.
"""
from __future__ import annotations

import gc
import mmap
import os
import re
from bisect import bisect_left

import numpy as np

from ccxml.loader.model import (
    PLAIN_INT,
    LexicalIssue,
    MissingAttribute,
    Schedule,
    ScheduleGPU,
    ScheduleStep,
    ScheduleTB,
    StepTable,
    strtol0,
)
from ccxml.vocab.errors import LoadError

MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 32
MAX_ATTRS = 256
MAX_VALUE_CHARS = 65536
#: NCCL's MAX_STR_LEN: a name (and, unchecked, a value) must be shorter than this
RUNTIME_STR_LEN = 256
RUNTIME_ATTR_SLOTS = 16

INT32 = (-(2 ** 31), 2 ** 31 - 1)
INT64 = (-(2 ** 63), 2 ** 63 - 1)

ALGO_INT_ATTRS = {"ngpus": INT32, "nchannels": INT32, "nchunksperloop": INT32, "inplace": INT32,
                  "outofplace": INT32, "minBytes": INT64, "maxBytes": INT64, "nthreads": INT32,
                  "root": INT32}
GPU_ATTRS = ("id", "i_chunks", "o_chunks", "s_chunks")
TB_ATTRS = ("id", "send", "recv", "chan")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")
STEP_STR_ATTRS = frozenset({"type", "srcbuf", "dstbuf"})


class _RuntimeError(Exception):
    """A tag the runtime tokenizer fails on (message in the runtime's words)."""


# ---------------------------------------------------------------------------------------------
# Port of NCCL's topology-XML tokenizer, used on every tag of the exact path.

_RT_NAME_END = re.compile(r"[= >/\n\r]")


def _rt_token(text: str, i: int, want_value: bool):
    """``xmlGetToken``: returns (name, value or None, last char, next index)."""
    m = _RT_NAME_END.search(text, i)
    if m is None:
        raise _RuntimeError("Unexpected EOF")
    j = m.start()
    if j - i >= RUNTIME_STR_LEN - 1:
        raise _RuntimeError(f"name {text[i:i + 20]}... too long (max {RUNTIME_STR_LEN})")
    name, c = text[i:j], text[j]
    if c != "=":
        return name, None, c, j + 1
    if not want_value:
        raise _RuntimeError(f"Unexpected value with name {name}")
    if j + 1 >= len(text):
        raise _RuntimeError("Unexpected EOF")
    q = text[j + 1]
    if q not in "\"'":
        raise _RuntimeError("Expected (double) quote")
    k = text.find('"', j + 2)
    if k < 0 or k + 1 >= len(text):
        raise _RuntimeError("Unexpected EOF")
    value = text[j + 2:k]
    if len(value) >= RUNTIME_STR_LEN:
        raise _RuntimeError(f"value of {name} is {len(value)} characters (buffer of {RUNTIME_STR_LEN})")
    return name, value, text[k + 1], k + 2


def _rt_tag(text: str, i: int):
    """``xmlGetNode`` on the tag starting at ``text[i] == '<'`` (not a comment).

    Returns (kind, name, slots, end) where kind is "open", "single" or "close", ``slots`` the
    attribute slots in order as (key, value) — empty keys for stray spaces — and ``end`` the
    index after the final ``>``. Raises _RuntimeError with the runtime's complaint.
    """
    name, _, c, i = _rt_token(text, i + 1, False)
    if name == "" and c == "/":
        name, _, c, i = _rt_token(text, i, False)
        if c != ">":
            raise _RuntimeError(f"unexpected trailing {c!r} in closing tag {name}")
        return "close", name, [], i
    slots = []
    while c == " ":
        key, value, c, i = _rt_token(text, i, True)
        slots.append((key, value))
    kind = "open"
    if c == "/":
        kind = "single"
        _, _, c, i = _rt_token(text, i, False)
    if c != ">":
        raise _RuntimeError(f"expected >, got {c!r}")
    return kind, name, slots, i


# ---------------------------------------------------------------------------------------------
# Lenient (XML-like) reading: what the author meant, so the model is useful even when the
# runtime would fail; the runtime view above decides what counts.

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
_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NOT_BLANK = re.compile(r"[^ \r\n\t]")
_BAD_BYTES = bytes([*range(0, 9), 11, 12, *range(14, 32), 127])
_GOOD_BYTES = bytes(x for x in range(256) if x not in _BAD_BYTES)

# canonical step lines (fast path). Values are taken as written: numbers are validated by the
# ``ints`` lookup (its keys are plain decimal strings only), strings by the loader checks.
_V = r'"([^"]*)"'
_FAST_STEP = re.compile(
    r'\n *<step s=' + _V + ' type=' + _V + ' srcbuf=' + _V + ' srcoff=' + _V + ' dstbuf=' + _V
    + ' dstoff=' + _V + ' cnt=' + _V + ' depid=' + _V + ' deps=' + _V + ' hasdep=' + _V
    + r' ?/>')
_INT_CACHE = {str(k): k for k in range(-1, 4097)}
#: most distinct number strings a load caches
_INT_CACHE_MAX = 1 << 20


#: "0", "1", ...: a canonical step index column is a prefix of this
_S_STRS = [str(k) for k in range(1024)]
_S_INTS = list(range(1024))


_PREFIX_STEP = (r'\n *<step s=' + _V + ' type=' + _V + ' srcbuf=' + _V + ' srcoff=' + _V + ' dstbuf='
                + _V + ' dstoff=' + _V)
_TAIL_CACHE: dict = {}


def _constant_tail_rows(text: str, a: int, b: int, n: int):
    """(rows of the 6 leading values, the 4 trailing value strings) when all ``n`` canonical step
    lines in text[a:b] end with the same ``cnt=... hasdep=.../>`` text, else None."""
    m = _FAST_STEP.match(text, a, b)
    if m is None:
        return None
    tail = text[m.start(7) - 6:m.end()]          # ' cnt="..." ... />'
    if text.count(tail, a, b) != n:
        return None
    rx = _TAIL_CACHE.get(tail)
    if rx is None:
        if len(_TAIL_CACHE) > 64:
            _TAIL_CACHE.clear()
        rx = _TAIL_CACHE[tail] = re.compile(_PREFIX_STEP + re.escape(tail))
    rows = rx.findall(text, a, b)
    if len(rows) != n:
        return None
    return rows, m.group(7, 8, 9, 10)


def _int_column(col: list, get, ints: dict) -> list:
    """Integers of a column of number strings (KeyError for one not in ``ints``)."""
    n = len(col)
    first = col[0]
    if col.count(first) == n:              # constant column (or a tail value): one lookup
        return [get(first)] * n
    if n <= len(_S_STRS) and first == "0" and col == _S_STRS[:n]:
        return _S_INTS[:n]
    return list(map(get, col))


# ---------------------------------------------------------------------------------------------
# Whole-file scan of canonical step lines with numpy (see _Reader.fast_steps)

_SCAN_BLOCK = 1 << 22
_SCAN_MAX_LINE = 1 << 16
_TB_END = re.compile(r" *</tb>")
_U64 = np.uint64


def _word(b: bytes) -> int:
    """The little-endian integer of up to 8 bytes."""
    return int.from_bytes(b, "little")


def _mask(n):
    """Masks keeping the low ``n`` bytes of a uint64 (n: int or array of ints 0..8)."""
    return _MASKS[n]


_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=_U64)
_HEAD_WORD = _word(b'<step s=')
_SPACES = _word(b" " * 8)
_TYPE_KEYS = {_word(name.encode()): i for i, name in enumerate(StepTable.TYPES)}
_TYPE_KEY_SORTED = np.array(sorted(_TYPE_KEYS), _U64)
_TYPE_CODE_SORTED = np.array([_TYPE_KEYS[k] for k in sorted(_TYPE_KEYS)], np.int8)
_BUF_CODE = np.full(256, -1, np.int8)
for _i, _b in enumerate(StepTable.BUFS):
    _BUF_CODE[ord(_b)] = _i
_ZEROS = _word(b"0" * 8)
#: per digit count n: shift that right-aligns n digits in a word, and the '0's filling the rest
_ALIGN_SHIFT = np.array([8 * (8 - n) for n in range(9)], _U64)
_ALIGN_PAD = np.array([_ZEROS & ((1 << (8 * (8 - n))) - 1) for n in range(9)], _U64)
_SEVENTY_SIX = _word(b"\x76" * 8)
_QUOTES = _word(b'"' * 8)
_ONES = _word(b"\x01" * 8)
_HIGHS = _word(b"\x80" * 8)
#: what lies between the closing quote of value k and the opening quote of value k + 1,
#: followed by that quote: (word of its first 8 bytes, its length)
_MID_LIST = [(_word(x[:8]), len(x)) for x in (b' type="', b' srcbuf="', b' srcoff="', b' dstbuf="',
                                             b' dstoff="', b' cnt="', b' depid="', b' deps="',
                                             b' hasdep="')]
_QUOTE_X_QUOTE = _word(b'"\x00"')


def _first_flag(z):
    """Index (0..7) of the lowest nonzero byte of each word of ``z`` (garbage where ``z`` is 0)."""
    low = z & -z                                      # the lowest set bit alone
    e = low.astype(np.float64).view(np.int64) >> 52   # its exponent + 1023 (a power of 2: exact)
    return (e - 1023) >> 3


#: (1 << 8j) * _BEFORE_FLAG >> 56 == j - 1 for j = 1..7 (byte 7 - j of the constant)
_BEFORE_FLAG = sum((j - 1) << (8 * (7 - j)) for j in range(1, 8))


def _value_length(z):
    """For flags from :func:`_closing_quote`: the bytes before the lowest flagged one, less the
    opening quote, i.e. the value's length (0 where ``z`` is 0)."""
    return (((z & -z) >> _U64(7)) * _U64(_BEFORE_FLAG)) >> _U64(56)


def _closing_quote(w):
    """For words starting at a value's opening quote: flags (0x80) on the bytes 1..7 that hold
    a quote, exact for the lowest one (the has-zero-byte trick on ``w ^ '""..'``)."""
    y = (w ^ _U64(_QUOTES)) | _U64(0xFF)
    return (y - _U64(_ONES)) & ~y & _U64(_HIGHS)


def _plain_ints(W, o, L, vw):
    """Values of the decimal strings at ``o`` of length ``L`` (``W[i]``: 8 bytes at offset i;
    ``vw``: the word at ``o``, valid for min(L, 8) bytes) and whether each is a plain number
    ``-?(0|[1-9][0-9]*)`` of at most 8 digits."""
    w = vw
    lmin, lmax = L.min(), L.max()
    if len(o) > 1 and lmin == lmax and 1 <= lmin <= 8:
        # a column of one string (cnt, hasdep, "-1" dependencies): read it once
        word = w & _MASKS[L[0]]
        if (word == word[0]).all():
            raw = int(word[0]).to_bytes(8, "little")[:L[0]].decode("latin-1")
            if PLAIN_INT.fullmatch(raw) and len(raw.lstrip("-")) <= 8:
                return np.full(len(o), int(raw), np.int64), np.ones(len(o), bool)
            return np.zeros(len(o), np.int64), np.zeros(len(o), bool)
    neg = (w & _U64(0xFF)) == 45
    signed = neg.any()
    if signed:
        nd = L - neg
        w = np.where(neg, w >> _U64(8), w)
        far = np.flatnonzero(neg & (L > 7))         # 8 digits after the sign: a word further on
        if len(far):
            w[far] = W[o[far] + 1]
    else:
        nd = L
        if lmin >= 1 and lmax <= 4:
            return _short_ints(w, nd)
    ok = (nd >= 1) & (nd <= 8)
    nd = np.clip(nd, 0, 8)
    w = w & _MASKS[nd]
    ok &= ((w & _U64(0xFF)) != 48) | (nd == 1)            # no leading zero
    # right-align the digits, pad with '0' on the left (the low bytes)
    w = (w << _ALIGN_SHIFT[nd]) | _ALIGN_PAD[nd]
    v = w - _U64(_ZEROS)
    # every byte a digit: v's bytes all 0..9 (a byte below '0' borrows, which sets its top bit;
    # the lowest bad byte is always flagged, and one is enough)
    ok &= (((v + _U64(_SEVENTY_SIX)) | v) & _U64(_HIGHS)) == 0
    v = (v * _U64(10) + (v >> _U64(8))) & _U64(0x00FF00FF00FF00FF)
    v = (v * _U64(100) + (v >> _U64(16))) & _U64(0x0000FFFF0000FFFF)
    v = (v * _U64(10000) + (v >> _U64(32))) & _U64(0x00000000FFFFFFFF)
    v = v.astype(np.int64)
    return (np.where(neg, -v, v) if signed else v), ok


_U32 = np.uint32
_MASKS32 = _MASKS[:5].astype(_U32)
_ALIGN_SHIFT32 = np.array([8 * (4 - n) for n in range(5)], _U32)
_ALIGN_PAD32 = np.array([_ZEROS & ((1 << (8 * (4 - n))) - 1) for n in range(5)], _U32)


def _short_ints(w, nd):
    """:func:`_plain_ints` for unsigned strings of 1 to 4 characters, in 32-bit words."""
    w = w.astype(_U32) & _MASKS32[nd]
    ok = ((w & _U32(0xFF)) != 48) | (nd == 1)             # no leading zero
    v = ((w << _ALIGN_SHIFT32[nd]) | _ALIGN_PAD32[nd]) - _U32(_ZEROS & 0xFFFFFFFF)
    ok &= (((v + _U32(0x76767676)) | v) & _U32(0x80808080)) == 0
    v = (v * _U32(10) + (v >> _U32(8))) & _U32(0x00FF00FF)
    v = (v * _U32(100) + (v >> _U32(16))) & _U32(0x0000FFFF)
    return v, ok


def _scan_lines(arr, W, R, s: int, e: int, controls: list):
    """Canonical step lines whose preceding newline is in arr[s:e] and which end at a newline
    at or before ``e``: (newline positions, columns with ``end``, the ending newline) of the
    valid ones. Appends to ``controls`` the number of bytes in arr[s:e + 1] that are control
    characters other than newline (tabs and CRs counted too).

    Each line is walked value by value: the word at a value's opening quote gives its closing
    quote (values of up to 6 characters; longer ones take one more word), the fixed
    `` name="`` after it gives the next opening quote. Every byte from the newline to the next
    one is checked, so a line passes only if it is exactly the canonical form. ``R[i]``: the
    16 bytes at offset i; one gather of those after a closing quote gives the name after it and
    the next value (a gather costs many times an elementwise operation)."""
    blk = arr[s:e + 1]
    # positions are relative to s from here on (views of W and arr that start there)
    W = W[s:]
    R1 = R[s + 1:]                   # R1[i]: the 16 bytes after offset i, as two words
    nls = np.flatnonzero(blk == 10)
    controls.append(np.count_nonzero(blk < 32) - len(nls) + np.count_nonzero(blk == 127))
    if len(nls) < 2:
        return None
    P, END = nls[:-1], nls[1:]
    W1 = W[1:]                       # W1[i] == W[i + 1]: no index arithmetic for "the byte after"
    # indentation: up to 16 spaces, then '<step s="'
    x = W1[P] ^ _U64(_SPACES)
    ind = _first_flag(x)
    deep = np.flatnonzero(x == 0)
    if len(deep):
        x2 = W[P[deep] + 9] ^ _U64(_SPACES)
        # 16 spaces: the '<' must follow (the head check below sees it)
        ind[deep] = np.where(x2 == 0, 16, 8 + _first_flag(x2))
    q = P + 9 + ind                  # the opening quote of s, if this is a step line
    np.minimum(q, END, out=q)
    two = R[s:][q - 8].view(_U64)     # '<step s=' and the word at the opening quote
    cand = two[0::2] == _U64(_HEAD_WORD)
    w = two[1::2]
    if not cand.all():
        if not cand.any():
            return None
        P, END, q, w = P[cand], END[cand], q[cand], w[cand]
    ok = np.ones(len(P), bool)
    cols = {}
    quote_seen = False                # whether the opening quote at q is checked already
    for k in range(10):
        if not quote_seen and k not in (2, 4):
            ok &= (w & _U64(0xFF)) == 34
        if k in (2, 4):               # a buffer: one character between quotes
            ok &= (w & _U64(0xFF00FF)) == _U64(_QUOTE_X_QUOTE)
            code = _BUF_CODE[((w >> _U64(8)) & _U64(0xFF)).astype(np.intp)]
            ok &= code >= 0
            cols[STEP_ATTRS[k]] = code
            c = q + 2
            np.minimum(c, END, out=c)
        else:
            z = _closing_quote(w)
            L = _value_length(z).view(np.int64)
            vw = w >> _U64(8)
            long_ = np.flatnonzero(z == 0)
            if len(long_):                # no closing quote in 7 bytes: look in the next word
                ql = np.minimum(q[long_], END[long_])
                y = W[ql + 8] ^ _U64(_QUOTES)
                z2 = (y - _U64(_ONES)) & ~y & _U64(_HIGHS)
                ok[long_] &= z2 != 0
                L[long_] = np.where(z2 != 0, 7 + _first_flag(z2), 9)
                vw[long_] = W1[ql]
            c = q + 1                     # the closing quote (at most END: W1[c] stays in the file)
            c += L
            np.minimum(c, END, out=c)
            if k == 1:                    # step type: up to 4 characters, one of StepTable.TYPES
                Lt = np.clip(L, 0, 8)
                key = vw & _MASKS[Lt]
                i = np.minimum(np.searchsorted(_TYPE_KEY_SORTED, key), len(_TYPE_KEY_SORTED) - 1)
                ok &= (_TYPE_KEY_SORTED[i] == key) & (Lt >= 1)
                cols["type"] = _TYPE_CODE_SORTED[i]
            else:
                val, good = _plain_ints(W1, c - L - 1, L, vw)
                ok &= good
                cols[STEP_ATTRS[k]] = val.astype(np.int32)   # plain numbers of <= 8 digits fit
        # c is at most END, so the 16 bytes after it are in the file
        two = R1[c].view(_U64)
        lo, hi = two[0::2], two[1::2]
        if k < 9:
            # ' name="' and the word at the next opening quote (n bytes after c)
            word, n = _MID_LIST[k]
            if n <= 8:
                ok &= (lo & _MASKS[n]) == _U64(word)
            else:
                ok &= lo == _U64(word)
            q = c + n
            quote_seen = n <= 8
            if n == 1:
                w = lo
            elif n == 9:
                w = hi
            else:
                w = (lo >> _U64(8 * (n - 1))) | (hi << _U64(64 - 8 * (n - 1)))
        else:
            tail = END - c
            t = lo
            ok &= (((tail == 3) & ((t & _MASKS[2]) == _U64(_word(b"/>"))))
                   | ((tail == 4) & ((t & _MASKS[3]) == _U64(_word(b" />")))))
    cols["end"] = END
    if not ok.all():
        P = P[ok]
        cols = {k: c[ok] for k, c in cols.items()}
    cols["end"] += s
    return P + s, cols


#: the shortest canonical step line, without its indentation and newline
_MIN_STEP_LINE = len('<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="0" '
                     'depid="0" deps="0" hasdep="0"/>')
_SCAN_COLUMNS = (("P", np.int64), ("end", np.int64), ("s", np.int32), ("srcoff", np.int32),
                 ("dstoff", np.int32), ("cnt", np.int32), ("depid", np.int32), ("deps", np.int32),
                 ("hasdep", np.int32), ("type", np.int8), ("srcbuf", np.int8), ("dstbuf", np.int8))


def _scan_steps(data: bytes):
    """All canonical step lines of ``data``: (positions of the newline before each, StepTable
    without line numbers, position of the newline ending each, last row of the run of
    consecutive step lines each row is in), or None when there is no such line; and the span
    (a, b) such that data[a:b] holds no control character but newlines (None: not known)."""
    n = len(data)
    if n < 64:
        return None, None
    arr = np.frombuffer(data, np.uint8)
    # W[i] is the little-endian word of data[i:i + 8]; the last 7 offsets are cut, and no value
    # of a step line that ends at a newline can start there
    W = np.ndarray((n - 7,), dtype="<u8", buffer=data, strides=(1,))
    R = np.ndarray((n - 15,), dtype="V16", buffer=data, strides=(1,))
    controls: list = []
    s = first = data.find(b"\n")
    last = data.rfind(b"\n", 0, n - 16)
    # the table's columns, filled block by block (the rows a block finds are temporaries that
    # the next block reuses; only the table takes fresh memory); a step line is at least
    # _MIN_STEP_LINE bytes long, which bounds the rows
    cap = (last - first) // _MIN_STEP_LINE + 1 if 0 <= first < last else 0
    out = {name: np.empty(cap, dt) for name, dt in _SCAN_COLUMNS}
    k = 0
    while 0 <= s < last:
        if s + _SCAN_BLOCK >= last:
            e = last
        else:
            # end the block at a newline; inside a line longer than _SCAN_MAX_LINE (no step line)
            # cut anyway, so that a block, and the memory it takes, stays bounded
            e = data.find(b"\n", s + _SCAN_BLOCK, s + _SCAN_BLOCK + _SCAN_MAX_LINE)
            if e < 0:
                e = s + _SCAN_BLOCK
        r = _scan_lines(arr, W, R, s, e, controls)
        if r is not None and len(r[0]):
            m = len(r[0])
            r[1]["P"] = r[0]
            for name, _ in _SCAN_COLUMNS:
                out[name][k:k + m] = r[1][name]
            k += m
        s = e
    span = (first, last + 1) if controls and not any(controls) else None
    if not k:
        return None, span
    cols = {name: out[name][:k] for name, _ in _SCAN_COLUMNS}
    P = cols.pop("P")
    END = cols.pop("end")
    cols["line"] = np.zeros(k, np.int32)
    # runs of consecutive step lines: the last row of the run each row belongs to
    brk = np.flatnonzero(P[1:] != END[:-1])
    last = np.append(brk, len(P) - 1)
    run_last = np.repeat(last, np.diff(np.concatenate(([-1], last))))
    return (P, StepTable(**cols), END, run_last), span


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


class _Reader:
    __slots__ = ("text", "path", "sched", "pos", "line", "lpos", "stack", "ints", "seen_algo", "scan",
                 "marks", "consumed")

    def __init__(self, text: str, path: str, scan=None, marks=None):
        self.text = text
        self.path = path
        self.sched = Schedule(attrs={}, path=path)
        self.pos = 0
        self.line = 1
        self.lpos = 0          # position up to which ``line`` is counted
        self.stack: list = []  # (name, line, payload)
        self.ints = dict(_INT_CACHE)
        self.seen_algo = False
        self.scan = scan       # _scan_steps of the same bytes, or None
        self.marks = marks     # _compress: text is the file with TB bodies cut out
        self.consumed = 0      # cut TB bodies handed to their TB

    # -- helpers ---------------------------------------------------------------------------
    def at(self, pos: int) -> int:
        """Line number of ``pos`` (positions must be non-decreasing between calls)."""
        if pos > self.lpos:
            self.line += self.text.count("\n", self.lpos, pos)
            self.lpos = pos
        return self.line

    def error(self, pos: int, what: str) -> LoadError:
        line = _line_of(self.text, pos)
        if self.marks:
            at, lines = self.marks[1], self.marks[2]
            k = bisect_left(at, pos)
            line += lines[k - 1] if k else 0
        return LoadError(self.path, line, what)

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
        if PLAIN_INT.fullmatch(raw) and len(self.ints) < _INT_CACHE_MAX:
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
        m = _RT_NAME_END.search(text, pos + 1)
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
            kind, _, slots, rt_end = _rt_tag(text, pos)
            if rt_end != end:
                raise _RuntimeError("tag read differently from XML (unbalanced quotes)")
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
        except _RuntimeError as exc:
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
                self.fast_steps(parent[2], tb, line)
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

    def table_steps(self, tb: ScheduleTB, line: int) -> bool:
        """Hand the TB the scanned rows of its body when the body, from the tag's end to
        ``</tb>``, is a run of canonical step lines (see :func:`_scan_steps`)."""
        P, table, END, run_last = self.scan
        a = self.pos
        if self.marks is not None:
            cut = self.marks[0].get(a)
            if cut is None:
                return False
            i0, i1 = cut
            n = i1 - i0
            table.line[i0:i1] = np.arange(line + 1, line + 1 + n, dtype=np.int32)
            tb.set_table_rows(table, i0, i1)
            self.at(a)
            self.line += n
            self.lpos = self.pos = a + 1
            self.consumed += 1
            return True
        i0 = bisect_left(P, a)
        if i0 >= len(P) or P[i0] != a:
            return False
        i1 = int(run_last[i0]) + 1
        b = int(END[i1 - 1])
        if _TB_END.match(self.text, b + 1) is None:
            return False
        n = i1 - i0
        table.line[i0:i1] = np.arange(line + 1, line + 1 + n, dtype=np.int32)
        tb.set_table_rows(table, i0, i1)
        self.at(a)
        self.line += n
        self.lpos = b
        self.pos = b
        return True

    def fast_steps(self, g: ScheduleGPU, tb: ScheduleTB, line: int) -> None:
        """Read a canonical TB body in one regex pass; leave anything else to the exact path."""
        if self.scan is not None and self.table_steps(tb, line):
            return
        text = self.text
        a = self.pos
        q = text.find("</tb>", a)
        if q < 0:
            return
        b = text.rfind("\n", a, q)
        if b <= a or text[b + 1:q].strip(" "):
            return
        n = text.count("\n", a, b)
        # Every match starts at a newline and holds no other one; with n newlines, n '>' and
        # n-1 '/>\n' in the region, the matches tile it exactly (nothing between elements).
        # Numbers need no check here: only plain decimal strings are keys of ``self.ints``.
        if (n == 0 or text[a] != "\n" or text[b - 1] != ">" or text.count(">", a, b) != n
                or text.count("/>\n", a, b) != n - 1):
            return
        const = _constant_tail_rows(text, a, b, n)
        if const is not None:
            rows, tail = const
            cols = list(zip(*rows))
            cols[6:] = [[v] * n for v in tail]
        else:
            rows = _FAST_STEP.findall(text, a, b)
            if len(rows) != n:
                return
            cols = list(zip(*rows))
        c_s, c_t, c_sb, c_so, c_db, c_do, c_c, c_di, c_ds, c_h = cols
        ints = self.ints
        get = ints.__getitem__
        numeric = (c_s, c_so, c_do, c_c, c_di, c_ds, c_h)
        try:
            if c_so == c_do:       # in-place style offsets: convert once
                num = [_int_column(c, get, ints) for c in (c_s, c_so)]
                num += [num[1]] + [_int_column(c, get, ints) for c in (c_c, c_di, c_ds, c_h)]
            else:
                num = [_int_column(c, get, ints) for c in numeric]
        except KeyError:
            num = None
            # new plain decimal numbers in the C int range join the cache; anything else takes
            # the row-by-row path below, which flags it with its line (or raises)
            missing = set().union(*map(set, numeric)).difference(ints)
            if len(ints) + len(missing) <= _INT_CACHE_MAX and all(map(PLAIN_INT.fullmatch, missing)):
                values = list(map(int, missing))
                if not values or (min(values) >= INT32[0] and max(values) <= INT32[1]):
                    ints.update(zip(missing, values))
                    num = [_int_column(c, get, ints) for c in numeric]
        if num is None:
            rows = list(zip(*cols))
            ints = dict(ints)      # non-plain strings join this TB's copy only, flagged once
            for ln, row in enumerate(rows, line + 1):
                for k in (0, 3, 5, 6, 7, 8, 9):
                    if row[k] not in ints:
                        ints[row[k]] = self.number(row[k], INT32, ln, f"step {STEP_ATTRS[k]}")
            get = ints.__getitem__
            num = [list(map(get, c)) for c in numeric]
        s_, so, do, cnt, di, ds, h = num
        tb.set_columns((s_, c_t, c_sb, so, c_db, do, cnt, di, ds, h, range(line + 1, line + 1 + n)))
        self.at(a)
        self.line += n
        self.lpos = b
        self.pos = b


_TB_END_BYTES = re.compile(rb" *</tb>")
_NOT_BLANK_BYTES = re.compile(_NOT_BLANK.pattern.encode("latin-1"))


def _compress(data: bytes, scan):
    """The file as text with each TB body that is a run of canonical step lines (from the
    ``<tb ...>`` tag's end to the newline before ``</tb>``) cut down to one NUL character, plus
    ({position of the NUL: (first row, end row)}, [NUL positions], [newlines cut before and
    at each]). NUL cannot occur in an accepted file, so it marks the cuts unambiguously."""
    P, _table, END, run_last = scan
    starts = np.flatnonzero(np.concatenate(([True], P[1:] != END[:-1])))
    parts = []
    marks: dict = {}
    at: list = []
    lines: list = []
    prev = 0
    pos = 0
    cut_lines = 0
    P_l = P[starts].tolist()
    last_l = run_last[starts].tolist()
    for i0, a, last in zip(starts.tolist(), P_l, last_l):
        i1 = last + 1
        b = int(END[last])
        if a < 1 or data[a - 1] != 62 or _TB_END_BYTES.match(data, b + 1) is None:
            continue
        parts.append(data[prev:a].decode("latin-1"))
        pos += a - prev
        parts.append("\x00")
        marks[pos] = (i0, i1)
        cut_lines += i1 - i0
        at.append(pos)
        lines.append(cut_lines)
        pos += 1
        prev = b
    parts.append(data[prev:].decode("latin-1"))
    return "".join(parts), (marks, at, lines)


def loads(data: str | bytes | mmap.mmap, path: str = "<string>") -> Schedule:
    """Parse MSCCL XML from ``data`` (text, bytes, or a file mapped read-only as
    :func:`load` maps it); see the module docstring for what is guaranteed."""
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
    scan, span = _scan_steps(data)
    if span is None:
        controls = bytes(data).translate(None, _GOOD_BYTES)    # what is left: control characters
    else:
        controls = (data[:span[0]].translate(None, _GOOD_BYTES)
                    or data[span[1]:].translate(None, _GOOD_BYTES))
    if controls:
        text = str(data, "latin-1")
        bad = _BAD_CHARS.search(text)
        raise LoadError(path, _line_of(text, bad.start()),
                        f"binary data (byte 0x{ord(bad.group()):02x}): not an MSCCL XML file")
    if not _NOT_BLANK_BYTES.search(data):
        raise LoadError(path, None, "empty file: not an MSCCL XML file")
    # the model has no reference cycles: cyclic GC passes over millions of fresh steps only cost
    enabled = gc.isenabled()
    gc.disable()
    try:
        if scan is not None:
            # read the file with its canonical TB bodies cut out (they are in the table); if a
            # cut body is not where a TB reads it, read the whole text instead
            text, marks = _compress(data, scan)
            if marks[0]:
                try:
                    reader = _Reader(text, path, scan, marks)
                    sched = reader.run()
                    if reader.consumed == len(marks[0]):
                        return sched
                except LoadError:
                    pass
                scan = _scan_steps(data)[0]    # fresh table rows for the second reading
        # latin-1 maps bytes 1:1, so positions are byte offsets and nothing can fail to decode
        return _Reader(str(data, "latin-1"), path, scan).run()
    finally:
        if enabled:
            gc.enable()


def load(path: str | os.PathLike, *, mapped: bool = False) -> Schedule:
    """Parse the MSCCL XML file at ``path`` (read once, at most MAX_FILE_BYTES).

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
                data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise LoadError(p, None, f"cannot read: {exc.strerror or exc}") from None
    return loads(data, p)
