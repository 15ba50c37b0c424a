"""Nested distribution of vector.shape_cast where the new layout reads a register digit
at another level (a trailing batch digit becomes an element digit), checked by simulation."""

from __future__ import annotations

import pytest

from distribution_harness import check_distribution, nested

# 64x2: dim 0 over the 64 lanes, dim 1 over 2 batches; as 128 it is 64 lanes x 2 elements
LANES_THEN_BATCH = nested([1, 1], [1, 2], [1, 1], [64, 1], [1, 1], [0, 0], [1, 0])
# 2x64x2 on two subgroups: as 256 it is 2 subgroups x 64 lanes x 2 elements
SUBGROUPS_LANES_BATCH = nested([2, 1, 1], [1, 1, 2], [1, 1, 1], [1, 64, 1], [1, 1, 1], [1, 0, 0], [0, 1, 0])


def flatten_program(layout: str, shape: str, flat: int) -> str:
    """The layout is given on the N-D value and reaches the 1-D one forwards."""
    zeros = ", ".join("%c0" for _ in shape.split("x"))
    inb = ", ".join("true" for _ in shape.split("x"))
    return f"""
func.func @f(%src: memref<{shape}xf32>, %dst: memref<{flat}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %raw = vector.transfer_read %src[{zeros}], %pad {{in_bounds = [{inb}]}} : memref<{shape}xf32>, vector<{shape}xf32>
  %v = iree_vector_ext.to_layout %raw to layout({layout}) : vector<{shape}xf32>
  %s = vector.shape_cast %v : vector<{shape}xf32> to vector<{flat}xf32>
  %e = math.exp %s : vector<{flat}xf32>
  vector.transfer_write %e, %dst[%c0] {{in_bounds = [true]}} : vector<{flat}xf32>, memref<{flat}xf32>
  return
}}
"""


def unflatten_program(layout: str, shape: str, flat: int) -> str:
    """The layout is given on the N-D result and reaches the 1-D read backwards; the
    value then goes back to 1-D and is added to the read."""
    zeros = ", ".join("%c0" for _ in shape.split("x"))
    inb = ", ".join("true" for _ in shape.split("x"))
    return f"""
func.func @f(%src: memref<{flat}xf32>, %dst: memref<{shape}xf32>, %dst2: memref<{flat}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %raw = vector.transfer_read %src[%c0], %pad {{in_bounds = [true]}} : memref<{flat}xf32>, vector<{flat}xf32>
  %s = vector.shape_cast %raw : vector<{flat}xf32> to vector<{shape}xf32>
  %v = iree_vector_ext.to_layout %s to layout({layout}) : vector<{shape}xf32>
  %e = math.exp %v : vector<{shape}xf32>
  vector.transfer_write %e, %dst[{zeros}] {{in_bounds = [{inb}]}} : vector<{shape}xf32>, memref<{shape}xf32>
  %f = vector.shape_cast %e : vector<{shape}xf32> to vector<{flat}xf32>
  %w = arith.addf %f, %raw : vector<{flat}xf32>
  vector.transfer_write %w, %dst2[%c0] {{in_bounds = [true]}} : vector<{flat}xf32>, memref<{flat}xf32>
  return
}}
"""


CASES = [(LANES_THEN_BATCH, "64x2", 128), (SUBGROUPS_LANES_BATCH, "2x64x2", 256)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_flatten_reads_the_batch_digit_as_elements(case):
    layout, shape, flat = CASES[case]
    out = check_distribution(flatten_program(layout, shape, flat), "f", target="gfx942")
    assert f"vector<{flat}xf32>" not in out  # distributed: each thread holds 2 elements


@pytest.mark.parametrize("case", range(len(CASES)))
def test_unflatten_then_flatten_again(case):
    layout, shape, flat = CASES[case]
    check_distribution(unflatten_program(layout, shape, flat), "f", target="gfx942")
