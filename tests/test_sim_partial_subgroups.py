"""Workgroups that are not whole subgroups: a block of T threads runs ceil(T / sg)
subgroups of the launch's size, the lanes past T inactive from the start; shuffles and
subgroup reductions that read an inactive lane are reported and read an undefined
(visibly garbage) value."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtify.cli.main import main
from simtify.ir import parse
from simtify.sim import run

KIND = "inactive-lane-read"
SHUFFLE_SUM = str(Path(__file__).parent / "kernels" / "shuffle_sum.mlir")

# A butterfly sum written for 64 lanes: every real thread writes its lane's total.
XOR_SUM = """
func.func @xor_sum(%in: memref<64xf32>, %out: memref<64xf32>) {
  %w = arith.constant 64 : i32
  %o32 = arith.constant 32 : i32
  %o16 = arith.constant 16 : i32
  %o8 = arith.constant 8 : i32
  %o4 = arith.constant 4 : i32
  %o2 = arith.constant 2 : i32
  %o1 = arith.constant 1 : i32
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<64xf32>
  %s0, %p0 = gpu.shuffle xor %v, %o32, %w : f32
  %a0 = arith.addf %v, %s0 : f32
  %s1, %p1 = gpu.shuffle xor %a0, %o16, %w : f32
  %a1 = arith.addf %a0, %s1 : f32
  %s2, %p2 = gpu.shuffle xor %a1, %o8, %w : f32
  %a2 = arith.addf %a1, %s2 : f32
  %s3, %p3 = gpu.shuffle xor %a2, %o4, %w : f32
  %a3 = arith.addf %a2, %s3 : f32
  %s4, %p4 = gpu.shuffle xor %a3, %o2, %w : f32
  %a4 = arith.addf %a3, %s4 : f32
  %s5, %p5 = gpu.shuffle xor %a4, %o1, %w : f32
  %sum = arith.addf %a4, %s5 : f32
  memref.store %sum, %out[%t] : memref<64xf32>
  return
}
"""

# Ids and a 16-lane cluster reduction; with 96 threads on wave64 the clusters of the
# second subgroup's active lanes (0..31) are whole, the others wholly inactive.
IDS = """
func.func @ids(%in: memref<96xi32>, %out: memref<96x5xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %t = gpu.thread_id x
  %s = gpu.subgroup_id : index
  %l = gpu.lane_id
  %n = gpu.num_subgroups : index
  %v = memref.load %in[%t] : memref<96xi32>
  %r = gpu.subgroup_reduce add %v cluster(size = 16) : (i32) -> i32
  %ti = arith.index_cast %t : index to i32
  %si = arith.index_cast %s : index to i32
  %li = arith.index_cast %l : index to i32
  %ni = arith.index_cast %n : index to i32
  memref.store %ti, %out[%t, %c0] : memref<96x5xi32>
  memref.store %si, %out[%t, %c1] : memref<96x5xi32>
  memref.store %li, %out[%t, %c2] : memref<96x5xi32>
  memref.store %ni, %out[%t, %c3] : memref<96x5xi32>
  memref.store %r, %out[%t, %c4] : memref<96x5xi32>
  return
}
"""

# One shuffle and one load per thread: counters of a partial subgroup.
ONE_SHUFFLE = """
func.func @one_shuffle(%in: memref<128xf32>, %out: memref<128xf32>) {
  %w = arith.constant 64 : i32
  %o1 = arith.constant 1 : i32
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<128xf32>
  %s, %p = gpu.shuffle xor %v, %o1, %w : f32
  memref.store %s, %out[%t] : memref<128xf32>
  return
}
"""

# Neighbour exchange through workgroup memory across a barrier (96 threads).
EXCHANGE = """
func.func @exchange(%in: memref<96xf32>, %out: memref<96xf32>) {
  %c1 = arith.constant 1 : index
  %c96 = arith.constant 96 : index
  %buf = memref.alloc() : memref<96xf32, #gpu.address_space<workgroup>>
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<96xf32>
  memref.store %v, %buf[%t] : memref<96xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %n = arith.addi %t, %c1 : index
  %j = arith.remui %n, %c96 : index
  %u = memref.load %buf[%j] : memref<96xf32, #gpu.address_space<workgroup>>
  memref.store %u, %out[%t] : memref<96xf32>
  return
}
"""

# A barrier only the first 50 of 96 threads reach.
HALF_BARRIER = """
func.func @half_barrier(%out: memref<96xf32>) {
  %c50 = arith.constant 50 : index
  %t = gpu.thread_id x
  %low = arith.cmpi ult, %t, %c50 : index
  scf.if %low {
    gpu.barrier
  }
  return
}
"""

# 40 threads, width 40: a lane whose source is past the width gets valid = false and
# keeps its own value (the program's own guard); no inactive lane is read as valid.
GUARDED = """
func.func @guarded(%in: memref<40xf32>, %out: memref<40xf32>) {
  %w = arith.constant 40 : i32
  %o32 = arith.constant 32 : i32
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<40xf32>
  %s, %ok = gpu.shuffle xor %v, %o32, %w : f32
  %r = arith.select %ok, %s, %v : f32
  memref.store %r, %out[%t] : memref<40xf32>
  return
}
"""

# A whole-subgroup reduction (64 lanes) launched with 40 threads.
FULL_REDUCE = """
func.func @full_reduce(%in: memref<64xf32>, %out: memref<64xf32>) {
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<64xf32>
  %r = gpu.subgroup_reduce add %v : (f32) -> f32
  memref.store %r, %out[%t] : memref<64xf32>
  return
}
"""

# Lanes masked off by a divergent scf.if are inactive too: lanes 0..15 read lanes 32..47.
DIVERGENT = """
func.func @divergent(%in: memref<64xi32>, %out: memref<64xi32>) {
  %c16 = arith.constant 16 : index
  %w = arith.constant 64 : i32
  %o32 = arith.constant 32 : i32
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<64xi32>
  %low = arith.cmpi ult, %t, %c16 : index
  scf.if %low {
    %s, %ok = gpu.shuffle xor %v, %o32, %w : i32
    memref.store %s, %out[%t] : memref<64xi32>
  }
  return
}
"""

# Every thread of a 2-D block writes its ids at its linear thread id.
STORE_IDS = """
func.func @store_ids(%out: memref<256x3xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %x = gpu.thread_id x
  %y = gpu.thread_id y
  %bx = gpu.block_dim x
  %row = arith.muli %y, %bx : index
  %t = arith.addi %row, %x : index
  %l = gpu.lane_id
  %s = gpu.subgroup_id : index
  %ti = arith.index_cast %t : index to i32
  %li = arith.index_cast %l : index to i32
  %si = arith.index_cast %s : index to i32
  memref.store %ti, %out[%t, %c0] : memref<256x3xi32>
  memref.store %li, %out[%t, %c1] : memref<256x3xi32>
  memref.store %si, %out[%t, %c2] : memref<256x3xi32>
  return
}
"""

# A warp of 64 gathers one value per lane; with 40 threads lanes 40..63 hand over nothing.
WARP_SUM = """
func.func @warp_sum(%in: memref<64xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %lane = gpu.lane_id
  %v = vector.transfer_read %in[%lane], %pad {in_bounds = [true]} : memref<64xf32>, vector<1xf32>
  gpu.warp_execute_on_lane_0(%lane)[64] args(%v : vector<1xf32>) {
  ^bb0(%whole: vector<64xf32>):
    %s = vector.reduction <add>, %whole : vector<64xf32> into f32
    memref.store %s, %out[%c0] : memref<1xf32>
  }
  return
}
"""

RETURN_TID = """
func.func @return_tid() -> index {
  %t = gpu.thread_id x
  return %t : index
}
"""


@cache
def _module(text: str):
    return parse(text, "partial.mlir")


def _floats(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.1, 1.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)


def _ints(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 100, shape).astype(np.int32)


def _run(text: str, func: str, args: dict, block, **kw):
    return run(_module(text), func, args, grid=(1,), block=block, target="gfx942", **kw)


def _kinds(r) -> list[str]:
    return [f.kind for f in r.findings]


def _butterfly(x: np.ndarray) -> np.ndarray:
    """The xor butterfly in float32, in the kernel's order: bit-exact."""
    lane, v = np.arange(64), x.copy()
    for offset in (32, 16, 8, 4, 2, 1):
        v = v + v[lane ^ offset]
    return v


