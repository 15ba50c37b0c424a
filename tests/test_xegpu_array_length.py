"""An ``array_length`` load in older IR's form (the blocks stacked in a leading dim, the
layout of the block's rank) distributed to lanes as upstream does: one 1-D load of the
lane's share of every block, each block laid out alike, and a position in the stacked
dim taken from the lane's own share; upstream's form, the blocks one under another in a
2-D vector, alike. Checked by simulation on random data."""

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


ROWS_STACKED = """gpu.module @m {
gpu.func @f(%src: memref<8x32xf32>, %dst: memref<16x16xf32>) {
  %t = xegpu.create_nd_tdesc %src : memref<8x32xf32> -> !xegpu.tensor_desc<8x16xf32, #xegpu.block_tdesc_attr<array_length = 2>>
  %v = xegpu.load_nd %t[0, 0] LAYOUT: !xegpu.tensor_desc<8x16xf32, #xegpu.block_tdesc_attr<array_length = 2>> -> vector<16x16xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<16x16xf32> -> !xegpu.tensor_desc<16x16xf32>
  xegpu.store_nd %v, %o[0, 0] : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  gpu.return
}
}"""


def test_blocks_one_under_another():
    """Upstream's 2-D form of an array_length load: block 1's rows under block 0's
    (vector<16x16> for two 8x16 blocks); each lane loads its column of both, 1-D."""
    out = check_xegpu(ROWS_STACKED.replace("LAYOUT", f"<{{layout = {LANES}}}> "), "f", "xegpu-sg-to-lane",
                      block=(16,))
    assert "array_length = 2 : i64>> -> vector<16xf32>" in out, out


def test_blocks_one_under_another_in_pieces_are_refused():
    """At workgroup level blocking splits the value into instruction pieces; a piece of
    the stacked rows is not yet mapped back to its block of the array."""
    with pytest.raises(SimtifyError, match="array_length load whose blocks lie one under another is not split into"):
        check_xegpu(ROWS_STACKED.replace("LAYOUT", ""), "f", "xegpu-distribute", block=(16,))


def test_blocks_one_under_another_shared_among_lanes_are_refused():
    rows = "<{layout = #xegpu.layout<lane_layout = [16, 1], lane_data = [1, 1]>}> "
    with pytest.raises(SimtifyError, match="the blocks of an array_length load are laid out alike"):
        check_xegpu(ROWS_STACKED.replace("LAYOUT", rows), "f", "xegpu-sg-to-lane", block=(16,))


STACKED = "#xegpu.layout<lane_layout = [1, 1, 16], lane_data = [1, 1, 1]>"


def insert_program(value_lay: str = LANES) -> str:
    """`program` with block 0, doubled, put in the place of block 1 before block 1 is read."""
    extract = f"  %b = vector.extract %v[1] {{layout_result_0 = {LANES}}}"
    inserted = f"""  %a = vector.extract %v[0] {{layout_result_0 = {LANES}}} : vector<8x16xf32> from vector<2x8x16xf32>
  %d = arith.addf %a, %a {{layout_result_0 = {LANES}}} : vector<8x16xf32>
  %s = xegpu.convert_layout %d <{{input_layout = {LANES}, target_layout = {value_lay}}}> : vector<8x16xf32>
  %w = vector.insert %s, %v[1] {{layout_result_0 = {STACKED}}} : vector<8x16xf32> into vector<2x8x16xf32>
  %b = vector.extract %w[1] {{layout_result_0 = {LANES}}}"""
    text = program(1)
    assert extract in text
    return text.replace(extract, inserted)


def test_each_lane_inserts_its_share_into_its_block():
    """vector.insert at a position every lane holds whole: each lane puts its share of
    the value into its own share of the destination."""
    out = check_xegpu(insert_program(), "f", "xegpu-sg-to-lane", block=(16,))
    assert "[1] : vector<8x1xf32> into vector<2x8x1xf32>" in out, out


def test_insert_of_a_value_laid_out_otherwise_is_refused():
    other = "#xegpu.layout<lane_layout = [2, 8], lane_data = [1, 1]>"
    with pytest.raises(SimtifyError, match="vector.insert is distributed to lanes where"):
        check_xegpu(insert_program(value_lay=other), "f", "xegpu-sg-to-lane", block=(16,))
