"""A nested layout spanning more subgroups than the launch has: virtual subgroup v runs
on subgroup v mod n (the seed's wrap-around), its elements as registers of that
subgroup; distributed and checked by simulation."""

from __future__ import annotations

import pytest

from distribution_harness import check_distribution, nested
from simtify.errors import SimtifyError
from simtify.ir import parse

LAUNCH = ("translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
          "workgroup_size = [256, 1, 1] subgroup_size = 64>")
# 8 virtual subgroups ([4, 2] at strides [1, 4]) on 4 launched: dim 1's subgroup digit wraps
WIDE = nested((4, 2), (1, 1), (1, 1), (8, 8), (1, 4), (1, 4), (8, 1))

PROGRAM = f"""
func.func @rows(%in: memref<32x64xf32>, %out: memref<32x64xf32>, %sums: memref<32xf32>) ATTRIBUTES {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<32x64xf32>, vector<32x64xf32>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<32x64xf32>
  %w = arith.mulf %l, %l : vector<32x64xf32>
  vector.transfer_write %w, %out[%c0, %c0] {{in_bounds = [true, true]}} : vector<32x64xf32>, memref<32x64xf32>
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %s = vector.multi_reduction <add>, %w, %zero [1] : vector<32x64xf32> to vector<32xf32>
  vector.transfer_write %s, %sums[%c0] {{in_bounds = [true]}} : vector<32xf32>, memref<32xf32>
  return
}}
"""


def test_wrapped_subgroups_distribute_and_simulate_equal():
    text = PROGRAM.replace("LAYOUT", WIDE).replace("ATTRIBUTES ", "")
    out = check_distribution(text, "rows", target="gfx942", workgroup_size=256, subgroup_size=64)
    # each thread reads the tiles of virtual subgroups p and p + 4: two reads, not one
    assert out.count("vector.transfer_read %arg0") + out.count("vector.transfer_read %in") == 2, out


def test_a_wrap_around_that_splits_no_digit_is_refused_where_the_layout_is_read():
    # 8 subgroups along dim 0 at stride 1 on 4 launched: v mod 4 cuts that one digit
    straddling = nested((8, 1), (1, 1), (1, 1), (4, 16), (1, 4), (1, 0), (16, 1))
    with pytest.raises(SimtifyError, match="spans 8 subgroups but the launch has 4: subgroup_tile.0. = 8 at "
                                           "stride 1 straddles them"):
        parse(PROGRAM.replace("LAYOUT", straddling).replace("ATTRIBUTES", f"attributes {{{LAUNCH}}}"))
