"""vector.load and vector.store in a subgroup's program, distributed by xegpu-sg-to-lane:
each lane reads (writes) its own share, one vector.load (vector.store) per block of it
(upstream's tests make rank-3 values this way, which no block descriptor holds); lanes
holding the same data write it once. Checked by simulation on random data."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu, store_last_value


def program(memref: str, vshape: tuple, at: str, layout: str) -> str:
    """Load a `vshape` value of `layout` from `memref` at indices `at`, square it."""
    vt = f"vector<{'x'.join(map(str, vshape))}xf32>"
    return f"""gpu.module @m {{
gpu.func @f(%src: {memref}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = vector.load %src[{at}] {{layout_result_0 = {layout}}} : {memref}, {vt}
  %w = arith.mulf %v, %v {{layout_result_0 = {layout}}} : {vt}
  gpu.return
}}
}}"""


@pytest.mark.parametrize("memref, vshape, at, layout, loads", [
    # lane l reads columns l and l + 16 of each row: two loads
    ("memref<1x16x32xf32>", (1, 16, 32), "%c0, %c0, %c0",
     "#xegpu.layout<lane_layout = [1, 1, 16], lane_data = [1, 1, 1]>", 2),
    # lanes over rows and pairs of columns, from a row other than the first
    ("memref<2x8x16xf32>", (2, 4, 16), "%c0, %c1, %c0",
     "#xegpu.layout<lane_layout = [1, 2, 8], lane_data = [1, 1, 2]>", 2),
    # a 2-D value from a 3-D memref at a leading index: one load of each lane's column
    ("memref<3x8x16xf32>", (8, 16), "%c1, %c0, %c0",
     "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>", 1),
])
def test_each_lane_loads_its_own_share(memref, vshape, at, layout, loads):
    text = store_last_value(program(memref, vshape, at, layout), "f", slices=True)
    out = check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
    assert out.count("vector.load") == loads, out


def test_each_lane_stores_its_own_share():
    layout = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 2]>"  # pairs of columns, round-robin
    text = f"""gpu.module @m {{
gpu.func @f(%src: memref<4x64xf32>, %dst: memref<2x4x64xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = vector.load %src[%c0, %c0] {{layout_result_0 = {layout}}} : memref<4x64xf32>, vector<4x64xf32>
  %w = arith.mulf %v, %v {{layout_result_0 = {layout}}} : vector<4x64xf32>
  vector.store %w, %dst[%c1, %c0, %c0] : memref<2x4x64xf32>, vector<4x64xf32>
  gpu.return
}}
}}"""
    out = check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
    assert out.count("vector.store") == 2 and "vector<4x2xf32>" in out, out


def test_lanes_holding_the_same_data_store_it_once():
    """A reduction over the rows two lanes split: both hold the sums, the first stores them."""
    layout = "#xegpu.layout<lane_layout = [2, 8], lane_data = [1, 1]>"
    sliced = f"#xegpu.slice<{layout}, dims = [0]>"
    text = f"""gpu.module @m {{
gpu.func @f(%src: memref<4x32xf32>, %dst: memref<32xf32>) {{
  %c0 = arith.constant 0 : index
  %v = vector.load %src[%c0, %c0] {{layout_result_0 = {layout}}} : memref<4x32xf32>, vector<4x32xf32>
  %z = arith.constant {{layout_result_0 = {sliced}}} dense<0.0> : vector<32xf32>
  %s = vector.multi_reduction <add>, %v, %z {{layout_result_0 = {sliced}}} [0] : vector<4x32xf32> to vector<32xf32>
  vector.store %s, %dst[%c0] : memref<32xf32>, vector<32xf32>
  gpu.return
}}
}}"""
    out = check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
    assert "scf.if" in out and "gpu.subgroup_reduce" in out, out


def test_a_loop_with_i32_bounds_keeps_them():
    """IREE's lowered loops count in i32: the rebuilt loop's induction variable keeps the
    bounds' type (it was made an index, which does not verify)."""
    layout = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>"
    text = f"""gpu.module @m {{
gpu.func @f(%src: memref<4x16xf32>, %dst: memref<4x16xf32>) {{
  %c0 = arith.constant 0 : index
  %c0_i32 = arith.constant 0 : i32
  %c1_i32 = arith.constant 1 : i32
  %c4_i32 = arith.constant 4 : i32
  %v = vector.load %src[%c0, %c0] {{layout_result_0 = {layout}}} : memref<4x16xf32>, vector<4x16xf32>
  %r = scf.for %i = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%acc = %v) -> (vector<4x16xf32>) : i32 {{
    %w = arith.mulf %acc, %v {{layout_result_0 = {layout}}} : vector<4x16xf32>
    scf.yield %w : vector<4x16xf32>
  }} {{layout_result_0 = {layout}}}
  vector.store %r, %dst[%c0, %c0] : memref<4x16xf32>, vector<4x16xf32>
  gpu.return
}}
}}"""
    out = check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
    assert " : i32 {" in out and "vector<4x1xf32>" in out, out
