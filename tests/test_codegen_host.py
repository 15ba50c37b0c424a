"""The host emulation (body split into phases at barriers and shuffles, threads as loops)
of every benchmark kernel, of the hand-written SIMT kernels and of distributed programs
that use masks, loops and constant tables, built with g++ and compared with numpy and
with the simulator on the same random inputs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from codegen_harness import build_all, host_kernel, needs_gxx

from simtify.codegen.benchmarks import BENCHMARKS
from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

pytestmark = needs_gxx
KERNELS = Path(__file__).parent / "kernels"

# tests/kernels: file -> (function, grid, block, target)
SIMT_KERNELS = {
    "accumulate": ("accumulate", (4,), (64,), "sm_90"),
    "odd_even": ("odd_even", (4,), (64,), "sm_90"),
    "reverse_halves": ("reverse_halves", (4,), (64,), "sm_90"),
    "shift": ("shift", (4,), (64,), "sm_90"),
    "shuffle_sum": ("subgroup_sum", (8,), (64,), "gfx942"),
    "workgroup_sum": ("workgroup_sum", (4,), (256,), "sm_90"),
    "transpose": ("transpose", (3, 2), (32, 8), "sm_90"),
    "gpu_module_sum": ("workgroup_sum", (4,), None, "sm_90"),
    "strided_access": ("strided", (1,), (64,), "sm_90"),
}


def _distribution_cases() -> dict:
    """Distributed programs of the nested-distribution tests that exercise masks, bounds
    guards, loops with iter_args, vector.step, constant tables and reductions through
    workgroup memory — on sm_90's 32-lane subgroups."""
    from test_distribute_nested import (
        LAYOUTS,
        REDUCTIONS,
        make_cases,
        program,
        reduction_program,
    )

    cases = make_cases(*LAYOUTS["sm_90"])
    out = {f"op_{n}": (program(cases[n]), "f") for n in (
        "masked", "out_of_bounds_padding", "loop_accumulate", "step_iota", "non_splat_constant", "transpose",
        "convert_memory", "shape_cast", "broadcast_vector", "transposed_read")}
    for i in (12, 13, 14, 15):  # spans of at most 32 lanes; 14: six lanes at stride 4 through memory
        layout, dims, kind = REDUCTIONS[i]
        out[f"reduce_{i}"] = (reduction_program(layout, dims, kind), "reduce")
    return out


