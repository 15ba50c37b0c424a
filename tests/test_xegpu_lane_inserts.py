"""A piece every lane holds whole inserted into a value the lanes split, at a position
narrower than a lane round (blocking's one-element pieces): each lane picks the
elements its own coordinates cover. Checked by simulation on random data."""

from __future__ import annotations

from xegpu_harness import check_xegpu

LANES = "#xegpu.layout<lane_layout = [16], lane_data = [1]>"


def program(at: int, result: str = LANES) -> str:
    return f"""gpu.module @m {{
gpu.func @f(%src: memref<16xf32>, %p: memref<1xf32>, %dst: memref<16xf32>) {{
  %t = xegpu.create_nd_tdesc %src : memref<16xf32> -> !xegpu.tensor_desc<16xf32>
  %v = xegpu.load_nd %t[0] <{{layout = {LANES}}}> : !xegpu.tensor_desc<16xf32> -> vector<16xf32>
  %tp = xegpu.create_nd_tdesc %p : memref<1xf32> -> !xegpu.tensor_desc<1xf32>
  %w = xegpu.load_nd %tp[0] : !xegpu.tensor_desc<1xf32> -> vector<1xf32>
  %i = vector.insert_strided_slice %w, %v {{offsets = [{at}], strides = [1], layout_result_0 = {result}}} : vector<1xf32> into vector<16xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<16xf32> -> !xegpu.tensor_desc<16xf32>
  xegpu.store_nd %i, %o[0] <{{layout = {result}}}> : vector<16xf32>, !xegpu.tensor_desc<16xf32>
  gpu.return
}}
}}"""


def test_each_lane_picks_what_its_coordinates_cover():
    for at in (0, 5, 15):
        out = check_xegpu(program(at), "f", "xegpu-sg-to-lane", block=(16,))
        assert "arith.select" in out and "vector.insert_strided_slice" not in out, out
