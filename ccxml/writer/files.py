"""Files written whole or not at all, by what the path names: the rules and the one copy of the
code are :mod:`ccxml.vocab.files` (the layers below the writer use them too); this module keeps
the writer's names for them."""
from __future__ import annotations

import os
from collections.abc import Iterable

from ccxml.vocab.files import current_umask, open_output, write_output

__all__ = ["current_umask", "open_output", "write_atomic", "write_output"]


def write_atomic(path: str | os.PathLike, text: str | bytes | Iterable[str]) -> None:
    """Write ``text`` (a string, bytes, or its parts in order, see :func:`~ccxml.writer.msccl.xml_parts`)
    to ``path``: :func:`ccxml.vocab.files.write_output` (a regular file through a temporary file
    and a rename; a symlink written through; a device or FIFO written directly)."""
    write_output(path, text)
