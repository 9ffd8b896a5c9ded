"""Port of NCCL's hand-written topology-XML tokenizer (``xmlGetToken``/``xmlGetNode``), the one
every MSCCL runtime reads algorithm files with (msccl-runtime.md §2).

It is the *runtime's view* of a tag: :class:`~ccxml.loader.exact.ExactReader` reads each tag the
XML way (what the author meant) and, unless the tag is in the canonical form both read alike,
also through :func:`read_tag` here; where the two differ the loader records a
:class:`~ccxml.loader.model.LexicalIssue` in the runtime's words. Nothing here is a fast path, so
it has no fast twin.
"""
from __future__ import annotations

import re

#: NCCL's MAX_STR_LEN: a name (and, unchecked, a value) must be shorter than this
RUNTIME_STR_LEN = 256
#: attribute slots per element (MAX_ATTR_COUNT, §2.5): later attributes are dropped
RUNTIME_ATTR_SLOTS = 16

#: where ``xmlGetToken`` ends a name
NAME_END = re.compile(r"[= >/\n\r]")


class TokenizerError(Exception):
    """A tag the runtime tokenizer fails on (message in the runtime's words)."""


def read_token(text: str, i: int, want_value: bool):
    """``xmlGetToken``: returns (name, value or None, last char, next index)."""
    m = NAME_END.search(text, i)
    if m is None:
        raise TokenizerError("Unexpected EOF")
    j = m.start()
    if j - i >= RUNTIME_STR_LEN - 1:
        raise TokenizerError(f"name {text[i:i + 20]}... too long (max {RUNTIME_STR_LEN})")
    name, c = text[i:j], text[j]
    if c != "=":
        return name, None, c, j + 1
    if not want_value:
        raise TokenizerError(f"Unexpected value with name {name}")
    if j + 1 >= len(text):
        raise TokenizerError("Unexpected EOF")
    q = text[j + 1]
    if q not in "\"'":
        raise TokenizerError("Expected (double) quote")
    k = text.find('"', j + 2)
    if k < 0 or k + 1 >= len(text):
        raise TokenizerError("Unexpected EOF")
    value = text[j + 2:k]
    if len(value) >= RUNTIME_STR_LEN:
        raise TokenizerError(f"value of {name} is {len(value)} characters (buffer of {RUNTIME_STR_LEN})")
    return name, value, text[k + 1], k + 2


def read_tag(text: str, i: int):
    """``xmlGetNode`` on the tag starting at ``text[i] == '<'`` (not a comment).

    Returns (kind, name, slots, end) where kind is "open", "single" or "close", ``slots`` the
    attribute slots in order as (key, value) — empty keys for stray spaces — and ``end`` the
    index after the final ``>``. Raises TokenizerError with the runtime's complaint.
    """
    name, _, c, i = read_token(text, i + 1, False)
    if name == "" and c == "/":
        name, _, c, i = read_token(text, i, False)
        if c != ">":
            raise TokenizerError(f"unexpected trailing {c!r} in closing tag {name}")
        return "close", name, [], i
    slots = []
    while c == " ":
        key, value, c, i = read_token(text, i, True)
        slots.append((key, value))
    kind = "open"
    if c == "/":
        kind = "single"
        _, _, c, i = read_token(text, i, False)
    if c != ">":
        raise TokenizerError(f"expected >, got {c!r}")
    return kind, name, slots, i
