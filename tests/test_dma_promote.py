"""Using DMA: operand tiles of a matmul and the input of a reduction promoted into
workgroup memory by direct loads (gather_to_lds on gfx942, cp.async on sm_90), inside
the nested distribution and reduction-from-config pipelines; checked by simulation."""

from __future__ import annotations

import config_programs as cp
import numpy as np
import pytest
from distribution_harness import check_distribution, nested
from test_distribute_nested import REDUCTIONS, reduction_program

from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline


def looped_matmul(m, n, k, kt, la, lb, lc) -> str:
    """C += A·B with K walked in tiles of `kt` by an scf.for: each iteration reads an
    A and a B tile from global memory."""
    return f"""
func.func @mm(%a: memref<{m}x{k}xf16>, %b: memref<{k}x{n}xf16>, %c: memref<{m}x{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %ck = arith.constant {k} : index
  %ct = arith.constant {kt} : index
  %pad = arith.constant 0.0 : f16
  %padf = arith.constant 0.0 : f32
  %rc = vector.transfer_read %c[%c0, %c0], %padf {{in_bounds = [true, true]}} : memref<{m}x{n}xf32>, vector<{m}x{n}xf32>
  %acc0 = iree_vector_ext.to_layout %rc to layout({lc}) : vector<{m}x{n}xf32>
  %r = scf.for %kk = %c0 to %ck step %ct iter_args(%acc = %acc0) -> (vector<{m}x{n}xf32>) {{
    %ra = vector.transfer_read %a[%c0, %kk], %pad {{in_bounds = [true, true]}} : memref<{m}x{k}xf16>, vector<{m}x{kt}xf16>
    %rb = vector.transfer_read %b[%kk, %c0], %pad {{in_bounds = [true, true]}} : memref<{k}x{n}xf16>, vector<{kt}x{n}xf16>
    %va = iree_vector_ext.to_layout %ra to layout({la}) : vector<{m}x{kt}xf16>
    %vb = iree_vector_ext.to_layout %rb to layout({lb}) : vector<{kt}x{n}xf16>
    %d = vector.contract {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}} %va, %vb, %acc
      : vector<{m}x{kt}xf16>, vector<{kt}x{n}xf16> into vector<{m}x{n}xf32>
    scf.yield %d : vector<{m}x{n}xf32>
  }}
  vector.transfer_write %r, %c[%c0, %c0] {{in_bounds = [true, true]}} : vector<{m}x{n}xf32>, memref<{m}x{n}xf32>
  return
}}
"""


MATMULS = {
    # K over 4 lanes (subgroup_reduce clusters); B's N over lanes at stride 16 (64-lane subgroups)
    "gfx942": (nested([1, 1], [2, 1], [1, 1], [4, 4], [1, 4], [0, 0], [4, 1]),
               nested([1, 1], [1, 2], [1, 1], [4, 4], [4, 1], [0, 0], [1, 16]),
               nested([1, 1], [2, 2], [1, 1], [4, 4], [1, 1], [0, 0], [4, 16]), {}),
    # the same within 32 lanes, for sm_90's subgroups
    "sm_90": (nested([1, 1], [2, 1], [1, 1], [4, 4], [1, 4], [0, 0], [4, 1]),
              nested([1, 1], [1, 4], [1, 1], [4, 2], [4, 1], [0, 0], [1, 16]),
              nested([1, 1], [2, 4], [1, 1], [4, 2], [1, 1], [0, 0], [4, 16]), {"subgroup_size": 32}),
}


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_promoted_matmul_tiles(target):
    la, lb, lc, opts = MATMULS[target]
    text = looped_matmul(8, 8, 64, 16, la, lb, lc)
    out = check_distribution(text, "mm", pipeline="nested-distribute-dma", rtol=1e-2, atol=1e-2, target=target,
                             **opts)
    if target == "gfx942":
        assert out.count("amdgpu.gather_to_lds") == 2  # the A tile and the B tile
    else:
        assert out.count("nvgpu.device_async_copy") == 2 and "nvgpu.device_async_wait" in out
    # operands now come from workgroup memory; a barrier before each refill, one after
    assert "vector.transfer_read %a" not in out and "vector.transfer_read %b" not in out
    assert out.count("gpu.barrier") >= 4


def test_promoted_matmul_counters():
    """Against the register path of the same kernel: the operand bytes now arrive by DMA."""
    la, lb, lc, _ = MATMULS["gfx942"]
    text = looped_matmul(8, 8, 64, 16, la, lb, lc)
    stats = {}
    for pipeline in ("nested-distribute", "nested-distribute-dma"):
        module = parse(text)
        run_pipeline(module, pipeline, Options())
        args = random_inputs(find_function(module, "mm"), 1)
        stats[pipeline] = run(module, "mm", args).stats
    operand_bytes = (8 * 64 + 64 * 8) * 2
    assert stats["nested-distribute"]["dma_bytes"] == 0
    assert stats["nested-distribute-dma"]["dma_bytes"] == operand_bytes


