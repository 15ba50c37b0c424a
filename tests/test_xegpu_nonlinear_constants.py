"""Non-splat vector constants whose values follow no linear rule, distributed where a
piece's position depends on the subgroup or lane: each piece takes its elements out of
the whole constant (every thread holds it) at its coordinates, as upstream's lane level
does. Checked by simulation at each stage and through the whole pipeline."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.transforms.pipelines import Options, run_pipeline

DIGITS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5]
SG = "#xegpu.layout<sg_layout = [4, 1], sg_data = [8, 16]>"


def column_program(layout: str = SG, rows: int = 32) -> str:
    """A rows x 16 tile plus a constant column broadcast along its rows."""
    values = ", ".join(f"[{float(d)}]" for d in DIGITS[:rows])
    return f"""gpu.module @m {{
gpu.func @f(%src: memref<{rows}x16xf32>, %dst: memref<{rows}x16xf32>) {{
  %c = arith.constant {{layout_result_0 = {layout}}} dense<[{values}]> : vector<{rows}x1xf32>
  %b = vector.broadcast %c {{layout_result_0 = {layout}}} : vector<{rows}x1xf32> to vector<{rows}x16xf32>
  %t = xegpu.create_nd_tdesc %src : memref<{rows}x16xf32> -> !xegpu.tensor_desc<{rows}x16xf32, {layout}>
  %l = xegpu.load_nd %t[0, 0] : !xegpu.tensor_desc<{rows}x16xf32, {layout}> -> vector<{rows}x16xf32>
  %s = arith.addf %l, %b {{layout_result_0 = {layout}}} : vector<{rows}x16xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<{rows}x16xf32> -> !xegpu.tensor_desc<{rows}x16xf32, {layout}>
  xegpu.store_nd %s, %o[0, 0] : vector<{rows}x16xf32>, !xegpu.tensor_desc<{rows}x16xf32, {layout}>
  gpu.return
}}
}}"""


@pytest.mark.parametrize("stage", ["xegpu-wg-to-sg", "xegpu-distribute"])
def test_a_nonlinear_constant_column_among_subgroups(stage):
    out = check_xegpu(column_program(), "f", stage)
    if stage == "xegpu-wg-to-sg":  # each subgroup picks its 8 rows out of the whole column
        assert out.count("vector.extract") == 8 and "vector.from_elements" in out


def test_a_nonlinear_constant_among_lanes():
    """Each lane's element of a 16-element index constant, used as gather offsets."""
    values = ", ".join(map(str, DIGITS[:16]))
    text = f"""gpu.module @m {{
gpu.func @f(%src: memref<16xf32>, %dst: memref<16xf32>) {{
  %c0 = arith.constant 0 : index
  %offsets = arith.constant {{layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>}} dense<[{values}]> : vector<16xindex>
  %mask = arith.constant {{layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>}} dense<true> : vector<16xi1>
  %v = xegpu.load %src[%offsets], %mask <{{layout = #xegpu.layout<lane_layout = [16], lane_data = [1]>}}> : memref<16xf32>, vector<16xindex>, vector<16xi1> -> vector<16xf32>
  %t = xegpu.create_nd_tdesc %dst : memref<16xf32> -> !xegpu.tensor_desc<16xf32, #xegpu.layout<lane_layout = [16], lane_data = [1]>>
  xegpu.store_nd %v, %t[%c0] : vector<16xf32>, !xegpu.tensor_desc<16xf32, #xegpu.layout<lane_layout = [16], lane_data = [1]>>
  gpu.return
}}
}}"""
    out = check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
    assert "gpu.lane_id" in out and "vector.extract" in out


def test_pieces_too_large_to_take_element_by_element_are_refused():
    values = ", ".join(f"[{float(i % 7 * i % 5)}]" for i in range(4096))
    wide = f"""gpu.module @m {{
gpu.func @f(%dst: memref<4096x1xf32>) {{
  %c = arith.constant {{layout_result_0 = #xegpu.layout<sg_layout = [2, 1], sg_data = [2048, 1]>}} dense<[{values}]> : vector<4096x1xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<4096x1xf32> -> !xegpu.tensor_desc<4096x1xf32, #xegpu.layout<sg_layout = [2, 1], sg_data = [2048, 1]>>
  xegpu.store_nd %c, %o[0, 0] : vector<4096x1xf32>, !xegpu.tensor_desc<4096x1xf32, #xegpu.layout<sg_layout = [2, 1], sg_data = [2048, 1]>>
  gpu.return
}}
}}"""
    module = parse(wide, "input.mlir")
    with pytest.raises(SimtifyError, match=r"input\.mlir:3:3: .*element by element, up to 1024 per piece, not 2048"):
        run_pipeline(module, "xegpu-wg-to-sg", Options(target="xe"))
