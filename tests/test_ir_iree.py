"""The iree_vector_ext, iree_gpu and iree_codegen dialects: they read what IREE 3.12
prints, print it back the same way, and verify what the layout algebra says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dialect_context import expand_aliases, ops_named, parse, parse_unverified, print_ir, roundtrip
from iree_oracle import iree_opt_accepts
from xdsl.utils.exceptions import ParseError, VerifyException

from simtify.ir.iree_codegen import CodegenLoweringConfigAttr, NoPipelineAttr, TranslationInfoAttr
from simtify.ir.iree_gpu import LoweringConfigAttr, PipelineAttr
from simtify.ir.iree_vector_ext import NestedLayoutAttr, ToLayoutOp, TransferGatherOp
from simtify.layout import Basis, NestedLayout

FIXTURES = Path(__file__).parent / "fixtures" / "iree"

SEED_LAYOUT = (
    "#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], "
    "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
)
ROW_LAYOUT = (
    "#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], "
    "thread_tile = [64], element_tile = [1], subgroup_strides = [0], thread_strides = [1]>"
)


def func(body: str, args: str = "", attrs: str = "") -> str:
    attributes = f" attributes {{{attrs}}}" if attrs else ""
    return f"func.func @f({args}){attributes} {{\n{body}\n  func.return\n}}\n"


def lines_with(text: str, word: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if word in line]


# --- round trips: one snippet per op / attribute form --------------------------------

VEC = "%v: vector<64x64xf16>, %w: vector<64xf32>"
GATHER_ARGS = (
    "%src: memref<4096x512x8xf16>, %t: tensor<4096x64xf16>, %i16: vector<16xindex>, %i8: vector<8xindex>, "
    "%i64: vector<64xindex>, %i2d: vector<128x64xindex>, %pad: f16, %m: vector<16x8xi1>, %mt: vector<64x128xi1>"
)

IREE_SNIPPETS = {
    "to_layout": (VEC, f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x64xf16>"),
    "to_layout_tensor": (
        "%t: tensor<64xf32>",
        f"  %0 = iree_vector_ext.to_layout %t to layout({ROW_LAYOUT}) : tensor<64xf32>",
    ),
    "to_layout_unit_smem": (
        VEC,
        f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) {{shared_memory_conversion}} : vector<64x64xf16>",
    ),
    "to_layout_smem_value": (
        VEC,
        f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) "
        "{shared_memory_conversion = #iree_gpu.derived_thread_config} : vector<64x64xf16>",
    ),
    "to_layout_mma_kind": (
        VEC,
        f"  %0 = iree_vector_ext.to_layout %w to layout({ROW_LAYOUT}) "
        "{a = 1 : i64, mma_kind = #iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>, shared_memory_conversion} : vector<64xf32>",
    ),
    "to_simt_to_simd": (
        VEC,
        f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x64xf16>\n"
        "  %1 = iree_vector_ext.to_simt %0 : vector<64x64xf16> -> vector<2x4x1x1x1x4xf16>\n"
        "  %2 = iree_vector_ext.to_simd %1 : vector<2x4x1x1x1x4xf16> -> vector<64x64xf16>",
    ),
    "transfer_gather_3_12": (
        GATHER_ARGS,
        "  %c0 = arith.constant 0 : index\n"
        "  %0 = iree_vector_ext.transfer_gather %src[%c0, %c0, %c0] [%i16 : vector<16xindex>], %pad "
        "{indexing_maps = [affine_map<(d0, d1)[s0] -> (0, s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>]} "
        ": memref<4096x512x8xf16>, vector<16x8xf16>",
    ),
    "transfer_gather_3_12_two_vecs_mask": (
        GATHER_ARGS,
        "  %c0 = arith.constant 0 : index\n"
        "  %0 = iree_vector_ext.transfer_gather %src[%c0, %c0, %c0] [%i16, %i8 : vector<16xindex>, vector<8xindex>], %pad, %m "
        "{indexing_maps = [affine_map<(d0, d1)[s0, s1] -> (s0, 0, s1)>, affine_map<(d0, d1)[s0, s1] -> (d0)>, "
        "affine_map<(d0, d1)[s0, s1] -> (d1)>, affine_map<(d0, d1)[s0, s1] -> (d0, d1)>]} "
        ": memref<4096x512x8xf16>, vector<16x8xf16>, vector<16x8xi1>",
    ),
    "transfer_gather_seed": (
        GATHER_ARGS,
        "  %c0 = arith.constant 0 : index\n"
        "  %cst = arith.constant 0.000000e+00 : f16\n"
        "  %0 = iree_vector_ext.transfer_gather %t[%c0, %c0][None, %i64: vector<64xindex>], %cst "
        "{indexed_maps = [affine_map<(d0, d1) -> (d1)>]} : tensor<4096x64xf16>, vector<128x64xf16>\n"
        "  %1 = iree_vector_ext.transfer_gather %t[%c0, %c0][None, %i2d: vector<128x64xindex>], %cst "
        "{indexed_maps = [affine_map<(d0, d1) -> (d0, d1)>]} : tensor<4096x64xf16>, vector<128x64xf16>",
    ),
    "transfer_gather_seed_permuted_masked": (
        GATHER_ARGS,
        "  %c0 = arith.constant 0 : index\n"
        "  %cst = arith.constant 0.000000e+00 : f16\n"
        "  %0 = iree_vector_ext.transfer_gather %t[%c0, %c0][%i64: vector<64xindex>, None], %cst, %mt "
        "{in_bounds = [true, false], indexed_maps = [affine_map<(d0, d1) -> (d0)>], "
        "permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : tensor<4096x64xf16>, vector<128x64xf16>",
    ),
    "global_load_dma_memref": (
        "%g: memref<1024x1024xi8>, %l: memref<64x256xi8, #gpu.address_space<workgroup>>, %i: index",
        "  iree_gpu.global_load_dma %g[%i, %i] -> %l[%i, %i] : memref<1024x1024xi8> -> memref<64x256xi8, #gpu.address_space<workgroup>>",
    ),
    "global_load_dma_tensor_seed": (
        "%s: tensor<16x256xi8>, %d: tensor<64x256xi8>, %i: index",
        "  %0 = iree_gpu.global_load_dma %s[%i, %i] -> %d[%i, %i] : tensor<16x256xi8>, tensor<64x256xi8> -> tensor<64x256xi8>",
    ),
    "coalesced_gather_dma": (
        "%s: memref<4x128xf32>, %d: memref<4x128xf32, #gpu.address_space<workgroup>>, %rows: vector<4xindex>, %l: index",
        "  iree_gpu.coalesced_gather_dma %s into %d lane(%l) : memref<4x128xf32>, memref<4x128xf32, #gpu.address_space<workgroup>>, index\n"
        "  iree_gpu.coalesced_gather_dma %s[%rows] into %d lane(%l) in_bounds [true, false] : memref<4x128xf32>, vector<4xindex>, "
        "memref<4x128xf32, #gpu.address_space<workgroup>>, index",
    ),
    "coalesced_gather_dma_tensor": (
        "%s: tensor<4x128xf32>, %d: tensor<4x128xf32>, %l: index",
        "  %0 = iree_gpu.coalesced_gather_dma %s into %d lane(%l) : tensor<4x128xf32>, tensor<4x128xf32>, index -> tensor<4x128xf32>",
    ),
    "async_dma": (
        "%a: memref<20x64xf16>, %b: memref<1x64xf16, #gpu.address_space<workgroup>>, %t: tensor<20x64xf16>, "
        "%tb: tensor<128xf16, #gpu.address_space<workgroup>>, %i: index, %g: vector<64xindex>",
        "  iree_gpu.async_dma %a[%i, %i] to %b[%i, %i], vector<1x64xf16> : memref<20x64xf16>, memref<1x64xf16, #gpu.address_space<workgroup>>\n"
        "  iree_gpu.async_dma %a[%i, %g] to %b[%i, %i], vector<1x64xf16> in_bounds [true, false] : memref<20x64xf16> [index, vector<64xindex>], "
        "memref<1x64xf16, #gpu.address_space<workgroup>>\n"
        "  %0 = iree_gpu.async_dma %t[%i, %i] to %tb[%i], vector<64xf16> permutation_map affine_map<(d0, d1) -> (d1)> in_bounds [true] "
        ": tensor<20x64xf16>, tensor<128xf16, #gpu.address_space<workgroup>> -> tensor<128xf16, #gpu.address_space<workgroup>>",
    ),
}

CONFIG = (
    "#iree_gpu.lowering_config<{expand_dims = #iree_gpu.expand_dims<[[0], [1], [2, 3]], output_shape = [?, ?, ?, 8]>, "
    "lane_basis = [[1, 1, 64, 1], [0, 1, 2, 3]], partial_reduction = [0, 0, 64, 0], "
    "subgroup_basis = [[1, 1, 1, 1], [0, 1, 2, 3]], thread = [0, 0, 1, 8], workgroup = [4, 1, 0, 0]}>"
)

ATTRIBUTE_SNIPPETS = {
    "nested_layout": SEED_LAYOUT,
    "lowering_config_seed": CONFIG,
    "lowering_config_3_12": "#iree_gpu.lowering_config<{lane_basis = [[1, 16, 4], [0, 2, 1]], mma_kind = #iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>, "
    'promote_operands = [0, 1], "quoted key", reduction = [0, 0, 4], serial = [0, 0, 1], subgroup = [1, 1, 0], unit_flag}>',
    "expand_dims": "#iree_gpu.expand_dims<[[0, 1], [2]], output_shape = [?, 4, 16]>",
    "use_global_load_dma": "#iree_gpu.use_global_load_dma",
    "derived_thread_config": "#iree_gpu.derived_thread_config",
    "pipeline": "#iree_gpu.pipeline<TileAndFuse>",
    "mma_layout_col_major": "#iree_gpu.mma_layout<MFMA_F32_32x32x8_F16, col_major = true>",
    "translation_info": "#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
    "workgroup_size = [256, 1, 1] subgroup_size = 64, {a = [1, 2], b}>",
    "translation_info_spec": "#iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @spec>",
    "translation_info_pass_pipeline": '#iree_codegen.translation_info<pipeline = #iree_codegen.pass_pipeline<"builtin.module(canonicalize)"> '
    "workgroup_size = [64]>",
    "codegen_lowering_config": "#iree_codegen.lowering_config<tile_sizes = [[128, 256], [1, 0]]>",
}

# Seed-only syntax iree-opt 3.12 no longer has.
NOT_IN_IREE_3_12 = {
    "transfer_gather_seed",
    "transfer_gather_seed_permuted_masked",
    "global_load_dma_memref",
    "global_load_dma_tensor_seed",
    "lowering_config_seed",
    "expand_dims",
}


def attribute_holder(attr: str) -> str:
    return func("", attrs=f"x = {attr}")


@pytest.mark.parametrize("name", sorted(IREE_SNIPPETS))
def test_op_round_trip(name):
    args, body = IREE_SNIPPETS[name]
    text = func(body, args)
    printed = roundtrip(text)
    # What we print is what was written (it is written here in IREE's canonical form).
    for line in body.splitlines():
        assert line.strip() in printed, f"{line.strip()}\nnot in\n{printed}"


@pytest.mark.parametrize("name", sorted(ATTRIBUTE_SNIPPETS))
def test_attribute_round_trip(name):
    attr = ATTRIBUTE_SNIPPETS[name]
    printed = roundtrip(attribute_holder(attr))
    assert f"x = {attr}" in printed


def test_nested_layout_is_the_layout_class():
    module = parse(attribute_holder(SEED_LAYOUT))
    attr = module.body.block.first_op.attributes["x"]
    assert isinstance(attr, NestedLayoutAttr)
    assert attr.layout == NestedLayout.parse(SEED_LAYOUT)
    assert attr.layout.distributed_shape == (2, 4, 1, 1, 1, 4)


def test_nested_layout_keys_in_any_order_print_in_iree_order():
    shuffled = (
        "#iree_vector_ext.nested_layout<thread_strides = [1, 16], batch_tile = [2, 4], subgroup_tile = [2, 1], "
        "outer_tile = [1, 1], subgroup_strides = [1, 0], element_tile = [1, 4], thread_tile = [16, 4]>"
    )
    assert f"x = {SEED_LAYOUT}" in roundtrip(attribute_holder(shuffled))


def test_nested_layout_strides_on_unit_tiles_normalise_to_zero():
    text = SEED_LAYOUT.replace("subgroup_strides = [1, 0]", "subgroup_strides = [1, 7]")
    assert f"x = {SEED_LAYOUT}" in roundtrip(attribute_holder(text))


def test_legacy_pipeline_name_prints_in_3_12_form():
    legacy = "#iree_codegen.translation_info<pipeline = LLVMGPUVectorDistribute workgroup_size = [64, 1, 1] subgroup_size = 64>"
    printed = roundtrip(attribute_holder(legacy))
    assert "pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 64>" in printed
    info = parse(printed).body.block.first_op.attributes["x"]
    assert isinstance(info, TranslationInfoAttr)
    assert info.pipeline == PipelineAttr("VectorDistribute")
    assert (info.workgroup_size, info.subgroup_size, info.threads_per_workgroup) == ((64, 1, 1), 64, 64)
    none = parse(attribute_holder("#iree_codegen.translation_info<pipeline = None>")).body.block.first_op.attributes[
        "x"
    ]
    assert none.pipeline == NoPipelineAttr()


def test_lowering_config_values_and_sorted_keys():
    written = (
        "#iree_gpu.lowering_config<{workgroup = [4, 1, 0, 0], thread = [0, 0, 1, 8], partial_reduction = [0, 0, 64, 0], "
        "lane_basis = [[1, 1, 64, 1], [0, 1, 2, 3]], subgroup_basis = [[1, 1, 1, 1], [0, 1, 2, 3]], "
        "expand_dims = #iree_gpu.expand_dims<[[0], [1], [2, 3]], output_shape = [?, ?, ?, 8]>}>"
    )
    printed = roundtrip(attribute_holder(written))
    assert f"x = {CONFIG}" in printed  # MLIR dictionaries (and so IREE) print sorted by key
    config = parse(printed).body.block.first_op.attributes["x"]
    assert isinstance(config, LoweringConfigAttr)
    assert config.tile_sizes("workgroup") == (4, 1, 0, 0)
    assert config.tile_sizes("serial") is None
    assert config.lane_basis == Basis((1, 1, 64, 1), (0, 1, 2, 3))
    assert config.subgroup_basis.size == 1
    # The seed's worked example: lane 42 of [[16, 4], [1, 0]] sits at coordinates [2, 10].
    assert Basis.parse("[[16, 4], [1, 0]]").coords([42]).tolist() == [[2, 10]]
    assert config.expand_dims.expand((4, 6656, 16384)) == (4, 6656, 2048, 8)


def test_expand_dims_expansion_is_ignored_when_not_static():
    seed = parse(attribute_holder("#iree_gpu.expand_dims<[[0], [1, 2]], output_shape = [?, ?, 8]>")).body.block.first_op
    attr = seed.attributes["x"]
    assert attr.expand((5, 64)) == (5, 8, 8)
    assert attr.expand((5, 12)) is None  # 8 does not divide 12
    assert attr.expand((5,)) is None


def test_codegen_lowering_config_levels():
    attr = parse(attribute_holder(ATTRIBUTE_SNIPPETS["codegen_lowering_config"])).body.block.first_op.attributes["x"]
    assert isinstance(attr, CodegenLoweringConfigAttr)
    assert attr.tile_sizes == ((128, 256), (1, 0))


def test_to_layout_accessors():
    module = parse(func(IREE_SNIPPETS["to_layout_unit_smem"][1], VEC))
    (op,) = ops_named(module, "iree_vector_ext.to_layout")
    assert isinstance(op, ToLayoutOp)
    assert op.through_shared_memory
    assert op.nested_layout.undistributed_shape == (64, 64)


def test_to_layout_built_in_python():
    """What a pass would write: an anchor built from a layout object."""
    from xdsl.builder import ImplicitBuilder
    from xdsl.dialects.builtin import ModuleOp, VectorType, f32
    from xdsl.dialects.func import FuncOp, ReturnOp

    layout = NestedLayout.parse(ROW_LAYOUT)
    with ImplicitBuilder((f := FuncOp("f", ((VectorType(f32, [64]),), ()))).body) as (v,):
        ToLayoutOp(v, layout, shared_memory_conversion=True)
        ReturnOp()
    printed = print_ir(ModuleOp([f]))
    assert (
        f"iree_vector_ext.to_layout %0 to layout({ROW_LAYOUT}) {{shared_memory_conversion}} : vector<64xf32>" in printed
    )
    assert print_ir(parse(printed)) == printed


def test_seed_global_load_dma_without_indices():
    """The seed's lowering example copies whole subviews: ``%a, %b : T0, T1``."""
    src = "memref<1x64xi8, strided<[256, 1], offset: ?>, #amdgpu.address_space<fat_raw_buffer>>"
    dst = "memref<1x64xi8, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>"
    printed = roundtrip(func(f"  iree_gpu.global_load_dma %a, %b : {src}, {dst}", f"%a: {src}, %b: {dst}"))
    assert f"iree_gpu.global_load_dma %a[] -> %b[] : {src} -> {dst}" in printed


