"""ccxml.load / ccxml.loads: safe on hostile input, faithful to the runtime's tokenizer."""
from __future__ import annotations

import socket
import time

import numpy as np
import pytest
from handbuilt import inplace_ring_allgather

import ccxml
from ccxml.loader.model import strtol0
from ccxml.loader.reader import MAX_DEPTH, LoadError, load, loads
from ccxml.loader.rules import verdict

BASE = inplace_ring_allgather()


@pytest.fixture
def no_network(monkeypatch):
    """Fail the test if anything tries to open a network connection."""
    def refuse(*args, **kwargs):
        raise AssertionError("the loader tried to use the network")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


# ------------------------------------------------------------------------------------------
# a valid file

def test_loads_canonical_file_into_the_model():
    s = loads(BASE)
    assert (s.ngpus, s.nchannels, s.coll, s.proto) == (3, 1, "allgather", "Simple")
    assert [g.id for g in s.gpus] == [0, 1, 2]
    tb = s.gpus[1].tbs[0]
    assert (tb.id, tb.send, tb.recv, tb.chan) == (0, 2, 0, 0)
    assert [(st.s, st.type, st.srcoff, st.dstoff, st.cnt, st.depid) for st in tb.steps] == \
        [(0, "s", 1, 1, 1, -1), (1, "r", 0, 0, 1, -1), (2, "s", 0, 0, 1, -1), (3, "r", 2, 2, 1, -1)]
    assert s.lexical == [] and s.missing == []
    assert s.nsteps == 12
    assert verdict(s, "exec") == "ok"


def test_step_lines_are_file_lines():
    s = loads(BASE)
    lines = BASE.splitlines()
    for g in s.gpus:
        assert lines[g.line - 1].lstrip().startswith(f'<gpu id="{g.id}"')
        for tb in g.tbs:
            assert lines[tb.line - 1].lstrip().startswith("<tb ")
            for st in tb.steps:
                assert lines[st.line - 1].lstrip().startswith(f'<step s="{st.s}" type="{st.type}"')


def test_an_unknown_attribute_on_every_step_leaves_the_model_unchanged():
    """An extra attribute on every step (TACCL's ``algostep``) takes the lines off the canonical
    form, so the exact path reads them; the model must be the one of the canonical file."""
    fast = loads(BASE)
    exact = loads(inplace_ring_allgather(step_tail=' algostep="1"'))
    assert fast.gpus == exact.gpus


def test_public_api_and_file_loading(tmp_path):
    p = tmp_path / "ring.xml"
    p.write_text(BASE)
    s = ccxml.load(p)
    assert s.path == str(p) and s.nsteps == 12
    assert ccxml.loads(BASE.encode()).gpus == s.gpus


def test_a_mapped_file_loads_and_fails_as_a_read_one(tmp_path):
    """``load(path, mapped=True)`` (what ``generate --verify`` uses) gives the same model, and
    the same one-line errors, as reading the file: the fast path, the exact path (an extra
    attribute), binary data and a truncated file."""
    cases = {"fast": BASE, "exact": inplace_ring_allgather(step_tail=' algostep="1"'),
             "binary": BASE[:200] + "\x01" + BASE[200:], "cut": BASE[:400], "empty": ""}
    for name, text in cases.items():
        p = tmp_path / f"{name}.xml"
        p.write_text(text)
        try:
            want = load(p)
        except LoadError as e:
            with pytest.raises(LoadError) as got:
                load(p, mapped=True)
            assert str(got.value) == str(e)
        else:
            assert load(p, mapped=True).gpus == want.gpus


def test_skipped_elements_and_comments_are_fine():
    text = ("<!-- Copyright (c) someone -->\n" + BASE.replace(
        '  <gpu id="0" i_chunks="0" o_chunks="3" s_chunks="0">',
        '  <gpu id="0" i_chunks="0" o_chunks="3" s_chunks="0">\n    <copy i_off="0" o_off="0" />'))
    s = loads(text)
    assert s.other_elements == {"copy": 1}
    assert all(not i.fatal for i in s.lexical)
    assert verdict(s, "exec") == "ok"


