"""Every fast path has an exact twin, and they agree.

That is the project's rule for speed work: the fast part lives behind a small named part, the
plain version it replaces stays beside it, and one test checks that both give the same answer.
This module is that test, for every pair in the tree, on one shared set of inputs:

=============  ==========================================  ==========================================
stage          fast part                                   exact twin
=============  ==========================================  ==========================================
loader         ``loads``: numpy step table (loader/scan),  ``loads(fast=False)``: ExactReader
               FastReader (loader/fast)                    (loader/exact), tag by tag
loader rules   FastChecker (column proofs per TB) and      ExactChecker (loader/rules_exact), step
               table_clean (loader/rules_fast)             by step
interpreter    lower_table/place_table (interpreter/       lower/place (interpreter/program),
               table), prove (interpreter/levels)          run/replay (interpreter/execute)
               lower_plain: plain TBs in bulk              lower: step by step (lower_tb)
               (interpreter/plain)
simulator      FlowNetwork: component refill with a heap   FlowNetwork(exact_twin=True):
               (simulator/flows)                           maxmin_rates over every flow
passes         compiled (Cython) modules                   the same modules as Python (CCXML_PURE=1)
compiler       ring AllReduce lowered in bulk: a lane per  the object path: Chunk API → IR → passes
               instance, each pass run once (ccxml/bulk)   → writer (tests/bulk/test_ring.py)
=============  ==========================================  ==========================================

What "agree" means: the loader builds equal models (every attribute, step column and line
number, lexical issue, missing attribute, skipped element) or fails with the same one-line error;
the checkers give the same findings in the same order for every target, and ``table_clean`` says
"clean" only where the exact checker finds nothing; ``verify`` gives the same report (findings and
statistics) with ``fast=False``, which runs every exact twin alone; flow end times agree to
rounding. The passes' pair is compared on whole outputs, one MD5 per generated file compiled and
pure, by tests/native/test_native.py::test_compiled_and_pure_python_write_identical_files (not
repeated here); the bulk lowering's pair on whole files too, here on ring AllReduce at the shared
p = 5 and, over ranks, channels, protocols and windows, in tests/bulk/test_ring.py.

Shared inputs: the real corpus (conftest.CORPUS, skipped when absent), ccxml's own files (every
flat algorithm × collective at p = 5 for each target) and hostile ones: lines off the canonical
form, step bodies no TB reads, broken and binary files, a 24 MB line, and fixed mutants of the
generated files. The interpreter's pair also gets valid schedules and single-point mutants written
back canonically, so that its fast path takes them.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Callable

import pytest
from conftest import CORPUS
from flow_runs import drive, random_flows
from handbuilt import algo, inplace_ring_allgather, tbs

import ccxml.interpreter as interp
from ccxml.algorithms import get, ring
from ccxml.driver import algorithm_schedule, generate_text
from ccxml.interpreter.plain import lower_plain
from ccxml.interpreter.program import lower
from ccxml.loader.reader import loads
from ccxml.loader.rules_exact import ExactChecker
from ccxml.loader.rules_fast import FastChecker, runtime_clean, safety_clean, table_clean
from ccxml.simulator import simulate_schedule
from ccxml.simulator.flows import FlowNetwork
from ccxml.topology import load_preset
from ccxml.vocab.errors import LoadError, NotExecutable
from ccxml.vocab.wire import Coll

TARGETS = ("exec", "rccl", "legacy")
FLAT = ("ring", "mesh", "rhd", "pairwise", "star", "nhr", "nb")


# ---- the shared inputs ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Input:
    """One input file: ``make()`` gives its text (or bytes); ``target`` is the runtime it is
    verified for; ``canonical``: written by ccxml, so the loader's table must take all of it."""
    name: str
    make: Callable[[], str | bytes]
    target: str = "exec"
    canonical: bool = False


BASE = inplace_ring_allgather()

