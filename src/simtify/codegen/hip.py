"""SIMT IR -> a HIP C++ kernel (``simtify emit hip``), for AMD's gfx942/gfx950.

As CUDA (see `cuda.py`), with AMD's spellings: ``__shfl_xor(v, offset, width)`` over
the 64-lane wavefront, ``__syncthreads()``, ``__shared__`` LDS arrays, and
``amdgpu.gather_to_lds`` -> ``__builtin_amdgcn_global_load_lds`` (the LDS address is the
subgroup's: the hardware puts lane l's bytes at that address + l * size).
"""

from __future__ import annotations

from xdsl.ir import Operation

from simtify.codegen.c_values import Mem
from simtify.codegen.cuda import CudaWriter
from simtify.codegen.kernel_file import EmittedKernel, emission_target, emit_kernel
from simtify.codegen.kernel_writer import KernelWriter
from simtify.codegen.prelude import PORTABLE_FLOAT_MINMAX, PRELUDE_HELPERS

PRELUDE = r"""#ifndef SIMTIFY_PRELUDE
#define SIMTIFY_PRELUDE
// Helpers shared by the kernels simtify emits.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
typedef __half f16_t;
typedef _Float16 simtify_half4 __attribute__((ext_vector_type(4)));
typedef float simtify_float4 __attribute__((ext_vector_type(4)));
typedef float simtify_float16 __attribute__((ext_vector_type(16)));
#define SIMTIFY_FN __device__ __forceinline__
#ifndef INFINITY  // run-time compilation (hiprtc) has no <math.h>
#define INFINITY __builtin_huge_valf()
#define NAN __builtin_nanf("")
#endif
""" + PRELUDE_HELPERS + PORTABLE_FLOAT_MINMAX + "#endif  // SIMTIFY_PRELUDE\n"

SHUFFLES = {"xor": "__shfl_xor", "down": "__shfl_down", "up": "__shfl_up", "idx": "__shfl"}


class HipWriter(CudaWriter):
    language = "hip"
    # NVIDIA's cp.async has no AMD spelling: an error, as in the base writer
    async_copy, async_commit, async_wait = KernelWriter.async_copy, KernelWriter.async_commit, KernelWriter.async_wait

    shuffles = SHUFFLES
    shuffle_lanes = ""  # AMD's shuffles and ballots take no lane mask
    ballot = "__ballot"  # all 64 lanes' bits

    def shared_array(self, ctype: str, name: str, n: int) -> str:
        return f"__shared__ __attribute__((aligned(16))) {ctype} {name}[{n}];"

    def gather_to_lds(self, op: Operation, src: Mem, sidx, dst: Mem, didx, nbytes: int, n: int) -> None:
        widths = self.target.dma_widths_bytes
        if nbytes not in widths:
            raise self.error(op, f"{self.target.name} moves {', '.join(map(str, widths))} bytes per lane with "
                                 f"global_load_lds, not {nbytes}")
        self.line(f"// {op.name}: lane l's {nbytes} bytes land at the subgroup's destination + l * {nbytes}")
        self.line("__builtin_amdgcn_global_load_lds(")
        self.line(f"    (__attribute__((address_space(1))) void*)&{src.element(sidx)},")
        self.line(f"    (__attribute__((address_space(3))) void*)&{dst.element(didx)}, {nbytes}, 0, 0);")

    def matrix_instruction(self, op, intr, a, b, c) -> None:
        builtins = {(16, 16, 16): "__builtin_amdgcn_mfma_f32_16x16x16f16",
                    (32, 32, 8): "__builtin_amdgcn_mfma_f32_32x32x8f16"}
        fn = builtins.get((intr.m, intr.n, intr.k))
        if op.name != "amdgpu.mfma" or fn is None or (intr.a_type, intr.c_type) != ("f16", "f32"):
            raise self.error(op, f"{intr.name} has no HIP spelling here")
        d = self.define_vector(op.results[0])
        acc = f"simtify_float{c.n}"
        self.line(f"// {op.name} {intr.m}x{intr.n}x{intr.k}: D = A·B + C over the wavefront")
        with self.block_of(""):
            for name, val in (("a_frag", a), ("b_frag", b)):
                parts = ", ".join(f"(_Float16)(float){val.at(i)}" for i in range(val.n))
                self.line(f"const simtify_half4 {name} = {{{parts}}};")
            self.line(f"const {acc} c_frag = {{{', '.join(c.at(i) for i in range(c.n))}}};")
            self.line(f"const {acc} d_frag = {fn}(a_frag, b_frag, c_frag, 0, 0, 0);")
            with self.loop(d.n) as i:
                self.line(f"{d.at(i)} = d_frag[{i.render()}];")


def emit_hip(module: Operation, func_name: str, target="gfx942", **kw) -> EmittedKernel:
    """HIP C++ for `func_name` of a SIMT-level module."""
    tgt = emission_target(target, "amd", "HIP is emitted for AMD targets (gfx942, gfx950)")
    return emit_kernel(HipWriter, module, func_name, tgt, prelude=PRELUDE, qualifier="__global__", **kw)
