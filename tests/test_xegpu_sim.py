"""The simulator's XeGPU semantics: descriptors, whole-block and lane-fragment loads and
stores, boundary checks, transposed / VNNI-packed / array loads, and subgroup-cooperative
DPAS — each against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.layout import XeGPULayout
from simtify.sim import run


def f16(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.1, 1.0, shape) * rng.choice([-1, 1], shape)).astype(np.float16)


def run_text(text: str, args: dict, **kw):
    return run(parse(text, "t.mlir"), "f", {k: v.copy() for k, v in args.items()}, target="xe", **kw)


def test_workgroup_load_store_with_offsets_and_boundary_check():
    """A block hanging off the memref reads zeros there and drops those stores."""
    text = """func.func @f(%a: memref<20x32xf32>, %b: memref<20x32xf32>) {
  %i = arith.constant 12 : index
  %t = xegpu.create_nd_tdesc %a : memref<20x32xf32> -> !xegpu.tensor_desc<16x16xf32>
  %u = xegpu.create_nd_tdesc %b : memref<20x32xf32> -> !xegpu.tensor_desc<16x16xf32>
  %v = xegpu.load_nd %t[%i, 8] : !xegpu.tensor_desc<16x16xf32> -> vector<16x16xf32>
  %w = arith.addf %v, %v : vector<16x16xf32>
  xegpu.store_nd %w, %u[0, 16] : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  xegpu.store_nd %w, %u[10, 0] : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  return
}"""
    a = np.arange(640, dtype=np.float32).reshape(20, 32)
    b = np.ones((20, 32), np.float32)
    r = run_text(text, {"a": a, "b": b})
    block = np.zeros((16, 16), np.float32)
    block[:8] = a[12:20, 8:24]
    want = b.copy()
    want[0:16, 16:32] = 2 * block
    want[10:20, 0:16] = 2 * block[:10]
    np.testing.assert_array_equal(r.arguments["b"], want)
    assert not r.findings


def test_without_boundary_check_an_access_outside_is_a_finding():
    text = """func.func @f(%a: memref<20x32xf32>, %b: memref<20x32xf32>) {
  %t = xegpu.create_nd_tdesc %a : memref<20x32xf32> -> !xegpu.tensor_desc<16x16xf32, #xegpu.block_tdesc_attr<boundary_check = false>>
  %v = xegpu.load_nd %t[12, 0] : !xegpu.tensor_desc<16x16xf32, #xegpu.block_tdesc_attr<boundary_check = false>> -> vector<16x16xf32>
  return
}"""
    r = run_text(text, {"a": np.ones((20, 32), np.float32), "b": np.ones((20, 32), np.float32)})
    assert [f.kind for f in r.findings] == ["out-of-bounds"]


def test_transposed_packed_array_and_legacy_offset_loads():
    text = """func.func @f(%a: memref<32x32xf16>, %o1: memref<16x8xf16>, %o2: memref<8x16x2xf16>, %o3: memref<2x8x16xf16>) {
  %t = xegpu.create_nd_tdesc %a[4, 2] : memref<32x32xf16> -> !xegpu.tensor_desc<8x16xf16>
  %v = xegpu.load_nd %t <{transpose = array<i64: 1, 0>}> : !xegpu.tensor_desc<8x16xf16> -> vector<16x8xf16>
  %s = xegpu.create_nd_tdesc %a : memref<32x32xf16> -> !xegpu.tensor_desc<16x16xf16>
  %p = xegpu.load_nd %s[0, 16] <{packed}> : !xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>
  %r = xegpu.create_nd_tdesc %a : memref<32x32xf16> -> !xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<array_length = 2 : i64>>
  %q = xegpu.load_nd %r[8, 0] : !xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<array_length = 2 : i64>> -> vector<2x8x16xf16>
  %z = arith.constant 0 : index
  vector.transfer_write %v, %o1[%z, %z] {in_bounds = [true, true]} : vector<16x8xf16>, memref<16x8xf16>
  vector.transfer_write %p, %o2[%z, %z, %z] {in_bounds = [true, true, true]} : vector<8x16x2xf16>, memref<8x16x2xf16>
  vector.transfer_write %q, %o3[%z, %z, %z] {in_bounds = [true, true, true]} : vector<2x8x16xf16>, memref<2x8x16xf16>
  return
}"""
    a = f16((32, 32))
    zeros = {"o1": np.zeros((16, 8), np.float16), "o2": np.zeros((8, 16, 2), np.float16),
             "o3": np.zeros((2, 8, 16), np.float16)}
    r = run_text(text, {"a": a, **zeros})
    np.testing.assert_array_equal(r.arguments["o1"], a[4:12, 2:18].T)
    b = a[0:16, 16:32]
    np.testing.assert_array_equal(r.arguments["o2"], b.reshape(8, 2, 16).transpose(0, 2, 1))
    np.testing.assert_array_equal(r.arguments["o3"], np.stack([a[8:16, 0:16], a[8:16, 16:32]]))


LANE = XeGPULayout(lane_layout=(2, 8), lane_data=(1, 2))


def test_lane_fragments_follow_the_lane_layout():
    """Each lane reads, then writes back, the elements its layout gives it, in register order."""
    text = f"""gpu.module @m {{ gpu.func @f(%a: memref<8x32xf32>, %b: memref<8x32xf32>, %out: memref<16x16xf32>) kernel
      attributes {{known_block_size = array<i32: 16, 1, 1>}} {{
  %t = xegpu.create_nd_tdesc %a : memref<8x32xf32> -> !xegpu.tensor_desc<8x32xf32>
  %u = xegpu.create_nd_tdesc %b : memref<8x32xf32> -> !xegpu.tensor_desc<8x32xf32>
  %v = xegpu.load_nd %t[0, 0] <{{layout = {LANE}}}> : !xegpu.tensor_desc<8x32xf32> -> vector<16xf32>
  xegpu.store_nd %v, %u[0, 0] <{{layout = {LANE}}}> : vector<16xf32>, !xegpu.tensor_desc<8x32xf32>
  %l = gpu.lane_id
  %z = arith.constant 0 : index
  vector.transfer_write %v, %out[%l, %z] {{in_bounds = [true]}} : vector<16xf32>, memref<16x16xf32>
  gpu.return
}} }}"""
    a = np.arange(256, dtype=np.float32).reshape(8, 32)
    r = run_text(text, {"a": a, "b": np.zeros((8, 32), np.float32), "out": np.zeros((16, 16), np.float32)})
    np.testing.assert_array_equal(r.arguments["b"], a)
    owners = LANE.ownership((8, 32), 16, 16).flat
    np.testing.assert_array_equal(r.arguments["out"], owners.astype(np.float32))
    assert r.launch.level == "simt" and not r.findings


@pytest.mark.parametrize("elt, k, vnni", [("f16", 16, 2), ("i8", 32, 4)])
def test_lane_level_dpas_is_subgroup_cooperative(elt, k, vnni):
    """Lanes hold columns of A's K (lane_data [1, 1]), VNNI pairs / quads of B's rows and
    columns of C; the subgroup computes C = A·B on the tiles they make up."""
    acc = "f32" if elt == "f16" else "i32"
    text = f"""gpu.module @m {{ gpu.func @f(%a: memref<8x{k}x{elt}>, %b: memref<{k}x16x{elt}>, %c: memref<8x16x{acc}>) kernel
      attributes {{known_block_size = array<i32: 32, 1, 1>}} {{
  %ta = xegpu.create_nd_tdesc %a : memref<8x{k}x{elt}> -> !xegpu.tensor_desc<8x{k}x{elt}>
  %tb = xegpu.create_nd_tdesc %b : memref<{k}x16x{elt}> -> !xegpu.tensor_desc<{k}x16x{elt}>
  %tc = xegpu.create_nd_tdesc %c : memref<8x16x{acc}> -> !xegpu.tensor_desc<8x16x{acc}>
  %va = xegpu.load_nd %ta[0, 0] : !xegpu.tensor_desc<8x{k}x{elt}> -> vector<{8 * k // 16}x{elt}>
  %vb = xegpu.load_nd %tb[0, 0] <{{packed}}> : !xegpu.tensor_desc<{k}x16x{elt}> -> vector<{k}x{elt}>
  %vc = xegpu.load_nd %tc[0, 0] : !xegpu.tensor_desc<8x16x{acc}> -> vector<8x{acc}>
  %d = xegpu.dpas %va, %vb, %vc : vector<{8 * k // 16}x{elt}>, vector<{k}x{elt}>, vector<8x{acc}> -> vector<8x{acc}>
  xegpu.store_nd %d, %tc[0, 0] : vector<8x{acc}>, !xegpu.tensor_desc<8x16x{acc}>
  gpu.return
}} }}"""
    rng = np.random.default_rng(1)
    if elt == "f16":
        a, b, c = f16((8, k)), f16((k, 16), 2), rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    else:
        a = rng.integers(-8, 8, (8, k)).astype(np.int8)
        b = rng.integers(-8, 8, (k, 16)).astype(np.int8)
        c = rng.integers(-50, 50, (8, 16)).astype(np.int32)
    r = run_text(text, {"a": a, "b": b, "c": c})
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(r.arguments["c"], want, rtol=1e-5, atol=1e-5)
    assert r.launch.level == "simt" and vnni == 32 // (16 if elt == "f16" else 8)


def test_subgroup_level_access_is_done_once_per_subgroup():
    """A whole-block load in a SIMT program: the first lane of each subgroup reads, every
    lane of the subgroup gets the block."""
    text = """gpu.module @m { gpu.func @f(%a: memref<32x16xf32>, %b: memref<32x16xf32>) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
  %s = gpu.subgroup_id : index
  %r = affine.apply affine_map<(d0) -> (d0 * 16)> (%s)
  %t = xegpu.create_nd_tdesc %a : memref<32x16xf32> -> !xegpu.tensor_desc<16x16xf32>
  %u = xegpu.create_nd_tdesc %b : memref<32x16xf32> -> !xegpu.tensor_desc<16x16xf32>
  %v = xegpu.load_nd %t[%r, 0] : !xegpu.tensor_desc<16x16xf32> -> vector<16x16xf32>
  %w = math.exp %v : vector<16x16xf32>
  xegpu.store_nd %w, %u[%r, 0] : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  gpu.return
} }"""
    a = np.linspace(-1, 1, 512, dtype=np.float32).reshape(32, 16)
    r = run_text(text, {"a": a, "b": np.zeros((32, 16), np.float32)})
    np.testing.assert_allclose(r.arguments["b"], np.exp(a), rtol=1e-6)
    assert r.stats["global_bytes"] == 2 * (2 * 16 * 16 * 4)  # a load and a store per subgroup
    assert not r.findings


def test_lane_dpas_fragments_the_target_cannot_run_are_an_error():
    text = """gpu.module @m { gpu.func @f(%a: vector<8xf16>, %b: vector<16xf16>) kernel
      attributes {known_block_size = array<i32: 16, 1, 1>} {
  %d = xegpu.dpas %a, %b : vector<8xf16>, vector<16xf16> -> vector<12xf32>
  gpu.return
} }"""
    with pytest.raises(SimtifyError, match="not an M x 16 tile"):
        run_text(text, {"a": np.ones(8, np.float16), "b": np.ones(16, np.float16)})
