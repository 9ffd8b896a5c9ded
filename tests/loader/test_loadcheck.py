"""Loader checks per profile: runtime limits (verdicts) and schedule-safety findings."""
from __future__ import annotations

import pytest

from ccxml.loader.reader import loads
from ccxml.loader.rules import (
    ALL_CODES,
    LAUNCH_CODES,
    REJECT_CODES,
    SAFETY_CODES,
    check,
    rejects,
    runtime_findings,
    safety_findings,
    verdict,
)

STEP_KEYS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")


def step(t, srcbuf="o", srcoff=0, dstbuf="o", dstoff=0, cnt=1, depid=-1, deps=-1, hasdep=0):
    return dict(type=t, srcbuf=srcbuf, srcoff=srcoff, dstbuf=dstbuf, dstoff=dstoff, cnt=cnt,
                depid=depid, deps=deps, hasdep=hasdep)


def xml(gpus, chunks=8, **algo) -> str:
    """MSCCL XML text. ``gpus``: per GPU a list of (tb attrs dict, [step dicts]); TB ids are
    the list positions unless the attrs give ``id``; ``s`` is the position unless given."""
    a = dict(name="t", proto="Simple", nchannels=1, nchunksperloop=chunks, ngpus=len(gpus),
             coll="allreduce", inplace=0, outofplace=1, minBytes=0, maxBytes=0)
    a.update(algo)
    out = ["<algo " + " ".join(f'{k}="{v}"' for k, v in a.items() if v is not None) + ">"]
    for g, tbs in enumerate(gpus):
        out.append(f'  <gpu id="{g}" i_chunks="{chunks}" o_chunks="{chunks}" s_chunks="{chunks}">')
        for b, (tb, steps) in enumerate(tbs):
            t = dict(id=b, send=-1, recv=-1, chan=0)
            t.update(tb)
            out.append("    <tb " + " ".join(f'{k}="{v}"' for k, v in t.items()) + ">")
            for i, st in enumerate(steps):
                st = {"s": i, **st}
                out.append("      <step " + " ".join(f'{k}="{st[k]}"' for k in STEP_KEYS) + "/>")
            out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"


def pair(n_steps=1, cnt=1, chan=0, send_type="s", recv_type="r", **algo):
    """GPU 0 sends ``n_steps`` chunks to GPU 1 over channel ``chan``."""
    return loads(xml([[({"send": 1, "chan": chan}, [step(send_type, cnt=cnt)] * n_steps)],
                      [({"recv": 0, "chan": chan}, [step(recv_type, cnt=cnt)] * n_steps)]],
                     chunks=max(8, n_steps), **{"nchannels": min(max(1, chan + 1), 32), **algo}))


def codes(findings):
    return {f.code for f in findings}


def safety(s, prof="exec"):
    return codes(f for f in safety_findings(s, prof) if f.severity == "error")


def test_clean_pair_passes_everywhere():
    s = pair()
    for prof in ("exec", "rccl", "legacy"):
        assert verdict(s, prof) == "ok"
        assert check(s, prof) == []


def test_code_tables_are_disjoint_and_cover_findings():
    assert not set(REJECT_CODES) & set(SAFETY_CODES)
    assert not set(LAUNCH_CODES) & (set(REJECT_CODES) | set(SAFETY_CODES))
    s = loads(xml([[({"send": 5, "chan": 3}, [step("s", cnt=72), step("nop"), step("r")])]]))
    found = check(s, "exec")
    assert found and all(f.code in ALL_CODES for f in found)
    # runtime findings come first in check()
    kinds = [rejects(f) for f in found]
    assert kinds == sorted(kinds, reverse=True)


# -- steps per TB ---------------------------------------------------------------------------

def test_65_steps_rejected_by_exec_and_rccl_but_fine_for_legacy():
    s = pair(n_steps=65)
    assert verdict(s, "exec").startswith("reject: too-many-steps")
    assert "Max number of steps: 64, requested: 65" in verdict(s, "exec")
    assert verdict(s, "rccl").startswith("reject: too-many-steps")
    assert verdict(s, "legacy") == "ok"
    assert verdict(pair(n_steps=64), "exec") == "ok"


