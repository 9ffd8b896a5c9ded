"""Every error ccxml raises on bad input, one class per layer that raises it.

All are ``ValueError`` subclasses (through :class:`CcxmlError`), and ``str(error)`` is one line:
the command line prints it and exits 2 (``verify``: 1 for a file that fails its proof). The
classes live here, at the bottom of the layers, so that a layer can raise — and a caller can
catch — the error of another without importing it.
"""
from __future__ import annotations


class CcxmlError(ValueError):
    """Base of every error below."""


# ---- vocabulary ---------------------------------------------------------------------------
class CollectiveError(CcxmlError):
    """A collective's parameters are inconsistent (bad root, indivisible chunk count, ...)."""


class SizeError(CcxmlError):
    """A size or sweep that cannot be read."""


class TopologyError(CcxmlError):
    """A topology is malformed or does not fit the rank count it is used with."""


# ---- compiler -----------------------------------------------------------------------------
class IRError(CcxmlError):
    """An IR invariant was broken by a caller (cross-GPU dependency, channel conflict, ...)."""


class ChunkError(CcxmlError):
    """A Chunk API call is invalid (out-of-range index, size mismatch, wrong rank...)."""


class AlgorithmError(CcxmlError):
    """Bad parameters for an algorithm (ranks < 2, root out of range, bad shape...)."""


class LimitError(CcxmlError):
    """The schedule breaks a limit of the target runtime and cannot be fixed by construction."""


class LinkError(CcxmlError):
    """A link rule is broken (two TBs on one connection, one-sided link, cnt mismatch)."""


# ---- loader, interpreter, simulator -------------------------------------------------------
class LoadError(CcxmlError):
    """The input is not a usable MSCCL XML file; ``str()`` is one line: file, line, what."""

    def __init__(self, path: str, line: int | None, what: str):
        self.path, self.line, self.what = path, line, what
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {what}")


class NotExecutable(CcxmlError):
    """The schedule cannot be run at all (unknown step type or buffer, no GPUs, ...)."""


class SimulationError(CcxmlError):
    """The schedule cannot be simulated (malformed step, unmatched receive, deadlock, ...)."""


class ExecutionError(CcxmlError):
    """``ccxml run`` cannot start: no MPI, a process count that is not the file's ngpus, ..."""


# ---- front ends ---------------------------------------------------------------------------
class MSCCLangError(CcxmlError):
    """An MSCCLang program cannot run: a feature ccxml does not serve, a call MSCCLang itself
    rejects, or data that does not match the program's collective."""


# ---- tools --------------------------------------------------------------------------------
class TuneError(CcxmlError):
    """Tuning cannot produce a usable directory (no candidate, bad directory, ...)."""


# ---- warnings -----------------------------------------------------------------------------
class PluginWarning(UserWarning):
    """An installed algorithm plugin cannot be used (its module does not import, registers
    nothing under its name, or takes a name already in use): it is left out, the rest works.
    The message is one line naming the plugin and its distribution; the command line prints
    it as ``ccxml: warning: ...``."""
