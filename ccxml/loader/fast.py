"""The fast reader: the exact reader with each canonical ``<tb>`` body read in one go.

:class:`FastReader` is :class:`~ccxml.loader.exact.ExactReader` with
:meth:`~ccxml.loader.exact.ExactReader.tb_body` overridden. A TB whose body is a run of canonical
step lines gets its rows of the numpy scan's table (:mod:`ccxml.loader.scan`), either because
the body was cut out of the text it reads (:func:`~ccxml.loader.scan.cut_bodies`) or found by
position; any other TB body whose lines all match the canonical ``<step .../>`` pattern is read
with one regex pass (numbers through the reader's cache of plain decimal strings, anything
unusual row by row through the exact :meth:`~ccxml.loader.exact.ExactReader.number`); anything
else is left to the exact reader, tag by tag.

Exact twin: :class:`~ccxml.loader.exact.ExactReader` itself (``loads(..., fast=False)``).
Both must build equal models with equal lexical issues and line numbers, and fail with the same
error on the same line (tests/test_twins.py).
"""
from __future__ import annotations

import re
from bisect import bisect_left

import numpy as np

from ccxml.loader.exact import INT32, INT_CACHE_MAX, STEP_ATTRS, ExactReader, line_of
from ccxml.loader.model import PLAIN_INT, ScheduleTB
from ccxml.loader.scan import TB_END

# canonical step lines. Values are taken as written: numbers are validated by the ``ints``
# lookup (its keys are plain decimal strings only), strings by the loader checks.
_V = r'"([^"]*)"'
_FAST_STEP = re.compile(
    r'\n *<step s=' + _V + ' type=' + _V + ' srcbuf=' + _V + ' srcoff=' + _V + ' dstbuf=' + _V
    + ' dstoff=' + _V + ' cnt=' + _V + ' depid=' + _V + ' deps=' + _V + ' hasdep=' + _V
    + r' ?/>')


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


class FastReader(ExactReader):
    """Reads one file's text with the canonical TB bodies taken in one go (see the module).

    ``scan`` is :func:`~ccxml.loader.scan.scan_steps` of the same bytes (or None); ``marks``,
    when given, says that ``text`` is the file with TB bodies cut out
    (:func:`~ccxml.loader.scan.cut_bodies`); ``consumed`` counts the cut bodies handed to a TB.
    """

    __slots__ = ("scan", "marks", "consumed")

    def __init__(self, text: str, path: str, scan=None, marks=None):
        super().__init__(text, path)
        self.scan = scan
        self.marks = marks
        self.consumed = 0

    def file_line(self, pos: int) -> int:
        line = line_of(self.text, pos)
        if self.marks:
            at, lines = self.marks[1], self.marks[2]
            k = bisect_left(at, pos)
            line += lines[k - 1] if k else 0
        return line

    def tb_body(self, tb: ScheduleTB, line: int) -> None:
        """Read a canonical TB body from the table or in one regex pass; leave anything else
        to the exact path."""
        if self.scan is not None and self.table_steps(tb, line):
            return
        self.regex_steps(tb, line)

    def table_steps(self, tb: ScheduleTB, line: int) -> bool:
        """Hand the TB the scanned rows of its body when the body, from the tag's end to
        ``</tb>``, is a run of canonical step lines (see :func:`~ccxml.loader.scan.scan_steps`)."""
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
        if TB_END.match(self.text, b + 1) is None:
            return False
        n = i1 - i0
        table.line[i0:i1] = np.arange(line + 1, line + 1 + n, dtype=np.int32)
        tb.set_table_rows(table, i0, i1)
        self.at(a)
        self.line += n
        self.lpos = b
        self.pos = b
        return True

    def regex_steps(self, tb: ScheduleTB, line: int) -> None:
        """Read a TB body of canonical step lines in one regex pass, or leave it."""
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
            if len(ints) + len(missing) <= INT_CACHE_MAX and all(map(PLAIN_INT.fullmatch, missing)):
                values = list(map(int, missing))
                if not values or (min(values) >= INT32[0] and max(values) <= INT32[1]):
                    ints.update(zip(missing, values))
                    num = [_int_column(c, get, ints) for c in numeric]
        if num is None:
            # row by row, as the exact reader reads them: every non-plain number is flagged on
            # its own line, a number out of range raises at its first line
            number = self.number
            num = [[] for _ in numeric]
            for ln, row in enumerate(zip(*cols), line + 1):
                for col, k in zip(num, (0, 3, 5, 6, 7, 8, 9)):
                    col.append(number(row[k], INT32, ln, f"step {STEP_ATTRS[k]}"))
        s_, so, do, cnt, di, ds, h = num
        tb.set_columns((s_, c_t, c_sb, so, c_db, do, cnt, di, ds, h, range(line + 1, line + 1 + n)))
        self.at(a)
        self.line += n
        self.lpos = b
        self.pos = b