def test_more_steps_than_the_array_even_with_small_s():
    text = xml([[({}, [step("cpy", srcbuf="i", dstbuf="o")] * 65)]], chunks=8).replace(
        'step s="64"', 'step s="0"')
    s = loads(text)
    assert verdict(s, "exec").startswith("reject: too-many-steps")
    assert "step-index" in safety(s)


# -- thread blocks ---------------------------------------------------------------------------

def _local_tbs(n, ids=None):
    ids = list(range(n)) if ids is None else ids
    return [[({"id": i}, [step("cpy", srcbuf="i", dstbuf="o")]) for i in ids]]


def test_64_tbs_fine_65th_rejected_by_rccl_only():
    assert verdict(loads(xml(_local_tbs(64))), "rccl") == "ok"
    s = loads(xml(_local_tbs(65)))
    assert verdict(s, "rccl") == "reject: tb-id-range: rank 0: MSCCL: thread block id 64 not in " \
                                 "[0,64) (gpu 0, tb 64, line 195)"
    assert verdict(s, "exec") == "ok"
    assert verdict(s, "legacy") == "ok"
    assert verdict(loads(xml(_local_tbs(217))), "legacy").startswith("reject: tb-id-range")


def test_tb_ids_must_be_dense_and_unique():
    assert verdict(loads(xml(_local_tbs(3, [0, 2, 1]))), "exec") == "ok"
    assert verdict(loads(xml(_local_tbs(2, [0, 2]))), "exec").startswith("reject: tb-id-gap")
    assert verdict(loads(xml(_local_tbs(2, [1, 1]))), "exec").startswith("reject: tb-id-")
    assert verdict(loads(xml(_local_tbs(1, [-1]))), "exec").startswith("reject: tb-id-range")


def test_peers():
    s = loads(xml([[({"send": 0}, [step("s")])]]))
    assert verdict(s, "exec").startswith("reject: peer-is-self")
    s = loads(xml([[({"send": -2}, [])]]))
    assert verdict(s, "exec").startswith("reject: peer-invalid")
    s = loads(xml([[({"send": 7}, [step("s")])], [({}, [])]]))
    assert verdict(s, "exec") == "ok"             # exec does not check peers against ngpus
    assert verdict(s, "legacy").startswith("reject: peer-invalid")
    assert "peer-out-of-range" in safety(s)


# -- channels --------------------------------------------------------------------------------

def test_channel_limits_per_profile():
    s = pair(chan=31, nchannels=32)
    assert verdict(s, "exec") == "ok" and not safety(s)
    s = pair(chan=32, nchannels=32)
    assert verdict(s, "exec") == "ok"              # the runtime's off-by-one lets 32 through...
    assert {"chan-out-of-bounds", "chan-not-connected"} <= safety(s)   # ...and writes OOB
    assert verdict(s, "legacy").startswith("reject: chan-invalid")
    s = pair(chan=33)
    assert verdict(s, "exec").startswith("reject: chan-invalid")
    assert verdict(s, "rccl") == "ok"
    assert verdict(pair(chan=129), "rccl").startswith("reject: chan-invalid")
    assert verdict(pair(nchannels=33), "exec").startswith("reject: nchannels-too-large")
    assert verdict(pair(nchannels=33), "rccl") == "ok"


def test_local_tb_with_chan_minus_one():
    s = loads(xml([[({"chan": -1}, [step("cpy", srcbuf="i")])]]))
    assert "invalid channel -1" in verdict(s, "exec")
    assert verdict(s, "legacy") == "ok"


def test_chan_not_below_nchannels_is_unsafe():
    s = pair(chan=1)
    s.attrs["nchannels"] = "1"
    assert verdict(s, "exec") == "ok" and "chan-not-connected" in safety(s)


def test_too_many_tbs_per_channel_direction():
    tbs = [({"id": i, "send": 1}, [step("s")]) for i in range(33)]
    recv = [({"id": i, "recv": 0}, [step("r")]) for i in range(33)]
    s = loads(xml([tbs, recv]))
    assert verdict(s, "exec").startswith("reject: too-many-tbs-per-channel")


# -- steps -----------------------------------------------------------------------------------

def test_cnt_limits():
    assert verdict(pair(cnt=71), "exec") == "ok"
    assert verdict(pair(cnt=72), "exec").startswith("reject: cnt-out-of-range")
    assert verdict(pair(cnt=-1), "exec").startswith("reject: cnt-out-of-range")
    s = pair(cnt=0)
    assert verdict(s, "exec") == "ok"
    assert any(f.code == "cnt-zero" and f.severity == "warning" for f in safety_findings(s, "exec"))


