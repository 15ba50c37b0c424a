"""Semi-affine maps (a product, quotient or remainder of two non-constant expressions),
which IREE prints for tiles of dynamic sizes (`d0 * (d1 ceildiv 8)` after
GPUDistributeForallPass on a 100x200 matmul): they are read, printed back, and evaluated
per thread as numpy evaluates them, on random operands."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import run

KERNEL = """
func.func @k(%a: memref<64xi32>, %b: memref<64xi32>, %o: memref<4x64xi32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 64>} {
  %t = gpu.thread_id x
  %ai = memref.load %a[%t] : memref<64xi32>
  %bi = memref.load %b[%t] : memref<64xi32>
  %x = arith.index_cast %ai : i32 to index
  %y = arith.index_cast %bi : i32 to index
  %0 = affine.apply affine_map<(d0, d1) -> (d0 * (d1 ceildiv 8))>(%x, %y)
  %1 = affine.apply affine_map<(d0)[s0] -> (d0 floordiv s0 + (d0 ceildiv s0) * s0)>(%x)[%y]
  %2 = affine.apply affine_map<(d0, d1) -> (d0 mod d1 - d0 * d1)>(%x, %y)
  %3 = affine.min affine_map<(d0)[s0] -> (d0 * s0 - 3, 100)>(%x)[%y]
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r0 = arith.index_cast %0 : index to i32
  %r1 = arith.index_cast %1 : index to i32
  %r2 = arith.index_cast %2 : index to i32
  %r3 = arith.index_cast %3 : index to i32
  memref.store %r0, %o[%c0, %t] : memref<4x64xi32>
  memref.store %r1, %o[%c1, %t] : memref<4x64xi32>
  memref.store %r2, %o[%c2, %t] : memref<4x64xi32>
  memref.store %r3, %o[%c3, %t] : memref<4x64xi32>
  return
}
"""


def test_semi_affine_maps_run_as_numpy_computes_them():
    rng = np.random.default_rng(0)
    a = rng.integers(1, 50, 64, dtype=np.int32)
    b = rng.integers(1, 50, 64, dtype=np.int32)
    x, y = a.astype(np.int64), b.astype(np.int64)
    want = np.stack([x * -(-y // 8), x // y + -(-x // y) * y, x % y - x * y, np.minimum(x * y - 3, 100)])
    for text in (KERNEL, print_module(parse(KERNEL))):
        out = run(parse(text), "k", {"a": a, "b": b, "o": np.ones((4, 64), np.int32)}).outputs["o"]
        assert np.array_equal(out, want)


def test_semi_affine_maps_print_back():
    printed = print_module(parse(KERNEL))
    assert "ceildiv" in printed and print_module(parse(printed)) == printed