#: (old, new) on one step line of BASE: each takes the line off the canonical form, or to a
#: canonical corner (long numbers, deep indentation) the numpy scan must read itself
ODD_STEP_LINES = [
    ('type="r"', 'tyqe="r"'),            # attribute name typo: not a step attribute
    ('cnt="1"', 'cnt="01"'),             # leading zero: strtol reads octal
    ('srcoff="2"', 'srcoff="-0"'),       # plain but unusual
    ('srcoff="2"', 'srcoff="123456789"'),  # 9 digits
    ('srcoff="2"', 'srcoff="1234567"'),  # 7 and 8 digits: the closing quote is a word further on
    ('srcoff="2"', 'srcoff="12345678"'),
    ('srcoff="2"', 'srcoff="-12345678"'),
    ('srcoff="2"', 'srcoff="-1234567"'),
    ('srcoff="2"', 'srcoff="1234"'),     # 1 to 4 digits: 32-bit decoding
    ('srcoff="2"', 'srcoff="0123"'),
    ('srcoff="2"', 'srcoff="12a4"'),
    ('srcoff="2"', 'srcoff=""'),
    ('type="r"', 'type=""'),
    ('srcbuf="o"', 'srcbuf="oo"'),
    ('srcbuf="o"', 'srcbuf=""'),
    ('<step s="1"', '          <step s="1"'),   # 16 spaces of indentation
    ('<step s="1"', '           <step s="1"'),  # 17
    ('type="r"', 'type="rx"'),           # unknown step type
    ('srcbuf="o"', 'srcbuf="x"'),        # unknown buffer
    ('hasdep="0"/>', 'hasdep="0" />'),   # space before />
    ('" dstbuf', '"  dstbuf'),           # two spaces between attributes
    ('hasdep="0"/>', 'hasdep="0"/>\r'),  # CRLF line end
    ('<step s="1"', '\t<step s="1"'),    # tab in the indentation
    ('depid="-1"', "depid='-1'"),        # single quotes
    ('cnt="1"', 'cnt="&#49;"'),          # entity reference stays literal
]


def _odd_line(old: str, new: str) -> str:
    lines = BASE.splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if '<step s="1" type="r"' in ln and 'srcoff="2"' in ln)
    assert old in lines[k]
    lines[k] = lines[k].replace(old, new, 1)
    return "".join(lines)


def _tb_block(indent="    ") -> str:
    body = "".join(f'\n{indent}  <step s="{i}" type="s" srcbuf="o" srcoff="{i}" dstbuf="o" dstoff="{i}" '
                   f'cnt="1" depid="-1" deps="-1" hasdep="0"/>' for i in range(3))
    return f'{indent}<tb id="7" send="1" recv="2" chan="0">{body}\n{indent}</tb>\n'


def _unread_body(where: str) -> str:
    """BASE with a canonical TB body where no TB reads it: in a comment, under <algo>, or inside
    another <tb>."""
    lines = BASE.splitlines(keepends=True)
    if where == "comment":
        extra, k = "  <!-- an old TB:\n" + _tb_block() + "  -->\n", 1
    elif where == "under-algo":
        extra, k = _tb_block("  "), 1
    else:
        k = next(i for i, ln in enumerate(lines) if "<tb " in ln) + 1
        extra = _tb_block("      ")
    return "".join(lines[:k]) + extra + "".join(lines[k:])


def _bad_close_after_many_bodies() -> str:
    """<gpu> closed with </tb> after many table-read TB bodies: the error's line must count the
    lines the fast reader cut out."""
    text = ring.allreduce(5).to_xml("exec")
    return text[:text.rindex("  </gpu>")] + "  </tb>\n"


def _re_chains() -> str:
    """One local TB, otherwise clean, with a fused re chain one step too long (17) and one whose
    steps differ in cnt."""
    steps = [("re", "i", k, "o", 0, 1, -1, -1, 0) for k in range(17)]
    steps += [("re", "i", 0, "o", 1, 1, -1, -1, 0), ("re", "i", 1, "o", 1, 2, -1, -1, 0)]
    return algo("allreduce", 1, 18, {0: (18, 18, 0, [tbs(0, -1, -1, 0, *steps)])})


def _giant_quote_line() -> str:
    head = BASE.split("\n", 1)
    return head[0] + "\n" + "  <!-- " + '"' * (24 << 20) + " -->" + "\n" + head[1]