def test_types_buffers_offsets_hasdep():
    def one(**kw):
        return loads(xml([[({}, [step(**{"t": "cpy", "srcbuf": "i", **kw})])]]))
    assert verdict(one(t="copy"), "exec").startswith("reject: bad-step-type")
    assert verdict(one(dstbuf="x"), "exec").startswith("reject: bad-buffer")
    assert verdict(one(srcoff=8), "exec").startswith("reject: offset-out-of-range")
    assert verdict(one(srcoff=-2), "exec").startswith("reject: offset-out-of-range")
    assert verdict(one(hasdep=2), "exec").startswith("reject: hasdep-invalid")
    s = one(srcoff=7, cnt=2)       # the runtime never checks off + cnt
    assert verdict(s, "exec") == "ok" and "offset-past-buffer" in safety(s)
    # rrc's offsets are not bounds-checked by the runtime at all
    s = loads(xml([[({"send": 1}, [step("s")])],
                   [({"recv": 0}, [step("rrc", srcoff=99, dstoff=99)])]]))
    assert verdict(s, "exec") == "ok" and "offset-past-buffer" in safety(s)


def test_missing_step_attribute_is_rejected():
    s = loads(pair_text().replace(' cnt="1"', "", 1))
    assert verdict(s, "exec") == "reject: missing-attribute: rank 0: MSCCL: Attribute cnt of " \
                                 "node step not found (gpu 0, tb 0, step 0, line 4)"


def pair_text():
    return xml([[({"send": 1}, [step("s")])], [({"recv": 0}, [step("r")])]])


def test_algo_attributes_per_profile():
    base = pair_text()
    s = loads(base.replace(' outofplace="1"', ""))
    assert "Attribute outofplace of node algo not found" in verdict(s, "exec")
    assert verdict(s, "legacy") == "ok"
    s = loads(base.replace(' name="t"', ""))
    assert verdict(s, "exec") == "ok" and "Attribute name" in verdict(s, "legacy")
    s = loads(base.replace('coll="allreduce"', 'coll="reduce_scatter"'))
    assert verdict(s, "exec").startswith("reject: bad-coll") and verdict(s, "legacy") == "ok"
    s = loads(base.replace('coll="allreduce"', 'coll="reducescatter"'))
    assert verdict(s, "exec") == "ok" and verdict(s, "legacy").startswith("reject: bad-coll")
    s = loads(base.replace('proto="Simple"', 'proto="simple"'))
    assert verdict(s, "exec").startswith("reject: bad-proto")


def test_rccl_refuses_fused_types_at_launch():
    s = pair(send_type="s", recv_type="rrc")
    assert verdict(s, "exec") == "ok" and verdict(s, "legacy") == "ok"
    assert verdict(s, "rccl").startswith("launch-fail: rccl-full-ops: uses rrc")


# -- node budget -------------------------------------------------------------------------------

def _budget(steps_per_tb, tbs=64):
    # 1 algo + 2 gpus + tbs + tbs*steps nodes on rank 0
    return loads(xml([[({"id": i}, [step("nop", depid=(i + 1) % tbs, deps=0)] * steps_per_tb)
                       for i in range(tbs)], []]))


def test_node_budget():
    # 1 + 2 + 64 + 64*62 = 4035 nodes: fine; 1 + 2 + 65 + 65*62 = 4098: over
    assert not [f for f in runtime_findings(_budget(62), "exec") if f.code == "node-budget"]
    s = _budget(62, tbs=65)
    assert [f for f in runtime_findings(s, "exec") if f.code == "node-budget"]
    assert verdict(s, "exec").startswith("reject: node-budget")


# -- dependencies and nops ---------------------------------------------------------------------

def _deps(waiter, target_steps):
    return loads(xml([[({"id": 0}, target_steps), ({"id": 1}, waiter)]]))


CPY = dict(t="cpy", srcbuf="i", dstbuf="o")


