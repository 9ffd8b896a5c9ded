"""The directory ``ccxml tune`` writes (the runtimes load it as ``MSCCL_ALGO_DIR``) and its
manifest beside it: :func:`write_algo_dir` puts a :class:`~ccxml.tuning.engine.TuneResult` in place
(all files at once, or none), :func:`directory_lock` keeps two runs from writing one directory,
:func:`check_directory` refuses a directory that holds anything but a previous run's files.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil

from ccxml.tuning.engine import _MULT_NGPUS, FORMS, MANIFEST_FORMAT, PROTOCOL_NOTE, TuneResult
from ccxml.vocab.errors import TuneError
from ccxml.vocab.wire import Coll


def manifest_path(directory: str | os.PathLike) -> str:
    """Where the manifest of ``directory`` goes: beside it, ``<directory>.manifest.json``."""
    d = os.path.normpath(os.fspath(directory))
    return d + ".manifest.json"


def manifest(result: TuneResult, dirname: str) -> dict:
    """The manifest document (JSON-serialisable, no timestamps, no absolute paths)."""
    cfg = result.config
    files = []
    for f in result.files:
        C = f.nchunksperloop
        files.append({
            "file": f.name, "coll": f.coll,
            "form": "in-place" if FORMS[f.form] else "out-of-place",
            "algorithm": f.algorithm, "proto": f.proto, "nchannels": f.nchannels,
            "window": {"min_bytes": f.min_bytes, "max_bytes": f.max_bytes},
            "nchunksperloop": C,
            "size_multiplier": cfg.ranks if f.coll in _MULT_NGPUS else 1,
            "eligible_nbytes_multiple_of": {"1-byte types": C, "2-byte types": 2 * C,
                                            "4-byte types": 4 * C, "8-byte types": 8 * C},
            "verification": f.verdict,
            "simulated": f.simulated,
            "sha256": f.sha256,
        })
    notes = [
        "Use the directory as MSCCL_ALGO_DIR; it holds only these files (the runtime reads every "
        "file there, and one bad file aborts its scan). This manifest stays outside it.",
        "Windows are inclusive at both ends (minBytes <= nBytes <= maxBytes, maxBytes 0 = no "
        "upper bound) and do not overlap, so the scan order (sorted paths in the executor, "
        "readdir order in RCCL) does not matter; nBytes is the runtime's count*typeSize*mult "
        "(allgather: output, reducescatter: input, alltoall: total send size).",
        "A file serves a call only if (count*mult) % nchunksperloop == 0, i.e. nBytes is a "
        "multiple of typeSize*nchunksperloop (eligible_nbytes_multiple_of); other sizes in the "
        "window fall back to NCCL/RCCL. The external msccl-scheduler plugin tests "
        "count % nchunksperloop without mult, which is stricter for allgather, reducescatter "
        "and alltoall.",
        "Each window's algorithm is the fastest under the simulator at the sampled sizes, with "
        "the changes between two samples located by bisection; the simulated figures are those "
        "of the written file, runner_up the next-fastest candidate, bound_busbw_GBps the "
        "topology's bound (no schedule can be faster: the bytes its busiest cut must pass over "
        "that cut's bandwidth, bound_cut).",
        ("The topology is a network: every transfer shares the links of its route (ports, NICs, "
         "switches) max-min fairly with the transfers in flight there."
         if cfg.topology.is_network else
         "The topology gives every pair of ranks its own full-duplex link (dedicated links), "
         "which favours many-link algorithms (mesh) more than real NICs and switches do; use "
         "--preset or a [network] topology for shared links."),
        "Protocol: " + PROTOCOL_NOTE + ".",
    ]
    if any(Coll(c).rooted for c in cfg.colls):
        notes.append(f"broadcast/reduce files are written for root {cfg.root}; the runtime never "
                     f"checks the root, so install them only if every call uses root {cfg.root}.")
    notes.extend(cfg.topology.notes())
    notes.extend(result.notes)
    return {
        "format": MANIFEST_FORMAT,
        "directory": dirname,
        "ranks": cfg.ranks,
        "target": cfg.target,
        "topology": cfg.topology.to_dict(),
        "collectives": list(cfg.colls),
        "forms": ["in-place" if FORMS[f] else "out-of-place" for f in cfg.forms],
        "algorithms": list(cfg.algorithms) if cfg.algorithms is not None else "all available",
        "range": {"min_bytes": cfg.min_bytes, "max_bytes": cfg.max_bytes,
                  "sample_factor": cfg.factor},
        "root": cfg.root if any(Coll(c).rooted for c in cfg.colls) else None,
        "channels": cfg.channels,
        "files": files,
        "skipped": result.skipped,
        "rejected": result.rejected,
        "notes": notes,
    }


def manifest_text(result: TuneResult, dirname: str) -> str:
    return json.dumps(manifest(result, dirname), indent=2) + "\n"


def _write_new(path: str, text: str) -> None:
    """Create ``path`` (must not exist) with ``text``; normal permissions (0666 & ~umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _previous_files(directory: str) -> set[str] | None:
    """File names the manifest beside ``directory`` lists (None without a readable manifest)."""
    try:
        with open(manifest_path(directory), encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("format") != MANIFEST_FORMAT:
            return None
        return {e["file"] for e in doc.get("files", []) if isinstance(e, dict) and "file" in e}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None


def _resolved(directory: str | os.PathLike) -> str:
    """``directory`` normalised; a symbolic link: the directory it points to (which is written,
    the link staying as it is)."""
    d = os.path.normpath(os.fspath(directory))
    return os.path.realpath(d) if os.path.islink(d) else d


def lock_path(directory: str | os.PathLike) -> str:
    """The lock file of ``directory``: beside the directory written, ``.NAME.ccxml-lock``."""
    d = _resolved(directory)
    return os.path.join(os.path.dirname(os.path.abspath(d)), f".{os.path.basename(d)}.ccxml-lock")


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike):
    """Hold ``directory``'s lock for the block (:func:`ccxml.vocab.files.exclusive_lock`), with
    SIGTERM and SIGHUP unwinding it (no staging directory, lock or temporary file is left);
    raise :class:`TuneError` at once when another process holds it."""
    from ccxml.vocab.files import exclusive_lock, signals_raise
    check_directory(directory)              # a bad name is said before any lock file is made
    path = lock_path(directory)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        raise TuneError(f"cannot write {os.fspath(directory)}: {e.strerror or e}") from None
    with signals_raise(), exclusive_lock(path) as holder:
        if holder is not None:
            pid = f" (pid {holder})" if holder else ""
            raise TuneError(f"another ccxml tune is writing {os.fspath(directory)}{pid}; "
                            f"wait for it to finish")
        yield


def check_directory(directory: str | os.PathLike) -> None:
    """Raise :class:`TuneError` unless ``directory`` is absent, empty, or holds only files the
    manifest beside it lists (a previous ``ccxml tune``); nothing else may be replaced. A
    symbolic link to such a directory is followed."""
    given = os.path.normpath(os.fspath(directory))
    if os.path.basename(given) in ("", ".", "..") or os.path.abspath(given) == os.path.dirname(os.path.abspath(given)):
        raise TuneError(f"-o {os.fspath(directory)}: name a directory of its own (e.g. out/msccl-algorithms)")
    d = _resolved(given)
    if not os.path.exists(d):
        return
    if not os.path.isdir(d):
        raise TuneError(f"{given} exists and is not a directory")
    entries = sorted(os.listdir(d))
    if not entries:
        return
    known = _previous_files(d) or set()
    foreign = [e for e in entries if e not in known or not os.path.isfile(os.path.join(d, e))]
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise TuneError(f"{d} holds {foreign[0]!r}{more}, which ccxml tune did not write; "
                        f"use a new or empty directory")


def write_algo_dir(result: TuneResult, directory: str | os.PathLike) -> str:
    """Install ``result`` as ``directory`` (replacing a previous tune's) and write the manifest
    beside it. Returns the manifest path.

    The files are written into a hidden staging directory next to ``directory`` and swapped in
    by renames, so the directory never holds a partial set, a temporary file or a stale file.
    A symbolic link is followed: the directory it names is replaced, the link stays. Two runs
    must not write one directory at once: hold :func:`directory_lock` around this.
    """
    given = os.path.normpath(os.fspath(directory))
    check_directory(given)
    d = _resolved(given)
    parent = os.path.dirname(os.path.abspath(d))
    name = os.path.basename(d)
    os.makedirs(parent, exist_ok=True)
    from ccxml.writer.files import current_umask, write_atomic
    mode = 0o777 & ~current_umask()
    # names chosen before anything is made, so that the cleanup below knows them whenever an
    # exception (or SIGTERM, see directory_lock) lands
    staging = os.path.join(parent, f".{name}.ccxml-new-{os.urandom(4).hex()}")
    old = None
    try:
        os.mkdir(staging, 0o700)
        os.chmod(staging, mode)
        for f in result.files:
            _write_new(os.path.join(staging, f.name), f.text)
        if os.path.exists(d):
            old = os.path.join(parent, f".{name}.ccxml-old-{os.urandom(4).hex()}")
            os.rename(d, old)
            os.rename(staging, d)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, d)
    except BaseException:
        if old is not None and os.path.lexists(old):
            if os.path.lexists(d):          # the new directory is in: the old one goes
                shutil.rmtree(old, ignore_errors=True)
            else:                           # stopped between the two renames: put it back
                os.rename(old, d)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    mpath = manifest_path(given)
    write_atomic(mpath, manifest_text(result, os.path.basename(given)))
    return mpath
