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
