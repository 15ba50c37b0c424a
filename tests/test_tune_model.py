"""The cost model's regimes on made-up launches: memory-bound at the roofline,
latency-bound below Little's law, occupancy limits, the last wave's tail, spills."""

from __future__ import annotations

from dataclasses import replace
from math import inf

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtify.target import get_target
from simtify.tune import model
from simtify.tune.model import KernelCounts, predict, roofline_seconds

GFX942 = get_target("gfx942")


def launch(workgroups=1216, threads=256, trips=4, bytes_per_wg=64 * 1024, **kw) -> KernelCounts:
    """A reduction-like launch: every workgroup reads `bytes_per_wg` in `trips` trips."""
    base = {"workgroups": workgroups, "threads": threads, "subgroup_size": 64, "trips": trips,
            "footprint_bytes": workgroups * bytes_per_wg, "global_sectors": workgroups * bytes_per_wg // 32,
            "memory_instructions": workgroups * threads // 64 * trips * 4,
            "element_ops": workgroups * bytes_per_wg // 4, "flops": workgroups * bytes_per_wg // 4, "registers": 32}
    base.update(kw)
    return KernelCounts(**base)


def test_big_launches_are_memory_bound_at_the_roofline():
    k = launch(workgroups=100_000, bytes_per_wg=256 * 1024, trips=16, threads=1024)
    p = predict(k, GFX942)
    assert p.regime == "memory"
    assert p.seconds == pytest.approx(roofline_seconds(k, GFX942), rel=0.03)


def test_small_launches_wait_on_latency():
    k = launch(workgroups=4, trips=3)
    p = predict(k, GFX942)
    assert p.regime == "latency"
    assert p.seconds >= 4 * GFX942.memory_latency_ns * 1e-9  # three trips and the output
    assert predict(launch(workgroups=4, trips=6), GFX942).seconds > p.seconds


def test_littles_law_separates_the_regimes():
    """A wave is memory-bound when its bytes per trip exceed bandwidth x latency."""
    in_flight = GFX942.memory_bandwidth_bytes_per_s * GFX942.memory_latency_ns * 1e-9
    wg = 1216  # one wave of 4 workgroups per CU
    small = launch(workgroups=wg, trips=1, bytes_per_wg=int(0.2 * in_flight / wg))
    large = launch(workgroups=wg, trips=1, bytes_per_wg=int(5 * in_flight / wg))
    assert predict(small, GFX942).regime == "latency"
    assert predict(large, GFX942).regime == "memory"


@pytest.mark.parametrize("counts,limit,expected", [
    ({"threads": 1024}, "threads", 2),
    ({"threads": 256, "registers": 256}, "registers", 2),
    ({"threads": 64, "shared_memory_bytes": 40 * 1024}, "workgroup memory", 1),
    ({"threads": 64}, "workgroup slots", 32),
])
def test_occupancy_limits(counts, limit, expected):
    occ, name, why = model.occupancy(launch(**counts), GFX942)
    assert (occ, name, why) == (expected, limit, None)


def test_the_last_wave_is_a_tail():
    """One workgroup more than a wave holds costs a whole latency-bound wave."""
    wave = 304 * 8  # 256 threads: 8 per CU
    full = predict(launch(workgroups=wave), GFX942).seconds
    plus = predict(launch(workgroups=wave + 1), GFX942)
    assert plus.waves > 1
    assert plus.seconds >= full + predict(launch(workgroups=1), GFX942).seconds * 0.99


def test_spilled_registers_cost_time_not_correctness():
    fits = launch(threads=512, registers=200)
    spills = replace(fits, registers=400)  # over a 512-thread workgroup's share (256)
    p = predict(spills, GFX942)
    assert p.seconds > predict(fits, GFX942).seconds and "spilled" in p.occupancy_limit


def test_what_cannot_run():
    p = predict(launch(shared_memory_bytes=GFX942.shared_memory_bytes + 1), GFX942)
    assert p.seconds == inf and p.regime == "cannot run" and "workgroup memory" in p.why_not


def test_roofline_follows_the_slower_of_memory_and_compute():
    k = launch()
    base = roofline_seconds(k, GFX942)
    # memory-bound: time scales with the bytes, extra arithmetic is free
    assert roofline_seconds(replace(k, footprint_bytes=2 * k.footprint_bytes), GFX942) == pytest.approx(2 * base)
    assert roofline_seconds(replace(k, flops=2 * k.flops), GFX942) == base
    # compute-bound: time scales with the flops, fewer bytes do not help
    heavy = replace(k, flops=10**15)
    t = roofline_seconds(heavy, GFX942)
    assert t > 10 * base
    assert roofline_seconds(replace(heavy, flops=2 * 10**15), GFX942) == pytest.approx(2 * t)
    assert roofline_seconds(replace(heavy, footprint_bytes=k.footprint_bytes // 2), GFX942) == t


def test_each_trip_of_a_latency_bound_launch_waits_one_memory_latency():
    """The known limit "a loop trip waits one latency" (no overlap of trips), as
    behaviour: four more trips of the same bytes cost four latencies and their issue."""
    latency = GFX942.memory_latency_ns * 1e-9
    short, long = (predict(launch(workgroups=4, trips=n), GFX942) for n in (4, 8))
    assert short.regime == long.regime == "latency"
    assert long.seconds - short.seconds == pytest.approx(4 * latency, rel=0.1)


def test_waves_are_synchronous():
    """The known limit "waves are synchronous", as behaviour: two full waves take twice
    one, and a launch one workgroup short of a wave takes as long as the full wave."""
    wave = 304 * 8  # 256 threads: 8 per CU
    one = predict(launch(workgroups=wave), GFX942).seconds
    assert predict(launch(workgroups=2 * wave), GFX942).seconds == pytest.approx(2 * one)
    assert predict(launch(workgroups=wave - 1), GFX942).seconds == pytest.approx(one, rel=0.01)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10**6), st.sampled_from([64, 128, 256, 512, 1024]), st.integers(1, 64),
       st.sampled_from(["gfx942", "gfx950", "sm_90", "xe"]))
def test_never_faster_than_the_roofline_and_monotone_in_bandwidth(workgroups, threads, trips, target):
    tgt = get_target(target)
    k = launch(workgroups=workgroups, threads=threads, trips=trips, subgroup_size=tgt.subgroup_size)
    p = predict(k, tgt)
    assert p.seconds >= roofline_seconds(k, tgt) * 0.999
    slower = replace(tgt, memory_bandwidth_bytes_per_s=tgt.memory_bandwidth_bytes_per_s / 2)
    assert predict(k, slower).seconds >= p.seconds