#: one-line edits of a step line that move it off the canonical form or break a rule
MUTATIONS = [
    ("cnt", lambda ln: ln.replace('cnt="1"', 'cnt="2"', 1)),
    ("octal", lambda ln: ln.replace('cnt="1"', 'cnt="01"', 1)),
    ("hex", lambda ln: ln.replace('s="', 's="0x', 1)),
    ("attr", lambda ln: ln.replace("/>", ' algostep="1"/>', 1)),
    ("tab", lambda ln: "\t" + ln),
    ("quote", lambda ln: ln.replace('depid="-1"', "depid='-1'", 1)),
    ("type", lambda ln: ln.replace('type="s"', 'type="rrs"', 1).replace('type="r"', 'type="cpy"', 1)),
    ("hasdep", lambda ln: ln.replace('hasdep="0"', 'hasdep="1"', 1) if 'hasdep="0"' in ln
     else ln.replace('hasdep="1"', 'hasdep="0"', 1)),
    ("offset", lambda ln: ln.replace('srcoff="', 'srcoff="1', 1)),
    ("buffer", lambda ln: ln.replace('srcbuf="', 'srcbuf="x', 1)),
    ("crlf", lambda ln: ln + "\r"),
    ("long", lambda ln: ln.replace('dstoff="', 'dstoff="1234567', 1)),
    ("negative", lambda ln: ln.replace('srcoff="', 'srcoff="-', 1)),
    ("indent", lambda ln: "                  " + ln.lstrip()),
    ("dep", lambda ln: ln.replace('depid="-1" deps="-1"', 'depid="0" deps="0"', 1)),
    ("drop", lambda ln: ""),
    ("hasdep-2", lambda ln: ln.replace('hasdep="0"', 'hasdep="2"', 1)),
    ("cnt-72", lambda ln: ln.replace('cnt="1"', 'cnt="72"', 1)),
    ("cnt-0", lambda ln: ln.replace('cnt="1"', 'cnt="0"', 1)),
    ("s-negative", lambda ln: ln.replace('<step s="', '<step s="-1', 1)),
    ("nop", lambda ln: ln.replace(' type="', ' type="nop" t="', 1)),
    ("re", lambda ln: ln.replace(' type="', ' type="re" t="', 1)),
    ("far-offset", lambda ln: ln.replace('dstoff="', 'dstoff="99', 1)),
]


def _mutant(text: str, seed: int, kind: int) -> str:
    name, edit = MUTATIONS[kind]
    lines = text.split("\n")
    steps = [i for i, ln in enumerate(lines) if "<step " in ln]
    rnd = random.Random(seed)
    for i in rnd.sample(steps, min(len(steps), rnd.choice([1, 3]))):
        lines[i] = edit(lines[i])
    return "\n".join(ln for ln in lines if ln != "" or name != "drop")


@functools.cache
def generated() -> dict[tuple, str]:
    """ccxml's own files: (algorithm, collective, target) -> XML, every flat algorithm × collective
    it supports × target at p = 5 (the ones the generator accepts)."""
    out = {}
    for alg in FLAT:
        for coll in get(alg).collectives:
            for target in TARGETS:
                try:
                    out[alg, coll.value, target] = generate_text(alg, coll.value, 5, target=target)[0]
                except ValueError:
                    continue
    return out


def _inputs() -> list:
    cases = []
    if (CORPUS / "INDEX.md").is_file():
        for path in sorted(CORPUS.glob("*/*.xml")):
            name = str(path.relative_to(CORPUS))
            cases.append(Input(f"corpus/{name}", path.read_bytes))
    for key in generated():
        cases.append(Input("generated/{}-{}-{}".format(*key), functools.partial(lambda k: generated()[k], key),
                           target=key[2], canonical=True))
    cases.append(Input("generated/ring-allgather-40-exec-too-many-steps",
                       functools.partial(inplace_ring_allgather, 40), canonical=True))
    for n, (old, new) in enumerate(ODD_STEP_LINES):
        cases.append(Input(f"odd-line-{n}:{new.strip()[:24]}", functools.partial(_odd_line, old, new)))
    for where in ("comment", "under-algo", "under-tb"):
        cases.append(Input(f"unread-body-{where}", functools.partial(_unread_body, where)))
    broken = {
        "algostep-on-every-step": lambda: inplace_ring_allgather(step_tail=' algostep="1"'),
        "bad-close-after-many-bodies": _bad_close_after_many_bodies,
        "mismatched-close": lambda: BASE.replace("</tb>", "</gpu>", 1),
        "binary-in-a-step": lambda: BASE.encode()[:300] + b"\x01" + BASE.encode()[300:],
        "binary-at-the-end": lambda: BASE.encode() + b"\x7f",
        "empty": lambda: "",
        "no-algo": lambda: "<!-- only a comment -->\n",
        "doctype": lambda: '<!DOCTYPE algo [<!ENTITY x "y">]>\n' + BASE,
        "giant-quote-line": _giant_quote_line,
        "re-chains": _re_chains,
        **{f"truncated-{cut}": functools.partial(lambda c: BASE[:c], cut) for cut in (10, 150, 400, -20, -3)},
    }
    cases += [Input(f"broken/{name}", make) for name, make in broken.items()]
    keys = sorted(generated())
    for n, key in enumerate(keys[::2]):
        for m in range(3):
            kind = (3 * n + m) % len(MUTATIONS)
            cases.append(Input("mutant/{}-{}-{}".format(*key) + f"-{MUTATIONS[kind][0]}",
                               functools.partial(lambda k, s, i: _mutant(generated()[k], s, i), key, n, kind),
                               target=key[2]))
    return [pytest.param(c, id=c.name) for c in cases]


