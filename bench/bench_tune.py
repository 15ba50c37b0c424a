"""Reduction configs compared by the cost model: IREE 3.12's choice, simtify's heuristic
and the tuner's best, each as a multiple of the memory roofline (1.00 = at roofline),
on a table of reductions: LLM norms, softmax rows, matvecs, the seed's example, column
reductions, small and ragged ones.

    python bench/bench_tune.py [--target gfx942] [--jobs N] [--top K]

Times are the model's predictions on simulator counters of a few workgroups per
config (`simtify.tune`); nothing runs on a GPU. Prints one row per shape and the
geometric-mean speedups over IREE. Asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from math import exp, log

from simtify.target import get_target
from simtify.tune.problem import ReductionProblem, dtype_for
from simtify.tune.search import default_jobs, tune

# (what, iteration space, reduction dims, dtype, operation)
SHAPES = [
    ("RMSNorm rows, prefill", "4096x4096", "1", "f16", "sum"),
    ("RMSNorm row, decode", "1x4096", "1", "f16", "sum"),
    ("LayerNorm rows, 8k hidden", "32x8192", "1", "f16", "sum"),
    ("LayerNorm rows, bf16", "512x5120", "1", "bf16", "sum"),
    ("softmax rows, attention", "32x4096", "1", "f32", "sum"),
    ("softmax rows, 16 heads", "16x32x1024", "2", "f32", "sum"),
    ("softmax rows, long", "8192x2048", "1", "f16", "sum"),
    ("matvec 4096^2", "4096x4096", "1", "f16", "matvec"),
    ("matvec MLP up", "14336x4096", "1", "f16", "matvec"),
    ("matvec MLP down", "4096x14336", "1", "f16", "matvec"),
    ("matvec small, f32", "32x4096", "1", "f32", "matvec"),
    ("seed: 4x6656x16384", "4x6656x16384", "2", "f16", "sum"),
    ("column sums (bias grad)", "4096x1024", "0", "f32", "sum"),
    ("column sums, f16", "128x4096", "0", "f16", "sum"),
    ("two reduction dims", "256x32x32", "1,2", "f32", "sum"),
    ("small rows", "4096x32", "1", "f16", "sum"),
    ("ragged 7x1000", "7x1000", "1", "f32", "sum"),
    ("ragged 96x96", "96x96", "1", "f32", "sum"),
    ("ragged 1000x1000", "1000x1000", "1", "f16", "sum"),
    ("ragged 100x77", "100x77", "1", "f32", "sum"),
    ("scalar 3x5x7", "3x5x7", "0,1,2", "f32", "sum"),
]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--jobs", type=int, default=default_jobs())
    ap.add_argument("--top", type=int, default=6)
    args = ap.parse_args(argv)
    tgt = get_target(args.target)
    print(f"predicted time / memory roofline on {tgt.name} ({tgt.part}); speedup = IREE / tuned\n")
    print(f"{'reduction':<26} {'shape':>14} {'dtype':>5} {'op':>6} {'roofline':>11} "
          f"{'IREE':>9} {'simtify':>9} {'tuned':>9} {'speedup':>8}  IREE pipeline")
    speedups, heuristic = [], []
    worse = 0
    t0 = time.perf_counter()
    for what, shape, red, dtype, op in SHAPES:
        problem = ReductionProblem.create([int(s) for s in shape.split("x")], [int(d) for d in red.split(",")],
                                          dtype_for(dtype, tgt, simulate=True), op)
        r = tune(problem, tgt.name, jobs=args.jobs, top=args.top)
        roof = r.roofline_s
        ours = r.simtify.seconds if r.simtify is not None and r.simtify.checked else float("nan")
        speedup = r.iree_predicted_s / r.best.seconds
        speedups.append(speedup)
        heuristic.append(r.iree_predicted_s / ours)
        worse += r.best.seconds > r.iree_predicted_s
        print(f"{what:<26} {shape:>14} {dtype:>5} {op:>6} {roof * 1e6:>8.3f} us {r.iree_predicted_s / roof:>9.2f} "
              f"{ours / roof:>9.2f} {r.best.seconds / roof:>9.2f} {speedup:>7.2f}x  {r.iree.pipeline}")
        sys.stdout.flush()
    geo = exp(sum(log(s) for s in speedups) / len(speedups))
    geo_h = exp(sum(log(s) for s in heuristic) / len(heuristic))
    print(f"\ngeometric-mean speedup over IREE: tuned {geo:.2f}x, simtify heuristic {geo_h:.2f}x "
          f"({len(SHAPES)} shapes; tuned worse than IREE on {worse}; {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
