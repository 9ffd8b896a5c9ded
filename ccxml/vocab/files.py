"""Files ccxml reads and writes, by what the path names (docs/output-files.md).

Writing (:func:`open_output`, :func:`write_output`), by what the path names:

* ``-``: standard output;
* a regular file, or a path that does not exist yet: a temporary file beside it, then a rename,
  so that the path holds the old content or the whole new one, never a part; an existing file
  keeps its permission bits (and, where the process may, its owner and group);
* a symbolic link: written through to the file it points to, atomically there (the temporary
  file goes beside the target); the link itself stays as it was;
* a character or block device, a FIFO, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``: written
  directly, as a shell's ``>`` does (``-o /dev/null`` leaves ``/dev/null`` a device);
* a directory: refused (IsADirectoryError).

SIGTERM and SIGHUP while a temporary file exists remove it, as Ctrl-C does: the signal becomes
:class:`Terminated` (see :func:`signals_raise`), which unwinds the write; the command line then
exits 128 + the signal number with one line.

Reading (:func:`input_problem`): a path that is not a regular file gets a line that says what it
is (a directory, a character device, a FIFO, a symlink loop...), and a FIFO is never opened (a
read would wait for a writer forever).

This is the one copy of these rules: the writer re-exports it (:mod:`ccxml.writer.files`), and
every command that writes a file goes through it. The temporary-and-rename pattern is the usual
one (Python's ``tempfile`` + ``os.replace``; GNU coreutils' ``install``/``sort -o`` keep a
device or FIFO destination and write it in place the same way).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import signal
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import IO, Any

#: characters encoded and written at a time (small enough to reuse the same memory, large
#: enough that the loop costs nothing)
_WRITE_SLICE = 1 << 16

#: prefix and suffix of the temporary files beside a target (tests and docs name them)
TEMP_PREFIX = ".ccxml-"
TEMP_SUFFIX = ".tmp"

#: signals that, while a write is under way, remove its temporary file before the process ends
CLEANUP_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
                        if s is not None)

#: paths that name an already open descriptor of this process: written through that descriptor
_FD_PATH = re.compile(r"^/(?:dev/fd|proc/self/fd|proc/thread-self/fd)/(\d+)$")
_STD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived during a write (a BaseException, like KeyboardInterrupt, so that
    ``except Exception`` does not swallow it; cleanup code under ``except BaseException`` and
    ``finally`` runs)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by a signal."""
        return 128 + self.signum


