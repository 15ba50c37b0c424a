"""CUDA emission: every benchmark kernel (and the hand-written SIMT kernels, and IREE's
own distribution of the benchmark inputs when iree-opt is installed) compiles with
``nvcc -arch=sm_90 -cubin`` with no error and no warning; ptxas' register and shared
memory use is reported next to the simulator's estimate. All in one nvcc run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codegen_harness import needs_nvcc

from simtify.codegen.benchmarks import BENCHMARKS
from simtify.codegen.cuda import emit_cuda
from simtify.codegen.toolchain import compile_cuda
from simtify.ir import parse
from simtify.sim import find_function
from simtify.sim.liveness import max_registers_per_thread

KERNELS = Path(__file__).parent / "kernels"
SIMT_KERNELS = {  # file -> (function, grid, block)
    "accumulate": ("accumulate", (4,), (64,)), "odd_even": ("odd_even", (4,), (64,)),
    "reverse_halves": ("reverse_halves", (4,), (64,)), "shift": ("shift", (4,), (64,)),
    "workgroup_sum": ("workgroup_sum", (4,), (256,)), "transpose": ("transpose", (3, 2), (32, 8)),
    "gpu_module_sum": ("workgroup_sum", (4,), None), "strided_access": ("strided", (1,), (64,)),
}


@pytest.fixture(scope="module")
def compiled():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    sources, modules = {}, {}
    for name, b in BENCHMARKS.items():
        m = b.distributed()
        modules[name] = (m, b.func)
        sources[f"{name}.cu"] = emit_cuda(m, b.func, "sm_90", grid=b.grid(1))
    for f, (func, grid, block) in SIMT_KERNELS.items():
        m = parse((KERNELS / f"{f}.mlir").read_text(), f)
        modules[f"kernel_{f}"] = (m, func)
        sources[f"kernel_{f}.cu"] = emit_cuda(m, func, "sm_90", grid=grid, block=block, name=f"kernel_{f}")
    from test_codegen_host import _intrinsic_cases

    for name, (text, func, target) in _intrinsic_cases().items():
        if target == "sm_90":
            m = parse(text, name)
            modules[name] = (m, func)
            sources[f"{name}.cu"] = emit_cuda(m, func, "sm_90", name=name)
    return sources, modules, compile_cuda({n: k.source for n, k in sources.items()})


@needs_nvcc
def test_every_kernel_compiles_for_sm_90_with_no_warning(compiled):
    sources, _, report = compiled
    assert report.ok, report.log
    assert report.warnings == [] and report.errors == [], report.log
    assert set(report.usage) == {k.launch.kernel for k in sources.values()}


@needs_nvcc
def test_ptxas_usage_next_to_the_simulator(compiled, capsys):
    sources, modules, report = compiled
    lines = [f"{'kernel':24} {'ptxas regs':>10} {'sim regs':>8} {'smem B':>7} {'spills':>6}"]
    for file, k in sources.items():
        u = report.usage[k.launch.kernel]
        m, func = modules[file[:-3]]
        estimate = max_registers_per_thread(find_function(m, func))
        lines.append(f"{k.launch.kernel:24} {u.registers:>10} {estimate:>8} {u.shared_bytes:>7} {u.spill_bytes:>6}")
        assert u.shared_bytes == k.launch.static_shared_bytes  # the launch description is right
        assert u.spill_bytes == 0 and u.stack_bytes == 0  # register arrays stay in registers
        assert 0 < u.registers <= 255
    with capsys.disabled():
        print("\n" + "\n".join(lines))


@needs_nvcc
def test_wide_loads_where_aligned(compiled):
    sources, _, _ = compiled
    assert sources["reduction.cu"].source.count("reinterpret_cast<const float4*>(&src[") == 4  # 16 floats a lane
    assert sources["softmax.cu"].source.count("reinterpret_cast<float4*>") == 2  # 16-byte stores too
    assert "float4" not in sources["kernel_transpose.cu"].source  # scalar accesses stay scalar


@needs_nvcc
def test_mma_sync_and_cp_async_are_inline_ptx(compiled):
    sources, _, report = compiled
    assert sources["mma_sync.cu"].source.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 4
    assert 'cp.async.ca.shared.global [%0], [%1], 16;' in sources["cp_async.cu"].source
    assert "cp.async.wait_group 0;" in sources["cp_async.cu"].source


@pytest.mark.iree
@needs_nvcc
def test_irees_distribution_of_the_benchmarks_compiles_too():
    sources, why_not = {}, {}
    for name, b in BENCHMARKS.items():
        m, why_not[name] = b.iree_distributed()
        if m is not None:
            sources[f"iree_{name}.cu"] = emit_cuda(m, b.func, "sm_90", grid=b.grid(1), name=f"iree_{name}")
    assert sources, why_not
    report = compile_cuda({n: k.source for n, k in sources.items()})
    assert report.ok and not report.warnings, report.log
    assert len(report.usage) == len(sources)
