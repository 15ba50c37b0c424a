"""simtify next to IREE 3.12: the counters of each one's distributed code, simulated.

For every fixture of `tests/fixtures/iree_nested/` (inputs of IREE's own nested-layout
distribution tests) and for reduction, softmax and transpose kernels on gfx942 and sm_90,
both distributions run on the simulator on the same inputs; the table gives, as
simtify / IREE, shuffles, barriers, workgroup-memory bytes, bank conflicts, global
sectors and the bytes requested per sector fetched (32 for perfect coalescing of
distinct data, more where lanes share sectors; the simulator counts sectors, not
requests, so this stands for "sectors per request"), all per launch. A row marked `>` has a counter
where simtify is above IREE; each such row is explained below the table. Needs
`iree-opt` (iree-base-compiler 3.12.0).

    python bench/bench_vs_iree.py [--fixtures-only | --kernels-only]
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from iree_side_by_side import (
    fixtures,
    iree_distribute,
    side_by_side,
    simtify_distribute,
)

COLUMNS = [("shuffles", "shuffles"), ("barriers", "barriers"), ("shared_bytes", "smem bytes"),
           ("shared_bank_conflicts", "conflicts"), ("global_sectors", "sectors")]

# Why simtify is above IREE on a counter, per row (the bench checks every such row has one).
EXPLAINED = {
    "argcompare__01_argmax_custom_comparator_i64_index": {
        "shuffles": "simtify also shuffles each partial's position (i32) so that every lane agrees on ties and "
                    "the result is the in-order one (simtify's tie rule; IREE's op defines none). IREE's butterfly "
                    "takes the partner's pair on a tie, which differs from IREE's own in-order lowering on tied "
                    "inputs (tests/test_distribute_more_ops.py)."},
    "scan__03_scan_cross_subgroup_exclusive": {
        "shuffles": "an exclusive scan across subgroups also passes each block's last result (one shuffle from "
                    "the cluster's last lane per element) and stores it next to the block total, so that the "
                    "accumulated value needs no second barrier.",
        "shared_bytes": "the blocks' last results, stored next to their totals (see shuffles)."},
    "mask__00_masked_read_write": {
        "global_sectors": "IREE's output is wrong here: the threads past the mask's boundary thread skip rows "
                          "6-7 of their first outer tile (see the report), so IREE touches fewer sectors."},
    "multi_reduce__05_subgroup_reduction_serial_tail": {
        "shared_bytes": "IREE's output is wrong here (its serial tail reads only subgroup 0's partial: "
                        "tests/test_iree_side_by_side.py); reading every subgroup's partial costs the extra bytes (2 f16 partials: "
                        "reading both per thread costs what one per lane and a shuffle would, so simtify does)."},
}


def _row(name: str, s: dict, i: dict, note: str = "") -> tuple[str, list[str]]:
    cells, worse = [], []
    for key, _ in COLUMNS:
        a, b = s.get(key, 0), i.get(key, 0)
        cells.append(f"{a}/{b}")
        if a > b:
            worse.append(key)
    per_sector = lambda st: st.get("global_bytes", 0) / max(1, st.get("global_sectors", 0))
    cells.append(f"{per_sector(s):.0f}/{per_sector(i):.0f}")
    if per_sector(s) + 1e-9 < per_sector(i):
        worse.append("bytes_per_sector")
    mark = ">" if worse else " "
    line = f"{mark} {name[:52]:52s} " + " ".join(f"{c:>13s}" for c in cells) + (f"  {note}" if note else "")
    return line, worse


def header() -> str:
    names = [label for _, label in COLUMNS] + ["B/sector"]
    return f"  {'input':52s} " + " ".join(f"{n:>13s}" for n in names)


# --- kernels -----------------------------------------------------------------------------------


def kernels(target: str) -> dict[str, tuple[str, str, tuple]]:
    """name -> (simtify input, IREE input, grid). The two inputs differ only for the
    transpose, whose layout change IREE makes through an explicit workgroup buffer (its
    vector-distribute pass does not resolve a to_layout between layouts by itself)."""
    sg = 64 if target == "gfx942" else 32
    n_sg = 4
    threads = n_sg * sg
    info = (f"#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
            f"workgroup_size = [{threads}, 1, 1] subgroup_size = {sg}>")
    row = 4096
    red_layout = (f"#iree_vector_ext.nested_layout<subgroup_tile = [1, {n_sg}], batch_tile = [1, {row // (n_sg * sg * 4)}], "
                  f"outer_tile = [1, 1], thread_tile = [1, {sg}], element_tile = [1, 4], subgroup_strides = [0, 1], "
                  f"thread_strides = [0, 1]>")
    reduction = f"""
