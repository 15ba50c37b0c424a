"""Shape casts that expand or merge non-unit dims (upstream's collapsed and expanded
dims): propagation carries a layout that distributes only the last dim across them,
and each piece is the cast of the piece holding the same elements in the same order.
Upstream's propagate-layout-inst-data tests (a 1x16x4 cast feeding a reduction among
them) and a lane-level cast are checked by simulation."""

from __future__ import annotations

import pytest
from test_xegpu_upstream_syntax import FIXTURES, functions_of
from xegpu_harness import check_xegpu

from simtify.cli.opt_cmd import split_chunks
from simtify.errors import SimtifyError
from simtify.layout.xegpu import XeGPULayout, shape_cast_layout


def upstream(name: str) -> str:
    for chunk in split_chunks((FIXTURES / "propagate-layout-inst-data.mlir").read_text()):
        for found, text in functions_of(chunk):
            if found == name:
                return text
    raise KeyError(name)


@pytest.mark.parametrize("name", ["vector_shape_cast_expand_non_unit_dims", "vector_shape_cast_expand_and_merge",
                                  "vector_2d_reduction_with_fractional_subgroup_size_1x4x1",
                                  "vector_2d_reduction_with_fractional_subgroup_size"])
def test_upstream_reshaping_casts_are_blocked(name):
    out = check_xegpu(upstream(name), name, "xegpu-blocking", rtol=1e-2, atol=1e-2)
    assert "vector.shape_cast" in out


def test_the_layout_across_a_reshaping_cast():
    lay = XeGPULayout.parse("#xegpu.layout<inst_data = [16], lane_layout = [16], lane_data = [1]>")
    assert str(shape_cast_layout(lay, (1024,), (8, 8, 16))) == \
        "#xegpu.layout<inst_data = [1, 1, 16], lane_layout = [1, 1, 16], lane_data = [1, 1, 1]>"
    back = XeGPULayout.parse("#xegpu.layout<inst_data = [1, 1, 32]>")
    assert str(shape_cast_layout(back, (2, 4, 32), (256,))) == "#xegpu.layout<inst_data = [32]>"
    # blocks wider than the other side's last dim span runs of its rows (upstream's expandDim)
    assert str(shape_cast_layout(XeGPULayout.parse("#xegpu.layout<inst_data = [32]>"), (256,), (16, 16))) == \
        "#xegpu.layout<inst_data = [2, 16]>"
    assert str(shape_cast_layout(XeGPULayout.parse("#xegpu.layout<inst_data = [2, 16]>"), (4, 16), (64,))) == \
        "#xegpu.layout<inst_data = [32]>"
    # lanes that own other elements on the other side, or dims that are no runs of the other's: none
    assert shape_cast_layout(XeGPULayout.parse("#xegpu.layout<lane_layout = [8, 2], lane_data = [1, 1]>"),
                             (8, 16), (128,)) is None
    assert shape_cast_layout(XeGPULayout.parse("#xegpu.layout<inst_data = [4, 16]>"), (4, 16), (16, 4)) is None


@pytest.mark.parametrize("collapsed, coarse, fine, expanded", [
    ("sg_layout = [8], sg_data = [512]", (4096,), (8, 16, 32), "sg_layout = [8, 1, 1], sg_data = [1, 16, 32]"),
    ("sg_layout = [16], sg_data = [32]", (512,), (2, 8, 32), "sg_layout = [2, 8, 1], sg_data = [1, 1, 32]"),
    ("sg_layout = [2, 4], sg_data = [4, 32]", (8, 128), (2, 4, 8, 16),
     "sg_layout = [2, 1, 4, 1], sg_data = [1, 4, 2, 16]"),
    ("sg_layout = [2, 2], sg_data = [8, 64]", (16, 64), (16, 8, 8), "sg_layout = [2, 1, 2], sg_data = [8, 8, 8]"),
    ("sg_layout = [4], sg_data = [4]", (32,), (2, 16), "sg_layout = [1, 4], sg_data = [1, 4]"),
    ("sg_layout = [4, 2], sg_data = [16, 32], inst_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]",
     (64, 64), (4, 16, 4, 16), "sg_layout = [4, 1, 2, 1], sg_data = [1, 16, 2, 16], inst_data = [1, 8, 1, 16], "
                               "lane_layout = [1, 1, 1, 16], lane_data = [1, 1, 1, 1]"),
])
def test_a_collapsed_dim_splits_over_its_run(collapsed, coarse, fine, expanded):
    """Upstream's subgroup CHECK lines (propagate-layout-subgroup's shape_cast_collapse_*)
    and one with instructions and lanes: the ids spread outermost first, the data fills
    innermost first; both ways across the cast every thread holds the same elements in the
    same order (`shape_cast_layout` keeps only such layouts)."""
    lay = XeGPULayout.parse(f"#xegpu.layout<{collapsed}>")
    got = shape_cast_layout(lay, coarse, fine)
    assert str(got) == f"#xegpu.layout<{expanded}>"
    assert shape_cast_layout(got, fine, coarse) == lay


