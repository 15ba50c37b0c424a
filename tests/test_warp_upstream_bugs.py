"""Where upstream's warp distribution is wrong (DESIGN.md names three bugs), simtify is
right: each test simulates the program upstream emits (transcribed from its tests'
CHECK lines or from the formula in its code) and simtify's output against the input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from warp_harness import check_warp_steps

from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

FIXTURES = Path(__file__).parent / "fixtures" / "warp"


def _results(text: str, func: str, inputs: dict, block: int, target: str):
    module = parse(text, f"{func}.mlir")
    return run(module, func, {k: v.copy() for k, v in inputs.items()}, grid=(1,), block=(block,), target=target)


def _inputs(text: str, func: str, **fixed) -> dict:
    inputs = random_inputs(find_function(parse(text, "x.mlir"), func), seed=3)
    for k, v in fixed.items():
        inputs[k] = np.asarray(v, dtype=inputs[k].dtype)
    return inputs


# --- 1. the owner lane of an element is pos floordiv n, not pos ceildiv n -------------

UPSTREAM_INSERT_1D = """
func.func @vector_insert_1d(%in: memref<97xf32>) -> (vector<3xf32>) {
  %laneid = gpu.lane_id
  %c1 = arith.constant 1 : index
  %c26 = arith.constant 26 : index
  %c96 = arith.constant 96 : index
  %pad = arith.constant 0.0 : f32
  %i = affine.apply affine_map<(d0) -> (d0 * 3)> (%laneid)
  %v = vector.transfer_read %in[%i], %pad {in_bounds = [true]} : memref<97xf32>, vector<3xf32>
  %f = memref.load %in[%c96] : memref<97xf32>
  %should_insert = arith.cmpi eq, %laneid, %c26 : index
  %r = scf.if %should_insert -> (vector<3xf32>) {
    %inserted = vector.insert %f, %v [1] : f32 into vector<3xf32>
    scf.yield %inserted : vector<3xf32>
  } else {
    scf.yield %v : vector<3xf32>
  }
  return %r : vector<3xf32>
}
"""

UPSTREAM_EXTRACT_1D = """
func.func @vector_extractelement_1d(%in: memref<96xf32>, %pos: index) -> (f32) {
  %laneid = gpu.lane_id
  %pad = arith.constant 0.0 : f32
  %c32 = arith.constant 32 : i32
  %i = affine.apply affine_map<(d0) -> (d0 * 3)> (%laneid)
  %w = vector.transfer_read %in[%i], %pad {in_bounds = [true]} : memref<96xf32>, vector<3xf32>
  %from_lane = affine.apply affine_map<(d0) -> (d0 ceildiv 3)> (%pos)
  %distr_pos = affine.apply affine_map<(d0) -> (d0 mod 3)> (%pos)
  %e = vector.extract %w[%distr_pos] : f32 from vector<3xf32>
  %from_lane_i32 = arith.index_cast %from_lane : index to i32
  %shuffled, %valid = gpu.shuffle idx %e, %from_lane_i32, %c32 : f32
  return %shuffled : f32
}
"""


def test_insert_owner_lane_is_floor_division():
    text = (FIXTURES / "vector_insert_1d.mlir").read_text()
    inputs = _inputs(text, "vector_insert_1d")
    want = _results(text, "vector_insert_1d", inputs, 32, "sm_90").returns[0]
    upstream = _results(UPSTREAM_INSERT_1D, "vector_insert_1d", inputs, 32, "sm_90").returns[0]
    assert not np.allclose(np.broadcast_to(upstream, want.shape), want)  # element 79 changed, 76 not
    out, _ = check_warp_steps(text, "vector_insert_1d", "warp-distribute")
    assert "arith.constant 25 : index" in out and "[1] : f32 into vector<3xf32>" in out


def test_extract_owner_lane_is_floor_division():
    text = (FIXTURES / "vector_extractelement_1d.mlir").read_text()
    inputs = _inputs(text, "vector_extractelement_1d", pos=76)
    want = _results(text, "vector_extractelement_1d", inputs, 32, "sm_90").returns[0]
    upstream = _results(UPSTREAM_EXTRACT_1D, "vector_extractelement_1d", inputs, 32, "sm_90").returns[0]
    assert not np.allclose(np.broadcast_to(upstream, want.shape), want)  # read element 79
    out, _ = check_warp_steps(text, "vector_extractelement_1d", "warp-distribute", args={"pos": 76})
    assert "floordiv 3" in out and "ceildiv" not in out


# --- 2. the scf.if lowering offsets each distributed dim by its own lane digit --------

TWO_DIM_REGION = """
func.func @two_dims(%in: memref<8x32xf32>, %bias: memref<8x32xf32>, %out: memref<8x32xf32>) {
  %laneid = gpu.lane_id
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %ids:2 = affine.delinearize_index %laneid into (4, 8) : index, index
  %row = affine.apply affine_map<(d0) -> (d0 * 2)> (%ids#0)
  %col = affine.apply affine_map<(d0) -> (d0 * 4)> (%ids#1)
  %v = vector.transfer_read %in[%row, %col], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<2x4xf32>
  %r = gpu.warp_execute_on_lane_0(%laneid)[32] args(%v : vector<2x4xf32>) -> (vector<2x4xf32>) {
  ^bb0(%a: vector<8x32xf32>):
    %b = vector.transfer_read %bias[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
    %s = arith.addf %a, %b : vector<8x32xf32>
    gpu.yield %s : vector<8x32xf32>
  }
  vector.transfer_write %r, %out[%row, %col] {in_bounds = [true, true]} : vector<2x4xf32>, memref<8x32xf32>
  return
}
"""


def _upstream_scf_if(text: str) -> str:
    """The two_dims region lowered as upstream does: every distributed dim offset by the
    raw lane id times its per-lane size."""
    return text.replace("""  %r = gpu.warp_execute_on_lane_0(%laneid)[32] args(%v : vector<2x4xf32>) -> (vector<2x4xf32>) {
  ^bb0(%a: vector<8x32xf32>):
    %b = vector.transfer_read %bias[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
    %s = arith.addf %a, %b : vector<8x32xf32>
    gpu.yield %s : vector<8x32xf32>
  }""", """  %in_buf = memref.alloc() : memref<8x32xf32, #gpu.address_space<workgroup>>
  %out_buf = memref.alloc() : memref<8x32xf32, #gpu.address_space<workgroup>>
  %is_lane_0 = arith.cmpi eq, %laneid, %c0 : index
  %s0 = affine.apply affine_map<(d0) -> (d0 * 2)> (%laneid)
  %s1 = affine.apply affine_map<(d0) -> (d0 * 4)> (%laneid)
  vector.store %v, %in_buf[%s0, %s1] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<2x4xf32>
  gpu.barrier
  scf.if %is_lane_0 {
    %a = vector.load %in_buf[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<8x32xf32>
    %b = vector.transfer_read %bias[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
    %s = arith.addf %a, %b : vector<8x32xf32>
    vector.store %s, %out_buf[%c0, %c0] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<8x32xf32>
  }
  gpu.barrier
  %r = vector.load %out_buf[%s0, %s1] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<2x4xf32>""")


def test_scf_if_lowering_uses_each_dims_lane_digit():
    inputs = _inputs(TWO_DIM_REGION, "two_dims")
    want = _results(TWO_DIM_REGION, "two_dims", inputs, 32, "sm_90")
    upstream = _results(_upstream_scf_if(TWO_DIM_REGION), "two_dims", inputs, 32, "sm_90")
    assert any(f.kind == "out-of-bounds" for f in upstream.findings)  # lane 31 stores at [62, 124]
    out, _ = check_warp_steps(TWO_DIM_REGION, "two_dims", "warp-to-scf-if", args={})
    assert "affine.delinearize_index" in out
    assert np.isfinite(want.arguments["out"]).all()


# --- 3. lane digits for 3+ distributed dims divide by the ratios after the dim --------

UPSTREAM_READ_3D = """
func.func @warp_propagate_read_3d(%src: memref<4x4x16xf32>) -> vector<1x1x4xf32> {
  %laneid = gpu.lane_id
  %cst = arith.constant 0.000000e+00 : f32
  %id0 = affine.apply affine_map<(d0) -> (d0 * 4 - (d0 floordiv 4) * 16)> (%laneid)
  %id1 = affine.apply affine_map<(d0) -> ((d0 floordiv 4) mod 4)> (%laneid)
  %id2 = affine.apply affine_map<(d0) -> ((d0 floordiv 4) floordiv 16)> (%laneid)
  %r = vector.transfer_read %src[%id2, %id1, %id0], %cst : memref<4x4x16xf32>, vector<1x1x4xf32>
  return %r : vector<1x1x4xf32>
}
"""


def test_three_dim_lane_digits():
    text = (FIXTURES / "warp_propagate_read_3d.mlir").read_text()
    inputs = _inputs(text, "warp_propagate_read_3d")
    want = _results(text, "warp_propagate_read_3d", inputs, 64, "gfx942").returns[0]
    upstream = _results(UPSTREAM_READ_3D, "warp_propagate_read_3d", inputs, 64, "gfx942").returns[0]
    wrong = ~np.isclose(np.broadcast_to(upstream, want.shape), want).all(axis=(2, 3, 4))[0]
    assert wrong[:16].sum() == 0 and wrong[16:].all()  # lanes 16.. read row 0 instead of row lane // 16
    out, _ = check_warp_steps(text, "warp_propagate_read_3d", "warp-distribute", target="gfx942")
    assert "affine.delinearize_index %laneid into (4, 4) : index, index, index" in out
