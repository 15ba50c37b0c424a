"""The xegpu dialect: today's upstream syntax in and out, layouts checked by the
layout algebra (the seed's dim-by-dim even distribution)."""

from __future__ import annotations

import pytest
from dialect_context import ops_named, parse, parse_unverified, roundtrip
from xdsl.utils.exceptions import ParseError, VerifyException

from simtify.ir.xegpu import LayoutAttr, LoadNdOp, SliceAttr, TensorDescType
from simtify.layout import XeGPULayout, XeGPUSlice

A = "#xegpu.layout<sg_layout = [4, 4], sg_data = [16, 32], inst_data = [8, 16]>"
B = "#xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16], inst_data = [16, 16]>"
C = "#xegpu.layout<sg_layout = [4, 4], sg_data = [16, 16], inst_data = [8, 16]>"
LANES = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>"

ARGS = (
    "%a: memref<128x64xf16>, %b: memref<64x128xf16>, %c: memref<128x128xf32>, %p: ui64, %dyn: memref<?x?xf16>, "
    "%i: index, %j: index, %h: index, %w: index, %acc: vector<64x64xf32>, %va: vector<64x32xf16>, %vb: vector<32x64xf16>"
)

TDESC_A = "!xegpu.tensor_desc<64x32xf16, #xegpu.block_tdesc_attr<boundary_check = false>>"

# Each snippet is written exactly as upstream prints it, so it must come back unchanged.
SNIPPETS = {
    "create_nd_tdesc": f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> {TDESC_A}",
    "create_nd_tdesc_layout": f"  %0 = xegpu.create_nd_tdesc %c : memref<128x128xf32> -> !xegpu.tensor_desc<64x64xf32, {C}>",
    "create_nd_tdesc_raw_address": "  %0 = xegpu.create_nd_tdesc %p, shape : [%h, %w], strides : [%w, 1] : ui64 -> !xegpu.tensor_desc<8x16xf32>",
    "create_nd_tdesc_dynamic_memref": "  %0 = xegpu.create_nd_tdesc %dyn, shape : [%h, %w], strides : [%w, 1] : memref<?x?xf16> -> !xegpu.tensor_desc<8x16xf16>",
    "create_nd_tdesc_legacy_offsets": "  %0 = xegpu.create_nd_tdesc %a[0, %i] : memref<128x64xf16> -> "
    "!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<array_length = 2 : i64, boundary_check = false>>",
    "load_nd": f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> {TDESC_A}\n"
    f"  %1 = xegpu.load_nd %0[%i, 0] <{{layout = {A}}}> : {TDESC_A} -> vector<64x32xf16>",
    "load_nd_hints_packed": "  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> !xegpu.tensor_desc<16x16xf16>\n"
    "  %1 = xegpu.load_nd %0[%i, %j] <{l1_hint = #xegpu.cache_hint<cached>, l2_hint = #xegpu.cache_hint<uncached>, packed}> "
    ": !xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>",
    "load_nd_transpose": "  %0 = xegpu.create_nd_tdesc %c : memref<128x128xf32> -> !xegpu.tensor_desc<16x8xf32>\n"
    "  %1 = xegpu.load_nd %0[%i, %j] <{transpose = array<i64: 1, 0>}> : !xegpu.tensor_desc<16x8xf32> -> vector<8x16xf32>",
    "load_nd_lane_fragment": f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> !xegpu.tensor_desc<8x16xf16, {LANES}>\n"
    f"  %1 = xegpu.load_nd %0[%i, %j] : !xegpu.tensor_desc<8x16xf16, {LANES}> -> vector<8xf16>",
    "store_nd": f"  %0 = xegpu.create_nd_tdesc %c : memref<128x128xf32> -> !xegpu.tensor_desc<64x64xf32, {C}>\n"
    f"  xegpu.store_nd %acc, %0[%i, %j] <{{layout = {C}}}> : vector<64x64xf32>, !xegpu.tensor_desc<64x64xf32, {C}>",
    "prefetch_nd": f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> {TDESC_A}\n"
    "  xegpu.prefetch_nd %0[%i, 0] <{l1_hint = #xegpu.cache_hint<cached>, l2_hint = #xegpu.cache_hint<cached>, "
    "l3_hint = #xegpu.cache_hint<cached>, layout = #xegpu.layout<sg_layout = [8, 2], sg_data = [8, 16], inst_data = [8, 16]>}> "
    f": {TDESC_A}",
    "dpas": f"  %0 = xegpu.dpas %va, %vb, %acc {{layout_a = {A}, layout_b = {B}, layout_cd = {C}}} "
    ": vector<64x32xf16>, vector<32x64xf16>, vector<64x64xf32> -> vector<64x64xf32>",
    "dpas_no_acc": "  %0 = xegpu.dpas %va, %vb : vector<64x32xf16>, vector<32x64xf16> -> vector<64x64xf32>",
    "convert_layout": f"  %0 = xegpu.convert_layout %acc <{{input_layout = {C}, target_layout = "
    "#xegpu.layout<sg_layout = [4, 4], sg_data = [16, 16], inst_data = [16, 16]>}> : vector<64x64xf32>",
    "convert_layout_slices": "  %0 = arith.constant dense<1.000000e+00> : vector<8x2xbf16>\n"
    "  %1 = xegpu.convert_layout %0 <{input_layout = #xegpu.slice<#xegpu.layout<lane_layout = [1, 1, 16], lane_data = [1, 1, 1]>, "
    "dims = [2]>, target_layout = #xegpu.slice<#xegpu.layout<lane_layout = [8, 1, 2], lane_data = [1, 1, 1], order = [0, 2, 1]>, "
    "dims = [0]>}> : vector<8x2xbf16>",
    "discardable_layout_result": "  %0 = arith.constant 1 : index\n"
    f"  %1 = xegpu.dpas %va, %vb {{layout_result_0 = {C}}} : vector<64x32xf16>, vector<32x64xf16> -> vector<64x64xf32>",
}


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{body}\n  func.return\n}}\n"


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_round_trip_in_upstream_syntax(name):
    printed = roundtrip(func(SNIPPETS[name]))
    for line in SNIPPETS[name].splitlines():
        assert line.strip() in printed, f"{line.strip()}\nnot in\n{printed}"