def test_dependency_rules():
    ok = _deps([step(**CPY, depid=0, deps=0)], [step(**CPY, hasdep=1)])
    assert verdict(ok, "exec") == "ok" and not safety(ok)
    never = _deps([step(**CPY, depid=0, deps=0)], [step(**CPY, hasdep=0)])
    assert "dep-never-released" in safety(never)
    late = _deps([step(**CPY, depid=0, deps=0)], [step(**CPY), step(**CPY, hasdep=1)])
    assert any(f.code == "dep-released-late" for f in safety_findings(late, "exec"))
    missing = _deps([step(**CPY, depid=0, deps=5)], [step(**CPY, hasdep=1)])
    assert "dep-target-missing" in safety(missing)
    on_nop = _deps([step(**CPY, depid=0, deps=0)], [step("nop", depid=1, deps=0)])
    assert "dep-never-released" in safety(on_nop)


def test_depid_above_127_is_unsafe_but_loads():
    tbs = [({"id": i}, [step(**CPY, hasdep=1)]) for i in range(129)]
    tbs[0] = ({"id": 0}, [step(**CPY, depid=128, deps=0)])
    s = loads(xml([tbs]))
    assert verdict(s, "exec") == "ok"
    assert "depid-too-large" in safety(s)


def test_nop_rules():
    target = [step(**CPY, hasdep=1)]
    # a nop run followed by a step with its own dependency: the MSCCLang shape
    good = _deps([step("nop", depid=0, deps=0), step(**CPY, depid=0, deps=0)], target)
    assert verdict(good, "exec") == "ok" and not safety(good)
    bad = _deps([step("nop", depid=0, deps=0), step(**CPY)], target)
    assert verdict(bad, "exec").startswith("reject: nop-chain-no-dep")
    dropped = _deps([step("nop"), step(**CPY, depid=0, deps=0)], target)
    assert verdict(dropped, "exec") == "ok" and "nop-without-dep" in safety(dropped)


def test_self_wait_and_step_index():
    s = loads(xml([[({}, [step(**CPY, depid=0, deps=0, hasdep=1)])]]))
    assert "dep-self-wait" in safety(s)
    s = loads(xml([[({}, [{"s": 1, **step(**CPY)}])]]))
    assert verdict(s, "exec") == "ok" and "step-index" in safety(s)


def test_re_fusion_rules():
    chain = [step("re", srcbuf="s", srcoff=i % 8, dstbuf="i", dstoff=0) for i in range(17)]
    s = loads(xml([[({}, chain)]]))
    assert "re-chain-too-long" in safety(s)
    assert "re-chain-too-long" not in safety(loads(xml([[({}, chain[:16])]])))
    mixed = [step("re", srcbuf="s", srcoff=0, dstbuf="i", dstoff=0, cnt=2),
             step("re", srcbuf="s", srcoff=4, dstbuf="i", dstoff=0, cnt=1)]
    assert "re-chain-cnt-mismatch" in safety(loads(xml([[({}, mixed)]])))
    # hasdep=1 ends a chain, so a new chain may start with another cnt
    mixed[0] = {**mixed[0], "hasdep": 1}
    assert "re-chain-cnt-mismatch" not in safety(loads(xml([[({}, mixed)]])))


# -- links -------------------------------------------------------------------------------------

def test_link_rules():
    s = loads(xml([[({"send": 1}, [step("s")])], [({}, [])]]))
    assert verdict(s, "exec") == "ok" and "link-undeclared" in safety(s)
    s = loads(xml([[({"send": 1}, [step("s", cnt=2)])], [({"recv": 0}, [step("r", cnt=1)])]]))
    assert "link-cnt-mismatch" in safety(s)
    s = loads(xml([[({"send": 1}, [step("s")] * 2)], [({"recv": 0}, [step("r")])]]))
    assert "link-cnt-mismatch" in safety(s)
    s = loads(xml([[({"send": 1}, [step("s")]), ({"send": 1}, [step("s")])],
                   [({"recv": 0}, [step("r")] * 2)]]))
    assert "two-tbs-one-connection" in safety(s)
    s = loads(xml([[({}, [step("s")])]]))
    assert "step-without-peer" in safety(s)


def test_gpu_elements():
    s = loads(xml([[({}, [step(**CPY)])], [({}, [step(**CPY)])]], ngpus=3))
    assert "gpu-missing" in safety(s)
    s = loads(xml([[({}, [step(**CPY)])], [({}, [step(**CPY)])]], ngpus=1))
    assert "gpu-id-out-of-range" in safety(s)


def test_unknown_profile():
    with pytest.raises(ValueError, match="unknown target"):
        verdict(pair(), "nvls")
