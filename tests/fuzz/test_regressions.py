"""The named cases of issue 24 (hostile and careless input), one test each: the stated exit
code, one line, no traceback, within 10 s; those whose file declares sizes run in a subprocess
limited to 600 MB of address space (tests/helpers/fuzzing.py: run_limited). The limits
themselves are in ccxml/vocab/limits.py and docs/limits.md."""
from __future__ import annotations

import pytest
from fuzzing import MEMORY_LIMIT, TIME_LIMIT, check, run_limited, run_limited_many, seed
from in_process import ccxml

# ---- sizes a file declares ---------------------------------------------------------------

RING = seed("ring4_allreduce.xml").decode()


def _declared(tmp_path, old: str, new: str, count: int = 1):
    assert old in RING
    p = tmp_path / "declared.xml"
    p.write_text(RING.replace(old, new, count))
    return p


def _one_line_refusal(code, out, err, secs, want_code, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == want_code, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("ccxml: ") and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    assert secs <= TIME_LIMIT, f"{secs:.1f} s"


DECLARED = {
    "cnt=2147483647": ('cnt="1"', 'cnt="2147483647"', "cnt"),
    "cnt=50000000": ('cnt="1"', 'cnt="50000000"', "cnt"),
    "nchunksperloop=2000000000": ('nchunksperloop="4"', 'nchunksperloop="2000000000"', "nchunksperloop"),
    "ngpus=2147483647": ('ngpus="4"', 'ngpus="2147483647"', "ngpus"),
    "i_chunks=2147483647": ('i_chunks="4"', 'i_chunks="2147483647"', "i_chunks"),
    "s_chunks=30000 on every GPU": ('s_chunks="0"', 's_chunks="30000"', None),
}


DECLARED_COMMANDS = ["verify", "simulate", "show"]


@pytest.fixture(scope="module")
def declared_results(tmp_path_factory):
    """Every (case, command) of DECLARED in one subprocess under the 600 MB limit."""
    tmp = tmp_path_factory.mktemp("declared")
    cases, keys = [], []
    for i, (case, (old, new, _)) in enumerate(DECLARED.items()):
        p = tmp / f"case{i}.xml"
        assert old in RING
        p.write_text(RING.replace(old, new, -1 if case.startswith("s_chunks") else 1))
        for command in DECLARED_COMMANDS:
            extra = ["-o", tmp / f"out{i}.svg"] if command == "show" else []
            cases.append([command, p, *extra])
            keys.append((case, command))
    return dict(zip(keys, run_limited_many(cases)))


@pytest.mark.parametrize("command", DECLARED_COMMANDS)
@pytest.mark.parametrize("case", list(DECLARED))
def test_declared_sizes_are_checked_before_any_allocation(declared_results, case, command):
    code, out, err, secs = declared_results[(case, command)]
    word = DECLARED[case][2]
    if word is None:         # within the limits: answered in bounded time and memory
        assert code in (0, 1, 2) and "Traceback" not in err and secs <= TIME_LIMIT, err
        return
    _one_line_refusal(code, out, err, secs, 2, word)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(DECLARED))
def test_declared_sizes_in_a_process_of_their_own(tmp_path, case):
    """The same as a user runs it: ``python -m ccxml verify`` (its own process settings)."""
    old, new, word = DECLARED[case]
    p = _declared(tmp_path, old, new, -1 if case.startswith("s_chunks") else 1)
    code, out, err, secs = run_limited("verify", p)
    if word is None:
        assert code in (0, 1, 2) and "Traceback" not in err, err
    else:
        _one_line_refusal(code, out, err, secs, 2, word)


def test_ngpus_of_ccxml_limit_with_few_gpus_is_answered_quickly(tmp_path):
    """8192 ranks declared, 4 defined: the largest ngpus ccxml takes, still bounded."""
    p = _declared(tmp_path, 'ngpus="4"', 'ngpus="8192"')
    code, out, err = check("verify", p)
    assert code == 1 and "gpu-missing" in out, (out, err)


def test_sweep_with_a_factor_near_one_is_refused(tmp_path):
    p = tmp_path / "r.xml"
    p.write_text(RING)
    code, out, err = check("simulate", p, "-b", "1K", "-e", "1M", "-f", "1.0000001")
    assert code == 2 and "factor" in err
    code, out, err = ccxml("simulate", p, "-b", "1", "-e", "1T", "-f", "1.01")
    assert code == 2 and "sizes (limit 256)" in err, err


def test_the_memory_limit_is_what_the_subprocess_gets():
    assert MEMORY_LIMIT == 600 << 20


# ---- topology inputs -----------------------------------------------------------------------

NDV4 = """<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="WIDTH">
{gpus}    </pci>
  </cpu>
</system>
"""


def _gpus(n: int) -> str:
    return "".join(f'      <pci busid="{i >> 8:04x}:{i & 255:02x}:00.0" class="0x030200" '
                   f'link_speed="16 GT/s" link_width="16"/>\n' for i in range(n))


