"""The tuner: its space is valid and runs right, its pick is never worse than IREE's
by the model on measured counts, and it is deterministic with or without workers."""

from __future__ import annotations

import pytest

from simtify.target import get_target
from simtify.tune.heuristic import simtify_suggestion
from simtify.tune.measure import simulate_sample
from simtify.tune.problem import DTYPES, ReductionProblem, dispatch_of
from simtify.tune.search import plan_for, rank, tune
from simtify.tune.space import config_of, points

SMALL = [
    ("4096x32", [1], "f16", "sum"),  # IREE: TileAndFuse, a row per thread
    ("7x1000", [1], "f32", "sum"),  # ragged
    ("512x128", [0], "f16", "sum"),  # outer reduction
    ("64x512", [1], "f16", "matvec"),
    ("3x5x7", [0, 1, 2], "f32", "sum"),  # IREE: Distribute, one thread
    ("256x1024", [1], "f32", "sum"),  # IREE: VectorDistribute
]


def problem(shape, red, dtype, op) -> ReductionProblem:
    return ReductionProblem.create([int(s) for s in shape.split("x")], red, DTYPES[dtype], op)


@pytest.mark.parametrize("case", SMALL, ids=[f"{c[3]}-{c[0]}" for c in SMALL])
def test_never_worse_than_iree(case):
    r = tune(problem(*case), "gfx942", jobs=1, top=2)
    assert r.best.checked is not None and r.best.error is None
    assert r.best.seconds <= r.iree_predicted_s
    assert r.roofline_s <= r.best.seconds
    if r.iree_candidate is not None:  # IREE's config was simulated and is among the checked
        assert r.iree_candidate.checked is not None and r.iree_candidate in r.checked
    assert r.simtify is not None and r.simtify.checked is not None


def test_workers_change_nothing():
    p = problem("1024x96", [1], "f16", "sum")
    one, two = tune(p, "gfx942", jobs=1, top=3), tune(p, "gfx942", jobs=2, top=3)
    assert one.to_json() == two.to_json()
    assert [str(c.config) for c in one.checked] == [str(c.config) for c in two.checked]


def test_the_space_includes_expand_dims_splits_that_run():
    d = dispatch_of(problem("64x1024", [1], "f16", "sum"))
    ranked, tried = rank(d, "gfx942")
    assert tried >= len(ranked) > 100
    expanded = [c for c in ranked if c.config.expand_dims is not None]
    assert expanded and all(c.plan.expansion is not None for c in expanded)
    for c in (expanded[0], expanded[-1]):
        simulate_sample(d, c.config, "gfx942", (8, 1024), check=True)


def test_points_respect_the_target():
    d = dispatch_of(problem("1000x1000", [1], "f32", "sum"))
    tgt = get_target("gfx942")
    for p in points(d, (64,), tgt.max_workgroup_size):
        c = config_of(d, p)
        assert c.lane_basis.size == 64 and c.subgroup_basis.size * 64 <= tgt.max_workgroup_size


@pytest.mark.parametrize("case", [("300x1000", [1], "f16", "sum"), ("1000x300", [0], "f32", "sum"),
                                  ("8x100x64", [1], "f32", "sum"), ("1x4096", [1], "f16", "sum"),
                                  ("96x96", [1], "i8", "sum"), ("32x256", [1], "f32", "matvec")])
@pytest.mark.parametrize("target", ["gfx942", "sm_90", "xe"])
def test_simtify_heuristic_configs_plan_and_compute(case, target):
    d = dispatch_of(problem(*case))
    s = simtify_suggestion(d, target)
    plan = plan_for(d, s.config, target)
    assert s.workgroup_size == plan.threads and s.subgroup_size == get_target(target).subgroup_size
    sizes = tuple(min(n, 40) if k < d.num_parallel else n for k, n in enumerate(d.sizes))
    simulate_sample(d, s.config, target, sizes, check=True)