# ---- how a pair is compared ---------------------------------------------------------------------

def _model_key(s) -> tuple:
    return (s.attrs, s.line, s.path, s.extra, s.other_elements, s.gpus,
            [(x.line, x.message, x.fatal, x.code) for x in s.lexical], s.missing)


def load_both(data, path: str):
    """(fast model, exact model), or (None, None) when both refuse ``data`` with the same error."""
    try:
        fast = loads(data, path)
    except LoadError as e:
        with pytest.raises(LoadError) as exact:
            loads(data, path, fast=False)
        assert (str(exact.value), exact.value.line) == (str(e), e.line), "loader: fast and exact fail differently"
        return None, None
    exact = loads(data, path, fast=False)
    assert exact.step_table() is None, "the exact reader built a step table"
    f, x = _model_key(fast), _model_key(exact)
    names = ("attrs", "line", "path", "extra", "other_elements", "gpus", "lexical", "missing")
    assert [n for n, a, b in zip(names, f, x) if a != b] == [], "loader: fast and exact models differ"
    return fast, exact


def findings_key(findings) -> list:
    return [(f.code, f.message, f.gpu, f.tb, f.step, f.line, f.severity) for f in findings]


def check_rules(schedule, target: str) -> bool:
    """FastChecker == ExactChecker on ``schedule`` (runtime findings, then safety findings), and
    table_clean only where there is no finding; returns table_clean's answer."""
    fast_c, exact_c = FastChecker(target), ExactChecker(target)
    runtime = findings_key(exact_c.runtime_findings(schedule))
    safety = findings_key(exact_c.safety_findings(schedule))
    assert findings_key(fast_c.runtime_findings(schedule)) == runtime, f"rules ({target}): runtime findings differ"
    assert findings_key(fast_c.safety_findings(schedule)) == safety, f"rules ({target}): safety findings differ"
    clean = table_clean(schedule, target)
    assert not (clean and (runtime or safety)), f"rules ({target}): table_clean passed a file with findings"
    return clean


def report_key(rep) -> tuple:
    stats = {k: v for k, v in rep.stats.items() if k not in ("load_s", "time_s", "steps_per_s")}
    return findings_key(rep.findings), stats, rep.n_loader, rep.caused_by


def program_key(schedule, lowering) -> tuple | None:
    """The Program ``lowering`` makes: columns, TBs and links (None: the file is not executable)."""
    try:
        prog = lowering(schedule)
    except NotExecutable:
        return None
    cols = ("kind", "s", "line", "cnt", "calls", "op", "pub", "deps", "srcbuf", "srcoff", "dstbuf",
            "dstoff", "tb_of", "fused", "findings", "nsteps", "cap", "max_allowed", "tb_index")
    return (tuple(getattr(prog, c) for c in cols), [(tb.gpu, tb.id, tb.start, tb.end, tb.out_link, tb.in_link)
                                                   for tb in prog.tbs],
            [(ln.src, ln.dst, ln.chan, ln.senders, ln.receivers) for ln in prog.links])


# ---- loader, loader rules and interpreter on the shared inputs --------------------------------------

