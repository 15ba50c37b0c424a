"""Dims narrower than their layout, as upstream distributes them: more lanes than a
block has elements wrap around it (every lane of a 16x1 vector on ``lane_layout =
[1, 16]`` holds the column), an ``inst_data`` wider than the subgroup tile is the whole
tile. Checked by simulation; a block descriptor still refuses lanes that wrap."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.layout.xegpu import XeGPULayout

WRAPPED_COLUMN = """gpu.module @m {
gpu.func @f(%src: memref<16x1xf32>, %dst: memref<16x1xf32>) {
  %c0 = arith.constant 0 : index
  %t = xegpu.create_nd_tdesc %src : memref<16x1xf32> -> !xegpu.tensor_desc<16x1xf32>
  %v = xegpu.load_nd %t[%c0, %c0] <{layout = #xegpu.layout<lane_layout = [16, 1], lane_data = [1, 1]>}>
    : !xegpu.tensor_desc<16x1xf32> -> vector<16x1xf32>
  %e = math.exp %v {layout_result_0 = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : vector<16x1xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<16x1xf32> -> !xegpu.tensor_desc<16x1xf32>
  xegpu.store_nd %e, %o[%c0, %c0] <{layout = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>}>
    : vector<16x1xf32>, !xegpu.tensor_desc<16x1xf32>
  gpu.return
}
}"""


def test_lanes_wrap_around_a_narrow_dim():
    """Each lane holds the whole 16x1 column (lane l owns column l % 1)."""
    layout = XeGPULayout.parse("#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>")
    own = layout.ownership((16, 1), 16, 16)
    assert all(sorted(own.flat[lane]) == list(range(16)) for lane in range(16))
    out = check_xegpu(WRAPPED_COLUMN, "f", "xegpu-sg-to-lane", block=(16,))
    assert "math.exp" in out and "vector<16x1xf32>" in out


def test_lanes_that_wrap_twice_over_pairs():
    """Two-element blocks on 16 lanes: lane l owns element l % 2 of each row."""
    layout = XeGPULayout.parse("#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>")
    own = layout.ownership((4, 2), 16, 16)
    for lane in range(16):
        assert sorted(own.flat[lane]) == [r * 2 + lane % 2 for r in range(4)]


def test_an_instruction_wider_than_the_subgroup_tile_is_the_tile():
    """``inst_data = [8, 16]`` on a subgroup's 8x1 tile blocks it whole (a reduction's
    result reshaped to a column, as upstream's wg-to-sg test writes it)."""
    text = """gpu.module @m {
gpu.func @f(%src: memref<256x128xf32>, %dst: memref<256x128xf32>) {
  %cst = arith.constant {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>, dims = [1]>} dense<0xFF800000> : vector<256xf32>
  %t = xegpu.create_nd_tdesc %src : memref<256x128xf32> -> !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>>
  %v = xegpu.load_nd %t[0, 0] : !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>> -> vector<256x128xf32>
  %m = vector.multi_reduction <maximumf>, %v, %cst {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>, dims = [1]>} [1] : vector<256x128xf32> to vector<256xf32>
  %c = vector.shape_cast %m {layout_result_0 = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>} : vector<256xf32> to vector<256x1xf32>
  %b = vector.broadcast %c {layout_result_0 = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>} : vector<256x1xf32> to vector<256x128xf32>
  %d = arith.subf %v, %b {layout_result_0 = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>} : vector<256x128xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<256x128xf32> -> !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>>
  xegpu.store_nd %d, %o[0, 0] : vector<256x128xf32>, !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data = [8, 16]>>
  gpu.return
}
}"""
    for stage in ("xegpu-wg-to-sg", "xegpu-distribute"):
        check_xegpu(text, "f", stage)


def test_a_block_descriptor_refuses_lanes_that_wrap():
    with pytest.raises(SimtifyError, match=r":2:\d+: .*cannot distribute 1 over 16 lanes"):
        parse("""func.func @f(%src: memref<16x1xf32>) {
  %t = xegpu.create_nd_tdesc %src : memref<16x1xf32> -> !xegpu.tensor_desc<16x1xf32, #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>>
  return
}""")