def test_strtol_reading():
    assert [strtol0(x) for x in ("010", "08", "0x10", "12abc", "abc", "-5", " 7", "+3", "")] == \
        [8, 0, 16, 12, 0, -5, 7, 3, 0]


# ------------------------------------------------------------------------------------------
# lexical deviations: the model is built, the issue is recorded, every runtime rejects

LEXICAL_CASES = {
    "xml-declaration": (lambda t: '<?xml version="1.0" encoding="UTF-8"?>\n' + t, "declaration"),
    "bom": (lambda t: "\ufeff" + t, "byte-order mark"),
    "tab-between-elements": (lambda t: t.replace("\n    <tb", "\n\t<tb", 1), "tab"),
    "tab-inside-tag": (lambda t: t.replace('<tb id="0" send', '<tb id="0"\tsend', 1), "tokenizer"),
    "newline-inside-tag": (lambda t: t.replace('<tb id="0" send', '<tb id="0"\n send', 1),
                           "expected >"),
    "text-between-elements": (lambda t: t.replace("    </tb>", "    hello\n    </tb>", 1),
                              "text between elements"),
    "text-after-algo": (lambda t: t + "trailing words\n", "after </algo>"),
    "single-quotes": (lambda t: t.replace('chan="0"', "chan='0'", 1), "tokenizer"),
    "space-around-equals": (lambda t: t.replace('chan="0"', 'chan = "0"', 1), "tokenizer"),
    "leading-zero": (lambda t: t.replace('cnt="1"', 'cnt="01"', 1), "plain decimal"),
    "octal": (lambda t: t.replace('srcoff="2"', 'srcoff="010"', 1), "reads it as 8"),
    "hex": (lambda t: t.replace('cnt="1"', 'cnt="0x1"', 1), "plain decimal"),
    "comment-attribute": (lambda t: "<!--a=b-->\n" + t, "comment"),
    "child-inside-step": (lambda t: t.replace('hasdep="0"/>', 'hasdep="0"><x/></step>', 1),
                          "inside <step>"),
    "closing-tag-space": (lambda t: t.replace("</tb>", "</tb >", 1), "closing tag"),
    "long-name": (lambda t: t.replace('<tb id="0"', '<tb ' + "x" * 300 + '="1" id="0"', 1),
                  "too long"),
}


@pytest.mark.parametrize("case", sorted(LEXICAL_CASES))
def test_lexical_deviation_is_recorded_and_rejected(case):
    mutate, words = LEXICAL_CASES[case]
    text = mutate(BASE)
    assert text != BASE
    s = loads(text)
    fatal = [i for i in s.lexical if i.fatal]
    assert fatal, f"{case}: no lexical issue in {s.lexical}"
    assert any(words in i.message for i in fatal), f"{case}: {[i.message for i in fatal]}"
    assert all(i.line >= 1 for i in fatal)
    for prof in ("exec", "rccl", "legacy"):
        assert verdict(s, prof).startswith("reject: lexical"), (case, prof, verdict(s, prof))


def test_lexical_issue_has_the_right_line():
    text = BASE.replace('cnt="1"', 'cnt="01"', 1)
    s = loads(text)
    (issue,) = [i for i in s.lexical if i.fatal]
    assert text.splitlines()[issue.line - 1].count('cnt="01"') == 1


def test_number_is_read_like_strtol_and_flagged():
    s = loads(BASE.replace('ngpus="3"', 'ngpus="03"'))
    assert s.ngpus == 3 and s.lexical[0].fatal
    s = loads(BASE.replace('srcoff="2"', 'srcoff="010"', 1))
    assert any(st.srcoff == 8 for g in s.gpus for tb in g.tbs for st in tb.steps)