def test_inherent_attributes_are_read_in_either_dictionary():
    """MLIR takes inherent attributes in ``<{..}>`` or ``{..}``; upstream prints
    load/store/convert_layout with ``<{..}>`` and dpas with ``{..}``."""
    text = func(
        f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> {TDESC_A}\n"
        f"  %1 = xegpu.load_nd %0[%i, 0] {{layout = {A}}} : {TDESC_A} -> vector<64x32xf16>\n"
        f"  %2 = xegpu.dpas %va, %vb, %acc <{{layout_cd = {C}, layout_a = {A}, layout_b = {B}}}> "
        ": vector<64x32xf16>, vector<32x64xf16>, vector<64x64xf32> -> vector<64x64xf32>"
    )
    printed = roundtrip(text)
    assert f"<{{layout = {A}}}> : {TDESC_A}" in printed
    assert f"{{layout_a = {A}, layout_b = {B}, layout_cd = {C}}} :" in printed


def test_aliases_and_slices_of_aliases():
    text = (
        "#sg = #xegpu.layout<sg_layout = [8, 1], sg_data = [8, 64]>\n"
        "#row = #xegpu.slice<#sg, dims = [1]>\n"
        "func.func @f(%v: vector<64xf32>) {\n"
        "  %0 = xegpu.convert_layout %v <{input_layout = #row, target_layout = #xegpu.slice<#xegpu.layout<sg_layout = [1, 8], "
        "sg_data = [64, 8]>, dims = [0]>}> : vector<64xf32>\n  func.return\n}\n"
    )
    printed = roundtrip(text)
    assert "input_layout = #xegpu.slice<#xegpu.layout<sg_layout = [8, 1], sg_data = [8, 64]>, dims = [1]>" in printed
    (op,) = ops_named(parse(text), "xegpu.convert_layout")
    assert isinstance(op.input_layout, SliceAttr)
    assert op.input_layout.layout == XeGPUSlice(XeGPULayout(sg_layout=(8, 1), sg_data=(8, 64)), (1,))


def test_layout_attribute_is_the_layout_class():
    module = parse(func(SNIPPETS["load_nd"]))
    (load,) = ops_named(module, "xegpu.load_nd")
    assert isinstance(load, LoadNdOp) and isinstance(load.layout, LayoutAttr)
    assert load.layout.layout == XeGPULayout.parse(A)
    tdesc = load.tensor_desc.type
    assert isinstance(tdesc, TensorDescType)
    assert tdesc.get_shape() == (64, 32) and tdesc.array_length == 1


def test_the_seeds_round_robin_example_is_accepted():
    """128x128 on sg_layout [2, 2] with sg_data [32, 128]: dim 0 in two rounds, dim 1
    shared; upstream's whole-array check would refuse it, the seed's rule accepts it."""
    layout = "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>"
    body = f"  %0 = xegpu.create_nd_tdesc %m : memref<1024x1024xf16> -> !xegpu.tensor_desc<128x128xf16, {layout}>"
    text = f"func.func @f(%m: memref<1024x1024xf16>) {{\n{body}\n  func.return\n}}\n"
    assert body.strip() in roundtrip(text)


def test_layout_fields_order_is_kept_canonical():
    shuffled = "#xegpu.layout<inst_data = [8, 16], sg_data = [16, 16], sg_layout = [4, 4]>"
    text = func(
        f"  %0 = xegpu.convert_layout %acc <{{input_layout = {shuffled}, target_layout = {C}}}> : vector<64x64xf32>"
    )
    assert f"input_layout = {C}" in roundtrip(text)


# --- errors --------------------------------------------------------------------------


def verify_error(body: str) -> str:
    with pytest.raises(VerifyException) as info:
        parse(func(body))
    return str(info.value)


def parse_error(body: str) -> str:
    with pytest.raises(ParseError) as info:
        parse_unverified(func(body))
    return str(info.value)


