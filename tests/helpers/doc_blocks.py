"""The shell lines of README.md and docs/*.md, and a runner for them.

A ```sh block of the documentation holds commands a user can paste, one a line, from the
repository root after the two set-up commands of the README. In such a block:

* a line that is only a comment (``#   PASS out/x.xml ...``) is an excerpt of what the command
  above it prints: its pieces between ``...`` must appear in that output in order, whitespace
  runs counting as one space;
* a command whose trailing comment starts with ``# exit N`` is expected to exit with N (a
  failing verify shown on purpose); every other command must exit 0;
* anything that is not to be run as written (placeholders, a cluster's hostfile) belongs in a
  ```text block instead.

Used by tests/docs/ and by benchmarks/doc_figures.py (which reruns the commands and prints what
they print now beside the excerpts quoted).
"""
from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# the set-up commands of the README: given, not run again by the runner
SETUP_INSTALLS = ("pip install .", "pip install -e '.[test]'")
# commands a documented line may start with
PROGRAMS = {"ccxml", "python", "pip", "mpiexec", "cd", "printf", "export", "ls"}
# options whose value is a file the command writes (need not exist beforehand)
OUTPUT_OPTIONS = {"-o", "--output", "--junit", "--dump-to"}
_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
_PATHLIKE = re.compile(r"(/|\.(py|csv|xml|toml|json)$)")


@dataclass
class Command:
    """One documented command line."""
    doc: str          # path relative to the repository
    lineno: int       # line of the command in the doc
    text: str         # the line as written (without its trailing comment)
    exit_code: int = 0
    excerpts: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.lineno}"


def doc_files(repo: Path = REPO) -> list[Path]:
    """README.md and every docs/*.md."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def _strip_comment(line: str) -> tuple[str, str]:
    """(command, trailing comment) of a shell line; a ``#`` inside quotes is not a comment."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i:]
    return line.rstrip(), ""


def commands(path: Path, repo: Path = REPO) -> list[Command]:
    """Every command of the ```sh blocks of one doc, in order, with its excerpts."""
    rel = str(path.relative_to(repo))
    out: list[Command] = []
    in_sh = False
    in_other = False
    pending = ""
    start = 0
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.rstrip()
        fence = line.lstrip()
        if fence.startswith("```"):
            if in_sh or in_other:
                in_sh = in_other = False
            elif fence[3:].strip() == "sh":
                in_sh = True
            else:
                in_other = True
            continue
        if not in_sh or not line.strip():
            continue
        if pending:
            line = pending + " " + line.strip()
        else:
            start = n
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = ""
        text, comment = _strip_comment(line)
        if not text:
            if out and out[-1].doc == rel:
                out[-1].excerpts.append(comment.lstrip("#").strip())
            continue
        m = _EXIT.match(comment)
        out.append(Command(rel, start, text, int(m.group(1)) if m else 0))
    return out


def simple_commands(text: str) -> list[list[str]]:
    """The simple commands of a line: its words, split at ``&&``, ``||``, ``|`` and ``;``."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    parts: list[list[str]] = [[]]
    for tok in lex:
        if tok in ("&&", "||", "|", ";"):
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def ccxml_commands() -> set[str]:
    """The subcommands of ``ccxml`` (from its command table, without importing the commands)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from ccxml.cli.app import COMMANDS
    return set(COMMANDS)


def problems(cmd: Command, repo: Path = REPO) -> list[str]:
    """What makes a documented line unrunnable as written, without running it: an unknown
    program or ccxml command, a file that is neither in the repository nor written to out/."""
    found = []
    subs = ccxml_commands()
    cwd = repo
    for words in simple_commands(cmd.text):
        prog = words[0]
        if prog not in PROGRAMS:
            found.append(f"{cmd.where}: '{prog}' is not a command of the documentation's set-up")
            continue
        if prog == "mpiexec":
            rest = words[1:]
            while rest and rest[0].startswith("-"):
                rest = rest[2:] if rest[0] in ("-n", "-np", "-f") else rest[1:]
            if not rest:
                found.append(f"{cmd.where}: mpiexec runs nothing")
                continue
            words = rest
            prog = words[0]
        if prog == "cd":
            cwd = cwd / words[1]
            if not cwd.is_dir():
                found.append(f"{cmd.where}: no directory {words[1]}")
            continue
        if prog == "ccxml" and (len(words) < 2 or words[1] not in subs):
            found.append(f"{cmd.where}: 'ccxml {words[1] if len(words) > 1 else ''}' is not a "
                         f"ccxml command")
        if prog == "python" and len(words) > 2 and words[1] == "-m" and words[2] == "ccxml" and (
                len(words) < 4 or words[3] not in subs):
            found.append(f"{cmd.where}: 'python -m ccxml {' '.join(words[3:4])}' is not a command")
        prev = ""
        for w in words[1:]:
            if prev in OUTPUT_OPTIONS or w.startswith("-") or "=" in w or "://" in w:
                prev = w
                continue
            prev = w
            if not _PATHLIKE.search(w) or w.startswith(("ccxml", "msccl")) and "/" not in w:
                continue
            if w.startswith("out/") or "/out/" in w:
                continue  # written by the lines before it (the runner proves it)
            if w.startswith("../") or "/shared/" in w:
                found.append(f"{cmd.where}: {w} is outside the repository")
            elif not glob.glob(str(cwd / w)):
                found.append(f"{cmd.where}: {w} does not exist in the repository")
    return found


