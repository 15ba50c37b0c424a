"""Upstream's subgroup layout kind: a kernel launched with several subgroups shares a
store's tile among them (llvm-project mlir/test/Dialect/XeGPU/propagate-layout-subgroup.mlir,
commit 02d27fd8f5a4b047f574a62055e095486a3f6696: its gpu.func inputs, and the sg_layout /
sg_data its CHECK lines expect), and what distribution makes of it computes what the
workgroup's program does."""

from __future__ import annotations

import re

import pytest
from xegpu_harness import check_xegpu, distribute

from simtify.layout.xegpu import XeGPULayout
from simtify.transforms.xegpu_subgroup_layouts import scalar_reduction_layout, store_layout, subgroup_arrangements

TRANSPOSE = """
gpu.module @test {
  gpu.func @vector_transpose(%src: memref<256x128xf32>, %src1: memref<128x256xf32>) kernel attributes
      {known_block_size = array<i32: 1, 32, 16>} {
    %tdesc = xegpu.create_nd_tdesc %src : memref<256x128xf32> -> !xegpu.tensor_desc<256x128xf32>
    %tdesc1 = xegpu.create_nd_tdesc %src1 : memref<128x256xf32> -> !xegpu.tensor_desc<128x256xf32>
    %load = xegpu.load_nd %tdesc[0, 0] : !xegpu.tensor_desc<256x128xf32> -> vector<256x128xf32>
    %trans = vector.transpose %load, [1, 0] : vector<256x128xf32> to vector<128x256xf32>
    xegpu.store_nd %trans, %tdesc1[0, 0] : vector<128x256xf32>, !xegpu.tensor_desc<128x256xf32>
    gpu.return
  }
}
"""

DPAS = """
gpu.module @test {
  gpu.func @dpas(%a: memref<128x128xf16>, %b: memref<128x128xf16>, %d: memref<128x128xf32>) kernel attributes
      {known_block_size = array<i32: 1, 64, 16>} {
    %tdesc_a = xegpu.create_nd_tdesc %a : memref<128x128xf16> -> !xegpu.tensor_desc<128x128xf16>
    %load_a =  xegpu.load_nd %tdesc_a[0, 0] : !xegpu.tensor_desc<128x128xf16> -> vector<128x128xf16>
    %tdesc_b = xegpu.create_nd_tdesc %b : memref<128x128xf16> -> !xegpu.tensor_desc<128x128xf16>
    %load_b =  xegpu.load_nd %tdesc_b[0, 0] : !xegpu.tensor_desc<128x128xf16> -> vector<128x128xf16>
    %dpas = xegpu.dpas %load_a, %load_b : vector<128x128xf16>, vector<128x128xf16> -> vector<128x128xf32>
    %tdesc_cd = xegpu.create_nd_tdesc %d : memref<128x128xf32> -> !xegpu.tensor_desc<128x128xf32>
    xegpu.store_nd %dpas, %tdesc_cd[0, 0] : vector<128x128xf32>, !xegpu.tensor_desc<128x128xf32>
    gpu.return
  }
}
"""


def sg_fields(text: str, key: str) -> list[str]:
    """`key`'s layouts in the printed IR, cut to their sg_layout / sg_data (/ order)."""
    out = []
    for body in re.findall(rf"\b{key} = #xegpu\.layout<([^>]*)>", text):
        fields = dict(re.findall(r"(\w+) = (\[[^\]]*\])", body))
        out.append(" ".join(f"{k} = {fields[k]}" for k in ("sg_layout", "sg_data", "order") if k in fields
                            and (k != "order" or fields[k] != "[1, 0]")))
    return out


def test_arrangements_as_upstream_orders_them():
    """Upstream's own example: 128x64 in 8x16 blocks on 32 subgroups."""
    assert subgroup_arrangements((128, 64), (8, 16), 32) == [(8, 4), (16, 2)]
    assert store_layout((128, 256), 32) == XeGPULayout(sg_layout=(4, 8), sg_data=(32, 32))
    assert store_layout((128, 128), 64) == XeGPULayout(sg_layout=(8, 8), sg_data=(16, 16))
    assert store_layout((4, 100), 32) is None  # no whole 16-column blocks: left as it is, as upstream does


def test_transpose_takes_upstreams_subgroup_layouts():
    out = distribute(TRANSPOSE, "xegpu-propagate")
    assert sg_fields(out, "layout") == ["sg_layout = [8, 4] sg_data = [32, 32] order = [0, 1]",
                                        "sg_layout = [4, 8] sg_data = [32, 32]"]


def test_dpas_takes_upstreams_subgroup_layouts():
    out = distribute(DPAS, "xegpu-propagate")
    assert sg_fields(out, "layout_a") == ["sg_layout = [8, 8] sg_data = [16, 128]"]
    assert sg_fields(out, "layout_b") == ["sg_layout = [8, 8] sg_data = [128, 16]"]
    assert sg_fields(out, "layout_cd") == ["sg_layout = [8, 8] sg_data = [16, 16]"]