func.func @reduction(%src: memref<4x{row}xf32>, %dst: memref<4xf32>) attributes {{translation_info = {info}}} {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<1xf32>
  %r = gpu.block_id x
  %raw = vector.transfer_read %src[%r, %c0], %pad {{in_bounds = [true, true]}} : memref<4x{row}xf32>, vector<1x{row}xf32>
  %v = iree_vector_ext.to_layout %raw to layout({red_layout}) : vector<1x{row}xf32>
  %s = vector.multi_reduction <add>, %v, %init [1] : vector<1x{row}xf32> to vector<1xf32>
  vector.transfer_write %s, %dst[%r] {{in_bounds = [true]}} : vector<1xf32>, memref<4xf32>
  return
}}
"""
    cols = 1024
    sm_layout = (f"#iree_vector_ext.nested_layout<subgroup_tile = [{n_sg}], batch_tile = [{cols // (n_sg * sg * 4)}], "
                 f"outer_tile = [1], thread_tile = [{sg}], element_tile = [4], subgroup_strides = [1], thread_strides = [1]>")
    softmax = f"""
func.func @softmax(%src: memref<4x{cols}xf32>, %dst: memref<4x{cols}xf32>) attributes {{translation_info = {info}}} {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %r = gpu.block_id x
  %raw = vector.transfer_read %src[%r, %c0], %pad {{in_bounds = [true]}} : memref<4x{cols}xf32>, vector<{cols}xf32>
  %v = iree_vector_ext.to_layout %raw to layout({sm_layout}) : vector<{cols}xf32>
  %m = vector.multi_reduction <maximumf>, %v, %ninf [0] : vector<{cols}xf32> to f32
  %mb = vector.broadcast %m : f32 to vector<{cols}xf32>
  %d = arith.subf %v, %mb : vector<{cols}xf32>
  %e = math.exp %d : vector<{cols}xf32>
  %s = vector.multi_reduction <add>, %e, %zero [0] : vector<{cols}xf32> to f32
  %sb = vector.broadcast %s : f32 to vector<{cols}xf32>
  %y = arith.divf %e, %sb : vector<{cols}xf32>
  vector.transfer_write %y, %dst[%r, %c0] {{in_bounds = [true]}} : vector<{cols}xf32>, memref<4x{cols}xf32>
  return
}}
"""
    # 64x64 tile: rows read with 16-byte loads, transposed, written row-wise again
    t_rows = 64 // n_sg
    lanes_r = 64 // 4  # lanes along a row, 4 floats each
    rows_layout = (f"#iree_vector_ext.nested_layout<subgroup_tile = [{n_sg}, 1], batch_tile = [{t_rows * lanes_r // sg}, 1], "
                   f"outer_tile = [1, 1], thread_tile = [{sg // lanes_r}, {lanes_r}], element_tile = [1, 4], "
                   f"subgroup_strides = [1, 0], thread_strides = [{lanes_r}, 1]>")
    body_in = f"""  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<64x64xf32>, vector<64x64xf32>
  %a = iree_vector_ext.to_layout %v to layout({rows_layout}) : vector<64x64xf32>
  %t = vector.transpose %a, [1, 0] : vector<64x64xf32> to vector<64x64xf32>
"""
    transpose_simtify = f"""
func.func @transpose(%src: memref<64x64xf32>, %dst: memref<64x64xf32>) attributes {{translation_info = {info}}} {{
{body_in}  %b = iree_vector_ext.to_layout %t to layout({rows_layout}) : vector<64x64xf32>
  vector.transfer_write %b, %dst[%c0, %c0] {{in_bounds = [true, true]}} : vector<64x64xf32>, memref<64x64xf32>
  return
}}
"""
    transpose_iree = f"""
