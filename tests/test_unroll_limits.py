"""Distribution unrolls a value into its register groups (nested), pieces (XeGPU) or
rows (warp reductions). Inputs that would unroll into hundreds of thousands of ops are
refused before any work, with the numbers; programs of sane size are unaffected."""

from __future__ import annotations

import time

from diagnostics import one_error
from warp_harness import check_warp_steps

from simtify.cli.main import main

NESTED = ("#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, {b}], outer_tile = [1, 1], "
          "thread_tile = [4, 16], element_tile = [1, 4], subgroup_strides = [0, 0], thread_strides = [16, 1]>")


def row_reduction(batches: int, exps: int = 0) -> str:
    """vector<4 x 64·batches>: each of 64 threads holds 4·batches elements of one row."""
    n = 64 * batches
    vt = f"vector<4x{n}xf32>"
    chain = "".join(f"  %e{i + 1} = math.exp %e{i} : {vt}\n" for i in range(exps))
    return f"""func.func @reduce(%src: memref<4x{n}xf32>, %dst: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<4xf32>
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<4x{n}xf32>, {vt}
  %e0 = iree_vector_ext.to_layout %v to layout({NESTED.format(b=batches)}) : {vt}
{chain}  %r = vector.multi_reduction <add>, %e{exps}, %init [1] : {vt} to vector<4xf32>
  vector.transfer_write %r, %dst[%c0] {{in_bounds = [true]}} : vector<4xf32>, memref<4xf32>
  return
}}
"""


def opt(capsys, tmp_path, text: str, *args: str) -> tuple[int, str, float]:
    path = tmp_path / "in.mlir"
    path.write_text(text)
    start = time.perf_counter()
    code = main(["opt", str(path), *args])
    elapsed = time.perf_counter() - start
    err = capsys.readouterr().err
    return code, err, elapsed


def assert_refused(code: int, err: str, elapsed: float, *words: str) -> None:
    assert code == 2 and ": error: " in one_error(err), err
    for w in words:
        assert w in err, err
    # measured ~0.5 s (the work itself: minutes); the bound only catches a return to unrolling
    assert elapsed < 30, elapsed


def test_nested_value_larger_than_the_register_file_is_refused_before_unrolling(capsys, tmp_path):
    # the QA input: vector<4x4194304xf32>, 65536 batches, 262144 registers per thread
    code, err, elapsed = opt(capsys, tmp_path, row_reduction(65536), "--pipeline", "nested-distribute")
    assert_refused(code, err, elapsed, "in.mlir:5:3", "262144 32-bit registers per thread", "gfx942 has 512")


def test_nested_register_bound_follows_the_target(capsys, tmp_path):
    # 128 batches x 4 elements = 512 registers: exactly gfx942's per-lane file; one more batch is too many
    assert opt(capsys, tmp_path, row_reduction(128), "--pipeline", "nested-distribute")[0] == 0
    code, err, elapsed = opt(capsys, tmp_path, row_reduction(129), "--pipeline", "nested-distribute")
    assert_refused(code, err, elapsed, "516 32-bit registers per thread", "gfx942 has 512")
    # sm_90 (32 lanes: thread_tile 2x16) has 255: 64 batches x 4 = 256 is one too many
    text = row_reduction(64).replace("thread_tile = [4, 16]", "thread_tile = [2, 16]").replace("vector<4x", "vector<2x")
    text = text.replace("memref<4x", "memref<2x").replace("vector<4xf32>", "vector<2xf32>").replace(
        "memref<4xf32>", "memref<2xf32>")
    code, err, elapsed = opt(capsys, tmp_path, text, "--pipeline", "nested-distribute", "--target", "sm_90")
    assert_refused(code, err, elapsed, "256 32-bit registers per thread", "sm_90 has 255")


def test_nested_total_register_groups_are_bounded(capsys, tmp_path):
    # every value fits (128 registers), but 258 of them unroll into 258 x 128 groups
    code, err, elapsed = opt(capsys, tmp_path, row_reduction(128, exps=256), "--pipeline", "nested-distribute")
    assert_refused(code, err, elapsed, "more than 32768 register groups")


def xegpu_program(shape: tuple[int, int], layout: str) -> str:
    s = "x".join(map(str, shape))
    vt, mt, tt = f"vector<{s}xf32>", f"memref<{s}xf32>", f"!xegpu.tensor_desc<{s}xf32>"
    return f"""func.func @f(%A: {mt}, %C: {mt}) {{
  %ta = xegpu.create_nd_tdesc %A : {mt} -> {tt}
  %v = xegpu.load_nd %ta[0, 0] <{{layout = {layout}}}> : {tt} -> {vt}
  %e = math.exp %v : {vt}
  %tc = xegpu.create_nd_tdesc %C : {mt} -> {tt}
  xegpu.store_nd %e, %tc[0, 0] : {vt}, {tt}
  return
}}
"""


def test_xegpu_lane_share_larger_than_the_register_file_is_refused(capsys, tmp_path):
    # one subgroup, 131072 8x16 blocks; each lane would hold 1048576 floats
    text = xegpu_program((16, 1048576), "#xegpu.layout<inst_data = [8, 16], lane_layout = [1, 16], "
                                        "lane_data = [1, 1]>")
    for pipeline in ("xegpu-blocking", "xegpu-distribute"):
        code, err, elapsed = opt(capsys, tmp_path, text, "--pipeline", pipeline)
        assert_refused(code, err, elapsed, "in.mlir:3:3", "needs 1048576 32-bit registers per lane",
                       "xe has 256")


def test_xegpu_subgroup_rounds_are_bounded(capsys, tmp_path):
    # sg_data 1x16 on 1024x1024 over 2x2 subgroups: 16384 round-robin tiles per value
    text = xegpu_program((1024, 1024), "#xegpu.layout<sg_layout = [2, 2], sg_data = [1, 16]>")
    code, err, elapsed = opt(capsys, tmp_path, text, "--pipeline", "xegpu-wg-to-sg")
    assert_refused(code, err, elapsed, "more than 16384 pieces")


def test_warp_row_reduction_of_many_rows_stays_on_lane_0(capsys, tmp_path):
    """One reduction per row for 255 rows took ~50 s (quadratic in the region's ops);
    past 64 rows the reduction stays on lane 0, still correct."""
    rows = 65
    text = f"""func.func @f(%A: memref<{rows}x32xf32>, %Acc: memref<{rows}xf32>, %B: memref<{rows}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %A[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{rows}x32xf32>, vector<{rows}x32xf32>
  %a = vector.transfer_read %Acc[%c0], %pad {{in_bounds = [true]}} : memref<{rows}xf32>, vector<{rows}xf32>
  %r = vector.multi_reduction <maximumf>, %v, %a [1] : vector<{rows}x32xf32> to vector<{rows}xf32>
  vector.transfer_write %r, %B[%c0] {{in_bounds = [true]}} : vector<{rows}xf32>, memref<{rows}xf32>
  return
}}
"""
    start = time.perf_counter()
    out, _ = check_warp_steps(text, "f", "warp-distribute", grid=(1,))
    assert time.perf_counter() - start < 30
    assert "vector.reduction" not in out and "vector.multi_reduction" in out and "scf.if" in out