@contextlib.contextmanager
def signals_raise(signums: Iterable[int] = CLEANUP_SIGNALS) -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread
    (once: a second signal during the cleanup is ignored, so that the cleanup finishes); the
    previous handlers come back afterwards. A signal the process ignores (``nohup``) stays
    ignored. Elsewhere than in the main thread it does nothing
    (Python runs signal handlers there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if fired:
            return
        fired.append(signum)
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    try:
        for s in signums:
            if signal.getsignal(s) is signal.SIG_IGN:     # nohup, or a parent that ignores it
                continue
            previous[s] = signal.signal(s, handler)
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _descriptor_of(path: str) -> int | None:
    """The open descriptor ``path`` names (/dev/stdout, /dev/fd/N, ...), or None."""
    if path in _STD_PATHS:
        return _STD_PATHS[path]
    m = _FD_PATH.match(path)
    return int(m.group(1)) if m else None


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return word
    return "not a regular file"


def _target(path: str) -> tuple[str, os.stat_result | None]:
    """(the path to write, its stat or None when nothing is there yet), following symbolic links
    to the file they name (a dangling link: the file it would create). Raises OSError for a
    symlink loop (ELOOP) or a path through a non-directory (ENOTDIR)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    return (os.path.realpath(path) if os.path.islink(path) else path), st


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[Any]:
    """Open ``path`` for writing, by what it names (see the module docstring); yields a file
    object (text: UTF-8, ``\\n`` line ends; ``binary=True``: bytes). The content is in place
    when the block ends without an exception; an exception or :class:`Terminated` inside the
    block removes the temporary file, and the path keeps what it held.

    Raises OSError (IsADirectoryError for a directory, ELOOP for a symlink loop, ...) and
    ValueError for an empty path."""
    path = os.fspath(path)
    if path == "":
        raise ValueError("an empty path names no file (give a file name, or - for standard output)")
    with signals_raise():
        if path == "-":
            with _stdout(binary) as f:
                yield f
            return
        fd_number = _descriptor_of(path)
        if fd_number is not None:
            with _descriptor_file(fd_number, binary) as f:
                yield f
            return
        where, st = _target(path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a device, a FIFO, a socket: write it as it is, as a shell's > does
            with open(path, "wb" if binary else "w", **_text_args(binary)) as f:
                yield f
            return
        folder = os.path.dirname(os.path.abspath(where))
        os.makedirs(folder, exist_ok=True)
        tmp = None
        try:
            # the name is chosen before the file is made, so that a signal that lands between
            # its making and the return (where tempfile.mkstemp would leave an unknown name)
            # still finds it to remove
            while True:
                tmp = os.path.join(folder, f"{TEMP_PREFIX}{os.urandom(4).hex()}{TEMP_SUFFIX}")
                try:
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
                    break
                except FileExistsError:
                    tmp = None
            with os.fdopen(fd, "wb" if binary else "w", **_text_args(binary)) as f:
                yield f
            _same_metadata(tmp, st)
            os.replace(tmp, where)
        except BaseException:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise


def _text_args(binary: bool) -> dict[str, Any]:
    return {} if binary else {"encoding": "utf-8", "newline": "\n"}


def _same_metadata(tmp: str, st: os.stat_result | None) -> None:
    """Give the temporary file the permission bits of the file it replaces (a new file: 0666 &
    ~umask, as open() makes it; the temporary file is made 0600), and its owner and group where
    allowed."""
    if st is None:
        os.chmod(tmp, 0o666 & ~current_umask())
        return
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(OSError):          # only root (or the owner, for the group) may
            os.chown(tmp, st.st_uid, st.st_gid)
    os.chmod(tmp, stat.S_IMODE(st.st_mode))


class _Unclosed:
    """A stream of the process (standard output...) lent to a block: flushed, not closed, at
    its end."""

    def __init__(self, f: IO[Any]) -> None:
        self._f = f

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> IO[Any]:
        return self._f

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._f.flush()


def _stdout(binary: bool) -> _Unclosed:
    out = sys.stdout
    if binary:
        out.flush()
        return _Unclosed(out.buffer)
    return _Unclosed(out)


def _descriptor_file(number: int, binary: bool) -> _Unclosed | IO[Any]:
    if number in (1, 2):
        stream = sys.stdout if number == 1 else sys.stderr
        # the process's own stream (click's test runner replaces it): written in order with it
        if stream is not None and _fileno(stream) in (number, None):
            return _stdout(binary) if number == 1 else _Unclosed(stream.buffer if binary else stream)
    return os.fdopen(os.dup(number), "wb" if binary else "w", **_text_args(binary))


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None


def write_output(path: str | os.PathLike[str], text: str | bytes | Iterable[str]) -> None:
    """Write ``text`` (a string, bytes, or string parts in order, such as
    :func:`ccxml.writer.msccl.xml_parts`) to ``path`` through :func:`open_output`; parts are
    encoded a slice at a time, so a large file is never held twice."""
    binary = isinstance(text, (bytes, bytearray, memoryview))
    with open_output(path, binary=binary) as f:
        if isinstance(text, (bytes, bytearray, memoryview)):
            f.write(text)
        else:
            for part in ((text,) if isinstance(text, str) else text):
                for at in range(0, len(part), _WRITE_SLICE):
                    f.write(part[at:at + _WRITE_SLICE])
        with contextlib.suppress(OSError, ValueError, AttributeError):
            f.flush()


def temporary_files(folder: str | os.PathLike[str]) -> list[str]:
    """The temporary files :func:`open_output` left in ``folder`` (none, unless the process was
    killed with SIGKILL or the machine stopped)."""
    return sorted(n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX) and n.endswith(TEMP_SUFFIX))


# ---- reading ---------------------------------------------------------------------------------

def input_problem(path: str | os.PathLike[str]) -> str | None:
    """None when ``path`` is a regular file (through symbolic links), else one line that says
    what it is: ``no such file``, ``symlink loop``, ``not a regular file: P is a character
    device``, ... (a FIFO is reported, never opened: reading one waits for a writer)."""
    p = os.fspath(path)
    if p == "":
        return "an empty path names no file"
    try:
        st = os.stat(p)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return f"{p}: symlink loop (too many levels of symbolic links)"
        if e.errno == errno.ENOENT and os.path.islink(p):
            return f"{p}: broken symbolic link (to {os.readlink(p)}, which does not exist)"
        if e.errno == errno.ENOENT:
            return f"{p}: no such file"
        if e.errno == errno.ENOTDIR:
            return f"{p}: no such file (a part of the path is not a directory)"
        return f"{p}: {e.strerror or e}"
    if not stat.S_ISREG(st.st_mode):
        return f"not a regular file: {p} is {_kind(st.st_mode)}"
    return None


# ---- locks -----------------------------------------------------------------------------------

@contextlib.contextmanager
def exclusive_lock(lock_path: str | os.PathLike[str]) -> Iterator[int | None]:
    """Hold an exclusive ``flock`` on ``lock_path`` for the block, without waiting: yields None
    when this process holds it, or the pid of the process that does (0 when that process has not
    written it yet), and the caller refuses to go on.

    The file holds the holder's pid and is removed when the block ends (while still locked). A
    locker checks, once it holds the lock, that the path still names the file it locked, and
    starts again if not: so the removal cannot let two processes hold two different files
    (the protocol of e.g. Debian's ``lockfile-progs`` and ``flock(1)`` users)."""
    path = os.fspath(lock_path)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            finally:
                os.close(fd)
            yield int(text) if text.isdigit() else 0
            return
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)                # removed or replaced by the holder before us: try again
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)                # releases the lock


# ---- text from a file -----------------------------------------------------------------------

def file_text(value: str) -> str:
    """An attribute value as the file's UTF-8 spells it: the loader holds each byte as one
    character (latin-1, so that positions are byte offsets), which shows ``café`` as
    ``cafÃ©``. Bytes that are not UTF-8 become U+FFFD."""
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:          # already text (built in memory, not read from a file)
        return value
    return raw.decode("utf-8", "replace")


def shown_path(path: str) -> str:
    """A path as text that can be written anywhere: bytes of a file name that are not UTF-8
    (which Python holds as lone surrogates, and no UTF-8 writer accepts) become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def names_stdout(path: str | os.PathLike[str]) -> bool:
    """Whether writing ``path`` writes this process's standard output (``-``, /dev/stdout,
    /dev/fd/1, or the very file or pipe it is): a command then says what it wrote on stderr."""
    p = os.fspath(path)
    if p == "-" or _descriptor_of(p) == 1:
        return True
    try:
        return os.path.samestat(os.stat(p), os.fstat(1))
    except (OSError, ValueError):
        return False


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written directly, not replaced (``-``, a device, a FIFO, /dev/stdout,
    a socket): several outputs given one such path all go to it, in order."""
    p = os.fspath(path)
    if p == "-" or _descriptor_of(p) is not None:
        return True
    try:
        mode = os.stat(p).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
