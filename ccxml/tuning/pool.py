"""The pool of worker processes moved to :mod:`ccxml.driver.pool` (``select`` ranks its
candidates there too, below tuning); this name stays for the code that imports it from here."""
from __future__ import annotations

from ccxml.driver.pool import Pool, default_jobs, run_all

__all__ = ["Pool", "default_jobs", "run_all"]