def test_negative_link_width_is_a_note_not_a_traceback(tmp_path):
    p = tmp_path / "t.xml"
    p.write_text(NDV4.replace("WIDTH", "-16").format(gpus=_gpus(2)))
    code, out, err = check("topology", "show", "--topology", p, "--gpu", "h100")
    assert code == 0 and "link_width -16 is not a lane count; taken as 16" in out


NETWORK = ('[network]\nname = "x"\ngpus = GPUS\ngamma = 1e-12\n[[network.devices]]\nname = "sw"\n'
           'kind = "nvswitch"\n[[network.links]]\na = "gpu{g}"\nb = "sw"\nkind = "nvlink"\n'
           'bandwidth = 1e9\nlatency = 1e-6\n')

TOPOLOGY_FILES = {
    "self link.toml": (NETWORK.replace("GPUS", "2") + '[[network.links]]\na = "gpu0"\nb = "gpu0"\n'
                       'kind = "nvlink"\nbandwidth = 1e9\nlatency = 1e-6\n', "joins a device to itself"),
    "10k GPUs.toml": (NETWORK.replace("GPUS", "10000"), "over the limit"),
    "deep.json": ("[" * 100_000 + "]" * 100_000, "nested 100000 deep"),
    "deep.toml": ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested 100000 deep"),
    "5000 digits.json": ('{"ranks": ' + "9" * 5000 + "}", "5000 digits"),
    "5000 digits.toml": ("ranks = " + "9" * 5000 + "\n", "5000 digits"),
    "groups of a billion.json": ('{"groups": [1000000000, 1000000000]}', "over the limit"),
    "a billion groups.toml": ('groups = "1000000000x1000000000"\n', "over the limit"),
    "a million nodes.toml": ('preset = "dgx-h100"\nnodes = 1000000\n', "over the limits"),
}


@pytest.fixture(scope="module")
def topology_results(tmp_path_factory):
    """Every file of TOPOLOGY_FILES, the 10k-GPU NCCL XML and /dev/zero (as such and as a
    .xml) through ``topology show``, in one subprocess under the 600 MB limit."""
    tmp = tmp_path_factory.mktemp("topologies")
    cases = {}
    for name, (text, _) in TOPOLOGY_FILES.items():
        p = tmp / name.replace(" ", "_")
        p.write_text(text)
        cases[name] = ["topology", "show", "--topology", p]
    big = tmp / "10k.xml"
    big.write_text(NDV4.replace("WIDTH", "16").format(gpus=_gpus(10_000)))
    cases["10k GPUs.xml"] = ["topology", "show", "--topology", big, "--gpu", "h100"]
    zero = tmp / "zero.xml"
    zero.symlink_to("/dev/zero")
    cases["/dev/zero"] = ["topology", "show", "--topology", "/dev/zero"]
    cases["/dev/zero as xml"] = ["topology", "show", "--topology", zero]
    return dict(zip(cases, run_limited_many(list(cases.values()))))


@pytest.mark.parametrize("name", list(TOPOLOGY_FILES))
def test_hostile_topology_files_are_one_line(topology_results, name):
    _one_line_refusal(*topology_results[name], 2, TOPOLOGY_FILES[name][1])


def test_ten_thousand_gpus_in_an_nccl_xml_are_refused(topology_results):
    _one_line_refusal(*topology_results["10k GPUs.xml"], 2, "more than 128 GPUs")


@pytest.mark.parametrize("name", ["/dev/zero", "/dev/zero as xml"])
def test_dev_zero_as_a_topology_is_read_with_a_cap(topology_results, name):
    _one_line_refusal(*topology_results[name], 2, "larger than 4194304 bytes")


# ---- commands that answer when they should refuse ------------------------------------------

def _wrong_offset(tmp_path):
    p = tmp_path / "wrong.xml"
    old = 'type="s" srcbuf="i" srcoff="3" dstbuf="o" dstoff="3"'
    assert old in RING
    p.write_text(RING.replace(old, 'type="s" srcbuf="i" srcoff="2" dstbuf="o" dstoff="3"', 1))
    return p


@pytest.mark.parametrize("command", ["simulate", "show"])
def test_a_schedule_verify_rejects_is_refused_unless_unverified(tmp_path, command):
    p = _wrong_offset(tmp_path)
    code, out, _ = ccxml("verify", p)
    assert code == 1 and out.startswith("FAIL")
    extra = ["-o", tmp_path / "out.svg"] if command == "show" else []
    code, out, err = check(command, p, *extra)
    assert code == 1 and "fails verification: wrong-contribution" in err and "--unverified" in err
    code, out, err = check(command, p, *extra, "--unverified")
    assert code == 0 and "not verified (--unverified)" in out + err


def test_a_free_cost_model_is_an_error_not_a_division_by_zero():
    code, out, err = check("select", "--ranks", "4", "--coll", "allreduce", "--bytes", "1M",
                           "--alpha", "0", "--beta", "0", "--gamma", "0")
    assert code == 2 and "alpha = beta = 0" in err
    code, out, err = check("simulate", "ring", "--ranks", "4", "--coll", "allreduce",
                           "--alpha", "0", "--beta", "0", "--gamma", "0")
    assert code == 2 and "alpha = beta = 0" in err