def test_more_than_16_attribute_slots_drop_attributes():
    extra = "".join(f' x{i}="0"' for i in range(7))       # 10 + 7 = 17 slots: hasdep is dropped
    s = loads(BASE.replace('<step s="0"', '<step' + extra + ' s="0"', 1))
    assert any(m.attr == "hasdep" and m.dropped for m in s.missing)
    assert any(not i.fatal and "16" in i.message for i in s.lexical)
    assert verdict(s, "exec").startswith("reject: missing-attribute")
    # extra attributes that leave the 10 required ones in the first 16 slots are harmless
    s = loads(BASE.replace('hasdep="0"/>', 'hasdep="0" a="1" b="2"/>'))
    assert verdict(s, "exec") == "ok"


def test_ignored_unknown_attributes_and_elements_do_not_reject():
    s = loads(BASE.replace('<algo name="ring"', '<algo name="ring" redop="nop" nthreadblocks="4"'))
    assert verdict(s, "exec") == "ok" and s.attrs["redop"] == "nop"


# ------------------------------------------------------------------------------------------
# unusable and hostile input: one clear LoadError, quickly, no network

def _fails(data, *words, limit=5.0):
    t0 = time.perf_counter()
    with pytest.raises(LoadError) as exc:
        loads(data, "hostile.xml")
    assert time.perf_counter() - t0 < limit
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("hostile.xml"), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_xxe_local_file_is_refused(no_network):
    _fails('<!DOCTYPE algo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
           '<algo name="&xxe;" ngpus="1"></algo>\n', "DOCTYPE")


def test_xxe_url_is_refused_without_network(no_network):
    _fails('<!DOCTYPE algo SYSTEM "http://127.0.0.1:9/evil.dtd">\n<algo ngpus="1"></algo>\n',
           "DOCTYPE")
    _fails('<algo ngpus="1">\n<!ENTITY x SYSTEM "http://127.0.0.1:9/">\n</algo>\n', "ENTITY")


def test_billion_laughs_is_refused(no_network):
    ents = "".join(f'<!ENTITY l{i} "{("&l%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    _fails(f'<?xml version="1.0"?>\n<!DOCTYPE algo [<!ENTITY l0 "lol">{ents}]>\n'
           f'<algo name="&l9;"></algo>\n', "DOCTYPE")


def test_entity_reference_without_dtd_stays_literal():
    s = loads(BASE.replace('name="ring"', 'name="&lol;"'))
    assert s.name == "&lol;"


def test_deep_nesting_is_refused():
    _fails(BASE.replace("</algo>", "<x>" * 100000 + "</x>" * 100000 + "</algo>"), "nested",
           str(MAX_DEPTH))
    _fails("<a>" * 200000, "nested")


def test_huge_numbers_are_refused():
    _fails(BASE.replace('ngpus="3"', 'ngpus="' + "1" + "0" * 30 + '"'), "ngpus", "out of range")
    _fails(BASE.replace('cnt="1"', 'cnt="' + "9" * 30 + '"', 1), "cnt", "out of range")
    _fails(BASE.replace('minBytes="0"', 'minBytes="99999999999999999999"'), "minBytes")


def test_binary_junk_is_refused():
    junk = bytes((i * 37 + 11) % 256 for i in range(4096))
    _fails(junk, "binary")
    _fails(BASE.encode()[:200] + b"\x00\x01\x02" + BASE.encode()[200:], "binary")
    # anywhere: inside the lines the step scan reads, before them, after them
    for at in (0, 1, 200, len(BASE) - 30, len(BASE) - 2, len(BASE)):
        for byte in (b"\x01", b"\x7f", b"\x0b"):
            _fails(BASE.encode()[:at] + byte + BASE.encode()[at:], "binary")


