"""A 16M-element SIMT reduction in the simulator against numpy's row sums of the same
array. 4096 workgroups x 256 threads: each thread loads 16 f32 with one vector.load,
reduces them, then the 4 subgroups of 64 lanes reduce with gpu.subgroup_reduce and
combine their partials through workgroup memory. Prints `simulate_s` and numpy's time
(each the best of 3 in this one run) and their ratio, then the top of a cProfile of one
more simulation. Run: python bench/bench_sim.py [--no-sanitize]. Prints; asserts
nothing but the answer."""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import numpy as np

from simtify.ir import parse
from simtify.sim import run

KERNEL = """
func.func @row_sum(%in: memref<4096x4096xf32>, %out: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %row = gpu.block_id x
  %tid = gpu.thread_id x
  %col = arith.muli %tid, %c16 : index
  %v = vector.load %in[%row, %col] : memref<4096x4096xf32>, vector<16xf32>
  %mine = vector.reduction <add>, %v : vector<16xf32> into f32
  %sg_sum = gpu.subgroup_reduce add %mine : (f32) -> f32
  %partials = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
  %lane = gpu.lane_id
  %sg = gpu.subgroup_id : index
  %first_lane = arith.cmpi eq, %lane, %c0 : index
  scf.if %first_lane {
    memref.store %sg_sum, %partials[%sg] : memref<4xf32, #gpu.address_space<workgroup>>
  }
  gpu.barrier
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {
    %p = vector.load %partials[%c0] : memref<4xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    %total = vector.reduction <add>, %p : vector<4xf32> into f32
    memref.store %total, %out[%row] : memref<4096xf32>
  }
  return
}
"""


def main(sanitize: bool = True) -> None:
    rng = np.random.default_rng(0)
    x = (rng.uniform(0.05, 1.0, (4096, 4096)) * rng.choice([-1.0, 1.0], (4096, 4096))).astype(np.float32)
    out = np.ones(4096, np.float32)
    module = parse(KERNEL, "bench_sim")
    launch = {"grid": (4096,), "block": (256,), "sanitize": sanitize}

    numpy_s = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        want = x.sum(axis=1)
        numpy_s = min(numpy_s, time.perf_counter() - t0)
    simulate_s = float("inf")
    for _ in range(3):
        result = run(module, "row_sum", {"in": x, "out": out}, **launch)
        simulate_s = min(simulate_s, result.timing["simulate_s"])
    np.testing.assert_allclose(result.outputs["out"], want, rtol=1e-4, atol=1e-4)
    assert result.findings == [], result.findings

    print(f"16M f32 row sums, 4096 workgroups x 256 threads (sanitizers {'on' if sanitize else 'off'})")
    print(f"  numpy x.sum(axis=1): {numpy_s * 1e3:8.1f} ms")
    print(f"  simulate_s:          {simulate_s * 1e3:8.1f} ms")
    print(f"  ratio:               {simulate_s / numpy_s:8.1f}x")
    print(f"  stats: {result.stats}")

    profile = cProfile.Profile()
    profile.enable()
    run(module, "row_sum", {"in": x, "out": out}, **launch)
    profile.disable()
    stream = io.StringIO()
    pstats.Stats(profile, stream=stream).sort_stats("tottime").print_stats(8)
    print("what dominates (cProfile, by own time):")
    print("\n".join(line for line in stream.getvalue().splitlines()[6:] if line.strip()))


if __name__ == "__main__":
    main(sanitize="--no-sanitize" not in sys.argv[1:])
