"""`vector.maskedload` / `vector.maskedstore` (IREE 3.12 lowers masked transfers of
reductions over rows that do not divide the tile, e.g. 768 i8 per row, to them): a
position whose mask bit is clear reads nothing and takes pass_thru's element, or writes
nothing; it is not an access, so one past the end of the buffer is no finding. Run on
random inputs against numpy."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import run

# thread t reads x[4t+1 .. 4t+4] under a mask of its first t mod 4 positions (thread 63's
# last position, x[256], is past the end and always masked off), writes the values read
# whole to `whole`, and +1 under the same mask to `masked`
KERNEL = """
func.func @k(%x: memref<256xf32>, %whole: memref<64x4xf32>, %masked: memref<64x4xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 64>} {
  %t = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %pass = arith.constant dense<-7.0> : vector<4xf32>
  %one = arith.constant dense<1.0> : vector<4xf32>
  %i = affine.apply affine_map<(d0) -> (d0 * 4 + 1)>(%t)
  %n = affine.apply affine_map<(d0) -> (d0 mod 4)>(%t)
  %m = vector.create_mask %n : vector<4xi1>
  %v = vector.maskedload %x[%i], %m, %pass : memref<256xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  vector.store %v, %whole[%t, %c0] : memref<64x4xf32>, vector<4xf32>
  %w = arith.addf %v, %one : vector<4xf32>
  vector.maskedstore %masked[%t, %c0], %m, %w : memref<64x4xf32>, vector<4xi1>, vector<4xf32>
  return
}
"""


def test_masked_load_and_store_run_as_numpy_computes_them():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 256).astype(np.float32)
    before = rng.uniform(-1, 1, (64, 4)).astype(np.float32)
    t = np.arange(64)[:, None]
    j = np.arange(4)[None, :]
    on = j < t % 4
    read = np.where(on, x[np.minimum(4 * t + 1 + j, 255)], np.float32(-7))
    for text in (KERNEL, print_module(parse(KERNEL))):
        result = run(parse(text), "k", {"x": x, "whole": np.zeros((64, 4), np.float32) + 3, "masked": before.copy()},
                     sanitize=True)
        assert result.findings == []
        assert np.array_equal(result.outputs["whole"], read)
        assert np.array_equal(result.outputs["masked"], np.where(on, read + np.float32(1), before))


def test_an_unmasked_position_past_the_end_is_a_finding():
    text = KERNEL.replace("d0 mod 4)", "d0 mod 4 + 1)")  # thread 63 now reads x[256]
    x = np.random.default_rng(1).uniform(-1, 1, 256).astype(np.float32)
    result = run(parse(text), "k", {"x": x, "whole": np.ones((64, 4), np.float32),
                                    "masked": np.ones((64, 4), np.float32)}, sanitize=True)
    assert [f.kind for f in result.findings] == ["out-of-bounds"]