def test_empty_and_not_xml_are_refused():
    _fails(b"", "empty")
    _fails("   \n\n", "empty")
    _fails("hello, world\n", "not an MSCCL XML file")
    _fails('{"algo": 1}\n', "not an MSCCL XML file")
    _fails("<!-- only a comment -->\n", "no <algo>")
    _fails('<topology version="1"><cpu/></topology>\n', "no <algo>")


@pytest.mark.parametrize("cut", [10, 150, 400, -20, -3])
def test_truncated_file_is_refused(cut):
    _fails(BASE[:cut])


def test_mismatched_closing_tag_is_refused():
    _fails(BASE.replace("</tb>", "</gpu>", 1), "closes <tb>")


def test_huge_attribute_is_refused():
    _fails(BASE.replace('name="ring"', 'name="' + "A" * 5_000_000 + '"'), "characters")


def test_many_attributes_are_refused():
    _fails(BASE.replace("<algo ", "<algo " + " ".join(f'a{i}="1"' for i in range(1000)) + " "),
           "attributes")


def test_unbalanced_quotes_stay_linear():
    _fails('<algo name="x>' + "'\"" * 200_000 + "\n")


def test_oversized_file_is_refused(tmp_path, monkeypatch):
    import ccxml.loader.reader as xl
    monkeypatch.setattr(xl, "MAX_FILE_BYTES", 1000)
    p = tmp_path / "big.xml"
    p.write_text(inplace_ring_allgather(8))
    with pytest.raises(LoadError, match="limit 1000"):
        load(p)


def test_missing_file_is_a_load_error(tmp_path):
    with pytest.raises(LoadError, match="cannot read"):
        load(tmp_path / "nope.xml")


# ---- the numpy step scan (its agreement with the exact reader: tests/test_twins.py) ------------------

def test_error_after_many_tb_bodies_names_the_right_line():
    """The fast reader reads the text with the table's TB bodies cut out; an error's line still
    counts every line of the file."""
    from ccxml.algorithms import ring
    text = ring.allreduce(5).to_xml("exec")
    cut = text.rindex("  </gpu>")
    bad = text[:cut] + "  </tb>\n"                    # closes <gpu> with </tb>
    with pytest.raises(LoadError) as got:
        loads(bad)
    assert got.value.line == bad.count("\n")


def test_a_giant_line_of_quotes_is_read_in_bounded_blocks():
    """The step scan works in blocks of a few MB even when a line never ends: a 24 MB line of
    quotes (in a comment) must not cost 8 bytes per quote at once."""
    import resource
    head = BASE.split("\n", 1)
    junk = "  <!-- " + '"' * (24 << 20) + " -->"
    text = head[0] + "\n" + junk + "\n" + head[1]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    s = loads(text)
    assert time.perf_counter() - t0 < 20
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 150      # one block of quote positions is 32 MB; the whole line 192 MB
    assert s.nsteps == 12


@pytest.mark.parametrize("old,new", [
    ('srcoff="2"', 'srcoff="12345678"'),     # values of 7-8 characters: a second word
    ('srcoff="2"', 'srcoff="-1234567"'),
    ('srcoff="2"', 'srcoff="-12345678"'),
    ('srcoff="2"', 'srcoff="1234"'),
    ('<step s="1"', '          <step s="1"'),  # 16 spaces of indentation
])
def test_step_scan_takes_every_canonical_line(old, new):
    """The numpy scan reads canonical lines with long numbers and deep indentation itself
    (the table holds them), not only the slower paths."""
    from ccxml.loader.scan import scan_steps
    lines = BASE.splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if '<step s="1" type="r"' in ln and 'srcoff="2"' in ln)
    lines[k] = lines[k].replace(old, new, 1)
    text = "".join(lines)
    scan, span = scan_steps(text.encode())
    assert span is not None
    P, table, END, _ = scan
    assert len(P) == text.count("<step ")
    row = int(np.searchsorted(P, len("".join(lines[:k])) - 1))
    assert table.rows(row, row + 1)[3] == [int(new.split('"')[1]) if "srcoff" in new else 2]