@pytest.mark.parametrize("text, func", [(TRANSPOSE, "vector_transpose"), (DPAS, "dpas")])
def test_shared_out_kernels_distribute_correctly(text, func):
    out = check_xegpu(text, func)
    # each lane holds its subgroup's tile, not the workgroup's: 32x32 f32 over 16 lanes
    widest = max(int(n) for n in re.findall(r"vector<(\d+)xf32>", out))
    assert widest <= 64, widest


def test_stages_after_the_first_keep_the_subgroups_tiles():
    """Run stage by stage: blocking and sg-to-lane read subgroup-level IR whose launch is
    the workgroup's, and must not share it out again."""
    from simtify.ir import parse, print_module
    from simtify.sim import find_function, random_inputs, run
    from simtify.transforms.pipelines import Options, run_pipeline
    import numpy as np

    module = parse(DPAS, "dpas.mlir")
    for stage in ("xegpu-wg-to-sg", "xegpu-blocking", "xegpu-sg-to-lane"):
        run_pipeline(module, stage, Options(target="xe"))
        module = parse(print_module(module), f"{stage}.mlir")
    ref_module = parse(DPAS, "dpas.mlir")
    inputs = random_inputs(find_function(ref_module, "dpas"), 1)
    want = run(ref_module, "dpas", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup")
    got = run(module, "dpas", {k: v.copy() for k, v in inputs.items()}, target="xe", sanitize=True)
    assert not got.findings
    np.testing.assert_allclose(got.arguments["d"], want.arguments["d"], rtol=1e-4, atol=1e-4)


def upstream_function(name: str) -> str:
    from test_xegpu_upstream_syntax import FIXTURES, functions_of

    from simtify.cli.opt_cmd import split_chunks

    [text] = [t for chunk in split_chunks((FIXTURES / "propagate-layout-subgroup.mlir").read_text())
              for func, t in functions_of(chunk) if func == name]
    return text


# upstream's CHECK lines: the collapsing shape_cast's source (a constant) and result
COLLAPSES = {
    "shape_cast_collapse_innermost": ["sg_layout = [8, 1, 1] sg_data = [1, 16, 32]", "sg_layout = [8] sg_data = [512]"],
    "shape_cast_collapse_sg_layout_spill_inward": ["sg_layout = [2, 8, 1] sg_data = [1, 1, 32]",
                                                   "sg_layout = [16] sg_data = [32]"],
    "shape_cast_collapse_multi_groups": ["sg_layout = [2, 1, 4, 1] sg_data = [1, 4, 2, 16]",
                                         "sg_layout = [2, 4] sg_data = [4, 32]"],
    "shape_cast_collapse_replicated": ["sg_layout = [2, 1, 2] sg_data = [8, 8, 8]",
                                       "sg_layout = [2, 2] sg_data = [8, 64]"],
    "shape_cast_collapse_sg_wraparound": ["sg_layout = [1, 4] sg_data = [1, 4]", "sg_layout = [4] sg_data = [4]"],
}


@pytest.mark.parametrize("func", COLLAPSES)
def test_collapsing_shape_cast_source_takes_upstreams_layout(func):
    """The source of a shape_cast that folds runs of dims into one takes the result's
    subgroups spread outermost first and its data filled innermost first (upstream's
    ``expandDim``)."""
    out = distribute(upstream_function(func), "xegpu-propagate")
    assert sg_fields(out, "layout_result_0")[:2] == COLLAPSES[func]


def layouts_by_name(text: str) -> dict:
    """The value each op of the propagated function defines, by name, with its layout
    (``layout_result_0``, or a load's ``layout``) and shape."""
    from simtify.ir import parse
    from simtify.transforms.xegpu_annotations import of_attr

    out = {}
    for op in parse(text, "propagated.mlir").walk():
        for r in op.results:
            lay = of_attr(op.attributes.get("layout_result_0")) or of_attr(op.properties.get("layout"))
            if r.name_hint and lay is not None:
                out[r.name_hint] = (lay, tuple(r.type.get_shape()))
    return out


def assert_owned_as(got: dict, want: dict) -> None:
    """Each named value is held by the subgroups as upstream's CHECK layout says (compared
    on ownership maps of the subgroup fields: upstream may write a slice where simtify
    writes its parent, and completion adds instructions and lanes)."""
    from simtify.layout.parse import parse_layout
    from simtify.layout.xegpu import subgroup_part

    for name, text in want.items():
        lay, shape = got[name]
        lay = subgroup_part(lay)
        expected = parse_layout(text)
        threads = expected.num_subgroups * 16
        owners = lambda x: x.ownership(shape, 16, threads)  # noqa: E731
        assert owners(lay).same_ownership(owners(expected)), f"%{name}: {lay}, upstream {text}"


def test_nested_reduction_takes_upstreams_subgroup_layouts():
    """A broadcast's new leading dim reduced, then the next dim: upstream's CHECK lines
    (vector_nest_reduction). Completion makes the broadcast's instruction blocks differ
    from the reduction's, so a convert_layout re-blocks the value between them."""
    got = layouts_by_name(distribute(upstream_function("vector_nest_reduction"), "xegpu-propagate"))
    assert_owned_as(got, {
        "bcast1": "#xegpu.layout<sg_layout = [1, 4, 8], sg_data = [4, 8, 16]>",
        "bcast": "#xegpu.slice<#xegpu.layout<sg_layout = [1, 4, 8], sg_data = [4, 8, 16]>, dims = [0]>",
        "reduce": "#xegpu.slice<#xegpu.layout<sg_layout = [4, 8], sg_data = [8, 16]>, dims = [1]>"})


SCALAR_REDUCTION = """
gpu.module @test {
  gpu.func @f(%src: memref<32x64xf32>, %dst: memref<1xf32>) kernel attributes
      {known_block_size = array<i32: 1, 32, 16>} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.000000e+00 : f32
    %tdesc_src = xegpu.create_nd_tdesc %src : memref<32x64xf32> -> !xegpu.tensor_desc<32x64xf32>
    %load = xegpu.load_nd %tdesc_src[0, 0] : !xegpu.tensor_desc<32x64xf32> -> vector<32x64xf32>
    %reduce = vector.multi_reduction <add>, %load, %cst [0, 1] : vector<32x64xf32> to f32
    memref.store %reduce, %dst[%c0] : memref<1xf32>
    gpu.return
  }
}
"""


def test_scalar_reduction_spreads_the_subgroups_outermost_first():
    assert scalar_reduction_layout((32, 64), 32) == XeGPULayout(sg_layout=(32, 1), sg_data=(1, 64))
    assert scalar_reduction_layout((4, 64), 32) == XeGPULayout(sg_layout=(4, 8), sg_data=(1, 8))
    assert scalar_reduction_layout((4, 8), 64) is None  # fewer elements than subgroups
    assert scalar_reduction_layout((3, 64), 2) is None


def test_scalar_reduction_source_takes_upstreams_subgroup_layout():
    """Upstream's vector_row_reduction_scalar: its CHECK line's result layout is the slice
    over both dims of ``sg_layout = [32, 1], sg_data = [1, 64]``, the load's."""
    out = distribute(upstream_function("vector_row_reduction_scalar"), "xegpu-propagate")
    assert sg_fields(out, "layout") == ["sg_layout = [32, 1] sg_data = [1, 64]"]


def test_scalar_reduction_of_a_shared_out_load_distributes_correctly():
    """Each subgroup sums its row, the partials meet in shared local memory."""
    out = check_xegpu(SCALAR_REDUCTION, "f")
    assert "xegpu.store_matrix" in out and "vector<1x64xf32>" not in out  # lanes split each row


def test_3d_transpose_takes_upstreams_subgroup_layouts():
    """Upstream's transpose_3d_order_remap: a 3-D block loaded with no layout takes the
    store's layout through the transpose, its order remapped (upstream writes the orders
    out; simtify leaves out an order that numbers the distributed dims as the default does)."""
    got = layouts_by_name(distribute(upstream_function("transpose_3d_order_remap"), "xegpu-propagate"))
    assert_owned_as(got, {
        "ld": "#xegpu.layout<sg_layout = [1, 2, 2], sg_data = [32, 1, 16], order = [0, 2, 1]>",
        "tr": "#xegpu.layout<sg_layout = [2, 1, 2], sg_data = [1, 32, 16], order = [1, 2, 0]>"})


def test_nested_slice_reduction_takes_upstreams_subgroup_layouts():
    """vector_nest_reduction_with_nest_slice_layout: the store's slice of a slice over 32
    columns of sg_data on 8 subgroups; the reduction's source shares the 128 columns out
    evenly instead (16 each), as upstream's CHECK lines say."""
    got = layouts_by_name(distribute(upstream_function("vector_nest_reduction_with_nest_slice_layout"),
                                     "xegpu-propagate"))
    parent = "#xegpu.layout<sg_layout = [1, 4, 8], sg_data = [4, 8, 16]>"
    wide = "#xegpu.layout<sg_layout = [1, 4, 8], sg_data = [4, 8, 32]>"
    assert_owned_as(got, {
        "load": f"#xegpu.slice<{parent}, dims = [0]>",
        "bcast1": parent,
        "bcast": f"#xegpu.slice<{parent}, dims = [0]>",
        "reduce": f"#xegpu.slice<#xegpu.slice<{parent}, dims = [0]>, dims = [1]>",
        "mask": f"#xegpu.slice<#xegpu.slice<{wide}, dims = [0]>, dims = [1]>",
        "offset": f"#xegpu.slice<#xegpu.slice<{wide}, dims = [0]>, dims = [1]>"})
