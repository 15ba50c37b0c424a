"""The nested random programs, and what simtify distributes them to, must be IR upstream
reads: IREE 3.12's iree-opt parses and verifies each program and its distribution. The
simulation checks in `test_distribute_random_dag.py` cannot see a printed form upstream
refuses. (iree-opt has no XeGPU dialect, so the XeGPU generator's output is not checked
here.)"""

from __future__ import annotations

import pytest
from distribution_harness import distribute_text
from hypothesis import HealthCheck, given, settings
from iree_oracle import iree_opt_accepts
from test_distribute_random_dag import dag_programs


@pytest.mark.iree
@settings(max_examples=max(30, settings.default.max_examples), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(dag_programs())
def test_nested_random_programs_and_their_distribution_are_accepted(case):
    text, sg, threads, _grid, target, _is_float = case
    out = distribute_text(text, subgroup_size=sg, workgroup_size=threads, target=target)
    ok, errors = iree_opt_accepts(f"{text}\n// -----\n{out}", "--split-input-file")
    assert ok, f"{errors}\n{out}"
