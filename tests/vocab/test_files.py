"""ccxml.vocab.files: the primitives behind every -o (docs/output-files.md)."""
from __future__ import annotations

import os
import socket
import stat

import pytest

from ccxml.vocab.files import (
    exclusive_lock,
    file_text,
    input_problem,
    is_stream,
    open_output,
    temporary_files,
    write_output,
)


def test_lock_is_exclusive_says_the_holder_and_goes_with_it(tmp_path):
    path = tmp_path / ".d.ccxml-lock"
    with exclusive_lock(path) as held:
        assert held is None
        assert path.read_text() == f"{os.getpid()}\n"
        with exclusive_lock(path) as other:                # a second open file: refused at once
            assert other == os.getpid()
        assert path.exists()                               # the refused one removes nothing
    assert not path.exists()
    with exclusive_lock(path) as again:
        assert again is None


def test_a_lock_file_left_by_a_killed_run_is_taken_over(tmp_path):
    path = tmp_path / ".d.ccxml-lock"
    path.write_text("999999999\n")                         # no lock held on it any more
    with exclusive_lock(path) as held:
        assert held is None and path.read_text() == f"{os.getpid()}\n"


def test_parts_and_bytes_are_written_whole(tmp_path):
    write_output(tmp_path / "a.txt", iter(["x" * 100_000, "y\n"]))
    write_output(tmp_path / "b.bin", b"\x00\xff")
    assert (tmp_path / "a.txt").read_text() == "x" * 100_000 + "y\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"
    assert temporary_files(tmp_path) == []


def test_an_exception_in_the_block_keeps_the_old_content(tmp_path):
    out = tmp_path / "a.txt"
    out.write_text("old\n")
    with pytest.raises(RuntimeError), open_output(out) as f:
        f.write("new")
        raise RuntimeError("stop")
    assert out.read_text() == "old\n" and temporary_files(tmp_path) == []


def test_dev_fd_writes_the_open_descriptor(tmp_path):
    r, w = os.pipe()
    try:
        assert is_stream(f"/dev/fd/{w}")
        write_output(f"/dev/fd/{w}", "through the pipe\n")
        assert os.read(r, 100) == b"through the pipe\n"
    finally:
        os.close(r)
        os.close(w)
    assert temporary_files(tmp_path) == []


def test_what_is_a_stream(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    (tmp_path / "f").write_text("")
    assert is_stream("-") and is_stream("/dev/null") and is_stream(fifo)
    assert not is_stream(tmp_path / "f") and not is_stream(tmp_path / "new") and not is_stream(tmp_path)


def test_empty_path_is_refused():
    with pytest.raises(ValueError, match="empty path"), open_output(""):
        pass


def test_input_problem_names_a_socket(tmp_path):
    path = tmp_path / "s"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert input_problem(path) == f"not a regular file: {path} is a socket"
    finally:
        s.close()
    (tmp_path / "f.xml").write_text("<algo/>")
    assert input_problem(tmp_path / "f.xml") is None
    (tmp_path / "l.xml").symlink_to("f.xml")
    assert input_problem(tmp_path / "l.xml") is None            # a link to a file is that file
    assert input_problem(tmp_path / "f.xml" / "x") == f"{tmp_path / 'f.xml' / 'x'}: no such file (a part of the path is not a directory)"


def test_file_text_reads_the_loaders_bytes_as_utf8():
    assert file_text("café".encode().decode("latin-1")) == "café"
    assert file_text("名前".encode().decode("latin-1")) == "名前"
    assert file_text("caf\xe9") == "caf\ufffd"                # a latin-1 byte is not UTF-8
    assert file_text("ring_allreduce") == "ring_allreduce"
    assert file_text("☕") == "☕"                              # text built in memory stays


def test_an_ignored_signal_stays_ignored_during_a_write(tmp_path):
    import signal
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)          # as under nohup
    try:
        with open_output(tmp_path / "a.txt") as f:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
            os.kill(os.getpid(), signal.SIGHUP)                  # nothing happens
            f.write("done\n")
    finally:
        signal.signal(signal.SIGHUP, old)
    assert (tmp_path / "a.txt").read_text() == "done\n"
