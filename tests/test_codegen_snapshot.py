"""The emitted CUDA of one reduction, word for word: a reader should be able to follow
it (named values, folded indices, float4 loads, the xor butterfly, one barrier pair).
Regenerate after a deliberate change with SIMTIFY_UPDATE_SNAPSHOTS=1. The frozen SIMT
input is simulated against numpy, the snapshot compiles with nvcc (where installed), and
the host emulation of the same input (`simtify emit host`, g++) agrees with numpy."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from codegen_harness import needs_gxx, needs_nvcc

from simtify.codegen.cuda import emit_cuda
from simtify.ir import parse
from simtify.sim import run

SNAPSHOTS = Path(__file__).parent / "snapshots"


def test_reduction_cuda_source_is_unchanged():
    simt = SNAPSHOTS / "reduction_simt.mlir"
    got = emit_cuda(parse(simt.read_text(), simt.name), "reduction", "sm_90", grid=(8,)).source
    want_path = SNAPSHOTS / "reduction_sm_90.cu"
    if os.environ.get("SIMTIFY_UPDATE_SNAPSHOTS"):
        want_path.write_text(got)
    assert got == want_path.read_text()
    # what makes it readable
    kernel = got[got.index('extern "C"'):]
    assert "const int row = blockIdx.x;" in kernel
    assert "src[row * 4096 + v2]" in kernel
    assert kernel.count("__shfl_xor_sync(0xffffffffu,") == 5
    assert kernel.count("__syncthreads();") == 3
    assert len(kernel.splitlines()) < 110


GRID = (8,)


def reduction_inputs() -> dict:
    """Rows of distinct non-zero values (never zeros), and an output that is not the sum."""
    rng = np.random.default_rng(0)
    src = (rng.uniform(0.05, 1.0, (8, 4096)) * rng.choice([-1.0, 1.0], (8, 4096))).astype(np.float32)
    return {"src": src, "dst": np.full(8, 1e6, np.float32)}


def row_sums(src: np.ndarray) -> np.ndarray:
    return src.astype(np.float64).sum(axis=1)


def test_the_snapshots_input_sums_each_row_in_the_simulator():
    simt = SNAPSHOTS / "reduction_simt.mlir"
    x = reduction_inputs()
    r = run(parse(simt.read_text(), simt.name), "reduction", {k: v.copy() for k, v in x.items()}, grid=GRID,
            target="sm_90", sanitize=True)
    assert r.launch.level == "simt" and r.launch.block == (256, 1, 1) and r.findings == []
    # 4096 terms of magnitude <= 1 summed in another order: a few units of f32 rounding
    np.testing.assert_allclose(r.outputs["dst"], row_sums(x["src"]), rtol=0, atol=4096 * 2e-7)


@needs_nvcc
def test_the_snapshot_compiles_with_nvcc_with_no_warning(tmp_path):
    from simtify.codegen.toolchain import compile_cuda

    report = compile_cuda({"reduction_sm_90.cu": (SNAPSHOTS / "reduction_sm_90.cu").read_text()}, "sm_90", tmp_path)
    assert report.ok and report.warnings == [] and report.errors == [], report.log
    assert set(report.usage) == {"reduction"}, report.usage


@needs_gxx
def test_the_host_emulation_of_the_snapshots_input_sums_each_row(tmp_path):
    from simtify.codegen.host_emulation import emit_host
    from simtify.codegen.toolchain import compile_host, run_host

    simt = SNAPSHOTS / "reduction_simt.mlir"
    kernel = emit_host(parse(simt.read_text(), simt.name), "reduction", "sm_90", grid=GRID)
    binary = tmp_path / "reduction"
    report = compile_host(kernel.source, binary)
    assert report.ok and not report.warnings, report.log
    x = reduction_inputs()
    got = run_host(binary, kernel.launch, x)
    np.testing.assert_array_equal(got["src"], x["src"])
    np.testing.assert_allclose(got["dst"], row_sums(x["src"]), rtol=0, atol=4096 * 2e-7)