def test_transfer_gather_forms_are_kept_apart():
    module = parse(func(IREE_SNIPPETS["transfer_gather_seed"][1], GATHER_ARGS))
    seed = ops_named(module, "iree_vector_ext.transfer_gather")[0]
    assert isinstance(seed, TransferGatherOp) and seed.is_seed_form
    assert [bool(b.value.data) for b in seed.indexed.data] == [False, True]
    module = parse(func(IREE_SNIPPETS["transfer_gather_3_12"][1], GATHER_ARGS))
    assert not ops_named(module, "iree_vector_ext.transfer_gather")[0].is_seed_form


# --- verifier and parser errors ------------------------------------------------------


def verify_error(body: str, args: str) -> str:
    with pytest.raises(VerifyException) as info:
        parse(func(body, args))
    return str(info.value)


def parse_error(text: str) -> str:
    with pytest.raises(ParseError) as info:
        parse_unverified(text)
    return str(info.value)


def test_to_layout_whose_layout_does_not_fit_the_vector():
    message = verify_error(
        f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x32xf16>", "%v: vector<64x32xf16>"
    )
    assert "does not fit vector<64x32xf16>" in message and "dim 1 has size 32" in message


def test_to_layout_with_the_wrong_rank():
    message = verify_error(
        f"  %0 = iree_vector_ext.to_layout %v to layout({ROW_LAYOUT}) : vector<64x2xf32>", "%v: vector<64x2xf32>"
    )
    assert "rank 2" in message and "rank 1" in message


