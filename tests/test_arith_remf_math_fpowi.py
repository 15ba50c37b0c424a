"""`arith.remf` (read, printed, simulated) and `math.fpowi` (simulated): both appear in
upstream's XeGPU elementwise tests (tests/fixtures/xegpu_upstream)."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import run

PROGRAM = """func.func @f(%a: memref<32xf32>, %b: memref<32xf32>, %n: memref<32xi32>, %rem: memref<32xf32>,
             %pow: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %pad_i = arith.constant 0 : i32
  %x = vector.transfer_read %a[%c0], %pad {in_bounds = [true]} : memref<32xf32>, vector<32xf32>
  %y = vector.transfer_read %b[%c0], %pad {in_bounds = [true]} : memref<32xf32>, vector<32xf32>
  %k = vector.transfer_read %n[%c0], %pad_i {in_bounds = [true]} : memref<32xi32>, vector<32xi32>
  %r = arith.remf %x, %y fastmath<fast> : vector<32xf32>
  %p = math.fpowi %x, %k : vector<32xf32>, vector<32xi32>
  vector.transfer_write %r, %rem[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
  vector.transfer_write %p, %pow[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
  return
}
"""


def test_remf_reads_and_prints_in_upstream_syntax():
    text = print_module(parse(PROGRAM))
    assert "arith.remf %x, %y fastmath<fast> : vector<32xf32>" in text
    assert print_module(parse(text)) == text


def test_remf_and_fpowi_simulate_as_c_fmod_and_pow():
    rng = np.random.default_rng(7)
    a = rng.uniform(-8, 8, 32).astype(np.float32)
    b = (rng.choice([-1, 1], 32) * rng.uniform(0.5, 3, 32)).astype(np.float32)
    n = rng.integers(-3, 4, 32).astype(np.int32)
    args = {"a": a, "b": b, "n": n, "rem": np.zeros(32, np.float32), "pow": np.zeros(32, np.float32)}
    out = run(parse(PROGRAM), "f", args, level="workgroup").arguments
    np.testing.assert_allclose(out["rem"], np.fmod(a, b), rtol=1e-6)
    assert np.all(np.sign(out["rem"][out["rem"] != 0]) == np.sign(a[out["rem"] != 0]))  # the dividend's sign
    np.testing.assert_allclose(out["pow"], a.astype(np.float64) ** n, rtol=1e-5)