LANES = """gpu.module @m {
gpu.func @f(%src: memref<256xf32>, %dst: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %mask = arith.constant {layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>} dense<true> : vector<256xi1>
  %offsets = vector.step {layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>} : vector<256xindex>
  %v = xegpu.load %src[%offsets], %mask <{layout = #xegpu.layout<lane_layout = [16], lane_data = [1]>}> : memref<256xf32>, vector<256xindex>, vector<256xi1> -> vector<256xf32>
  %m = vector.shape_cast %v {layout_result_0 = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : vector<256xf32> to vector<16x16xf32>
  %e = math.exp %m {layout_result_0 = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : vector<16x16xf32>
  %t = xegpu.create_nd_tdesc %dst : memref<16x16xf32> -> !xegpu.tensor_desc<16x16xf32>
  xegpu.store_nd %e, %t[%c0, %c0] <{layout = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>}> : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  gpu.return
}
}"""


def test_a_lane_fragment_is_reshaped_where_it_holds_the_same_elements():
    """Lane l holds elements l, l + 16, ... of the 256-vector: column l of the 16x16 one."""
    out = check_xegpu(LANES, "f", "xegpu-sg-to-lane", block=(16,))
    assert "vector<16xf32> to vector<16x1xf32>" in out


def test_a_cast_whose_fragments_differ_is_refused():
    text = LANES.replace("lane_layout = [1, 16], lane_data = [1, 1]>} : vector<256xf32> to",
                         "lane_layout = [16, 1], lane_data = [1, 1]>} : vector<256xf32> to")
    with pytest.raises(SimtifyError, match=r"input\.mlir:7:\d+: .*shape_cast of vector<256xf32> to "
                                           r"vector<16x16xf32> is distributed where"):
        check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))


def test_upstream_expanding_cast_into_a_reduction_through_the_whole_pipeline():
    """The reductions' layout reaches the cast's result from the store, and no layout
    of the 1024-vector casts to it: the cast takes its loaded source's layout and the
    reduction converts, so the lane stage finds the cast's pieces alike."""
    name = "vector_shape_cast_expand_non_unit_dims"
    out = check_xegpu(upstream(name), name, "xegpu-distribute", rtol=1e-2, atol=1e-2)
    assert "vector.shape_cast" in out


@pytest.mark.parametrize("name", ["vector_2d_reduction_with_fractional_subgroup_size_1x4x1",
                                  "vector_2d_reduction_with_fractional_subgroup_size"])
def test_upstream_fractional_reductions_through_the_whole_pipeline(name):
    """Blocks too small for the lanes (1x1x1 pieces re-cut into a 1x16x1 block): at the
    lane level every lane holds them whole, sliced and inserted alike."""
    check_xegpu(upstream(name), name, "xegpu-distribute", rtol=1e-2, atol=1e-2)


COLLAPSE = """gpu.module @m {{
gpu.func @f(%src: memref<{fine}xf16>, %dst: memref<{coarse}xf16>) kernel attributes
    {{known_block_size = array<i32: {threads}, 1, 1>}} {{
  %ts = xegpu.create_nd_tdesc %src : memref<{fine}xf16> -> !xegpu.tensor_desc<{fine}xf16>
  %v = xegpu.load_nd %ts[{zeros_fine}] : !xegpu.tensor_desc<{fine}xf16> -> vector<{fine}xf16>
  %c = vector.shape_cast %v : vector<{fine}xf16> to vector<{coarse}xf16>
  %td = xegpu.create_nd_tdesc %dst : memref<{coarse}xf16> -> !xegpu.tensor_desc<{coarse}xf16>
  xegpu.store_nd %c, %td[{zeros_coarse}] <{{layout = #xegpu.layout<{layout}>}}>
      : vector<{coarse}xf16>, !xegpu.tensor_desc<{coarse}xf16>
  gpu.return
}}
}}"""


@pytest.mark.parametrize("fine, coarse, layout", [
    ("8x16x32", "4096", "sg_layout = [8], sg_data = [512]"),         # upstream's shape_cast_collapse_innermost
    ("2x8x32", "512", "sg_layout = [16], sg_data = [32]"),           # ... _sg_layout_spill_inward
    ("16x8x8", "16x64", "sg_layout = [2, 2], sg_data = [8, 64]"),    # ... _replicated
    ("2x16", "32", "sg_layout = [4], sg_data = [4]"),                # ... _sg_wraparound
])
def test_collapsing_casts_through_the_whole_pipeline(fine, coarse, layout):
    """Upstream's collapsing casts with a loaded source (its tests cast a zero constant):
    each subgroup casts its own tile, which holds the elements of its tile of the result
    in the same order."""
    count = 1
    for x in layout.split("sg_layout = [")[1].split("]")[0].split(", "):
        count *= int(x)
    text = COLLAPSE.format(fine=fine, coarse=coarse, layout=layout, threads=16 * count,
                           zeros_fine=", ".join("0" * len(fine.split("x"))),
                           zeros_coarse=", ".join("0" * len(coarse.split("x"))))
    out = check_xegpu(text, "f", rtol=0, atol=0)
    assert "vector.shape_cast" in out and "store_matrix" not in out, out
