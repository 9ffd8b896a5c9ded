"""The fast paths (loader step table, table_clean, table lowering, level prover) give the exact
same report as the exact path: same findings, same statistics, on valid schedules and on
single-point mutants of them (written back as canonical XML, so the fast paths see them)."""
from __future__ import annotations

import random

import pytest

import ccxml.interpreter as interp
from ccxml.algorithms import ring
from ccxml.loader import reader as xmlload
from ccxml.loader import rules as loadcheck
from ccxml.vocab.wire import Coll

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


def report_key(rep):
    stats = {k: v for k, v in rep.stats.items() if k not in ("load_s", "time_s", "steps_per_s")}
    return ([(f.code, f.message, f.gpu, f.tb, f.step, f.line, f.severity) for f in rep.findings],
            stats, rep.n_loader)


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
        fast = interp.verify(xmlload.loads(text), target=target, **kw)
    with monkeypatch.context() as m:
        m.setattr(interp, "_verify_table", lambda *a: None)
        m.setattr(interp, "prove", lambda prog: None)
        m.setattr(loadcheck, "table_clean", lambda *a: False)
        exact = interp.verify(xmlload.loads(text), target=target, **kw)
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
        mut = xmlload.loads(text)
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
    base = xmlload.loads(gen(p).to_xml(target))
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
    s = xmlload.loads(text)
    assert any(st.depid >= 0 for g in s.gpus for tb in g.tbs for st in tb.steps)
    fast, exact, used = both(text, "legacy", monkeypatch)
    assert used and fast == exact
