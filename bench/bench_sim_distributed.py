"""The simulator on a kernel simtify distributes itself: `example:reduction` grown to a
4096x4096 f32 row sum (16M elements), distributed by `nested-distribute` for sm_90
(32-lane subgroups) and gfx942 (64 lanes), simulated with sanitizers on and off.

Prints, from one run, the best of 3 simulations against the best of 3 numpy row sums
(`x.sum(axis=1)`) as a ratio, in one process and shared among all cores
(`simtify.sim.split_grid`), by wall-clock time and by CPU time (this process and the
processes it waited for: steadier than wall-clock time on a shared machine), and the
peak memory numpy allocated during one simulation in the (parent) process
(tracemalloc) against the arguments' size. Asserts only the answer.
Run: python bench/bench_sim_distributed.py"""

from __future__ import annotations

import os
import platform
import resource
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


def cpu_seconds() -> float:
    """CPU time of this process and of the child processes it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def best(fn, times: int = 3) -> tuple[float, float]:
    """The least wall-clock and the least CPU seconds of `times` calls of `fn`."""
    wall = cpu = float("inf")
    for _ in range(times):
        t0, c0 = time.perf_counter(), cpu_seconds()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, cpu_seconds() - c0)
    return wall, cpu


def main() -> None:
    rng = np.random.default_rng(0)
    x = (rng.uniform(0.05, 1.0, (ROWS, COLS)) * rng.choice([-1.0, 1.0], (ROWS, COLS))).astype(np.float32)
    out = np.ones(ROWS, np.float32)
    want = x.sum(axis=1)
    numpy_s, numpy_cpu = best(lambda: x.sum(axis=1))
    args_bytes = x.nbytes + out.nbytes
    print(f"16M f32 row sums ({ROWS}x{COLS}), distributed by simtify; {platform.machine()}, "
          f"{platform.python_version()}, numpy {np.__version__}")
    print(f"  numpy x.sum(axis=1): {numpy_s * 1e3:.1f} ms ({numpy_cpu * 1e3:.1f} ms CPU)")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("| target | sanitizers | processes | simulate ms | x numpy | CPU ms | x numpy CPU | MB allocated | "
          "(arguments + allocated) / arguments |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for target in ("sm_90", "gfx942"):
        module = distributed(target)
        for sanitize, jobs in ((True, 1), (False, 1), (True, cores), (False, cores)):
            def once():
                return run(module, "reduction", {"src": x, "dst": out}, target=target, sanitize=sanitize,
                           grid=(ROWS,), jobs=jobs)

            result = once()
            np.testing.assert_allclose(result.outputs["dst"], want, rtol=1e-4, atol=1e-3)
            assert not result.findings, result.findings
            seconds, cpu = best(once)
            tracemalloc.start()
            once()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"| {target} | {'on' if sanitize else 'off'} | {result.timing['processes']} | {seconds * 1e3:.0f} | "
                  f"{seconds / numpy_s:.1f} | {cpu * 1e3:.0f} | {cpu / numpy_cpu:.1f} | "
                  f"{peak / 1e6:.0f} | {1 + peak / args_bytes:.2f} |")


if __name__ == "__main__":
    main()
