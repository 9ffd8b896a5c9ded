"""Helpers of the fuzzing suite (tests/fuzz): corrupting real inputs with hypothesis, and the
properties every command must keep on them.

Properties (issue 24): the exit code is 0, 1 or 2; a refusal (1 or 2) is one line on stderr and
no traceback (in-process, an exception escaping the command fails the test with its
traceback); every call ends within :data:`TIME_LIMIT` seconds; where a file declares sizes,
memory stays under :data:`MEMORY_LIMIT` (:func:`run_limited`: a subprocess under
``RLIMIT_AS``).
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from in_process import ccxml

SEEDS = Path(__file__).resolve().parent.parent / "fuzz" / "seeds"
REPO = Path(__file__).resolve().parent.parent.parent
#: the real NCCL topology files, as tests/conftest.py finds them (seeds when present)
TOPOLOGIES = Path(os.environ.get("CCXML_TOPOLOGIES") or next(
    (p / "shared" / "topologies" for p in REPO.parents if (p / "shared" / "topologies").is_dir()),
    REPO.parent / "shared" / "topologies"))
TIME_LIMIT = 10.0
MEMORY_LIMIT = 600 << 20

#: attribute values an attacker or a careless tool writes (issue 24's list and their kin)
HOSTILE_VALUES = ["-7", "nan", "1e9", "2147483648", "2147483647", "-2147483649", "", "0x10",
                  "010", "99999999999999999999", "inf", "-1", "0", "1.5", "\u00e9", "&x;",
                  "<", "\"", "32768", "72", "5000000"]
#: markup injected at a random place
INJECTED = [b"<step/>", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"<![CDATA[x]]>", b"</tb>", b"<gpu>",
            b"\t", b"\x00", b"<?xml version='1.0'?>", b"<!--", b"&lol;", b"<tb id=\"0\">"]


def short():
    """The default suite's settings: few examples (tests/fuzz/conftest.py)."""
    return settings.get_profile(os.environ.get("CCXML_FUZZ_PROFILE", "fuzz-short"))


def long():
    """The slow suite's settings: many examples."""
    return settings.get_profile("fuzz-long")


def seed(name: str) -> bytes:
    return (SEEDS / name).read_bytes()


@st.composite
def corrupted(draw, data: bytes, values=HOSTILE_VALUES, injected=INJECTED) -> bytes:
    """``data`` with one to three corruptions: truncation, a byte flipped, an attribute value
    replaced by a hostile one, markup injected, a line duplicated or removed."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "value", "inject", "dup", "drop"]))
        n = len(out)
        if n == 0:
            break
        if kind == "truncate":
            del out[draw(st.integers(0, n - 1)):]
        elif kind == "flip":
            i = draw(st.integers(0, n - 1))
            out[i] = draw(st.integers(0, 255))
        elif kind == "value":
            quotes = [i for i in range(n) if out[i] == 34]
            if len(quotes) >= 2:
                k = draw(st.integers(0, len(quotes) // 2 - 1)) * 2
                a, b = quotes[k], quotes[k + 1]
                out[a + 1:b] = draw(st.sampled_from(values)).encode("utf-8")
        elif kind == "inject":
            i = draw(st.integers(0, n))
            out[i:i] = draw(st.sampled_from(injected))
        else:
            lines = bytes(out).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            if kind == "dup":
                lines.insert(i, lines[i])
            else:
                del lines[i]
            out = bytearray(b"\n".join(lines))
    return bytes(out)


def check(*args) -> tuple[int, str, str]:
    """``ccxml ARGS`` in-process with the properties asserted; (code, stdout, stderr)."""
    t0 = time.perf_counter()
    code, out, err = ccxml(*args)
    took = time.perf_counter() - t0
    assert code in (0, 1, 2), (args, code, err)
    assert "Traceback" not in err, (args, err)
    if code != 0:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        # a verdict on stdout (verify's FAIL line) or one line on stderr
        assert len(lines) <= 1, (args, err)
        assert lines or out.strip(), (args, "refused without saying why")
    assert took <= TIME_LIMIT, (args, f"{took:.1f} s")
    return code, out, err


def _limit_memory():     # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_limited(*args, timeout: float = TIME_LIMIT) -> tuple[int, str, str, float]:
    """``python -m ccxml ARGS`` in a subprocess limited to MEMORY_LIMIT of address space;
    (code, stdout, stderr, seconds). The process-wide settings of ``ccxml.cli.app.main`` apply,
    as for a user. A run over ``timeout`` seconds fails."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ccxml", *map(str, args)], capture_output=True,
                       text=True, errors="replace", preexec_fn=_limit_memory, env=env, cwd=REPO,
                       timeout=timeout + 20)
    return r.returncode, r.stdout, r.stderr, time.perf_counter() - t0


_BATCH = r"""
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from click.testing import CliRunner
from ccxml.cli.app import cli
out = []
for args in json.loads(sys.stdin.read()):
    t0 = time.perf_counter()
    try:
        r = CliRunner().invoke(cli, args, prog_name="ccxml", catch_exceptions=False)
        res = [r.exit_code, r.stdout, r.stderr]
    except BaseException as e:          # reported as a traceback: the test fails on it
        import traceback
        res = [99, "", "Traceback: " + "".join(traceback.format_exception(e))[-2000:]]
    out.append(res + [time.perf_counter() - t0])
print(json.dumps(out))
"""


def run_limited_many(cases: list[list]) -> list[tuple[int, str, str, float]]:
    """Each ``ccxml ARGS`` of ``cases`` in-process in ONE subprocess limited to MEMORY_LIMIT of
    address space (one interpreter start-up for many cases); per case (code, stdout, stderr,
    seconds). A case that raises comes back as code 99 with its traceback."""
    import json
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", _BATCH, str(MEMORY_LIMIT)], capture_output=True,
                       text=True, input=json.dumps([[str(a) for a in c] for c in cases]), env=env,
                       cwd=REPO, timeout=60 + TIME_LIMIT * len(cases))
    assert r.returncode == 0, r.stderr[-3000:]
    return [tuple(x) for x in json.loads(r.stdout)]