@pytest.mark.parametrize("source", _inputs())
def test_fast_parts_agree_with_their_exact_twins(source: Input):
    """Loader, loader rules (every target) and interpreter: each fast part against its twin."""
    data = source.make()
    fast, exact = load_both(data, source.name)
    if fast is None:
        return
    if source.canonical:
        # ccxml writes every step line the canonical way: the table must hold all of them, each
        # at its own line of the file
        assert fast.step_table() is not None
        lines = data.splitlines()
        for g in fast.gpus:
            for tb in g.tbs:
                for st in tb.read_steps():
                    assert lines[st.line - 1].lstrip().startswith(f'<step s="{st.s}" type="{st.type}"')
    for target in TARGETS:
        check_rules(fast, target)
    assert program_key(exact, lower_plain) == program_key(exact, lower), "interpreter: lower_plain != lower"
    got = interp.verify(fast, target=source.target)
    want = interp.verify(exact, target=source.target, fast=False)
    assert report_key(got) == report_key(want), "interpreter: fast and exact reports differ"


def test_the_rule_proofs_answer_for_clean_and_for_rejected_files():
    """The fast checkers are not idle: table_clean proves ccxml's ring clean, and a ring whose
    TBs exec rejects for their length (78 steps) takes the column proofs, with the exact findings."""
    s = loads(ring.allreduce(5).to_xml("exec"))
    assert check_rules(s, "exec")
    long = loads(inplace_ring_allgather(40))
    assert not check_rules(long, "exec")
    checker = FastChecker("exec")
    for g in long.gpus:
        for tb in g.tbs:
            cols = checker.columns(tb)
            assert runtime_clean(g, cols, {}) and safety_clean(g, tb, cols)
    codes = {f.code for f in checker.runtime_findings(long)}
    assert codes == {"too-many-steps"}


# ---- the interpreter's fast path on ccxml's own schedules and mutants of them ------------------------

STEP = ('      <step s="{}" type="{}" srcbuf="{}" srcoff="{}" dstbuf="{}" dstoff="{}" cnt="{}" '
        'depid="{}" deps="{}" hasdep="{}"/>')


def to_xml(schedule) -> str:
    """The schedule written back the canonical way (the form the step table reads)."""
    attrs = " ".join(f'{k}="{v}"' for k, v in schedule.attrs.items())
    out = [f"<algo {attrs}>"]
    for g in schedule.gpus:
        out.append(f'  <gpu id="{g.id}" i_chunks="{g.i_chunks}" o_chunks="{g.o_chunks}" '
                   f's_chunks="{g.s_chunks}">')
        for tb in g.tbs:
            out.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">')
            for st in tb.steps:
                out.append(STEP.format(st.s, st.type, st.srcbuf, st.srcoff, st.dstbuf, st.dstoff,
                                       st.cnt, st.depid, st.deps, st.hasdep))
            out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"


def both(text: str, target: str, monkeypatch, **kw) -> tuple:
    """(fast report key, exact report key, whether the table path answered)."""
    used = []
    real = interp._verify_table

    def spy(*a):
        r = real(*a)
        used.append(r is not None)
        return r

    with monkeypatch.context() as m:
        m.setattr(interp, "_verify_table", spy)
        fast = interp.verify(loads(text), target=target, **kw)
    exact = interp.verify(loads(text, fast=False), target=target, fast=False, **kw)
    return report_key(fast), report_key(exact), any(used)


GENERATORS = [(ring.allreduce, 5), (ring.allgather, 4), (ring.reducescatter, 6), (ring.allreduce, 9)]


@pytest.mark.parametrize("target", ["exec", "legacy"])
@pytest.mark.parametrize("gen,p", GENERATORS)
def test_valid_schedules_take_the_fast_path_with_the_exact_report(gen, p, target, monkeypatch):
    text = gen(p).to_xml(target)
    fast, exact, used = both(text, target, monkeypatch)
    assert used, "the table path should answer for ccxml's own ring"
    assert fast == exact
    assert not [f for f in fast[0] if f[-1] == "error"]


@pytest.mark.parametrize("gen,p", [(ring.allreduce, 34), (ring.allgather, 5), (ring.reducescatter, 4)])
def test_in_place_calls_take_the_fast_path_with_the_exact_report(gen, p, monkeypatch):
    """In place, input and output alias: more locations are shared between TBs (exec splits
    the 67 steps of a 34-rank allreduce into TBs of at most 64, which share chunks)."""
    fast, exact, used = both(gen(p).to_xml("exec"), "exec", monkeypatch, inplace=True)
    assert fast == exact
    assert used or [f for f in fast[0] if f[-1] == "error"]
    if p == 34:
        assert fast[1]["per_form"]["in-place"]["tracked"] > 0