@pytest.mark.parametrize("case", [0, 2, 5, 9, 12])
def test_promoted_reduction_input(case):
    layout, dims, kind = REDUCTIONS[case]
    out = check_distribution(reduction_program(layout, dims, kind), "reduce", pipeline="nested-distribute-dma")
    assert out.count("amdgpu.gather_to_lds") == 1 and "vector.transfer_read %src" not in out


def test_promotion_falls_back_to_registers_when_dma_cannot():
    layout, dims, kind = REDUCTIONS[6]  # a 24-element tile: not whole 64-lane loads
    out = check_distribution(reduction_program(layout, dims, kind), "reduce", pipeline="nested-distribute-dma")
    assert "gather_to_lds" not in out and "%promoted" in out


def reduction_from_config_dma(text: str, **opts) -> str:
    module = cp.parse(text, "input.mlir")
    run_pipeline(module, "reduction-from-config-dma", Options(**opts))
    return cp.print_module(module)


@pytest.mark.parametrize("target, opts", [("gfx942", {}), ("sm_90", {"subgroup_size": 32})])
def test_reduction_from_config_with_dma(monkeypatch, target, opts):
    """A row reduction generated from its lowering_config, its input tiles loaded by DMA
    every iteration of the reduction loop."""
    lanes = 64 if target == "gfx942" else 32
    cfg = cp.config_text([1, 0], [0, 8 * lanes], [0, 4], ([1, lanes], [0, 1]), ([1, 2], [0, 1]))
    monkeypatch.setattr(cp, "distribute", reduction_from_config_dma)
    out = cp.check_against_numpy([4, 32 * lanes], [1], cfg, target=target, **opts)
    assert ("amdgpu.gather_to_lds" if target == "gfx942" else "nvgpu.device_async_copy") in out


def test_promote_pass_alone_keeps_the_program_equal():
    """`--pass promote-operands-dma` on its own: a tile-level global_load_dma the
    workgroup-level simulator runs as a block copy."""
    from simtify.transforms.pipelines import run_pass

    layout, dims, kind = REDUCTIONS[0]
    text = reduction_program(layout, dims, kind)
    ref_m = parse(text)
    args = random_inputs(find_function(ref_m, "reduce"), 0)
    ref = run(ref_m, "reduce", {k: v.copy() for k, v in args.items()}, block=(1,), level="workgroup")
    module = parse(text)
    run_pass(module, "promote-operands-dma", Options())
    from simtify.ir import print_module

    assert "iree_gpu.global_load_dma %src[] -> %promoted[]" in print_module(module)
    new = run(module, "reduce", {k: v.copy() for k, v in args.items()}, block=(1,), level="workgroup")
    np.testing.assert_allclose(new.arguments["dst"], ref.arguments["dst"], rtol=1e-6)


def with_dma_conversion(text: str) -> str:
    return text.replace(">) : vector<64x64xf32>\n  %e", ">) {shared_memory_conversion = #iree_gpu.use_global_load_dma} "
                        ": vector<64x64xf32>\n  %e", 1)


def test_to_layout_asks_for_dma():
    """IREE 3.12's `shared_memory_conversion` naming the DMA attribute: the anchored tile
    reaches workgroup memory by gather_to_lds."""
    layout, dims, kind = REDUCTIONS[2]
    text = with_dma_conversion(reduction_program(layout, dims, kind))
    assert "use_global_load_dma" in text
    out = check_distribution(text, "reduce", pipeline="nested-distribute-dma")
    assert out.count("amdgpu.gather_to_lds") == 1


def test_to_layout_asking_for_dma_of_a_constant_is_an_error():
    from simtify.errors import SimtifyError

    text = """
func.func @f(%dst: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant dense<1.0> : vector<64xf32>
  %a = iree_vector_ext.to_layout %v to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [64], element_tile = [1], subgroup_strides = [0], thread_strides = [1]>) {shared_memory_conversion = #iree_gpu.use_global_load_dma} : vector<64xf32>
  vector.transfer_write %a, %dst[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""
    with pytest.raises(SimtifyError, match="input.mlir:5:3: this to_layout asks for DMA into workgroup memory, but "
                                           "its input is not a transfer_read"):
        run_pipeline(parse(text, "input.mlir"), "nested-distribute-dma", Options())


def test_distributed_program_with_the_tile_level_copy_still_agrees(monkeypatch):
    """Between promotion and lowering, the distributed program holds the tile-level
    global_load_dma: a workgroup's copy between two barriers, simulated as such."""
    from simtify.transforms import pipelines

    steps = [pipelines.promote_operands_dma, pipelines.nested_distribute]
    monkeypatch.setitem(pipelines.PIPELINES, "promote-then-distribute", (steps, ""))
    layout, dims, kind = REDUCTIONS[2]
    out = check_distribution(reduction_program(layout, dims, kind), "reduce", pipeline="promote-then-distribute")
    assert "iree_gpu.global_load_dma %src[] -> %promoted[]" in out
