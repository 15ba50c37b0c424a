"""Direct global-to-LDS loads against the register path, on the simulator's counters.

For each tile copy into workgroup memory: lowered with `lower-dma` as
``#iree_gpu.use_global_load_dma`` (gather_to_lds; cp.async on sm_90) and as
``#iree_gpu.derived_thread_config`` (transfer_read + transfer_write), both simulated on
the same random data. Prints, per path: bytes that went through registers, LDS bytes
written, global sectors, LDS bank conflicts, memory instructions per thread, registers
per thread; then the ratios DMA / registers. Also the promoted matmul of
`tests/test_dma_promote.py`, with and without promotion. Run: python bench/bench_dma.py.
Prints; asserts nothing."""

from __future__ import annotations

import time
from math import prod

from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline

LDS = "#gpu.address_space<workgroup>"
BYTES = {"i8": 1, "f16": 2, "f32": 4}
TILES = [  # shape, element, workgroup size, target
    ((64, 256), "i8", 256, "gfx942"),
    ((128, 64), "i8", 128, "gfx942"),
    ((64, 64), "f16", 256, "gfx942"),
    ((64, 64), "f16", 256, "gfx950"),
    ((32, 128), "f32", 256, "gfx950"),
    ((64, 64), "f16", 256, "sm_90"),
]


def copy_in(shape, elem, config) -> str:
    t = "x".join(map(str, shape))
    return f"""
func.func @copy_in(%src: memref<{t}x{elem}>) {{
  %lds = memref.alloc() : memref<{t}x{elem}, {LDS}>
  linalg.copy {{lowering_config = {config}}} ins(%src : memref<{t}x{elem}>) outs(%lds : memref<{t}x{elem}, {LDS}>)
  return
}}
"""


def measure(shape, elem, wg, target, config):
    module = parse(copy_in(shape, elem, config))
    run_pipeline(module, "lower-dma", Options(target=target, workgroup_size=wg))
    args = random_inputs(find_function(module, "copy_in"), 0)
    t0 = time.perf_counter()
    res = run(module, "copy_in", args, target=target, sanitize=True)
    dt = time.perf_counter() - t0
    by_op, s = res.stats_by_op, res.stats
    through_registers = sum(v.get("global_bytes", 0) + v.get("shared_bytes", 0) for v in by_op.values()
                            if not v.get("dma_bytes"))
    sg = res.launch.subgroup_size
    if s["dma_instructions"]:
        per_thread = s["dma_instructions"] / (wg // sg)
    else:  # one 16-byte (or narrower) load and store per chunk
        chunk = by_op["vector.transfer_read"]["global_bytes"] / wg
        per_thread = 2 * chunk / min(16, chunk)
    return {"through_registers": through_registers, "lds_bytes": s["shared_bytes"], "sectors": s["global_sectors"],
            "bank_conflicts": s["shared_bank_conflicts"], "instructions_per_thread": per_thread,
            "registers": s["max_registers_per_thread"], "findings": len(res.findings), "sim_s": dt}


def ratio(a, b) -> str:
    return "n/a" if b == 0 else f"{a / b:.2f}x"


def main():
    for shape, elem, wg, target in TILES:
        nbytes = prod(shape) * BYTES[elem]
        dma = measure(shape, elem, wg, target, "#iree_gpu.use_global_load_dma")
        reg = measure(shape, elem, wg, target, "#iree_gpu.derived_thread_config")
        name = f"{'x'.join(map(str, shape))}x{elem} ({nbytes} B), {wg} threads, {target}"
        print(name)
        for label, m in (("DMA", dma), ("registers", reg)):
            print(f"  {label:9s}: through registers {m['through_registers']:6d} B, LDS written {m['lds_bytes']:6d} B, "
                  f"sectors {m['sectors']:5d}, bank conflicts {m['bank_conflicts']:3d}, "
                  f"instructions/thread {m['instructions_per_thread']:5.1f}, registers/thread {m['registers']:3d}, "
                  f"findings {m['findings']}, simulated in {m['sim_s'] * 1e3:.1f} ms")
        print(f"  DMA / registers: LDS bytes {ratio(dma['lds_bytes'], reg['lds_bytes'])}, "
              f"instructions/thread {ratio(dma['instructions_per_thread'], reg['instructions_per_thread'])}, "
              f"registers/thread {ratio(dma['registers'], reg['registers'])}, "
              f"register traffic {dma['through_registers']} vs {reg['through_registers']} B")
    promoted_matmul()


def promoted_matmul():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_dma_promote import MATMULS, looped_matmul

    la, lb, lc, _ = MATMULS["gfx942"]
    text = looped_matmul(8, 8, 64, 16, la, lb, lc)
    stats = {}
    for pipeline in ("nested-distribute", "nested-distribute-dma"):
        module = parse(text)
        run_pipeline(module, pipeline, Options())
        stats[pipeline] = run(module, "mm", random_inputs(find_function(module, "mm"), 0)).stats
    a, b = stats["nested-distribute"], stats["nested-distribute-dma"]
    print("matmul 8x8x64 (K tiles of 16), gfx942: operands in registers vs promoted by DMA")
    for k in ("global_bytes", "global_sectors", "shared_bytes", "dma_bytes", "barriers", "max_registers_per_thread"):
        print(f"  {k:24s} {a[k]:7d} -> {b[k]:7d} ({ratio(b[k], a[k])})")


if __name__ == "__main__":
    main()
