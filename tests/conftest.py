"""Tests marked `iree` use the IREE oracle (tests/iree_oracle.py): they are skipped, with
the reason, where iree-opt or iree-compile is not on PATH, and only they may run it.
Hypothesis profiles: by default the same cases every run (derandomized);
`HYPOTHESIS_PROFILE=thorough` runs the random-program generators with thousands of
random cases instead of hundreds."""

from __future__ import annotations

import os
from contextlib import ExitStack

import iree_oracle
import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytester"]


def pytest_configure(config):
    stack = ExitStack()
    stack.enter_context(iree_oracle.session())
    config.add_cleanup(stack.close)


def pytest_collection_modifyitems(config, items):
    reason = iree_oracle.skip_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker(iree_oracle.MARKER) is not None:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    with iree_oracle.running(item):
        return (yield)


# Hypothesis profiles: `HYPOTHESIS_PROFILE=thorough pytest ...` runs the random-program
# generators with thousands of cases (the default run keeps them to hundreds).
settings.register_profile("thorough", max_examples=3000, deadline=None, print_blob=True,
                          suppress_health_check=list(HealthCheck))
# Otherwise every run draws the same cases, as a CI run does: the README's test command
# passes or fails alike on every machine; `thorough` (random, thousands) is for hunting.
settings.register_profile("repeatable", derandomize=True, database=None, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
