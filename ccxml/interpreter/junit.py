"""``ccxml verify --junit OUT.xml``: the verdicts as a JUnit XML report for CI dashboards.

One ``<testcase>`` per file, in the order verified, inside one ``<testsuite>`` under
``<testsuites>`` — the layout and attributes pytest's ``--junitxml`` writes, which Jenkins,
GitLab and GitHub's test reporters read. A file that fails has a ``<failure>`` whose ``message``
is the first failing finding, ``type`` its code, and whose text lists every failing finding, one
a line; a file that cannot be used at all has an ``<error>`` instead. Findings that do not fail
the file (warnings without ``--strict``) and the statistics go to ``<system-out>``. The only
attributes that change from run to run are the ``time`` ones.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

#: characters XML 1.0 cannot carry (replaced by U+FFFD in the report)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Unusable:
    """A file verify could not use (unreadable, not MSCCL XML): its path and the one-line reason."""
    path: str
    reason: str


def junit_xml(results: list, *, strict: bool = False, target: str = "exec", suite: str = "ccxml verify") -> str:
    """The JUnit XML text for ``results``: a :class:`~ccxml.interpreter.report.Report` or an
    :class:`Unusable` per file."""
    cases = []
    failures = errors = 0
    total = 0.0
    for res in results:
        case = etree.Element("testcase", classname=f"ccxml.verify.{target}", name=_text(res.path))
        if isinstance(res, Unusable):
            errors += 1
            etree.SubElement(case, "error", message=_text(res.reason), type="unusable").text = _text(res.reason)
            case.set("time", "0.000")
        else:
            t = float(res.stats.get("time_s", 0.0))
            total += t
            case.set("time", f"{t:.3f}")
            fails = res.failures(strict)
            if fails:
                failures += 1
                el = etree.SubElement(case, "failure", message=_text(str(fails[0])), type=fails[0].code)
                el.text = _text("\n".join(res.tree(fails)))
            failed = set(map(id, fails))
            rest = [f for f in res.findings if id(f) not in failed]
            out = [f"{res.summary()}"] + res.tree(rest)
            etree.SubElement(case, "system-out").text = _text("\n".join(out))
        cases.append(case)
    attrs = {"name": suite, "tests": str(len(cases)), "failures": str(failures), "errors": str(errors),
             "skipped": "0", "time": f"{total:.3f}"}
    root = etree.Element("testsuites", **attrs)
    ts = etree.SubElement(root, "testsuite", **attrs)
    props = etree.SubElement(ts, "properties")
    for k, v in (("target", target), ("strict", "true" if strict else "false")):
        etree.SubElement(props, "property", name=k, value=v)
    ts.extend(cases)
    etree.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + etree.tostring(root, encoding="unicode") + "\n"


def _text(s: str) -> str:
    return _NOT_XML.sub("\ufffd", s)


__all__ = ["junit_xml", "Unusable"]
