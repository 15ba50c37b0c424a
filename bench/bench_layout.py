"""Ownership maps of 4096x4096 layouts: time, and the ratio to a plain numpy index
computation of the same size (`np.arange` of every element's row-major index, reshaped
per thread). Run: python bench/bench_layout.py. Prints; asserts nothing."""

from __future__ import annotations

import time

import numpy as np

from simtify.layout import ownership_map, parse_layout

CASES = {
    "nested 4096x4096, 4 subgroups x 64 lanes": (
        "#iree_vector_ext.nested_layout<subgroup_tile = [4, 1], batch_tile = [8, 16], outer_tile = [1, 1], "
        "thread_tile = [16, 4], element_tile = [8, 64], subgroup_strides = [1, 0], thread_strides = [1, 16]>",
        None,
    ),
    "xegpu 4096x4096, sg_layout 4x4, lanes 1x16": (
        "#xegpu.layout<sg_layout = [4, 4], sg_data = [256, 256], inst_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>",
        None,
    ),
    "triton blocked 4096x4096, 4 warps x 32 lanes": (
        "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>",
        None,
    ),
}


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    shape = (4096, 4096)
    base_t, _ = best_of(lambda: np.arange(shape[0] * shape[1], dtype=np.int64).reshape(256, -1) + 0)
    print(f"plain numpy index computation (16M int64): {base_t * 1e3:.1f} ms")
    times = {}
    for name, (text, threads) in CASES.items():
        layout = parse_layout(text)
        t, omap = best_of(lambda: ownership_map(layout, shape, None, threads))
        times[name.split()[0]] = t
        status = "under 1 s" if t < 1 else "OVER 1 s"
        print(f"{name}: {omap.num_threads} threads x {omap.num_registers} registers in {t * 1e3:.1f} ms "
              f"({status}); ratio to plain numpy {t / base_t:.1f}x")
        t_cov, _ = best_of(lambda: ownership_map(layout, shape, None, threads).covers, repeat=1)
        print(f"  ... with coverage/replication check: {t_cov * 1e3:.1f} ms")
    if "triton" in times and "nested" in times:
        print(f"triton blocked (linear layout, XOR of bases) / nested ownership map: "
              f"{times['triton'] / times['nested']:.2f}x")


if __name__ == "__main__":
    main()
