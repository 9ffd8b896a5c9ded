"""What ``-o`` (and every option that names a file to write) does to what the path names.

A regular file or a new path: written whole or not at all (a temporary file and a rename),
keeping an existing file's permission bits. A symbolic link: written through to its target,
the link untouched. A device, a FIFO, /dev/stdout: written directly, still what they were. An
empty path: one line, exit 2. SIGTERM/SIGHUP during a write: no temporary file survives, exit
128 + signum, one line. ``tune -o DIR``: one run at a time (docs/output-files.md).
"""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from in_process import ccxml
from mscclang_cli import PROGRAMS

from ccxml.vocab.files import TEMP_PREFIX, exclusive_lock, temporary_files

REPO = Path(__file__).resolve().parent.parent.parent
RING4 = ("generate", "ring", "--ranks", "4", "-q")


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def ring4_text(tmp_path) -> str:
    ref = tmp_path / "ref" / "ring.xml"
    code, _, err = ccxml(*RING4, "-o", ref)
    assert code == 0, err
    return ref.read_text()


def no_temporaries(*folders) -> None:
    for folder in folders:
        assert temporary_files(folder) == [], os.listdir(folder)


# ---- a device node ---------------------------------------------------------------------------

@pytest.fixture
def null_device(tmp_path):
    """A character device with /dev/null's numbers, in a folder of the test's own."""
    path = tmp_path / "devnull"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    os.chmod(path, 0o666)                                   # (mknod applies the umask)
    return path


def still_null_device(path) -> None:
    st = os.lstat(path)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert stat.S_IMODE(st.st_mode) == 0o666


def test_generate_onto_a_device_writes_it_and_leaves_it_a_device(null_device, tmp_path):
    code, out, err = ccxml(*RING4, "-o", null_device, "--verify")
    assert code == 0, err
    assert out.splitlines()[-1] == f"PASS {null_device}"      # the bytes written, not a re-read
    still_null_device(null_device)
    no_temporaries(tmp_path)