def needs_install(cmd: Command) -> bool:
    """True for a line that installs a package other than ccxml itself (the set-up's)."""
    for words in simple_commands(cmd.text):
        if words[:2] == ["pip", "install"]:
            line = " ".join(words)
            if not any(line == shlex.join(shlex.split(s)) or line == " ".join(shlex.split(s))
                       for s in SETUP_INSTALLS):
                return True
    return False


def runnable(cmd: Command) -> str | None:
    """The shell line to run for ``cmd`` after the set-up (the set-up's own install stripped),
    or None when there is nothing left to run."""
    parts = simple_commands(cmd.text)
    setup = [" ".join(shlex.split(s)) for s in SETUP_INSTALLS]
    if parts and " ".join(parts[0]) in setup:
        rest = cmd.text.split("&&", 1)[1].strip() if "&&" in cmd.text else ""
        if rest.startswith("python -m pytest"):
            return None      # the test suite itself: it is what runs this
        return rest or None
    return cmd.text


def normalize(text: str) -> str:
    return " ".join(text.split())


def excerpt_missing(excerpt: str, output: str) -> str | None:
    """The first piece of ``excerpt`` (split at ``...``) not found, in order, in ``output``."""
    hay = normalize(output)
    pos = 0
    for piece in excerpt.split("..."):
        piece = normalize(piece)
        if not piece:
            continue
        i = hay.find(piece, pos)
        if i < 0:
            return piece
        pos = i + len(piece)
    return None


def make_sandbox(dest: Path, repo: Path = REPO) -> dict[str, str]:
    """Copy the repository to ``dest`` and return the environment in which ``ccxml`` and
    ``python`` are this checkout's (ccxml on PYTHONPATH, mpiexec from the interpreter's bin)."""
    ignore = shutil.ignore_patterns(".git", "__pycache__", "build", ".ccxml-build", "*.egg-info",
                                    ".pytest_cache", ".ruff_cache", ".grimp_cache",
                                    ".import_linter_cache")
    shutil.copytree(repo, dest / "repo", symlinks=True, ignore=ignore)
    bindir = dest / "bin"
    bindir.mkdir()
    py = sys.executable
    for name, body in (("ccxml", f'exec "{py}" -m ccxml "$@"\n'), ("python", f'exec "{py}" "$@"\n'),
                       ("python3", f'exec "{py}" "$@"\n')):
        f = bindir / name
        f.write_text("#!/bin/sh\n" + body)
        f.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bindir), str(Path(py).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(dest / "repo")
    env["COLUMNS"] = "80"
    env.pop("CCXML_PURE", None)
    return env


@dataclass
class Outcome:
    cmd: Command
    ran: bool
    returncode: int | None = None
    output: str = ""
    reason: str = ""          # why it did not run, or what went wrong

    @property
    def ok(self) -> bool:
        return not self.ran or not self.reason


def run_doc(path: Path, workdir: Path, *, until: int | None = None, timeout: float = 900,
            mpi: bool = True, invoke=None) -> list[Outcome]:
    """Run the commands of one doc in order in a fresh copy of the repository under ``workdir``
    (``until``: stop after the command at that index). Lines that install a plugin are not run,
    nor the rest of their block (tests/cli/test_plugins.py installs it into a fresh venv);
    ``mpiexec`` lines are not run where mpi4py or mpiexec is missing or ``mpi`` is False.
    ``invoke(args, cwd) -> (exit code, output)``, if given, runs a line that is one plain
    ``ccxml ...`` command in-process instead of in a new process (the fast tests)."""
    cmds = commands(path)
    env = make_sandbox(workdir)
    root = workdir / "repo"
    have_mpi = mpi and shutil.which("mpiexec", path=env["PATH"]) is not None and _has_mpi4py()
    out: list[Outcome] = []
    skip_block_from = None
    for i, cmd in enumerate(cmds):
        if until is not None and i > until:
            break
        if needs_install(cmd):
            skip_block_from = cmd
        if skip_block_from is not None and _same_block(path, skip_block_from, cmd):
            out.append(Outcome(cmd, False, reason="after a plugin install (tests/cli/test_plugins.py)"))
            continue
        line = runnable(cmd)
        if line is None:
            out.append(Outcome(cmd, False, reason="the set-up itself"))
            continue
        if line.startswith("mpiexec") and not have_mpi:
            out.append(Outcome(cmd, False, reason="no mpiexec/mpi4py"))
            continue
        parts = simple_commands(line)
        if invoke is not None and len(parts) == 1 and parts[0][0] == "ccxml" and not any(
                c in line for c in "|;&<>$*?`"):
            returncode, text = invoke(parts[0][1:], root)
        else:
            try:
                p = subprocess.run(["bash", "-c", line], cwd=root, env=env, capture_output=True,
                                   text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                out.append(Outcome(cmd, True, None, "", f"timed out after {timeout:.0f} s"))
                continue
            returncode, text = p.returncode, p.stdout + p.stderr
        reason = ""
        if returncode != cmd.exit_code:
            reason = (f"exit {returncode}, expected {cmd.exit_code}: "
                      f"{text.strip().splitlines()[-1] if text.strip() else ''}")
        else:
            for ex in cmd.excerpts:
                miss = excerpt_missing(ex, text)
                if miss is not None:
                    reason = f"prints no {miss!r} (quoted: {ex!r})"
                    break
        out.append(Outcome(cmd, True, returncode, text, reason))
    return out


def _same_block(path: Path, first: Command, cmd: Command) -> bool:
    """True if ``cmd`` is in the same code block as ``first``, at or after it."""
    if cmd.lineno < first.lineno:
        return False
    lines = path.read_text(encoding="utf-8").splitlines()
    return not any(ln.lstrip().startswith("```") for ln in lines[first.lineno - 1:cmd.lineno - 1])


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True
