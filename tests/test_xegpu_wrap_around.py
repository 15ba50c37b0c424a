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


L16 = "#xegpu.layout<lane_layout = [16], lane_data = [1]>"
L4 = "#xegpu.layout<lane_layout = [4], lane_data = [1]>"
FOUR_LANES = f"""gpu.module @m {{
gpu.func @f(%src: memref<16xf32>, %dst: memref<16xf32>, %out: memref<16xf32>, %sum: memref<16xf32>) {{
  %t = xegpu.create_nd_tdesc %src : memref<16xf32> -> !xegpu.tensor_desc<16xf32>
  %v = xegpu.load_nd %t[0] <{{layout = {L16}}}> : !xegpu.tensor_desc<16xf32> -> vector<16xf32>
  %w = xegpu.convert_layout %v <{{input_layout = {L16}, target_layout = {L4}}}> : vector<16xf32>
  %e = math.exp %w {{layout_result_0 = {L4}}} : vector<16xf32>
  %off = arith.constant {{layout_result_0 = {L4}}} dense<[15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]> : vector<16xindex>
  %mask = arith.constant {{layout_result_0 = {L4}}} dense<true> : vector<16xi1>
  xegpu.store %e, %dst[%off], %mask <{{layout = {L4}}}> : vector<16xf32>, memref<16xf32>, vector<16xindex>, vector<16xi1>
  %b = xegpu.convert_layout %e <{{input_layout = {L4}, target_layout = {L16}}}> : vector<16xf32>
  %to = xegpu.create_nd_tdesc %out : memref<16xf32> -> !xegpu.tensor_desc<16xf32>
  xegpu.store_nd %b, %to[0] <{{layout = {L16}}}> : vector<16xf32>, !xegpu.tensor_desc<16xf32>
  %z = arith.constant {{layout_result_0 = #xegpu.slice<{L4}, dims = [0]>}} 0.0 : f32
  %r = vector.multi_reduction <add>, %e, %z {{layout_result_0 = #xegpu.slice<{L4}, dims = [0]>}} [0] : vector<16xf32> to f32
  %rb = vector.broadcast %r {{layout_result_0 = {L16}}} : f32 to vector<16xf32>
  %ts = xegpu.create_nd_tdesc %sum : memref<16xf32> -> !xegpu.tensor_desc<16xf32>
  xegpu.store_nd %rb, %ts[0] <{{layout = {L16}}}> : vector<16xf32>, !xegpu.tensor_desc<16xf32>
  gpu.return
}}
}}"""


def test_fewer_lanes_than_the_subgroup_wrap_around_it():
    """A lane layout of 4 lanes on a 16-lane subgroup, as upstream's lane ids take it
    (lane ``l`` is lane ``l % 4``): converted to and from, scattered, reduced. The lanes
    past the fourth hold copies and store nothing (each element written once)."""
    own = XeGPULayout.parse(L4).ownership((16,), 16, 16)
    assert all(list(own.flat[lane]) == [lane % 4 + 4 * k for k in range(4)] for lane in range(16))
    out = check_xegpu(FOUR_LANES, "f", "xegpu-sg-to-lane", block=(16,))
    guarded = out.split("arith.cmpi ult")[1:]
    assert len(guarded) == 2 and "xegpu.store %" in guarded[0] and "xegpu.store_matrix" in guarded[1], out
    assert "cluster(size = 4)" in out


@pytest.mark.parametrize("fixture, func", [("rr_broadcast", "broadcast"), ("unify_broadcast_dim1", "broadcast_dim1")])
def test_upstream_eight_lane_broadcasts_through_the_whole_pipeline(fixture, func):
    """Upstream's wg-to-sg broadcasts on ``lane_layout = [8, 1]``: their 8 lanes wrap
    around xe's 16-lane subgroups down to the lanes."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "xegpu" / f"{fixture}.mlir").read_text()
    check_xegpu(text, func, "xegpu-distribute")