def test_to_layout_must_fit_the_functions_launch():
    """Inside a function whose translation_info fixes the launch, the layout's threads
    must fit the workgroup and its subgroups beyond the launched ones must wrap around
    (virtual subgroup v on v mod n); a thread span wider than a subgroup is fine when
    every element keeps an owner."""

    def launch(workgroup: int, subgroup: int) -> str:
        return (
            "translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
            f"workgroup_size = [{workgroup}, 1, 1] subgroup_size = {subgroup}>"
        )

    body = f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x64xf16>"
    parse(func(body, VEC, launch(128, 64)))  # two subgroups of 64: fits
    parse(func(body, VEC, launch(64, 64)))  # one subgroup runs both virtual ones
    four = SEED_LAYOUT.replace("subgroup_tile = [2, 1]", "subgroup_tile = [4, 1]").replace(
        "batch_tile = [2, 4]", "batch_tile = [1, 4]")
    with pytest.raises(VerifyException, match="spans 4 subgroups but the launch has 2: .* straddles"):
        parse(func(body.replace(SEED_LAYOUT, four), VEC, launch(128, 64)))
    with pytest.raises(VerifyException, match="thread span 64 crosses subgroups .* no owner"):
        parse(func(body, VEC, launch(256, 32)))
    one_subgroup = SEED_LAYOUT.replace("subgroup_tile = [2, 1]", "subgroup_tile = [1, 1]").replace(
        "batch_tile = [2, 4]", "batch_tile = [4, 4]").replace("subgroup_strides = [1, 0]", "subgroup_strides = [0, 0]")
    parse(func(body.replace(SEED_LAYOUT, one_subgroup), VEC, launch(64, 32)))  # 64 threads: two subgroups of 32
    with pytest.raises(VerifyException, match="thread span 64 .* exceeds the workgroup size 32"):
        parse(func(body.replace(SEED_LAYOUT, one_subgroup), VEC, launch(32, 32)))