def _mutants(schedule, rng, n):
    spots = [(gi, ti, si) for gi, g in enumerate(schedule.gpus) for ti, tb in enumerate(g.tbs)
             for si in range(tb.nsteps)]
    for m in range(n):
        gi, ti, si = rng.choice(spots)
        text = to_xml(schedule)
        mut = loads(text)
        tb = mut.gpus[gi].tbs[ti]
        st = tb.steps[si]
        kind = m % 6
        if kind == 0:
            del tb.steps[si]
            for k, s2 in enumerate(tb.steps):
                s2.s = k
        elif kind == 1:
            st.srcoff += rng.choice([-1, 1])
            st.dstoff = st.srcoff
        elif kind == 2:
            st.cnt += 1
        elif kind == 3 and si + 1 < tb.nsteps:
            a, b = tb.steps[si], tb.steps[si + 1]
            tb.steps[si], tb.steps[si + 1] = b, a
            a.s, b.s = b.s, a.s
        elif kind == 4:
            st.type = rng.choice(["s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy"])
        else:
            st.hasdep = 1 - st.hasdep
        yield to_xml(mut)


@pytest.mark.parametrize("coll,p,target", [(Coll.ALLREDUCE, 4, "exec"), (Coll.ALLGATHER, 5, "legacy"),
                                           (Coll.REDUCESCATTER, 4, "exec")])
def test_mutants_get_the_exact_report(coll, p, target, monkeypatch):
    gen = {Coll.ALLREDUCE: ring.allreduce, Coll.ALLGATHER: ring.allgather,
           Coll.REDUCESCATTER: ring.reducescatter}[coll]
    base = loads(gen(p).to_xml(target))
    rng = random.Random(7)
    fast_answers = 0
    for text in _mutants(base, rng, 24):
        fast, exact, used = both(text, target, monkeypatch)
        assert fast == exact
        fast_answers += used
    assert fast_answers, "some mutants (e.g. hasdep flips) still take the fast path"


def test_dependencies_between_tbs_of_one_gpu_are_proven_race_free(monkeypatch):
    """Legacy splits long TBs into dependent pieces; the prover orders them by dependencies."""
    text = ring.allreduce(130).to_xml("legacy")   # 258 steps per rank: TBs split at 256
    s = loads(text)
    assert any(st.depid >= 0 for g in s.gpus for tb in g.tbs for st in tb.steps)
    fast, exact, used = both(text, "legacy", monkeypatch)
    assert used and fast == exact


# ---- the simulator's shared links ----------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_flow_sharing_agrees_with_its_exact_twin(seed):
    caps, flows = random_flows(seed)
    ends = []
    for twin in (False, True):
        net = FlowNetwork(caps, exact_twin=twin)
        for t, links, size, tok in flows:
            net.add(t, links, size, tok)
        ends.append(drive(net))
    fast, twin = ends
    assert set(fast) == set(twin) == {f[3] for f in flows}
    for tok in fast:
        assert fast[tok] == pytest.approx(twin[tok], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("alg, coll, preset, nodes", [
    ("mesh", "allreduce", "dgx-h100", 2),
    ("pairwise", "alltoall", "pcie", 2),
    ("ring", "allgather", "mi300x", 1),
    ("rhd", "reducescatter", "ascend-910b", 2),
    ("pipeline", "allreduce", "dgx-a100", 2),
])
def test_simulations_agree_with_the_exact_twin(alg, coll, preset, nodes):
    topo = load_preset(preset, nodes)
    p = topo.nranks
    for n in (4096, 8 << 20):
        sched = algorithm_schedule(alg, coll, p, topology=topo, max_bytes=n)
        fast = simulate_schedule(sched, n, topo)
        twin = simulate_schedule(sched, n, topo, exact_twin=True)
        assert fast.model == "shared"
        assert fast.time_s == pytest.approx(twin.time_s, rel=1e-9)
        assert [r.finish_s for r in fast.ranks] == pytest.approx([r.finish_s for r in twin.ranks], rel=1e-9)


@pytest.mark.parametrize("target", ["exec", "legacy"])
def test_the_bulk_lowering_writes_the_object_paths_file(target):
    from ccxml.bulk import lower
    from ccxml.driver import generate_text
    from ccxml.vocab.wire import profile
    sched = lower("ring", "allreduce", 5, profile=profile(target))
    assert sched is not None
    assert "".join(sched.xml_parts(target)) == generate_text("ring", "allreduce", 5, target=target)[0]