func.func @transpose(%src: memref<64x64xf32>, %dst: memref<64x64xf32>) attributes {{translation_info = {info}}} {{
{body_in}  %buf = memref.alloc() : memref<64x64xf32, #gpu.address_space<workgroup>>
  vector.transfer_write %t, %buf[%c0, %c0] {{in_bounds = [true, true]}} : vector<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %w = vector.transfer_read %buf[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<64x64xf32, #gpu.address_space<workgroup>>, vector<64x64xf32>
  %b = iree_vector_ext.to_layout %w to layout({rows_layout}) : vector<64x64xf32>
  vector.transfer_write %b, %dst[%c0, %c0] {{in_bounds = [true, true]}} : vector<64x64xf32>, memref<64x64xf32>
  return
}}
"""
    return {
        f"reduction 4x{row} ({target})": (reduction, reduction, (4,)),
        f"softmax 4x{cols} ({target})": (softmax, softmax, (4,)),
        f"transpose 64x64 ({target})": (transpose_simtify, transpose_iree, (1,)),
    }


def run_kernel(text_s: str, text_i: str, grid, target: str):
    from iree_side_by_side import inputs_for, without_launch

    from simtify.ir import parse
    from simtify.sim import find_function, run

    func = "reduction" if "@reduction" in text_s else "softmax" if "@softmax" in text_s else "transpose"
    ref_mod = parse(without_launch(text_s))
    inputs = inputs_for(ref_mod, func)
    ref = run(ref_mod, func, {k: v.copy() for k, v in inputs.items()}, grid=grid, block=(1,), level="workgroup")
    stats = []
    for text, dist in ((text_s, lambda t: simtify_distribute(t, target)), (text_i, iree_distribute)):
        mod = parse(dist(text))
        names = [a.name_hint for a in find_function(mod, func).body.blocks.first.args]
        res = run(mod, func, dict(zip(names, (v.copy() for v in inputs.values()))), grid=grid, target=target,
                  sanitize=True)
        assert not res.findings, res.findings[:2]
        out = res.arguments[names[-1]]
        np.testing.assert_allclose(out, list(ref.arguments.values())[-1], rtol=1e-4, atol=1e-5)
        stats.append(dict(res.stats))
    return stats


def main(argv: list[str]) -> int:
    if shutil.which("iree-opt") is None:
        print("iree-opt is not installed (pip install iree-base-compiler==3.12.0); nothing to compare")
        return 0
    t0 = time.perf_counter()
    worse_rows = {}
    print(header())
    if "--kernels-only" not in argv:
        not_compared = []
        for path in fixtures():
            r = side_by_side(path)
            s, i = r["simtify"], r["iree"]
            if r["reference"] or s is None or i is None or s.status != "pass" or i.status == "error":
                why = r["reference"] or (s.detail if s and s.status != "pass" else i.detail if i else "")
                not_compared.append(f"{path.stem}: {why[:110]}")
                continue
            # "wrong": IREE's values differ from the input's; "flagged": the sanitizers report
            # IREE's output (an input that is itself out of bounds is flagged on both sides)
            note = {"wrong": "IREE WRONG", "flagged": "IREE FLAGGED"}.get(i.status, "")
            line, worse = _row(path.stem, s.stats, i.stats, note)
            print(line)
            if worse:
                worse_rows[path.stem] = worse
    if "--fixtures-only" not in argv:
        for target in ("gfx942", "sm_90"):
            for name, (ts, ti, grid) in kernels(target).items():
                s, i = run_kernel(ts, ti, grid, target)
                line, worse = _row(name, s, i)
                print(line)
                if worse:
                    worse_rows[name] = worse
    if "--kernels-only" not in argv:
        print("\nnot compared (one side cannot run it):")
        for n in not_compared:
            print("  " + n)
    print("\nrows where simtify is above IREE:")
    for name, worse in worse_rows.items():
        for key in worse:
            why = EXPLAINED.get(name, {}).get(key) or EXPLAINED.get(name.split(" (")[0], {}).get(key)
            print(f"  {name} / {key}: {why or 'UNEXPLAINED'}")
    if not worse_rows:
        print("  none")
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