def test_nested_layout_the_layout_class_refuses():
    overlapping = SEED_LAYOUT.replace("thread_strides = [1, 16]", "thread_strides = [1, 8]")
    assert "thread strides overlap" in parse_error(attribute_holder(overlapping))
    missing = SEED_LAYOUT.replace(", thread_strides = [1, 16]", "")
    assert "missing 'thread_strides'" in parse_error(attribute_holder(missing))
    ranks = SEED_LAYOUT.replace("batch_tile = [2, 4]", "batch_tile = [2]")
    assert "rank" in parse_error(attribute_holder(ranks))


def test_to_layout_needs_a_nested_layout():
    assert "expected a #iree_vector_ext.nested_layout" in parse_error(
        func(
            "  %0 = iree_vector_ext.to_layout %v to layout(#iree_gpu.derived_thread_config) : vector<4xf32>",
            "%v: vector<4xf32>",
        )
    )


def test_to_simt_type_errors():
    body = f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x64xf16>\n"
    assert "element type" in verify_error(
        body + "  %1 = iree_vector_ext.to_simt %0 : vector<64x64xf16> -> vector<32xf32>", VEC
    )
    assert "16 elements but the layout gives it 32" in verify_error(
        body + "  %1 = iree_vector_ext.to_simt %0 : vector<64x64xf16> -> vector<16xf16>", VEC
    )


