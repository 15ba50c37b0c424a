"""Workgroup-memory traffic that warp distribution removes, step by step.

For each program, `simtify opt --pipeline warp-distribute` is applied one pattern at a
time; after every step the program so far is lowered (what is left in warp regions goes
to `scf.if %laneid == 0` through workgroup memory) and simulated, and the simulator's
counters are printed: workgroup-memory bytes, barriers, shuffles, global sectors, and
the workgroup-memory bytes the step removed. Wrapping puts everything on lane 0, which
needs no memory but serializes the warp; distributing a write makes the value it writes
cross the region (memory), and each later step moves the producer out and removes that
traffic again. The last line is the final traffic over the largest seen. Run:
python bench/bench_warp.py. Prints; asserts nothing.
"""

from __future__ import annotations

from pathlib import Path

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms import warp_distribute
from simtify.transforms.pipelines import Options

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "warp"

COPY = """
func.func @copy(%A: memref<4096xf32>, %B: memref<4096xf32>) {
  %gid = gpu.block_id x
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.0 : f32
  %i0 = arith.muli %gid, %c256 : index
  %l = vector.transfer_read %A[%i0], %cst {in_bounds = [true]} : memref<4096xf32>, vector<256xf32>
  %e = math.exp %l : vector<256xf32>
  vector.transfer_write %e, %B[%i0] {in_bounds = [true]} : vector<256xf32>, memref<4096xf32>
  return
}
"""

SOFTMAX_ROW = """
func.func @softmax_row(%x: memref<16x128xf32>, %y: memref<16x128xf32>, %sums: memref<16xf32>) {
  %row = gpu.block_id x
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %x[%row, %c0], %pad {in_bounds = [true]} : memref<16x128xf32>, vector<128xf32>
  %m = vector.reduction <maximumf>, %v : vector<128xf32> into f32
  %mb = vector.broadcast %m : f32 to vector<128xf32>
  %d = arith.subf %v, %mb : vector<128xf32>
  %e = math.exp %d : vector<128xf32>
  %s = vector.reduction <add>, %e : vector<128xf32> into f32
  %sb = vector.broadcast %s : f32 to vector<128xf32>
  %r = arith.divf %e, %sb : vector<128xf32>
  vector.transfer_write %r, %y[%row, %c0] {in_bounds = [true]} : vector<128xf32>, memref<16x128xf32>
  memref.store %s, %sums[%row] : memref<16xf32>
  return
}
"""

PROGRAMS = [
    ("seed copy + exp (256 per warp)", COPY, "copy", "sm_90", (16,), {}),
    ("softmax row (reductions)", SOFTMAX_ROW, "softmax_row", "sm_90", (16,), {}),
    ("upstream @warp", (FIXTURES / "warp.mlir").read_text(), "warp", "sm_90", (4,), {"gid": 40}),
    ("upstream @warp_scf_for_multiple_yield", (FIXTURES / "warp_scf_for_multiple_yield.mlir").read_text(),
     "warp_scf_for_multiple_yield", "sm_90", (4,), {}),
]


CLEANUPS = {"remove_dead_results", "forward_yields", "merge_duplicate_yields", "merge_identical_ops"}


def lowered_counters(text: str, func: str, target: str, grid, inputs) -> dict:
    module = parse(text, "step.mlir")
    warp_distribute.run(module, ["lower"], Options(target=target))
    res = run(parse(print_module(module), "lowered.mlir"), func, {k: v.copy() for k, v in inputs.items()},
              grid=grid, target=target)
    return res.stats


def steps_of(text: str, target: str) -> list[tuple[str, str]]:
    """(step name, program after it) for warp-distribute without its final lowering."""
    module = parse(text, "in.mlir")
    warp_distribute.run(module, ["wrap"], Options(target=target))
    snapshots = [("wrap (all on lane 0)", print_module(module))]
    warp_distribute.run(module, ["distribute"], Options(target=target),
                        on_step=lambda name: snapshots.append((name, print_module(module))))
    return snapshots


def main() -> None:
    for title, text, func, target, grid, fixed in PROGRAMS:
        inputs = random_inputs(find_function(parse(text, "in.mlir"), func), seed=0)
        for k, v in fixed.items():
            inputs[k] = inputs[k].dtype.type(v)
        snapshots = steps_of(text, target)
        print(f"\n{title} ({target}, {len(snapshots) - 1} steps; cleanups folded into the step before)")
        print(f"  {'step':<30}{'wg bytes':>10}{'removed':>10}{'barriers':>10}{'shuffles':>10}{'sectors':>10}")
        rows = []
        for name, snap in snapshots:
            if name in CLEANUPS and rows:
                rows[-1] = (rows[-1][0], snap)
            else:
                rows.append((name, snap))
        prev = peak = None
        for name, snap in rows:
            stats = lowered_counters(snap, func, target, grid, inputs)
            shared = stats["shared_bytes"]
            removed = "" if prev is None else str(prev - shared)
            print(f"  {name:<30}{shared:>10}{removed:>10}{stats['barriers']:>10}{stats['shuffles']:>10}"
                  f"{stats['global_sectors']:>10}")
            peak = shared if peak is None else max(peak, shared)
            prev = shared
        ratio = f"{prev / peak:.3f}" if peak else "n/a (never any)"
        print(f"  final / largest workgroup-memory bytes: {ratio}")


if __name__ == "__main__":
    main()