def test_select_ranks_only_verified_schedules_with_a_time(monkeypatch):
    """A plugin's schedule that fails verification (here: every schedule named 'star' is made
    to fail) is listed as unavailable, never ranked; a 0-second result is never first."""
    import ccxml.driver.source as source
    from ccxml.driver import rank_algorithms
    real = source.verification_failure
    monkeypatch.setattr(source, "verification_failure",
                        lambda s, target="exec": "wrong-contribution: planted" if s.name.startswith("star")
                        else real(s, target))
    ranked, skipped, _, _ = rank_algorithms("broadcast", 4, 1 << 20, _flat(), jobs=1)
    assert ranked and all(not name.startswith("star") for name, _ in ranked)
    assert any(name.startswith("star") and "fails verification" in why for name, why in skipped)
    assert all(r.time_s > 0 for _, r in ranked[:1])


def _flat():
    from ccxml.topology.model import Topology
    return Topology.flat(1e-6, 1e-11, 1e-12)


def test_alltoallv_without_counts_is_not_a_pass(tmp_path):
    p = tmp_path / "a2av.xml"
    p.write_bytes(seed("pairwise3_alltoallv.xml"))
    code, out, err = check("verify", p)
    assert code == 0 and out.startswith("CHECKED") and "PASS" not in out and "--counts" in out
    code, out, err = check("verify", "--strict", p)
    assert code == 1 and out.startswith("FAIL") and "no-postcondition" in out
    c = tmp_path / "c.csv"
    c.write_bytes(seed("counts3.csv"))
    code, out, err = check("verify", p, "--counts", c)
    assert code == 0 and out.startswith("PASS")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_run_timeout_must_be_a_finite_positive_number(tmp_path, value):
    p = tmp_path / "r.xml"
    p.write_text(RING)
    code, out, err = check("run", p, "--timeout", value)
    assert code == 2 and "--timeout" in err


@pytest.mark.parametrize("command", ["run", "simulate"])
def test_an_absurd_size_is_one_line(tmp_path, command):
    p = tmp_path / "r.xml"
    p.write_text(RING)
    code, out, err = check(command, p, "--bytes", "99999999999999999999999999")
    assert code == 2 and "over the limit" in err


COUNTS = {"2147483647": b"0,2147483647,1\n1,0,1\n1,1,0\n", "negative": b"0,-1,1\n1,0,1\n1,1,0\n",
          "non-UTF-8": b"0,1,1\n\xff\xfe,0,1\n1,1,0\n", "5000 digits": b"0," + b"9" * 5000 + b",1\n1,0,1\n1,1,0\n"}


@pytest.mark.parametrize("case", list(COUNTS))
def test_bad_counts_are_one_line(tmp_path, case):
    p = tmp_path / "a2av.xml"
    p.write_bytes(seed("pairwise3_alltoallv.xml"))
    c = tmp_path / "c.csv"
    c.write_bytes(COUNTS[case])
    code, out, err = check("verify", p, "--counts", c)
    assert code == 2 and err.startswith("ccxml: --counts"), err
    from ccxml.cli.run import _load
    with pytest.raises(ValueError) as e:
        _load(str(p), 3, 32767, None, None, str(c))
    assert "\n" not in str(e.value) and "counts" in str(e.value)


def test_run_estimates_memory_before_allocating(tmp_path):
    """Under mpiexec: a size whose buffers cannot fit in MemAvailable is refused in one line
    before any buffer is made (ccxml.cli.run.memory_estimate)."""
    from mpirun import ccxml_run
    p = tmp_path / "r.xml"
    p.write_text(RING)
    res = ccxml_run(4, p, "--bytes", "1T", "--iters", "1", "--warmup", "0", timeout=120)
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    assert res.code == 2 and len(lines) == 1 and "MiB are available" in lines[0], res.err


def test_memory_estimate_follows_the_measured_rule():
    """8x the message size for an allreduce without --check (measured 6.0x), 10x with it
    (measured 9.0x), plus the 64 MB a rank takes at 1K."""
    from types import SimpleNamespace

    import numpy as np

    from ccxml.cli.run import MEMORY_BASE, memory_estimate
    from ccxml.vocab.collectives import Collective
    from ccxml.vocab.wire import Coll
    c = Collective(Coll.ALLREDUCE, 2, 2)
    session = SimpleNamespace(collective=c, dtype=np.dtype("float32"), rank=0,
                              plan=SimpleNamespace(nchunks=4))
    n = 64 << 20
    assert memory_estimate(session, n, False) == 8 * n + MEMORY_BASE
    assert memory_estimate(session, n, True) == 10 * n + MEMORY_BASE


def test_tune_sweep_factor_near_one_is_one_line_before_any_work(tmp_path):
    code, out, err = check("tune", "--ranks", "4", "--factor", "1.0000001", "-o", tmp_path / "d")
    assert code == 2 and "factor" in err and not (tmp_path / "d").exists()