def test_transfer_gather_errors():
    base = "  %c0 = arith.constant 0 : index\n  %0 = iree_vector_ext.transfer_gather %src[%c0, %c0, %c0] [%i16 : vector<16xindex>], {pad} {{indexing_maps = [{maps}]}} : memref<4096x512x8xf16>, vector<16x8xf16>"
    good_maps = "affine_map<(d0, d1)[s0] -> (0, s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>"
    assert "expected 2" in verify_error(
        base.format(pad="%pad", maps="affine_map<(d0, d1)[s0] -> (0, s0, d1)>"), GATHER_ARGS
    )
    assert "source map has 2 results" in verify_error(
        base.format(pad="%pad", maps="affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>"),
        GATHER_ARGS,
    )
    wrong_pad = base.format(pad="%c0", maps=good_maps)
    with pytest.raises((VerifyException, ParseError)):
        parse(func(wrong_pad, GATHER_ARGS))


def test_lowering_config_errors():
    ranks = "#iree_gpu.lowering_config<{workgroup = [4, 1, 0], lane_basis = [[1, 64], [0, 1]]}>"
    assert "different numbers of dims" in parse_error(attribute_holder(ranks))
    basis = "#iree_gpu.lowering_config<{lane_basis = [[16, 4], [1, 2]]}>"
    assert "invalid lane_basis" in parse_error(attribute_holder(basis))
    shape = "#iree_gpu.lowering_config<{subgroup_basis = [16, 4]}>"
    assert "[[counts], [mapping]]" in parse_error(attribute_holder(shape))
    assert "expand_dims must be" in parse_error(attribute_holder("#iree_gpu.lowering_config<{expand_dims = [1]}>"))


