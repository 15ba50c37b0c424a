"""The benchmark suite on the CPU: for each benchmark kernel (reduction, matvec, softmax,
transpose for sm_90; row-max and softmax-row for gfx942), the simulator's counters and a
roofline model's predicted time, for simtify's distribution and, when iree-opt 3.12 is
installed, for IREE's distribution of the same workgroup-level input (simulated by
simtify too); with nvcc, the registers ptxas gives each emitted CUDA kernel next to the
simulator's estimate.

Counters are simulated on the benchmark's small size and scaled to its GPU size (the
size `simtify bench gpu` times: every workgroup of these kernels does the same work, so
totals grow with the number of workgroups). Writes JSON and a Markdown table (default
bench/results/suite.json, suite.md) and prints the table. Asserts nothing.

Run: python bench/bench_suite.py [--out DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import time
from math import prod
from pathlib import Path

import numpy as np

from simtify.codegen.benchmarks import BENCHMARKS, GFX942_EXAMPLES, Benchmark
from simtify.sim import run
from simtify.target import get_target

LAUNCH_OVERHEAD_S = 2e-6


def predicted_time(counters: dict, target, flops: int, bytes_moved: int) -> dict:
    """The cost model (one function, meant to be replaced by a better one): times in
    seconds for a whole launch, from the simulator's counter totals.

      dram     = global_sectors x 32 B / memory bandwidth (sectors, not bytes: a badly
                 coalesced access pays for the whole 32-byte sectors it touches)
      shared   = (shared_bytes / (banks x bank width) + bank conflicts) cycles, one
                 phase per compute unit per cycle
      shuffles = one subgroup shuffle per compute unit per cycle
      alu      = flops / peak vector f32 rate
      predicted = launch overhead (2 µs) + max(dram, shared + shuffles, alu)
      roofline  = max(bytes that must move / bandwidth, flops / peak)

    Latency (barriers, dependent loads) and occupancy are ignored: the model says
    whether a kernel moves more data, or spends more cycles on shared memory and
    shuffles, than the roofline needs — not how long a real launch takes."""
    cycles = target.compute_units * target.clock_hz
    dram = counters["global_sectors"] * target.global_sector_bytes / target.memory_bandwidth_bytes_per_s
    shared = (counters["shared_bytes"] / target.shared_phase_bytes + counters["shared_bank_conflicts"]) / cycles
    shuffles = counters["shuffles"] / cycles
    alu = flops / target.peak_vector_flops["f32"]
    roofline = max(bytes_moved / target.memory_bandwidth_bytes_per_s, alu)
    return {"dram_s": dram, "shared_s": shared, "shuffle_s": shuffles, "alu_s": alu,
            "predicted_s": LAUNCH_OVERHEAD_S + max(dram, shared + shuffles, alu), "roofline_s": roofline}


def simulate(bench: Benchmark, module, label: str) -> dict:
    """Counters of one distribution at the small size, scaled to the GPU size."""
    from simtify.sim import find_function, function_args
    from simtify.sim.liveness import max_registers_per_thread

    target = get_target(bench.target)
    inputs = bench.inputs(seed=5)
    # IREE renames the arguments (%arg0, ...): match them by position
    names = dict(zip(inputs, (n for n, _ in function_args(find_function(module, bench.func)))))
    t0 = time.perf_counter()
    r = run(module, bench.func, {names[k]: np.copy(v) for k, v in inputs.items()}, grid=bench.grid(1), target=target,
            sanitize=True)
    sim_s = time.perf_counter() - t0
    err = max(float(np.max(np.abs(r.arguments[names[k]] - v))) for k, v in bench.reference(inputs).items())
    workgroups = prod(bench.grid(1))
    full = prod(bench.grid(bench.gpu_scale))
    scaled = {k: v * full // workgroups for k, v in r.stats.items() if k != "max_registers_per_thread"}
    model = predicted_time(scaled, target, bench.flops(bench.gpu_scale), bench.bytes_moved(bench.gpu_scale))
    return {"kernel": bench.name, "target": bench.target, "by": label, "workgroups": full,
            "block": list(r.launch.block), "counters": scaled,
            "per_workgroup": {k: v // workgroups for k, v in r.stats.items() if k != "max_registers_per_thread"},
            "sim_registers": max_registers_per_thread(find_function(module, bench.func)),
            "findings": len(r.findings), "max_error": err, "simulate_s": sim_s, **model}


def ptxas_registers(rows: list[dict], modules: dict) -> None:
    """Registers and shared memory ptxas gives each sm_90 kernel (one nvcc run)."""
    if shutil.which("nvcc") is None:
        return
    from simtify.codegen.cuda import emit_cuda
    from simtify.codegen.toolchain import compile_cuda

    sources = {}
    for key, (bench, module) in modules.items():
        if bench.target == "sm_90":
            sources[key] = emit_cuda(module, bench.func, "sm_90", grid=bench.grid(1), name=key).source
    report = compile_cuda({f"{k}.cu": v for k, v in sources.items()})
    for row in rows:
        u = report.usage.get(row["key"])
        if u is not None:
            row["ptxas_registers"], row["ptxas_shared_bytes"] = u.registers, u.shared_bytes
    if not report.clean:
        print("nvcc reported:\n" + "\n".join(report.errors + report.warnings))


def markdown(rows: list[dict], skipped: list[str], when: str, machine: str) -> str:
    out = [f"Benchmark suite, {when}, on {machine} (simulated; times are the roofline model's, at the GPU size)", "",
           "| kernel | target | by | workgroups × threads | DRAM MB (sectors) | / needed | shared KB | bank conflicts "
           "| shuffles | barriers/wg | regs sim / ptxas | predicted µs | roofline µs | roofline / predicted |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c, w = r["counters"], r["per_workgroup"]
        dram_mb = c["global_sectors"] * 32 / 1e6
        need = r["needed_mb"]
        regs = f"{r['sim_registers']} / {r.get('ptxas_registers', '-')}"
        out.append(f"| {r['kernel']} | {r['target']} | {r['by']} | {r['workgroups']} × {prod(r['block'])} | "
                   f"{dram_mb:.1f} | {dram_mb / need:.2f} | {c['shared_bytes'] / 1e3:.0f} | {c['shared_bank_conflicts']} | "
                   f"{c['shuffles']} | {w['barriers']} | {regs} | {_us(r['predicted_s'])} | "
                   f"{_us(r['roofline_s'])} | {r['roofline_s'] / r['predicted_s']:.2f} |")
    out += ["", "- DRAM counts every subgroup's 32-byte sectors: data several subgroups read (matvec's x) would hit "
                "the caches on a GPU, which the model does not know.",
            "- row-max and softmax-row are single-workgroup examples: their predicted time is the launch overhead."]
    out += [f"- {s}" for s in skipped]
    return "\n".join(out) + "\n"


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f}" if us >= 10 else f"{us:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"), help="directory for suite.json/suite.md")
    args = ap.parse_args()
    rows, skipped, modules = [], [], {}
    for bench in list(BENCHMARKS.values()) + list(GFX942_EXAMPLES.values()):
        ours = bench.distributed()
        candidates = [("simtify", ours)]
        iree, why = bench.iree_distributed()
        if iree is not None:
            candidates.append(("IREE 3.12", iree))
        else:
            skipped.append(f"{bench.name}: no IREE row ({why})")
        for label, module in candidates:
            row = simulate(bench, module, label)
            row["key"] = f"{'iree' if label != 'simtify' else 'simtify'}_{bench.name.replace('-', '_')}"
            row["needed_mb"] = bench.bytes_moved(bench.gpu_scale) / 1e6
            rows.append(row)
            modules[row["key"]] = (bench, module)
    ptxas_registers(rows, modules)
    when = datetime.date.today().isoformat()
    machine = f"{platform.machine()} {platform.processor() or ''} {platform.system()}, Python {platform.python_version()}"
    text = markdown(rows, skipped, when, machine.replace("  ", " "))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "suite.json").write_text(json.dumps({"date": when, "machine": machine, "rows": rows, "notes": skipped},
                                               indent=2, default=float) + "\n")
    (out / "suite.md").write_text(text)
    print(text)
    for r in rows:
        if r["findings"] or r["max_error"] > 1e-4:
            print(f"note: {r['kernel']} by {r['by']}: {r['findings']} sanitizer findings, max error {r['max_error']:.2g}")


if __name__ == "__main__":
    main()