def test_xor_sum_on_a_full_subgroup_is_exact_and_clean():
    x = _floats(64, 1)
    r = _run(XOR_SUM, "xor_sum", {"in": x, "out": _floats(64, 2)}, (64,))
    assert r.findings == [] and r.launch.subgroup_size == 64
    np.testing.assert_array_equal(r.outputs["out"], _butterfly(x))
    np.testing.assert_allclose(r.outputs["out"], np.full(64, x.sum(dtype=np.float64)), rtol=1e-5)


def test_xor_sum_on_half_a_subgroup_reads_inactive_lanes():
    x, before = _floats(64, 3), _floats(64, 4)
    r = _run(XOR_SUM, "xor_sum", {"in": x, "out": before.copy()}, (32,))
    assert r.launch.subgroup_size == 64  # not shrunk to the block
    assert _kinds(r) == [KIND]
    f = r.findings[0]
    assert f.op == "gpu.shuffle" and f.location.startswith("partial.mlir:")
    assert f.threads == tuple(range(16))  # lanes 0..31 read 32..63: the first 16 readers named
    assert "threads 32..63" in f.detail and "past the block's 32 threads" in f.detail
    out = r.outputs["out"]
    assert np.isnan(out[:32]).all()  # undefined, not a plausible partial sum
    assert not np.isclose(out[:32], x[:32].sum()).any()
    np.testing.assert_array_equal(out[32:], before[32:])  # inactive lanes write nothing


