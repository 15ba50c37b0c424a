"""IREE's own nested-layout distribution tests (fixtures adapted from
gpu_nested_layout_vector_distribution*.mlir): simtify's distribution of each is checked
by simulation against the workgroup-level input; IREE 3.12's output is simulated too
(when iree-opt is installed), and simtify's counters are compared with IREE's."""

from __future__ import annotations

from functools import cache

import pytest
from iree_side_by_side import (
    IREE_NOT_PASSING,
    SIMTIFY_COSTLIER,
    SIMTIFY_REFUSES,
    fixtures,
    side_by_side,
)

NAMES = [p.stem for p in fixtures()]
PATHS = {p.stem: p for p in fixtures()}
COUNTERS_AT_OR_BELOW = ("shuffles", "barriers", "shared_bank_conflicts", "global_sectors")


@cache
def result(name: str, side: str) -> dict:
    """One side of one fixture ("simtify" or "iree"), computed once for the tests below."""
    return side_by_side(PATHS[name], sides=(side,))


def test_fixtures_exist():
    assert len(NAMES) >= 50


@pytest.mark.parametrize("name", NAMES)
def test_simtify_distributes_iree_inputs(name):
    r = result(name, "simtify")
    assert r["reference"] is None, r["reference"]
    side = r["simtify"]
    if name in SIMTIFY_REFUSES:
        assert side.status != "pass" and SIMTIFY_REFUSES[name] in side.detail, side.detail
    else:
        assert side.status == "pass", side.detail + "\n" + side.text


@pytest.mark.iree
@pytest.mark.parametrize("name", NAMES)
def test_iree_on_its_own_inputs(name):
    s, i = result(name, "simtify")["simtify"], result(name, "iree")["iree"]
    status, why = IREE_NOT_PASSING.get(name, ("pass", ""))
    assert i.status == status and why in i.detail, i.detail
    if s.status == "pass" and i.status == "pass":
        for key in COUNTERS_AT_OR_BELOW:
            if SIMTIFY_COSTLIER.get(name) != key:
                assert s.stats[key] <= i.stats[key], (key, s.stats, i.stats)
