"""An ``array_length`` load in older IR's form (the blocks stacked in a leading dim, the
layout of the block's rank) distributed to lanes as upstream does: one 1-D load of the
lane's share of every block, each block laid out alike, and a position in the stacked
dim taken from the lane's own share. Checked by simulation on random data."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

from simtify.errors import SimtifyError

LANES = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>"
ARRAY = "!xegpu.tensor_desc<8x16xf32, #xegpu.block_tdesc_attr<array_length = 2 : i64>, {lay}>"


def program(block: int, lay: str = LANES, result_lay: str = LANES) -> str:
    desc = ARRAY.format(lay=lay)
    return f"""gpu.module @m {{
gpu.func @f(%src: memref<8x32xf32>, %dst: memref<8x16xf32>) {{
  %c0 = arith.constant 0 : index
  %t = xegpu.create_nd_tdesc %src[%c0, %c0] : memref<8x32xf32> -> {desc}
  %v = xegpu.load_nd %t {{layout_result_0 = {lay}}} : {desc} -> vector<2x8x16xf32>
  %b = vector.extract %v[{block}] {{layout_result_0 = {result_lay}}} : vector<8x16xf32> from vector<2x8x16xf32>
  %o = xegpu.create_nd_tdesc %dst[%c0, %c0] : memref<8x16xf32> -> !xegpu.tensor_desc<8x16xf32, {result_lay}>
  xegpu.store_nd %b, %o : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32, {result_lay}>
  gpu.return
}}
}}"""


@pytest.mark.parametrize("block", [0, 1])
def test_each_lane_loads_its_share_of_every_block(block):
    out = check_xegpu(program(block), "f", "xegpu-sg-to-lane", block=(16,))
    assert "-> vector<16xf32>" in out and f"[{block}] : vector<8x1xf32> from vector<2x8x1xf32>" in out, out


def test_blocks_shared_among_lanes_are_refused():
    """A result laid out other than the blocks: no lane holds the block it extracts."""
    other = "#xegpu.layout<lane_layout = [2, 8], lane_data = [1, 1]>"
    with pytest.raises(SimtifyError, match="vector.extract is distributed to lanes where"):
        check_xegpu(program(1, result_lay=other), "f", "xegpu-sg-to-lane", block=(16,))
