"""The benchmark kernels: reduction (row sums), matvec, softmax and transpose.

Each is a built-in workgroup-level example (``example:reduction`` ...) with to_layout
anchors written for 32-lane subgroups (sm_90), distributed by the nested pipeline with
subgroup reductions expanded to shuffles. A benchmark knows its launch grid, its numpy
reference and how to grow: ``program(scale=k)`` multiplies the number of rows (tiles)
by k, which changes only the memref types and the grid, so the same kernel runs on the
small sizes the simulator and the host emulation use and on the large sizes a GPU is
timed on. `row-max` and `softmax-row` (64-lane layouts, gfx942) join the CPU suite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simtify.errors import SimtifyError


@dataclass(frozen=True)
class Benchmark:
    name: str  # the example program, as `example:NAME`
    func: str
    target: str
    types: dict[str, Callable[[int], str]]  # memref type in the example -> its type at scale k
    grid: Callable[[int], tuple[int, ...]]
    reference: Callable[[dict], dict]  # numpy: inputs -> expected outputs
    flops: Callable[[int], int]
    gpu_scale: int  # scale for timing on a GPU (tens to hundreds of MB moved)
    peer: str  # what a framework computes the same with (for `bench gpu`)

    def program(self, scale: int = 1) -> str:
        from simtify.examples import example_program

        text = example_program(self.name)
        for old, new in self.types.items():
            if old not in text:
                raise SimtifyError(f"benchmark {self.name}: the example has no {old}")
            text = text.replace(old, new(scale))
        return text

    def distributed(self, scale: int = 1, pipeline: str = "nested-distribute-shuffles"):
        """The SIMT-level module simtify makes of the example at this scale."""
        from simtify.ir import parse
        from simtify.transforms.pipelines import Options, run_pipeline

        module = parse(self.program(scale), f"example:{self.name}")
        run_pipeline(module, pipeline, Options(target=self.target))
        return module

    def iree_distributed(self, scale: int = 1):
        """(module, None) with IREE 3.12's own vector distribution of the same input, or
        (None, why not): iree-opt missing, or IREE failing to distribute it. IREE gets
        the workgroup and subgroup sizes simtify's distribution recorded."""
        import re
        import shutil
        import subprocess

        from simtify.ir import parse
        from simtify.sim import find_function

        if shutil.which("iree-opt") is None:
            return None, "iree-opt not installed"
        info = find_function(self.distributed(scale), self.func).attributes["translation_info"]
        text = re.sub(r"(func\.func @\w+\([^)]*\))", rf"\1 attributes {{translation_info = {info}}}",
                      self.program(scale), count=1)
        p = subprocess.run(["iree-opt", "--pass-pipeline=builtin.module(func.func(iree-llvmgpu-vector-distribute))",
                            "-"], input=text, capture_output=True, text=True)
        if p.returncode:
            first = next((x for x in p.stderr.splitlines() if "error:" in x), p.stderr.strip()[:200])
            return None, "IREE: " + first.split("error:", 1)[-1].strip()
        return parse(p.stdout, f"iree:{self.name}"), None

    def inputs(self, scale: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
        """Random inputs, never zero: values in ±[0.05, 1)."""
        from simtify.ir import parse
        from simtify.sim import find_function, random_inputs

        return random_inputs(find_function(parse(self.program(scale)), self.func), seed)

    def bytes_moved(self, scale: int = 1) -> int:
        """Bytes that must cross DRAM at least once: every buffer read once, every
        buffer written once (both for one read and written)."""
        from math import prod

        from xdsl.dialects.builtin import MemRefType

        from simtify.codegen.launch import read_memrefs, written_memrefs
        from simtify.ir import parse
        from simtify.sim import find_function
        from simtify.sim.types import byte_width

        func = find_function(parse(self.program(scale)), self.func)
        written, read = written_memrefs(func), read_memrefs(func)
        total = 0
        for a in func.body.blocks.first.args:
            if isinstance(a.type, MemRefType):
                size = prod(a.type.get_shape()) * byte_width(a.type)
                total += size * ((a in written) + (a in read))
        return total


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("reduction", "reduction", "sm_90",
                  {"memref<8x4096xf32>": lambda k: f"memref<{8 * k}x4096xf32>", "memref<8xf32>": lambda k: f"memref<{8 * k}xf32>"},
                  lambda k: (8 * k,), lambda i: {"dst": i["src"].astype(np.float64).sum(axis=1)},
                  lambda k: 8 * k * 4096, 2048, "torch.sum(x, dim=1)"),
        Benchmark("matvec", "matvec", "sm_90",
                  {"memref<64x1024xf32>": lambda k: f"memref<{64 * k}x1024xf32>", "memref<64xf32>": lambda k: f"memref<{64 * k}xf32>"},
                  lambda k: (8 * k,), lambda i: {"y": i["a"].astype(np.float64) @ i["x"].astype(np.float64)},
                  lambda k: 2 * 64 * k * 1024, 1024, "a @ x"),
        Benchmark("softmax", "softmax", "sm_90",
                  {"memref<8x1024xf32>": lambda k: f"memref<{8 * k}x1024xf32>"},
                  lambda k: (8 * k,), lambda i: {"dst": _softmax(i["src"].astype(np.float64))},
                  lambda k: 5 * 8 * k * 1024, 4096, "torch.softmax(x, dim=1)"),
        Benchmark("transpose", "transpose", "sm_90",
                  {"memref<128x192xf32>": lambda k: f"memref<{128 * k}x{192 * k}xf32>",
                   "memref<192x128xf32>": lambda k: f"memref<{192 * k}x{128 * k}xf32>"},
                  lambda k: (3 * k, 2 * k), lambda i: {"dst": i["src"].T.copy()},
                  lambda k: 0, 48, "x.t().contiguous()"),
    )
}

# 64-lane examples: simulated (and emitted as HIP) for gfx942 in the CPU suite only.
GFX942_EXAMPLES: dict[str, Benchmark] = {
    "row-max": Benchmark("row-max", "row_max", "gfx942", {}, lambda k: (1,),
                         lambda i: {"dst": i["src"].max(axis=1)}, lambda k: 4 * 1024, 1, "torch.amax(x, dim=1)"),
    "softmax-row": Benchmark("softmax-row", "softmax", "gfx942", {}, lambda k: (1,),
                             lambda i: {"dst": _softmax(i["src"].astype(np.float64))}, lambda k: 5 * 256, 1,
                             "torch.softmax(x, dim=0)"),
}


def get_benchmark(name: str) -> Benchmark:
    every = BENCHMARKS | GFX942_EXAMPLES
    if name not in every:
        raise SimtifyError(f"no benchmark '{name}' (have: {', '.join(every)})", "bench")
    return every[name]
