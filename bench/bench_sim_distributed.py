"""The simulator on a kernel simtify distributes itself: `example:reduction` grown to a
4096x4096 f32 row sum (16M elements), distributed by `nested-distribute` for sm_90
(32-lane subgroups) and gfx942 (64 lanes), simulated with sanitizers on and off.

Prints, from one run, the best of 3 simulations against the best of 3 numpy row sums
(`x.sum(axis=1)`) as a ratio, in one process and shared among all cores
(`simtify.sim.split_grid`), and the peak memory numpy allocated during one simulation
in the (parent) process (tracemalloc) against the arguments' size. Asserts only the
answer.
Run: python bench/bench_sim_distributed.py"""

from __future__ import annotations

import os
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import run
from simtify.transforms.pipelines import Options, run_pipeline

EXAMPLE = Path(__file__).resolve().parents[1] / "src" / "simtify" / "examples" / "reduction.mlir"
ROWS = COLS = 4096


def distributed(target: str):
    text = EXAMPLE.read_text().replace("8x4096", f"{ROWS}x{COLS}").replace("memref<8xf32>", f"memref<{ROWS}xf32>")
    module = parse(text, "reduction_4096.mlir")
    run_pipeline(module, "nested-distribute", Options(target=target))
    return parse(print_module(module), f"reduction_4096.{target}.mlir")


def best(fn, times: int = 3) -> float:
    out = float("inf")
    for _ in range(times):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    x = (rng.uniform(0.05, 1.0, (ROWS, COLS)) * rng.choice([-1.0, 1.0], (ROWS, COLS))).astype(np.float32)
    out = np.ones(ROWS, np.float32)
    want = x.sum(axis=1)
    numpy_s = best(lambda: x.sum(axis=1))
    args_bytes = x.nbytes + out.nbytes
    print(f"16M f32 row sums ({ROWS}x{COLS}), distributed by simtify; {platform.machine()}, "
          f"{platform.python_version()}, numpy {np.__version__}")
    print(f"  numpy x.sum(axis=1): {numpy_s * 1e3:.1f} ms")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("| target | sanitizers | processes | simulate ms | x numpy | MB allocated | "
          "(arguments + allocated) / arguments |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for target in ("sm_90", "gfx942"):
        module = distributed(target)
        for sanitize, jobs in ((True, 1), (False, 1), (True, cores), (False, cores)):
            def once():
                return run(module, "reduction", {"src": x, "dst": out}, target=target, sanitize=sanitize,
                           grid=(ROWS,), jobs=jobs)

            result = once()
            np.testing.assert_allclose(result.outputs["dst"], want, rtol=1e-4, atol=1e-3)
            assert not result.findings, result.findings
            seconds = best(once)
            tracemalloc.start()
            once()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"| {target} | {'on' if sanitize else 'off'} | {result.timing['processes']} | {seconds * 1e3:.0f} | "
                  f"{seconds / numpy_s:.1f} | "
                  f"{peak / 1e6:.0f} | {1 + peak / args_bytes:.2f} |")


if __name__ == "__main__":
    main()
