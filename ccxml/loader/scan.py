"""The numpy scanner (fast path): every canonical step line of a file at once, into a
:class:`~ccxml.loader.model.StepTable`.

A step line written the canonical way (one ``<step .../>`` per line, attributes in the usual
order, plain decimal numbers of at most 8 digits, known step types and buffers: what ccxml and
MSCCLang write) is found and checked byte by byte for the whole file with numpy
(:func:`scan_steps`, in blocks, so memory stays proportional to the file). :func:`cut_bodies`
then cuts every ``<tb>`` body that is such a run of lines out of the text, so that
:class:`~ccxml.loader.fast.FastReader` reads the rest tag by tag and hands each cut body's rows
of the table to its TB.

Exact twin: :class:`ccxml.loader.exact.ExactReader` reading the same lines tag by tag
(:meth:`~ccxml.loader.exact.ExactReader.step`). A line the scan does not take (anything off the
canonical form) is left to it; a line it takes must read as the exact reader reads it, with the
same line numbers (tests/test_twins.py).
"""
from __future__ import annotations

import re

import numpy as np

from ccxml.loader.exact import STEP_ATTRS
from ccxml.loader.model import PLAIN_INT, StepTable

_SCAN_BLOCK = 1 << 22
_SCAN_MAX_LINE = 1 << 16
#: what follows the last line of a TB body read from the table
TB_END = re.compile(r" *</tb>")
_TB_END_BYTES = re.compile(rb" *</tb>")
_U64 = np.uint64


def _word(b: bytes) -> int:
    """The little-endian integer of up to 8 bytes."""
    return int.from_bytes(b, "little")


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


def scan_steps(data: bytes):
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


def cut_bodies(data: bytes, scan):
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