def test_ninety_six_threads_on_wave64_run_two_subgroups():
    x = _ints(96, 5)
    r = _run(IDS, "ids", {"in": x, "out": -_ints((96, 5), 6)}, (96,))
    assert r.findings == []
    t = np.arange(96)
    want = np.stack([t, t // 64, t % 64, np.full(96, 2), x.reshape(6, 16).sum(axis=1).repeat(16)], axis=1)
    np.testing.assert_array_equal(r.outputs["out"], want)
    assert r.stats["shuffles"] == 2 * 4  # two subgroups, log2(16) steps each


def test_partial_subgroup_counters_count_active_lanes_only():
    x = _floats(128, 7)
    full = _run(ONE_SHUFFLE, "one_shuffle", {"in": x, "out": _floats(128, 8)}, (128,))
    part = _run(ONE_SHUFFLE, "one_shuffle", {"in": x, "out": _floats(128, 8)}, (96,))
    one = _run(ONE_SHUFFLE, "one_shuffle", {"in": x, "out": _floats(128, 8)}, (32,))
    assert full.stats["shuffles"] == part.stats["shuffles"] == 2 and one.stats["shuffles"] == 1
    # 96 active lanes load and store 4 contiguous bytes each: 12 sectors of 32 bytes per access
    assert part.stats["global_bytes"] == 2 * 96 * 4 and part.stats["global_sectors"] == 2 * 12
    assert full.stats["global_sectors"] == 2 * 16 and one.stats["global_sectors"] == 2 * 4
    # lane 31 of the 32-thread launch reads lane 30 only: no inactive lane involved
    assert one.findings == [] and part.findings == []
    np.testing.assert_array_equal(part.outputs["out"][:96], x[np.arange(96) ^ 1])


def test_a_barrier_of_every_real_thread_is_not_divergent():
    x = _floats(96, 9)
    r = _run(EXCHANGE, "exchange", {"in": x, "out": _floats(96, 10)}, (96,))
    assert r.findings == [] and r.stats["barriers"] == 1
    np.testing.assert_array_equal(r.outputs["out"], np.roll(x, -1))


def test_a_barrier_some_real_threads_skip_is_divergent():
    r = _run(HALF_BARRIER, "half_barrier", {"out": _floats(96, 11)}, (96,))
    assert _kinds(r) == ["divergent-barrier"] and "50 of 96 threads" in r.findings[0].detail


def test_a_shuffle_guarded_by_its_valid_bit_is_not_flagged():
    x = _floats(40, 12)
    r = _run(GUARDED, "guarded", {"in": x, "out": _floats(40, 13)}, (40,))
    assert r.findings == []
    lane = np.arange(40)
    src = lane ^ 32
    np.testing.assert_array_equal(r.outputs["out"], np.where(src < 40, x[np.minimum(src, 39)], x))


def test_a_whole_subgroup_reduce_with_40_threads_is_flagged():
    x = _floats(64, 14)
    r = _run(FULL_REDUCE, "full_reduce", {"in": x, "out": _floats(64, 15)}, (40,))
    assert _kinds(r) == [KIND] and r.findings[0].op == "gpu.subgroup_reduce"
    assert r.findings[0].threads == tuple(range(16))
    assert np.isnan(r.outputs["out"][:40]).all()


CLUSTER_REDUCE = FULL_REDUCE.replace("add %v :", "add %v cluster(size = 16) :")


def test_only_clusters_straddling_the_block_end_are_flagged():
    x = _ints(64, 24).astype(np.float32)  # small integers: exact sums in any order
    r = _run(CLUSTER_REDUCE, "full_reduce", {"in": x, "out": _floats(64, 25)}, (40,))
    assert _kinds(r) == [KIND] and r.findings[0].threads == tuple(range(32, 40))
    assert "threads 40..47" in r.findings[0].detail
    out = r.outputs["out"]
    np.testing.assert_array_equal(out[:32], x[:32].reshape(2, 16).sum(axis=1).repeat(16))
    assert np.isnan(out[32:40]).all()


def test_a_full_reduce_on_64_threads_is_clean():
    x = _floats(64, 16)
    r = _run(FULL_REDUCE, "full_reduce", {"in": x, "out": _floats(64, 17)}, (64,))
    assert r.findings == []
    np.testing.assert_allclose(r.outputs["out"], np.full(64, x.sum(dtype=np.float64)), rtol=1e-5)


def test_lanes_masked_off_by_divergence_are_inactive_and_read_poison():
    x, before = _ints(64, 18), -_ints(64, 19)
    r = _run(DIVERGENT, "divergent", {"in": x, "out": before.copy()}, (64,))
    assert _kinds(r) == [KIND] and r.findings[0].threads == tuple(range(16))
    out = r.outputs["out"]
    assert (out[:16] == np.iinfo(np.int32).min).all()  # a fixed poison pattern, not lane 32's value
    np.testing.assert_array_equal(out[16:], before[16:])


@pytest.mark.parametrize("threads", [40, 64])
def test_a_partial_warp_hands_undefined_pieces_to_warp_execute_on_lane_0(threads):
    x = _floats(64, 22)
    r = _run(WARP_SUM, "warp_sum", {"in": x, "out": _floats(1, 23)}, (threads,))
    if threads == 64:
        assert r.findings == []
        np.testing.assert_allclose(r.outputs["out"], [x.sum(dtype=np.float64)], rtol=1e-5)
    else:
        assert _kinds(r) == [KIND] and r.findings[0].op == "gpu.warp_execute_on_lane_0"
        assert "threads 40..63" in r.findings[0].detail and np.isnan(r.outputs["out"]).all()


def test_without_sanitizers_the_read_is_still_undefined_but_unreported():
    x = _floats(64, 20)
    r = _run(XOR_SUM, "xor_sum", {"in": x, "out": _floats(64, 21)}, (32,), sanitize=False)
    assert r.findings == [] and np.isnan(r.outputs["out"][:32]).all()


def test_returned_per_thread_values_have_the_real_threads_only():
    r = _run(RETURN_TID, "return_tid", {}, (40,))
    np.testing.assert_array_equal(np.broadcast_to(r.returns[0], (1, 40)), np.arange(40)[None])
    assert r.returns[0].shape[1] == 40


@settings(max_examples=40, deadline=None)
@given(bx=st.integers(1, 64), by=st.integers(1, 4),
       target=st.sampled_from([("gfx942", 64), ("sm_90", 32), ("xe", 16), ("xe", 32)]))
def test_every_real_thread_writes_once_and_nothing_else_is_written(bx, by, target):
    name, sg = target
    T = bx * by
    before = -_ints((256, 3), T)
    r = run(_module(STORE_IDS), "store_ids", {"out": before.copy()}, grid=(1,), block=(bx, by),
            target=name, subgroup_size=sg)
    assert r.findings == [] and r.launch.subgroup_size == sg
    t = np.arange(T)
    out = r.outputs["out"]
    np.testing.assert_array_equal(out[:T], np.stack([t, t % sg, t // sg], axis=1))
    np.testing.assert_array_equal(out[T:], before[T:])


def test_cli_reports_the_inactive_lane_read(capsys):
    code = main(["run", SHUFFLE_SUM, "--func", "subgroup_sum", "--grid", "8", "--block", "32", "--arg", "in=random",
                 "--arg", "out=random", "--sanitize"])
    out = capsys.readouterr().out
    assert code == 1
    assert "subgroup 64 (last subgroup: 32 of 64 lanes active)" in out
    assert f"sanitizer: {SHUFFLE_SUM}:16:3: {KIND} in 'gpu.shuffle'" in out and "threads 32..63" in out


@pytest.mark.parametrize("block, first", [(96, 64), (40, 8), (1, 0)])
def test_cli_runs_blocks_that_are_not_whole_subgroups(block, first, capsys):
    code = main(["run", SHUFFLE_SUM, "--func", "subgroup_sum", "--grid", "8", "--block", str(block),
                 "--arg", "in=random", "--arg", "out=random", "--sanitize", "--json"])
    findings = json.loads(capsys.readouterr().out)["sanitizer"]
    assert code == 1 and findings and {f["kind"] for f in findings} == {KIND}  # the butterfly reads past the block
    assert findings[0]["threads"][0] == first  # with 40 threads, lanes 0..7 read the active 32..39
