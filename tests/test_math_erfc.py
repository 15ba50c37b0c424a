"""`math.erfc` end to end: read and printed, simulated, propagated and distributed by the
nested, warp and XeGPU pipelines (each checked by simulation), and emitted as C++."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distribution_harness import check_distribution, nested
from simtify.codegen import emit
from simtify.ir import parse, print_module
from simtify.sim import run
from warp_harness import check_warp_steps
from xegpu_harness import check_xegpu

SCALAR = """func.func @f(%x: f32, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %e = math.erfc %x fastmath<fast> : f32
  memref.store %e, %out[%c0] : memref<1xf32>
  return
}
"""

NESTED = f"""func.func @f(%src: memref<16x64xf32>, %dst: memref<16x64xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<16x64xf32>, vector<16x64xf32>
  %a = iree_vector_ext.to_layout %v to layout({nested([1, 1], [2, 1], [1, 1], [8, 8], [1, 8], [0, 0], [8, 1])}) : vector<16x64xf32>
  %e = math.erfc %a : vector<16x64xf32>
  vector.transfer_write %e, %dst[%c0, %c0] {{in_bounds = [true, true]}} : vector<16x64xf32>, memref<16x64xf32>
  return
}}
"""

WARP = """func.func @f(%A: memref<64xf32>, %B: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %w = math.erfc %v : vector<64xf32>
  vector.transfer_write %w, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""

XEGPU = """#a = #xegpu.layout<sg_layout = [2, 2], sg_data = [16, 32], lane_layout = [1, 16], lane_data = [1, 1]>
func.func @f(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  %t = xegpu.create_nd_tdesc %A : memref<64x64xf32> -> !xegpu.tensor_desc<64x64xf32>
  %v = xegpu.load_nd %t[0, 0] <{layout = #a}> : !xegpu.tensor_desc<64x64xf32> -> vector<64x64xf32>
  %w = math.erfc %v : vector<64x64xf32>
  %u = xegpu.create_nd_tdesc %B : memref<64x64xf32> -> !xegpu.tensor_desc<64x64xf32>
  xegpu.store_nd %w, %u[0, 0] : vector<64x64xf32>, !xegpu.tensor_desc<64x64xf32>
  return
}
"""


def test_erfc_reads_and_prints_in_upstream_syntax():
    text = print_module(parse(SCALAR))
    assert "math.erfc %x fastmath<fast> : f32" in text
    assert print_module(parse(text)) == text


@pytest.mark.parametrize("x", [-3.0, -0.5, 0.0, 0.25, 1.0, 2.5, 4.0, 9.0])
def test_simulated_erfc_keeps_float32_precision_in_the_tail(x):
    """Relative error within float32's: erfc(9) = 4.1e-37 would be 0 as 1 - erf(9)."""
    result = run(parse(SCALAR), "f", {"x": np.float32(x), "out": np.zeros(1, np.float32)}, level="workgroup")
    np.testing.assert_allclose(result.arguments["out"][0], math.erfc(x), rtol=3e-7)


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_nested_distribution_of_erfc(target):
    out = check_distribution(NESTED, "f", target=target)
    assert "math.erfc %" in out and ": vector<2x1x1x1x1x8xf32>" in out  # batch 2, element 8


def test_warp_distribution_of_erfc():
    text, steps = check_warp_steps(WARP, "f")
    assert "math.erfc" in text and "vector<2xf32>" in text and steps


def test_xegpu_distribution_of_erfc():
    out = check_xegpu(XEGPU, "f")
    assert "math.erfc" in out


@pytest.mark.parametrize("language, target", [("cuda", "sm_90"), ("hip", "gfx942")])
def test_erfc_is_emitted_as_the_c_library_function(language, target):
    from distribution_harness import distribute_text

    kernel = emit(language, parse(distribute_text(NESTED, target=target)), "f", target)
    assert "erfcf(" in kernel.source
