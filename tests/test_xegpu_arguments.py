"""Vector function arguments of a workgroup-level XeGPU program: every subgroup receives
the value whole, and xegpu-wg-to-sg cuts its own tiles from it (the start of a tile
depends on the subgroup id: each start a subgroup can have is cut, and this subgroup's
selected). Checked by simulation against the input on random inputs."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

PROGRAM = """gpu.module @m {{
  gpu.func @f(%a: vector<{shape}xf32>, %out: memref<{shape}xf32>) {{
    %e = math.exp %a {{layout_result_0 = {layout}}} : vector<{shape}xf32>
    %t = xegpu.create_nd_tdesc %out : memref<{shape}xf32> -> !xegpu.tensor_desc<{shape}xf32>
    xegpu.store_nd %e, %t[0, 0] <{{layout = {layout}}}> : vector<{shape}xf32>, !xegpu.tensor_desc<{shape}xf32>
    gpu.return
  }}
}}
"""


@pytest.mark.parametrize("shape, layout", [
    # two rounds along dim 0, the subgroup id's digits in column-major order
    ("64x32", "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], lane_layout = [1, 16], lane_data = [1, 1], "
              "order = [0, 1]>"),
    # tiles shared by the subgroups along dim 0 (4 x 16 rows cover 32 rows twice)
    ("32x32", "#xegpu.layout<sg_layout = [4, 1], sg_data = [16, 32], lane_layout = [1, 16], lane_data = [1, 1]>"),
    # one subgroup along dim 1, each holding all its columns
    ("48x16", "#xegpu.layout<sg_layout = [3, 1], sg_data = [16, 16]>"),
])
def test_vector_argument_cut_into_subgroup_tiles(shape, layout):
    out = check_xegpu(PROGRAM.format(shape=shape, layout=layout), "f", "xegpu-wg-to-sg")
    assert "arith.select" in out, out


@pytest.mark.parametrize("shape, layout", [
    ("64x32", "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], lane_layout = [1, 16], lane_data = [1, 1], "
              "order = [0, 1]>"),
    ("32x32", "#xegpu.layout<sg_layout = [4, 1], sg_data = [16, 32], lane_layout = [1, 16], lane_data = [1, 1]>"),
    ("48x16", "#xegpu.layout<sg_layout = [3, 1], sg_data = [16, 16]>"),
    # instruction blocks: blocking cuts each subgroup's slice into 8x16 blocks
    ("32x32", "#xegpu.layout<sg_layout = [2, 1], sg_data = [16, 32], inst_data = [8, 16], lane_layout = [1, 16], "
              "lane_data = [1, 1]>"),
    # lanes along both dims, each holding two adjacent columns
    ("32x32", "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], lane_layout = [2, 8], lane_data = [1, 2]>"),
])
def test_vector_argument_through_the_whole_pipeline(shape, layout):
    """Blocking re-cuts the subgroup's slices of the argument into its blocks, and each
    lane takes its fragment out of the argument it receives whole."""
    out = check_xegpu(PROGRAM.format(shape=shape, layout=layout), "f", "xegpu-distribute")
    assert "vector.extract_strided_slice" in out or "vector.extract " in out, out


LANE_ARGUMENT = """gpu.module @m {
  gpu.func @f(%a: vector<16x32xf32>, %out: memref<16x32xf32>) {
    %e = math.exp %a {layout_result_0 = #xegpu.layout<lane_layout = [2, 8], lane_data = [1, 2]>} : vector<16x32xf32>
    %t = xegpu.create_nd_tdesc %out : memref<16x32xf32> -> !xegpu.tensor_desc<16x32xf32>
    xegpu.store_nd %e, %t[0, 0] <{layout = #xegpu.layout<lane_layout = [2, 8], lane_data = [1, 2]>}> : vector<16x32xf32>, !xegpu.tensor_desc<16x32xf32>
    gpu.return
  }
}
"""


def test_subgroup_vector_argument_split_among_lanes():
    """One subgroup's program: each lane picks its own elements out of the argument."""
    check_xegpu(LANE_ARGUMENT, "f", "xegpu-sg-to-lane", block=(16,))



def test_a_slice_off_the_lane_rounds_of_an_argument():
    """A slice starting mid lane round: the argument takes no lanes, and each lane takes
    its fragment of the slice out of the whole argument."""
    text = """gpu.module @m {
  gpu.func @f(%a: vector<16x32xf32>, %out: memref<16x16xf32>) {
    %s = vector.extract_strided_slice %a {offsets = [0, 8], sizes = [16, 16], strides = [1, 1]} : vector<16x32xf32> to vector<16x16xf32>
    %t = xegpu.create_nd_tdesc %out : memref<16x16xf32> -> !xegpu.tensor_desc<16x16xf32>
    xegpu.store_nd %s, %t[0, 0] <{layout = #xegpu.layout<inst_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>}> : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
    gpu.return
  }
}
"""
    out = check_xegpu(text, "f", "xegpu-blocking")
    assert "offsets = [8, 8]" in out, out
    check_xegpu(text, "f", "xegpu-distribute")
