"""Strided slices of values the lanes split, distributed by xegpu-sg-to-lane: a slice on
whole lane rounds is each lane's own slice; one that is not (upstream leaves it
undistributed) goes through shared local memory; a source every lane holds whole is
sliced whole and each lane takes its share. Checked by simulation on random data."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

L1 = "#xegpu.layout<lane_layout = [16], lane_data = [1]>"
L2 = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>"


def _dims(shape) -> str:
    return "x".join(map(str, shape))


def extract(src: tuple, offsets: list, sizes: list, src_layout: str | None, layout: str) -> str:
    """Load `src`, slice it, store the slice (of `layout`)."""
    res = tuple(sizes) + src[len(sizes):]
    zeros = ", ".join("0" for _ in src)
    on_load = f" <{{layout = {src_layout}}}>" if src_layout else ""
    operand = f"layout_operand_0 = {src_layout}, " if src_layout else ""
    return f"""gpu.module @m {{
gpu.func @f(%src: memref<{_dims(src)}xf32>, %dst: memref<{_dims(res)}xf32>) {{
  %t = xegpu.create_nd_tdesc %src : memref<{_dims(src)}xf32> -> !xegpu.tensor_desc<{_dims(src)}xf32>
  %v = xegpu.load_nd %t[{zeros}]{on_load} : !xegpu.tensor_desc<{_dims(src)}xf32> -> vector<{_dims(src)}xf32>
  %s = vector.extract_strided_slice %v {{offsets = {offsets}, sizes = {sizes}, strides = {[1] * len(sizes)},
    {operand}layout_result_0 = {layout}}} : vector<{_dims(src)}xf32> to vector<{_dims(res)}xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<{_dims(res)}xf32> -> !xegpu.tensor_desc<{_dims(res)}xf32>
  xegpu.store_nd %s, %o[{zeros}] <{{layout = {layout}}}> : vector<{_dims(res)}xf32>, !xegpu.tensor_desc<{_dims(res)}xf32>
  gpu.return
}}
}}"""


def insert(value: tuple, dest: tuple, offsets: list, layout: str) -> str:
    """Load both, insert, store the result, every value of `layout`."""
    lines = []
    for name, shape in (("v", value), ("d", dest)):
        zeros = ", ".join("0" for _ in shape)
        lines += [f"%t{name} = xegpu.create_nd_tdesc %{name}src : memref<{_dims(shape)}xf32> -> "
                  f"!xegpu.tensor_desc<{_dims(shape)}xf32>",
                  f"%{name} = xegpu.load_nd %t{name}[{zeros}] <{{layout = {layout}}}> : "
                  f"!xegpu.tensor_desc<{_dims(shape)}xf32> -> vector<{_dims(shape)}xf32>"]
    zeros = ", ".join("0" for _ in dest)
    body = "\n  ".join(lines)
    return f"""gpu.module @m {{
gpu.func @f(%vsrc: memref<{_dims(value)}xf32>, %dsrc: memref<{_dims(dest)}xf32>, %dst: memref<{_dims(dest)}xf32>) {{
  {body}
  %r = vector.insert_strided_slice %v, %d {{offsets = {offsets}, strides = {[1] * len(value)},
    layout_operand_0 = {layout}, layout_operand_1 = {layout}, layout_result_0 = {layout}}}
    : vector<{_dims(value)}xf32> into vector<{_dims(dest)}xf32>
  %o = xegpu.create_nd_tdesc %dst : memref<{_dims(dest)}xf32> -> !xegpu.tensor_desc<{_dims(dest)}xf32>
  xegpu.store_nd %r, %o[{zeros}] <{{layout = {layout}}}> : vector<{_dims(dest)}xf32>, !xegpu.tensor_desc<{_dims(dest)}xf32>
  gpu.return
}}
}}"""


@pytest.mark.parametrize("src, offsets, sizes, layout", [
    ((64,), [3], [32], L1),
    ((64,), [17], [16], L1),
    ((8, 48), [2, 5], [4, 32], L2),
])
def test_a_slice_off_the_lane_rounds_goes_through_shared_memory(src, offsets, sizes, layout):
    out = check_xegpu(extract(src, offsets, sizes, layout, layout), "f", "xegpu-sg-to-lane", block=(16,))
    assert "xegpu.store_matrix" in out and "gpu.barrier" in out, out


def test_a_slice_on_whole_lane_rounds_is_each_lanes_own():
    out = check_xegpu(extract((64,), [16], [32], L1, L1), "f", "xegpu-sg-to-lane", block=(16,))
    assert "store_matrix" not in out and "vector.extract_strided_slice" in out, out


def test_a_source_every_lane_holds_whole_is_sliced_whole():
    """Upstream's vector_extract_strided_slice_unsopported_source: 54 elements, which 16
    lanes do not split, so each lane holds them all; the slice's lanes take their share."""
    out = check_xegpu(extract((54,), [0], [32], None, L1), "f", "xegpu-sg-to-lane", block=(16,))
    assert "vector<54xf32> to vector<32xf32>" in out, out


@pytest.mark.parametrize("value, dest, offsets, layout", [
    ((16,), (48,), [3], L1),
    ((16,), (48,), [29], L1),
    ((2, 16), (4, 48), [1, 7], L2),
])
def test_an_insert_off_the_lane_rounds_goes_through_shared_memory(value, dest, offsets, layout):
    out = check_xegpu(insert(value, dest, offsets, layout), "f", "xegpu-sg-to-lane", block=(16,))
    assert "xegpu.store_matrix" in out and "gpu.barrier" in out, out

