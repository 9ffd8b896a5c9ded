"""Tuning: cut the size range into windows, pick the fastest verified algorithm for each, and
write a directory the runtimes load as ``MSCCL_ALGO_DIR`` (the engine is :mod:`.engine`, the
directory and its manifest :mod:`.directory`)."""
from __future__ import annotations

from ccxml.tuning.directory import check_directory, manifest, write_algo_dir
from ccxml.tuning.engine import DEFAULT_COLLS, TUNABLE_COLLS, TuneConfig, TuneResult, tune
from ccxml.vocab.errors import TuneError

__all__ = ["DEFAULT_COLLS", "TUNABLE_COLLS", "TuneConfig", "TuneError", "TuneResult",
           "check_directory", "manifest", "tune", "write_algo_dir"]