def _intrinsic_cases() -> dict:
    """Matmuls distributed to nvgpu.mma.sync (sm_90) and amdgpu.mfma (gfx942), with a loop
    over K; and DMA into workgroup memory (gather_to_lds on gfx942, cp.async on sm_90)."""
    from distribution_harness import distribute_text
    from test_dma_sim import async_program, seed_16x64_program
    from test_mma import matmul_program

    from simtify.target.mma import INTRINSICS

    out = {}
    for name, intr, target, kw in (("mma_sync", "NV_MMA_SYNC_F32_16x8x16_F16", "sm_90", {"bm": 2, "bk": 2, "k_steps": 2}),
                                   ("mfma16", "MFMA_F32_16x16x16_F16", "gfx942", {"bn": 2, "k_steps": 2}),
                                   ("mfma32", "MFMA_F32_32x32x8_F16", "gfx942", {})):
        text, threads = matmul_program(INTRINSICS[intr], **kw)
        sg = INTRINSICS[intr].subgroup_size
        out[name] = (distribute_text(text, target=target, subgroup_size=sg, workgroup_size=threads), "mm", target)
    out["gather_to_lds"] = (seed_16x64_program(), "seed", "gfx942")
    out["cp_async"] = (async_program("nvgpu.device_async_wait %g"), "cp", "sm_90")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every host emulation of this file, built once (g++ in parallel)."""
    from simtify.transforms.pipelines import Options, run_pipeline

    kernels, modules = {}, {}
    for name, b in BENCHMARKS.items():
        m = b.distributed()
        modules[name] = (m, b.func, b.grid(1), None, b.target)
    for f, (func, grid, block, target) in SIMT_KERNELS.items():
        modules[f"kernel_{f}"] = (parse((KERNELS / f"{f}.mlir").read_text(), f), func, grid, block, target)
    for name, (text, func) in _distribution_cases().items():
        m = parse(text, name)
        run_pipeline(m, "nested-distribute-shuffles", Options(target="sm_90"))
        modules[name] = (m, func, (1,), None, "sm_90")
    for name, (text, func, target) in _intrinsic_cases().items():
        modules[name] = (parse(text, name), func, (1,), None, target)
    for name, (m, func, grid, block, target) in modules.items():
        kernels[name] = host_kernel(m, func, target, grid, block)
    return modules, kernels, build_all(kernels, tmp_path_factory.mktemp("host"))


def _inputs(module, func, seed=1):
    ins = random_inputs(find_function(module, func), seed)
    for k, v in ins.items():
        if np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.integer):
            ins[k] = np.int64(19 if k == "n" else 1)  # masks keep 19 of 32; stride 1
    return ins


def _simulated(built, name, ins):
    modules, kernels, _ = built
    m, func, grid, block, target = modules[name]
    return run(m, func, {k: np.copy(v) for k, v in ins.items()}, grid=grid, block=block, target=target,
               sanitize=False)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_kernel_matches_numpy(built, name):
    _, _, binaries = built
    b = BENCHMARKS[name]
    ins = b.inputs(seed=3)
    got = binaries[name].run(ins)
    for out, want in b.reference(ins).items():
        np.testing.assert_allclose(got[out], want, rtol=2e-5, atol=2e-5, err_msg=name)


@pytest.mark.parametrize("name", sorted(SIMT_KERNELS))
def test_hand_written_kernel_matches_the_simulator(built, name):
    modules, _, binaries = built
    m, func, *_ = modules[f"kernel_{name}"]
    ins = _inputs(m, func)
    got = binaries[f"kernel_{name}"].run(ins)
    sim = _simulated(built, f"kernel_{name}", ins)
    assert sim.outputs
    for out, want in sim.outputs.items():
        np.testing.assert_array_equal(got[out], want, err_msg=name)


@pytest.mark.parametrize("name", sorted(_distribution_cases()))
def test_distributed_program_matches_the_simulator(built, name):
    modules, _, binaries = built
    m, func, *_ = modules[name]
    ins = _inputs(m, func)
    got = binaries[name].run(ins)
    sim = _simulated(built, name, ins)
    for out, want in sim.outputs.items():
        np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_divergent_barrier_stops_the_emulation(tmp_path):
    m = parse((KERNELS / "divergent_barrier.mlir").read_text(), "divergent_barrier.mlir")
    k = host_kernel(m, "reverse_halves", "sm_90", (4,), (64,))
    (built,) = build_all({"divergent": k}, tmp_path).values()
    with pytest.raises(SimtifyError, match="condition of the scf.if at divergent_barrier.mlir:13:3 differs"):
        built.run(_inputs(m, "reverse_halves"))


def test_phases_split_at_barriers_and_shuffles(built):
    modules, kernels, _ = built
    ops = [op.name for op in modules["softmax"][0].walk()]
    src = kernels["softmax"].source
    body = src[src.index("static void run_workgroup"):src.index("int main")]
    # every barrier and shuffle of the IR ends a phase: a loop over the threads
    assert body.count("// gpu.barrier (") == ops.count("gpu.barrier") > 0
    # per reduction: 5 xor steps over 32 lanes, 2 over the 4 subgroups' partials (one per lane)
    assert body.count("// gpu.shuffle xor (") == ops.count("gpu.shuffle") == 14
    assert re.search(r"static float v\d+\[THREADS\]\[8\];", body)  # per-thread registers live across phases
    assert body.count("for (int t = 0; t < THREADS; ++t)") > ops.count("gpu.barrier") + ops.count("gpu.shuffle")


@pytest.mark.parametrize("name", ["mma_sync", "mfma16", "mfma32", "gather_to_lds", "cp_async"])
def test_matrix_instructions_and_dma_match_the_simulator(built, name):
    modules, _, binaries = built
    m, func, *_ = modules[name]
    ins = _inputs(m, func)
    got = binaries[name].run(ins)
    sim = _simulated(built, name, ins)
    for out, want in sim.outputs.items():
        np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-5, err_msg=name)
