"""Which ccxml a benchmark runs, said before its figures — and a refusal to time the wrong one.

A benchmark imports the ccxml of its checkout (it puts the checkout first on ``sys.path``).
Where that checkout's modules are not compiled (no build, a build older than the source, or
``CCXML_PURE=1``) the same command times pure Python, several times slower, while an installed
ccxml may well be compiled: a 1024-rank ring took 51 s instead of 11 s that way. So each
benchmark prints one line naming the ccxml it imported, compiled or pure, N of M native
modules (and the installed ccxml when it is another one), and:

* a benchmark that times the compiled modules (``run.py``, ``bench_passes.py``) refuses, with
  exit code 2 and the way out, to time a checkout whose native modules do not all run compiled,
  unless ``CCXML_PURE=1`` asks for pure Python or ``--allow-pure`` is given;
* the others (whose timed code is never compiled) run, but warn loudly about stale modules.

    python benchmarks/build_check.py      # just the report
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path[0] != REPO:
    sys.path.insert(0, REPO)                # this checkout's ccxml, as every benchmark imports it

_INSTALLED_SNIPPET = (
    "import json, ccxml\n"
    "try:\n"
    "    from ccxml import _native\n"
    "    s = _native.status()\n"
    "    print(json.dumps([ccxml.__file__, sum(s.values()), len(s)]))\n"
    "except Exception:\n"
    "    print(json.dumps([ccxml.__file__, None, None]))\n")


@dataclass(frozen=True)
class Build:
    path: str                   # the ccxml package directory
    compiled: int | None        # native modules running compiled (None: unknown)
    total: int | None
    stale: tuple[str, ...] = ()     # built, but the source changed since
    unbuilt: tuple[str, ...] = ()   # no compiled form recorded

    @property
    def all_compiled(self) -> bool:
        return self.compiled is not None and self.compiled == self.total

    def describe(self) -> str:
        if self.compiled is None:
            return f"{self.path} (build unknown)"
        kind = ("compiled" if self.all_compiled else "pure Python" if not self.compiled
                else "partly compiled")
        return f"{self.path} ({kind}, {self.compiled} of {self.total} native modules compiled)"


def this_build() -> Build:
    """The ccxml this process imports (the checkout's), with why each pure module is pure."""
    import ccxml
    from ccxml import _native
    status = _native.status()
    root = os.path.dirname(os.path.dirname(os.path.abspath(ccxml.__file__)))
    recorded = _native.recorded_digests(root)
    stale, unbuilt = [], []
    for name, compiled in status.items():
        if compiled:
            continue
        digest = recorded.get(name)
        if digest is None:
            unbuilt.append(name)
        elif digest != _native.source_digest(os.path.join(root, *name.split("."))):
            stale.append(name)
    return Build(os.path.dirname(os.path.abspath(ccxml.__file__)), sum(status.values()),
                 len(status), tuple(stale), tuple(unbuilt))


def installed_build() -> Build | None:
    """The ccxml a plain ``python`` outside this checkout imports (None: there is none)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CCXML_PURE")}
    try:
        out = subprocess.run([sys.executable, "-I", "-c", _INSTALLED_SNIPPET], env=env,
                             cwd=os.path.expanduser("~") if os.path.isdir(os.path.expanduser("~"))
                             else "/", capture_output=True, text=True, timeout=120)
        path, compiled, total = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None
    return Build(os.path.dirname(os.path.abspath(path)), compiled, total)


def _short(modules) -> str:
    return ", ".join(m.removeprefix("ccxml.") for m in modules)


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-pure", action="store_true",
                        help="time this checkout even if its native modules do not all run "
                             "compiled (pure Python is several times slower)")


def announce(*, times_native: bool, allow_pure: bool = False, stream=None) -> Build:
    """Print which build runs (to ``stream``, default stdout); exit 2 with the way out when a
    benchmark of the compiled modules (``times_native``) would time pure Python by mistake;
    warn loudly about stale modules otherwise. Returns the build."""
    out = stream or sys.stdout
    err = sys.stderr
    build = this_build()
    pure_on_request = bool(os.environ.get("CCXML_PURE"))
    note = " — CCXML_PURE is set" if pure_on_request and not build.all_compiled else ""
    print(f"build: ccxml {build.describe()}{note}", file=out, flush=True)
    installed = installed_build()
    if installed is not None and installed.path != build.path:
        print(f"installed ccxml (not the one run here): {installed.describe()}", file=out,
              flush=True)
    if build.all_compiled or pure_on_request:
        return build
    reasons = []
    if build.stale:
        reasons.append(f"changed since the last build: {_short(build.stale)}")
    if len(build.unbuilt) == build.total:
        reasons.append("this checkout has no native build")
    elif build.unbuilt:
        reasons.append(f"never built here: {_short(build.unbuilt)}")
    why = "; ".join(reasons) or "its compiled modules do not load"
    if times_native and not allow_pure:
        other = (f" (the installed ccxml at {installed.path} runs compiled)"
                 if installed is not None and installed.all_compiled else "")
        print(f"{os.path.basename(sys.argv[0])}: refusing to time pure Python by mistake: "
              f"{build.path} runs {build.total - build.compiled} of {build.total} native modules "
              f"as Python ({why}){other}. Build this checkout (python setup.py build_ext "
              f"--inplace), or time pure Python on purpose with CCXML_PURE=1 or --allow-pure.",
              file=err, flush=True)
        sys.exit(2)
    print(f"WARNING: {build.total - build.compiled} of {build.total} native modules run as pure "
          f"Python ({why}): figures that involve them are not those of a compiled build",
          file=err, flush=True)
    return build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args()
    announce(times_native=False)


if __name__ == "__main__":
    main()