def test_expand_dims_errors():
    assert "more than one '?'" in parse_error(
        attribute_holder("#iree_gpu.expand_dims<[[0, 1]], output_shape = [?, ?]>")
    )
    assert "in order" in parse_error(attribute_holder("#iree_gpu.expand_dims<[[1], [0]], output_shape = [2, 3]>"))


def test_translation_info_errors():
    assert "unknown pipeline 'Fancy'" in parse_error(
        attribute_holder("#iree_codegen.translation_info<pipeline = Fancy>")
    )
    assert "positive" in parse_error(
        attribute_holder("#iree_codegen.translation_info<pipeline = None workgroup_size = [0, 1, 1]>")
    )
    assert "unknown LLVMGPU pipeline" in parse_error(attribute_holder("#iree_gpu.pipeline<Fancy>"))


def test_dma_op_errors():
    args = "%g: memref<1024x1024xi8>, %l: memref<64x256xi8>, %i: index"
    assert "workgroup memory" in verify_error(
        "  iree_gpu.global_load_dma %g[%i, %i] -> %l[%i, %i] : memref<1024x1024xi8> -> memref<64x256xi8>", args
    )
    args = "%g: memref<1024x1024xi8>, %l: memref<64x256xi8, #gpu.address_space<workgroup>>, %i: index"
    assert "1 target indices" in verify_error(
        "  iree_gpu.global_load_dma %g[%i, %i] -> %l[%i] : memref<1024x1024xi8> -> memref<64x256xi8, #gpu.address_space<workgroup>>",
        args,
    )
    args = "%s: memref<4x128xf32>, %d: memref<4x128xf32, #gpu.address_space<workgroup>>, %l: index"
    assert "in_bounds has 1 entries" in verify_error(
        "  iree_gpu.coalesced_gather_dma %s into %d lane(%l) in_bounds [true] : memref<4x128xf32>, "
        "memref<4x128xf32, #gpu.address_space<workgroup>>, index",
        args,
    )


