"""Hypothesis profiles of the fuzzing suite (tests/fuzz), registered here.

* ``fuzz-short``: few examples per property, so that the whole fuzzing suite adds well under
  30 s to the default test run (the properties use it through ``fuzzing.short()``);
* ``fuzz-long``: many examples, for the tests marked ``slow`` (``pytest -m slow tests/fuzz``);
  ``CCXML_FUZZ=long`` makes the default properties use it too.

No example database is written (``database=None``): a run leaves nothing behind, and a failure
prints the example that made it fail, to be added to tests/fuzz/seeds or to the regression list
(tests/fuzz/test_regressions.py).
"""
from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = dict(database=None, deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture,
                                      HealthCheck.filter_too_much])
settings.register_profile("fuzz-short", max_examples=5, **_COMMON)
settings.register_profile("fuzz-long", max_examples=200, **_COMMON)
