"""Files written whole or not at all: a temporary name in the same folder, then a rename."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

#: characters encoded and written at a time by :func:`write_atomic` (small enough to reuse
#: the same memory, large enough that the loop costs nothing)
_WRITE_SLICE = 1 << 16


def write_atomic(path: str | os.PathLike, text: str | bytes | Iterable[str]) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename;
    ``text`` is a string, its parts in order (see :func:`xml_parts`), or bytes."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ccxml-", suffix=".tmp", dir=folder)
    try:
        binary = isinstance(text, bytes)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as f:
            # in slices: encoding a large schedule at once would take a second copy of it
            for part in ((text,) if isinstance(text, (str, bytes)) else text):
                for at in range(0, len(part), _WRITE_SLICE):
                    f.write(part[at:at + _WRITE_SLICE])
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