# --- fixtures: IREE 3.12's own output ------------------------------------------------


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", ["anchors.mlir", "dma.mlir"])
def test_iree_output_prints_back_as_iree_printed_it(name):
    """Every line of IREE's output holding one of our ops or attributes comes back
    byte for byte (after expanding IREE's ``#alias`` names, which xDSL does not print)."""
    iree = expand_aliases(fixture(name))
    ours = roundtrip(fixture(name))
    ours_lines = {line.strip() for line in ours.splitlines()}
    checked = 0
    for line in iree.splitlines():
        if re.search(r"\b(iree_vector_ext|iree_gpu|amdgpu)\.\w+ ", line) and "attributes" not in line:
            assert line.strip() in ours_lines, f"IREE printed\n  {line.strip()}\nwe printed\n{ours}"
            checked += 1
    assert checked >= 6


def test_fixture_func_attributes_print_as_iree_printed_them():
    iree = expand_aliases(fixture("anchors.mlir"))
    want = re.search(r"attributes (\{.*\}) \{$", iree, re.M).group(1)
    assert f"attributes {want} {{" in roundtrip(fixture("anchors.mlir"))


def test_fixture_config_reads_back_with_its_meaning():
    module = parse(fixture("anchors.mlir"))
    f = module.body.block.first_op
    info = f.attributes["translation_info"]
    assert (info.workgroup_size, info.subgroup_size) == ((256, 1, 1), 64)
    config = f.attributes["lowering_config"]
    assert config.tile_sizes("partial_reduction") == (0, 0, 512)
    assert config.lane_basis == Basis((1, 1, 64), (0, 1, 2))


def simtify_ir():
    """The project's IR entry points, once the upstream-dialect part exists."""
    try:
        from simtify.ir import parse as ir_parse
        from simtify.ir import print_module
    except ImportError:
        pytest.skip("simtify.ir.parse is not available yet")
    return ir_parse, print_module


@pytest.mark.parametrize(
    "name",
    [
        "row_sum_distributed.mlir",
        "row_max_4_subgroups_distributed.mlir",
        "reduction_config.mlir",
        "anchors.mlir",
        "dma.mlir",
    ],
)
def test_fixture_round_trips_through_simtify_ir(name):
    ir_parse, print_module = simtify_ir()
    first = print_module(ir_parse(fixture(name), name))
    assert print_module(ir_parse(first, name)) == first


def test_misfit_to_layout_is_located_by_simtify_ir():
    ir_parse, _ = simtify_ir()
    from simtify.errors import SimtifyError

    text = func(
        f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x32xf16>", "%v: vector<64x32xf16>"
    )
    with pytest.raises(SimtifyError) as info:
        ir_parse(text, "bad.mlir")
    assert info.value.where.startswith("bad.mlir:2:")
    assert "does not fit" in info.value.what


# --- the oracle ----------------------------------------------------------------------


@pytest.mark.iree
def test_printed_ir_parses_in_iree_opt():
    texts = [func(body, args) for name, (args, body) in sorted(IREE_SNIPPETS.items()) if name not in NOT_IN_IREE_3_12]
    texts += [attribute_holder(a) for name, a in sorted(ATTRIBUTE_SNIPPETS.items()) if name not in NOT_IN_IREE_3_12]
    texts += [fixture("anchors.mlir"), fixture("dma.mlir")]
    printed = "\n// -----\n".join(print_ir(parse(t)) for t in texts)
    ok, errors = iree_opt_accepts(printed, "--split-input-file")
    assert ok, errors


@pytest.mark.iree
def test_iree_opt_rejects_what_we_reject():
    """The oracle agrees on the misfit layout (a sanity check of the verifier)."""
    text = func(
        f"  %0 = iree_vector_ext.to_layout %v to layout({SEED_LAYOUT}) : vector<64x32xf16>", "%v: vector<64x32xf16>"
    )
    ok, errors = iree_opt_accepts(text)
    assert not ok and "does not match the layout" in errors