def test_every_writer_leaves_a_device_a_device(null_device, tmp_path):
    html = tmp_path / "page.html"
    os.mknod(html, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(html, 0o666)
    xml = tmp_path / "ring.xml"
    xml.write_text(ring4_text(tmp_path))
    runs = [
        (*RING4, "--dump-after", "numbering", "--dump-to", null_device, "-o", tmp_path / "r.xml"),
        ("show", xml, "-o", html),
        ("verify", xml, "--junit", null_device),
        ("mscclang", "--target", "legacy", "-o", null_device, PROGRAMS / "custom_neighbour.py", "4"),
    ]
    for args in runs:
        code, _, err = ccxml(*args)
        assert code == 0, (args, err)
        still_null_device(null_device)
        still_null_device(html)
    no_temporaries(tmp_path)


def test_tune_refuses_a_device_and_leaves_it(null_device, tmp_path):
    code, _, err = ccxml("tune", "--ranks", "4", "-a", "ring", "-c", "allreduce", "-q", "-o", null_device)
    assert code == 2
    assert one_line(err) == f"ccxml: {null_device} exists and is not a directory"
    still_null_device(null_device)
    assert sorted(os.listdir(tmp_path)) == ["devnull"]


# ---- symbolic links --------------------------------------------------------------------------

def test_a_symlink_is_written_through_and_keeps_pointing_where_it_did(tmp_path):
    want = ring4_text(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    target = tmp_path / "b" / "target.xml"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "a" / "link.xml"
    link.symlink_to(os.path.join("..", "b", "target.xml"))
    code, _, err = ccxml(*RING4, "-o", link, "--verify")
    assert code == 0, err
    assert os.readlink(link) == os.path.join("..", "b", "target.xml")
    assert target.read_text() == want
    assert stat.S_IMODE(target.stat().st_mode) == 0o640          # the target's bits are kept
    no_temporaries(tmp_path / "a", tmp_path / "b")


def test_a_dangling_symlink_creates_its_target(tmp_path):
    want = ring4_text(tmp_path)
    link = tmp_path / "link.xml"
    link.symlink_to("made.xml")
    code, _, err = ccxml(*RING4, "-o", link)
    assert code == 0, err
    assert link.is_symlink() and (tmp_path / "made.xml").read_text() == want


def test_a_symlink_loop_is_one_line_and_stays_a_loop(tmp_path):
    loop = tmp_path / "loop.xml"
    loop.symlink_to("loop.xml")
    code, _, err = ccxml(*RING4, "-o", loop)
    assert code == 2
    assert one_line(err).startswith(f"ccxml: cannot write {loop}: ")
    assert os.readlink(loop) == "loop.xml"


# ---- regular files, new paths, directories, empty paths ----------------------------------------

def test_a_regular_file_keeps_its_permission_bits(tmp_path):
    out = tmp_path / "ring.xml"
    out.write_text("old\n")
    os.chmod(out, 0o600)
    code, _, err = ccxml(*RING4, "-o", out)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_text().startswith("<algo ")
    no_temporaries(tmp_path)


def test_a_new_path_gets_normal_permissions_and_its_folders(tmp_path):
    out = tmp_path / "new" / "folder" / "ring.xml"
    old = os.umask(0o027)
    try:
        code, _, err = ccxml(*RING4, "-o", out)
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_a_directory_is_refused_in_one_line(tmp_path):
    code, _, err = ccxml(*RING4, "-o", tmp_path)
    assert code == 2
    assert one_line(err) == f"ccxml: cannot write {tmp_path}: is a directory"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args", [
    RING4 + ("-o",),
    RING4 + ("--dump-after", "numbering", "--dump-to"),
    ("show", "ring", "-n", "4", "-c", "allreduce", "-o"),
    ("verify", "x.xml", "--junit"),
    ("tune", "-n", "4", "-o"),
    ("mscclang", "-o"),
    ("simulate", "ring", "-n", "4", "-c", "allreduce", "--plot"),
])
def test_an_empty_path_is_one_line_exit_2(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    code, out, err = ccxml(*args, "")
    assert code == 2
    assert one_line(err).endswith("an empty path names no file")
    assert os.listdir(tmp_path) == []          # not out/ring_allreduce_4.xml


def test_dash_and_dev_stdout_write_stdout_and_say_so_on_stderr(tmp_path):
    want = ring4_text(tmp_path)
    for where in ("-", "/dev/stdout"):
        code, out, err = ccxml(*RING4, "-o", where, "--verify")
        assert code == 0, err
        assert out == want
        assert "PASS" in err and "wrote" in err


def test_dev_stdout_of_a_process_is_its_pipe():
    p = subprocess.run([sys.executable, "-m", "ccxml", *RING4, "-o", "/dev/stdout"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("<algo ") and p.stdout.endswith("</algo>\n")
    assert one_line(p.stderr).startswith("wrote /dev/stdout: ring allreduce")


# ---- FIFOs -------------------------------------------------------------------------------------

def read_in_thread(path):
    box: list[bytes] = []

    def read():
        with open(path, "rb") as f:
            box.append(f.read())
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, box


def test_a_fifo_gets_the_bytes_and_stays_a_fifo(tmp_path):
    want = ring4_text(tmp_path)
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)
    t, box = read_in_thread(fifo)
    code, _, err = ccxml(*RING4, "-o", fifo, "--verify")     # verified in memory: never read back
    t.join(60)
    assert code == 0, err
    assert box == [want.encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    no_temporaries(tmp_path)


# ---- signals -----------------------------------------------------------------------------------

#: ``ccxml ARGS`` whose writer yields the XML slowly, so that the test can signal mid-write
SLOW_WRITER = """
import sys, time
import ccxml.writer.msccl as w
from ccxml.bulk.ring import BulkSchedule        # ring AllReduce's writer (lowered in bulk)
def slowed(real):
    def slow(*a, **k):
        for part in real(*a, **k):
            time.sleep(0.05)
            yield part
    return slow
w.xml_parts = slowed(w.xml_parts)
BulkSchedule.xml_parts = slowed(BulkSchedule.xml_parts)
sys.argv[0] = "ccxml"
from ccxml.cli.app import run
run()
"""


def wait_for(predicate, seconds: float, what: str):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.005)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("existing", [False, True])
def test_a_signal_mid_write_leaves_no_temporary_and_the_old_content(tmp_path, signum, existing):
    out = tmp_path / "ring.xml"
    if existing:
        out.write_text("old\n")
    p = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, "generate", "ring", "--ranks", "64", "-q",
                          "-o", str(out)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: temporary_files(tmp_path) or p.poll() is not None, 120, "the temporary file")
        assert p.poll() is None, p.communicate()
        p.send_signal(signum)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signum
    assert one_line(err) == f"ccxml: {signal.Signals(signum).name} while writing: stopped, no partial file left"
    no_temporaries(tmp_path)
    assert sorted(os.listdir(tmp_path)) == (["ring.xml"] if existing else [])
    if existing:
        assert out.read_text() == "old\n"


# ---- tune -o DIR: one run at a time ------------------------------------------------------------

TUNE = ("tune", "--ranks", "4", "-a", "ring", "-c", "allreduce", "-q")


def test_tune_refuses_while_another_run_holds_the_directory(tmp_path):
    from ccxml.tuning.directory import lock_path
    out = tmp_path / "algos"
    with exclusive_lock(lock_path(out)) as holder:
        assert holder is None
        code, _, err = ccxml(*TUNE, "-o", out)
    assert code == 2
    assert one_line(err) == (f"ccxml: another ccxml tune is writing {out} (pid {os.getpid()}); "
                             f"wait for it to finish")
    assert os.listdir(tmp_path) == []                      # the lock file went with its holder
    code, _, err = ccxml(*TUNE, "-o", out)                # free again
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["algos", "algos.manifest.json"]


def test_parallel_tunes_never_leave_a_half_written_directory(tmp_path):
    out = tmp_path / "algos"
    cmd = [sys.executable, "-m", "ccxml", *TUNE, "-o", str(out)]
    procs = [subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert any(code == 0 for code, _ in results), results
    for code, err in results:
        if code:
            assert code == 2 and "another ccxml tune is writing" in one_line(err), results
    assert sorted(os.listdir(tmp_path)) == ["algos", "algos.manifest.json"]   # no .algos.ccxml-*
    code, out_text, err = ccxml("verify", *sorted(out.iterdir()))
    assert code == 0, err


def test_tune_through_a_symlink_writes_the_directory_it_names(tmp_path):
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to("real")
    code, _, err = ccxml(*TUNE, "-o", link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == "real"
    written = os.listdir(tmp_path / "real")
    assert written and all(n.endswith(".xml") for n in written)
    assert sorted(os.listdir(tmp_path)) == ["link", "link.manifest.json", "real"]


# ---- inputs that are not regular files ---------------------------------------------------------

@pytest.fixture
def odd_inputs(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "loop.xml").symlink_to("loop.xml")
    (tmp_path / "broken.xml").symlink_to("gone.xml")
    return {
        "/dev/zero": "not a regular file: /dev/zero is a character device",
        str(tmp_path / "adir"): f"not a regular file: {tmp_path / 'adir'} is a directory",
        str(tmp_path / "loop.xml"): f"{tmp_path / 'loop.xml'}: symlink loop",
        str(tmp_path / "broken.xml"): f"{tmp_path / 'broken.xml'}: broken symbolic link (to gone.xml",
        str(tmp_path / "none.xml"): f"{tmp_path / 'none.xml'}: no such file",
    }


@pytest.mark.parametrize("command", [("verify",), ("simulate",), ("show", "-o", "x.html")])
def test_an_input_that_is_not_a_regular_file_says_what_it_is(odd_inputs, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    name, *rest = command
    for path, said in odd_inputs.items():
        code, _, err = ccxml(name, path, *rest)
        assert code == 2, (path, err)
        assert one_line(err).startswith(f"ccxml: {said}"), (path, err)
    assert not (tmp_path / "x.html").exists()


def test_mscclang_says_what_a_script_path_is(odd_inputs):
    code, _, err = ccxml("mscclang", "/dev/zero")
    assert code == 2
    assert one_line(err) == "ccxml: not a regular file: /dev/zero is a character device"


@pytest.mark.parametrize("command", [("verify",), ("simulate",), ("show", "-o", "x.html")])
def test_a_fifo_input_is_refused_at_once_not_read(tmp_path, command):
    fifo = tmp_path / "in.xml"
    os.mkfifo(fifo)
    name, *rest = command
    rest = [str(tmp_path / r) if r.endswith(".html") else r for r in rest]
    p = subprocess.run([sys.executable, "-m", "ccxml", name, str(fifo), *rest], cwd=REPO,
                       capture_output=True, text=True, timeout=120)        # no writer: a read would wait
    assert p.returncode == 2
    assert one_line(p.stderr) == f"ccxml: not a regular file: {fifo} is a FIFO (named pipe)"


def test_temp_prefix_is_what_the_docs_say():
    assert TEMP_PREFIX == ".ccxml-"
    assert ".ccxml-XXXXXXXX.tmp" in (REPO / "docs" / "output-files.md").read_text()


#: ``ccxml ARGS`` whose tune writes each file of its staging directory slowly
SLOW_TUNE = """
import sys, time
import ccxml.tuning.directory as e
real = e._write_new
def slow(path, text):
    real(path, text)
    time.sleep(1.0)
e._write_new = slow
sys.argv[0] = "ccxml"
from ccxml.cli.app import run
run()
"""


@pytest.mark.parametrize("existing", [False, True])
def test_sigterm_mid_tune_leaves_the_directory_as_it_was_and_nothing_beside_it(tmp_path, existing):
    out = tmp_path / "algos"
    if existing:
        code, _, err = ccxml(*TUNE, "-o", out)
        assert code == 0, err
    before = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    p = subprocess.Popen([sys.executable, "-c", SLOW_TUNE, *TUNE, "-a", "ring,rhd", "-o", str(out)],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: any(n.startswith(".algos.ccxml-new-") for n in os.listdir(tmp_path))
                 or p.poll() is not None, 120, "the staging directory")
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGTERM
    assert one_line(err) == "ccxml: SIGTERM while writing: stopped, no partial file left"
    assert {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()} == before
    assert sorted(os.listdir(tmp_path)) == (["algos", "algos.manifest.json"] if existing else [])


def test_run_of_a_file_with_a_gpu_id_twice_names_the_file(tmp_path):
    from mpirun import ccxml_run
    src = tmp_path / "ring.xml"
    code, _, err = ccxml("generate", "ring", "--ranks", "2", "-q", "-o", src)
    assert code == 0, err
    dup = tmp_path / "dup.xml"
    dup.write_text(src.read_text().replace('<gpu id="1"', '<gpu id="0"'))
    r = ccxml_run(2, dup, "--bytes", "1K", timeout=120)
    assert r.code == 2
    assert one_line(r.err) == f"ccxml: {dup}: a gpu id appears twice"


def test_run_says_what_its_inputs_are(tmp_path):
    """`ccxml run` (outside mpiexec: one process) names a device or a FIFO, given as the schedule
    or as --counts, instead of reading it (a FIFO with no writer would wait forever)."""
    fifo = tmp_path / "in.xml"
    os.mkfifo(fifo)
    xml = tmp_path / "ring.xml"
    code, _, err = ccxml(*RING4, "-o", xml)
    assert code == 0, err
    cases = [([str(fifo)], f"ccxml: not a regular file: {fifo} is a FIFO (named pipe)"),
             (["/dev/zero"], "ccxml: not a regular file: /dev/zero is a character device"),
             ([str(xml), "--counts", str(fifo)], f"--counts: not a regular file: {fifo} is a FIFO")]
    for args, said in cases:
        p = subprocess.run([sys.executable, "-m", "ccxml", "run", *args], cwd=REPO, capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert p.returncode == 2, (args, p.stderr)
        line = one_line(p.stderr)
        assert line.startswith("ccxml: ") and said in line, (args, p.stderr)


def test_verify_of_a_regular_file_reads_back_the_bytes_written(tmp_path, monkeypatch):
    """generate --verify -o FILE keeps no copy of the text (254 MB for the 1024-rank ring, issue
    27): it verifies the file it has just renamed into place, mapped."""
    import ccxml.loader.reader as reader
    want = ring4_text(tmp_path)
    read: list[tuple[str, bytes]] = []
    real = reader.load

    def load(path, **kw):
        with open(path, "rb") as f:
            read.append((os.fspath(path), f.read()))
        return real(path, **kw)
    monkeypatch.setattr(reader, "load", load)
    where = tmp_path / "new" / "ring.xml"
    code, out, err = ccxml(*RING4, "-o", where, "--verify")
    assert code == 0, err
    assert "PASS" in out
    assert read == [(str(where), want.encode())]
    assert where.read_text() == want
    no_temporaries(where.parent)
