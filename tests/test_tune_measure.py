"""Counts from the simulator: a sample of a few workgroups and trips, scaled to the
launch, agrees with simulating the whole launch; the hand-made estimate agrees with
both well enough to rank by."""

from __future__ import annotations

import pytest

from simtify.errors import SimtifyError
from simtify.tune.estimate import estimate_counts
from simtify.tune.heuristic import simtify_suggestion
from simtify.tune.iree_heuristic import iree_suggestion
from simtify.tune.measure import (
    SIMULATED,
    _strides_agree,
    measure,
    samples_for,
    simulate_sample,
)
from simtify.tune.problem import DTYPES, ReductionProblem, dispatch_of
from simtify.tune.search import plan_for
from simtify.tune.space import config_of, points

CASES = [
    # (shape, reduction dims, dtype, operation, strategy)
    ("16x3000", [1], "f32", "sum", "iree-like"),
    ("2048x1024", [0], "f16", "sum", "simtify"),
    ("512x2048", [1], "f16", "matvec", "iree"),
    ("24x1000", [1], "f16", "sum", "iree"),  # TileAndFuse: one row per thread
]


def setup(shape, red, dtype, op, strategy):
    d = dispatch_of(ReductionProblem.create([int(s) for s in shape.split("x")], red, DTYPES[dtype], op))
    if strategy == "iree":
        config = iree_suggestion(d, "gfx942").config
    elif strategy == "simtify":
        config = simtify_suggestion(d, "gfx942").config
    else:  # 64 lanes x 4 per thread, 256 per trip: 12 trips and a masked tail of 184
        from simtify.layout.basis import Basis
        from simtify.layout.reduction_config import ReductionConfig

        config = ReductionConfig((1, 0), (0, 256), (0, 4), Basis((1, 64), (0, 1)), Basis((1, 1), (0, 1)))
    return d, plan_for(d, config, "gfx942")


@pytest.mark.parametrize("case", CASES, ids=[c[0] + "-" + c[3] for c in CASES])
def test_sample_scaled_agrees_with_the_whole_launch(case):
    d, plan = setup(*case)
    samples, _ = samples_for(plan, d)
    assert samples[0].workgroups < plan.workgroup_count or samples[0].sizes != d.sizes
    m = measure(d, plan, estimate_counts(plan, d), "gfx942")
    whole, smem = simulate_sample(d, plan.config, "gfx942", d.sizes, check=True)
    for key in SIMULATED:
        assert getattr(m.counts, key) == pytest.approx(whole[key], rel=0.03, abs=2), key
    assert m.counts.registers == whole["max_registers_per_thread"]
    assert m.counts.shared_memory_bytes == smem


@pytest.mark.parametrize("case", CASES, ids=[c[0] + "-" + c[3] for c in CASES])
def test_estimate_is_close_to_the_measurement(case):
    d, plan = setup(*case)
    est = estimate_counts(plan, d)
    m = measure(d, plan, est, "gfx942", check=False).counts
    assert est.global_sectors == pytest.approx(m.global_sectors, rel=0.25)
    assert est.shuffles == pytest.approx(m.shuffles, rel=0.01, abs=1)
    assert est.barriers == m.barriers
    assert est.registers == pytest.approx(m.registers, rel=0.6)


# Points of the search space that have no plan (their partial_reduction tile is not a
# multiple of subgroups x lanes x thread): at most this share of the points tried per
# problem (the largest is 2x4096's: 22% of all its points, 28% of those tried; 7% of all
# points of all these problems), and for no other reason.
MAX_UNPLANNED = 0.3
UNPLANNED_BECAUSE = "is not a multiple of subgroups x lanes x thread"
STRIDE_PROBLEMS = [("300x1000", [1]), ("1000x300", [0]), ("8x100x64", [1]), ("6x5x4096", [0, 2]), ("2x4096", [1])]


@pytest.mark.parametrize("dtype", ["f16", "f32", "i8"])
@pytest.mark.parametrize("shape_red", STRIDE_PROBLEMS, ids=[s for s, _ in STRIDE_PROBLEMS])
def test_samples_keep_every_stride_modulo_a_sector(shape_red, dtype):
    """Cutting dims must not change which lanes share a sector: every operand stride
    in a sample equals the full problem's modulo 32 bytes. Every 11th point of the
    space; those without a plan are counted, not skipped."""
    shape, red = shape_red
    d = dispatch_of(ReductionProblem.create([int(s) for s in shape.split("x")], red, DTYPES[dtype]))
    pts = list(points(d, (64,), 1024))[::11]
    unplanned = []
    for p in pts:
        try:
            plan = plan_for(d, config_of(d, p), "gfx942")
        except SimtifyError as e:
            unplanned.append(str(e))
            continue
        samples, trips = samples_for(plan, d)
        for s in samples:
            assert _strides_agree(d, s.sizes)
            assert all(0 < a <= b for a, b in zip(s.sizes, d.sizes))
        if len(samples) == 2:
            assert samples[0].steps < samples[1].steps <= trips
    assert len(unplanned) <= MAX_UNPLANNED * len(pts), f"{len(unplanned)} of {len(pts)} points have no plan"
    assert all(UNPLANNED_BECAUSE in why for why in unplanned), unplanned[:3]
