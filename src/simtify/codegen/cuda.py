"""SIMT IR -> a CUDA C++ kernel (``simtify emit cuda``).

Per-thread vectors become register arrays (``float v[16]``, indexed by constants after
``#pragma unroll``), 16-byte ``float4`` accesses where the address is provably aligned,
``gpu.shuffle`` -> ``__shfl_*_sync``, ``gpu.ballot`` -> ``__ballot_sync``, ``gpu.subgroup_reduce`` -> an xor butterfly of
``__shfl_xor_sync``, workgroup memory -> ``__shared__`` arrays, ``gpu.barrier`` ->
``__syncthreads()``, ``amdgpu.gather_to_lds`` -> one ``cp.async`` per lane. The kernel is
``extern "C"`` (unmangled, as NVRTC/cupy look it up) and carries its launch
description in a comment on top.
"""

from __future__ import annotations

from xdsl.ir import Operation

from simtify.codegen.c_values import Mem
from simtify.codegen.expressions import paren
from simtify.codegen.kernel_file import EmittedKernel, emission_target, emit_kernel
from simtify.codegen.kernel_writer import KernelWriter
from simtify.codegen.prelude import PRELUDE_HELPERS

PRELUDE = r"""#ifndef SIMTIFY_PRELUDE
#define SIMTIFY_PRELUDE
// Helpers shared by the kernels simtify emits.
#include <cuda_fp16.h>
typedef __half f16_t;
#define SIMTIFY_FN __device__ __forceinline__
#ifndef INFINITY  // run-time compilation (NVRTC) has no <math.h>
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#endif
""" + PRELUDE_HELPERS + r"""SIMTIFY_FN float maximumf(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
SIMTIFY_FN float minimumf(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif  // SIMTIFY_PRELUDE
"""

SHUFFLES = {"xor": "__shfl_xor_sync", "down": "__shfl_down_sync", "up": "__shfl_up_sync", "idx": "__shfl_sync"}


class CudaWriter(KernelWriter):
    language = "cuda"

    def thread_index(self, axis: int) -> str:
        return f"threadIdx.{'xyz'[axis]}"

    def linear_thread(self) -> str:
        bx, by, bz = self.block
        if by == 1 and bz == 1:
            return "threadIdx.x"
        if bz == 1:
            return f"threadIdx.y * {bx} + threadIdx.x"
        return f"(threadIdx.z * {by} + threadIdx.y) * {bx} + threadIdx.x"

    def block_index(self, axis: int) -> str:
        return f"blockIdx.{'xyz'[axis]}"

    def grid_size(self, axis: int) -> str:
        return f"gridDim.{'xyz'[axis]}"

    def barrier_statement(self) -> str:
        return "__syncthreads();"

    shuffles = SHUFFLES
    shuffle_lanes = "0xffffffffu, "  # the lanes taking part: all

    def shuffle_call(self, mode: str, value: str, offset: str, width: str) -> str:
        tail = "" if width == str(self.target.subgroup_size) else f", {width}"  # default: the hardware's
        return f"{self.shuffles[mode]}({self.shuffle_lanes}{value}, {offset}{tail})"

    ballot = "__ballot_sync"

    def ballot_call(self, predicate: str) -> str:
        return f"{self.ballot}({self.shuffle_lanes}{predicate})"

    def shared_array(self, ctype: str, name: str, n: int) -> str:
        return f"__shared__ __align__(16) {ctype} {name}[{n}];"

    def gather_to_lds(self, op: Operation, src: Mem, sidx, dst: Mem, didx, nbytes: int, n: int) -> None:
        if nbytes not in (4, 8, 16):
            raise self.error(op, f"a {nbytes}-byte transfer has no cp.async (4, 8 or 16 bytes)")
        lane = self.lane_index()
        self.line(f"// {op.name}: lane l's {nbytes} bytes land at the subgroup's destination + l * {nbytes}")
        with self.block_of(""):
            self.line(f"const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared("
                      f"&{dst.ptr}[{dst.address(didx).render()} + ({lane}) * {n}]));")
            self.line(f'asm volatile("cp.async.ca.shared.global [%0], [%1], {nbytes};" :: "r"(to), '
                      f'"l"(&{src.element(sidx)}));')
            self.line('asm volatile("cp.async.wait_all;" ::: "memory");')

    def async_copy(self, op, src: Mem, sidx, dst: Mem, didx, n, nbytes, src_n, bypass_l1) -> None:
        if nbytes not in (4, 8, 16) or (bypass_l1 and nbytes != 16):
            raise self.error(op, f"a {nbytes}-byte cp.async{' .cg' if bypass_l1 else ''} does not exist")
        cache = "cg" if bypass_l1 else "ca"
        with self.block_of(""):
            self.line(f"const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(&{dst.element(didx)}));")
            if src_n is None:
                self.line(f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes};" :: "r"(to), '
                          f'"l"(&{src.element(sidx)}) : "memory");')
            else:  # read only src_n elements, zero-fill the rest
                self.line(f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;" :: "r"(to), '
                          f'"l"(&{src.element(sidx)}), "r"(static_cast<unsigned>({paren(src_n)} * {nbytes // n})) : '
                          f'"memory");')

    def async_commit(self, op) -> None:
        self.line('asm volatile("cp.async.commit_group;" ::: "memory");')

    def async_wait(self, op, groups_left: int) -> None:
        self.line(f'asm volatile("cp.async.wait_group {groups_left};" ::: "memory");')

    def matrix_instruction(self, op, intr, a, b, c) -> None:
        if op.name != "nvgpu.mma.sync" or (intr.a_type, intr.c_type) != ("f16", "f32"):
            raise self.error(op, f"{intr.name} has no CUDA spelling")
        d = self.define_vector(op.results[0])
        na, nb, nc = a.n // 2, b.n // 2, c.n
        regs = [f"%{i}" for i in range(nc + na + nb + nc)]
        outs = ", ".join(f'"=f"({d.at(i)})' for i in range(nc))
        ins = [f'"r"(a_regs[{i}])' for i in range(na)] + [f'"r"(b_regs[{i}])' for i in range(nb)] + \
              [f'"f"({c.at(i)})' for i in range(nc)]
        self.line(f"// {op.name} {intr.m}x{intr.n}x{intr.k}: D = A·B + C over the warp, PTX fragments")
        with self.block_of(""):
            self.line(f"unsigned a_regs[{na}], b_regs[{nb}];")
            for name, val, k in (("a_regs", a, na), ("b_regs", b, nb)):
                with self.loop(k) as i:
                    self.line(f"{name}[{i.render()}] = bit_cast<unsigned>(__halves2half2({val.at(i.scale(2))}, "
                              f"{val.at(i.scale(2) + 1)}));")
            groups = [regs[:nc], regs[nc:nc + na], regs[nc + na:nc + na + nb], regs[nc + na + nb:]]
            text = ", ".join("{" + ", ".join(g) + "}" for g in groups)
            self.line(f'asm volatile("mma.sync.aligned.m{intr.m}n{intr.n}k{intr.k}.row.col.f32.f16.f16.f32 {text};"')
            self.line(f"    : {outs}")
            self.line(f"    : {', '.join(ins)});")


def emit_cuda(module: Operation, func_name: str, target="sm_90", **kw) -> EmittedKernel:
    """CUDA C++ for `func_name` of a SIMT-level module (see the module docstring)."""
    tgt = emission_target(target, "nvidia", "CUDA is emitted for NVIDIA targets (sm_90)")
    return emit_kernel(CudaWriter, module, func_name, tgt, prelude=PRELUDE, qualifier="__global__", **kw)