def test_layout_that_does_not_distribute_the_vector():
    bad = "#xegpu.layout<sg_layout = [3, 4], sg_data = [16, 16]>"
    message = verify_error(
        f"  %0 = xegpu.convert_layout %acc <{{input_layout = {C}, target_layout = {bad}}}> : vector<64x64xf32>"
    )
    assert "target_layout does not fit the vector 64x64" in message and "do not divide" in message


def test_layout_of_the_wrong_rank():
    three = "#xegpu.layout<sg_layout = [4, 4, 1], sg_data = [16, 16, 1]>"
    message = verify_error(
        f"  %0 = xegpu.convert_layout %acc <{{input_layout = {three}, target_layout = {C}}}> : vector<64x64xf32>"
    )
    assert "rank" in message


def test_tensor_desc_layout_must_fit_its_block():
    message = parse_error(
        "  %0 = xegpu.create_nd_tdesc %c : memref<128x128xf32> -> "
        "!xegpu.tensor_desc<64x64xf32, #xegpu.layout<sg_layout = [4, 4], sg_data = [16, 24]>>"
    )
    assert "does not fit the 64x64 descriptor" in message


def test_malformed_layouts_are_parse_errors():
    assert "not a permutation" in parse_error(
        f"  %0 = xegpu.convert_layout %acc <{{input_layout = #xegpu.layout<sg_layout = [4, 4], order = [1, 1]>, target_layout = {C}}}> : vector<64x64xf32>"
    )
    assert "unknown xegpu.layout parameter" in parse_error(
        f"  %0 = xegpu.convert_layout %acc <{{input_layout = #xegpu.layout<wi_layout = [1, 16]>, target_layout = {C}}}> : vector<64x64xf32>"
    )
    assert "unknown cache hint" in parse_error(
        f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> {TDESC_A}\n"
        f"  xegpu.prefetch_nd %0[%i, 0] <{{l1_hint = #xegpu.cache_hint<sometimes>}}> : {TDESC_A}"
    )


def test_dpas_shape_errors():
    assert "K differs" in verify_error(
        "  %0 = xegpu.dpas %va, %va : vector<64x32xf16>, vector<64x32xf16> -> vector<64x32xf32>"
    )
    assert "accumulator" in verify_error(
        "  %0 = xegpu.dpas %va, %vb, %acc : vector<64x32xf16>, vector<32x64xf16>, vector<64x64xf32> -> vector<64x64xf16>"
    )
    assert "layout_a does not fit A" in verify_error(
        f"  %0 = xegpu.dpas %va, %vb {{layout_a = {C}}} : vector<64x32xf16>, vector<32x64xf16> -> vector<64x64xf32>".replace(
            C, "#xegpu.layout<sg_layout = [4, 4], sg_data = [16, 12]>"
        )
    )


def test_load_and_store_errors():
    create = f"  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> {TDESC_A}\n"
    assert "produces f32" in verify_error(create + f"  %1 = xegpu.load_nd %0[%i, 0] : {TDESC_A} -> vector<64x32xf32>")
    assert "gives vector<64x32>, not vector<32x64>" in verify_error(
        create + f"  %1 = xegpu.load_nd %0[%i, 0] : {TDESC_A} -> vector<32x64xf16>"
    )
    assert "3 offsets for a tensor_desc of rank 2" in verify_error(
        create + f"  %1 = xegpu.load_nd %0[%i, 0, 0] : {TDESC_A} -> vector<64x32xf16>"
    )
    assert "invalid l1_hint" in verify_error(
        create
        + f"  xegpu.store_nd %va, %0[%i, 0] <{{l1_hint = #xegpu.cache_hint<read_invalidate>}}> : vector<64x32xf16>, {TDESC_A}"
    )
    assert "store_nd writes f32" in verify_error(
        "  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> !xegpu.tensor_desc<64x64xf16>\n"
        "  xegpu.store_nd %acc, %0[%i, 0] : vector<64x64xf32>, !xegpu.tensor_desc<64x64xf16>"
    )


def test_create_nd_tdesc_errors():
    assert "the memref holds f16 but the descriptor f32" in verify_error(
        "  %0 = xegpu.create_nd_tdesc %a : memref<128x64xf16> -> !xegpu.tensor_desc<8x16xf32>"
    )
    assert "needs shape" in verify_error(
        "  %0 = xegpu.create_nd_tdesc %dyn : memref<?x?xf16> -> !xegpu.tensor_desc<8x16xf16>"
    )
    assert "1 offsets for a source of rank 2" in verify_error(
        "  %0 = xegpu.create_nd_tdesc %a[%i] : memref<128x64xf16> -> !xegpu.tensor_desc<8x16xf16>"
    )


def test_convert_layout_needs_a_target_layout():
    """Without an input_layout it anchors the value in the target (upstream's lane-level
    tests write it so); without a target it says nothing."""
    assert "needs a target_layout" in verify_error(
        f"  %0 = xegpu.convert_layout %acc <{{input_layout = {C}}}> : vector<64x64xf32>"
    )
    parse(func(f"  %0 = xegpu.convert_layout %acc <{{target_layout = {C}}}> : vector<64x64xf32>"))
