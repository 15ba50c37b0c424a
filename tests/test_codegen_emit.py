"""`simtify emit`: the CLI, the launch description, HIP output, and clear errors for
what cannot be emitted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from diagnostics import one_error

from simtify.cli.main import main
from simtify.codegen.cuda import emit_cuda
from simtify.codegen.hip import emit_hip
from simtify.errors import SimtifyError
from simtify.ir import parse

KERNELS = Path(__file__).parent / "kernels"


def test_emit_cuda_cli_writes_kernel_and_launch(tmp_path, capsys):
    out, launch = tmp_path / "r.cu", tmp_path / "r.json"
    assert main(["emit", "cuda", "example:reduction", "--pipeline", "nested-distribute-shuffles", "--grid", "8",
                 "-o", str(out), "--launch", str(launch)]) == 0
    text = out.read_text()
    assert 'extern "C" __global__ void __launch_bounds__(256) reduction(' in text
    assert "// launch reduction: grid = (8, 1, 1), block = (256, 1, 1), subgroup = 32 lanes," in text
    d = json.loads(launch.read_text())
    assert d["block"] == [256, 1, 1] and d["static_shared_bytes"] > 0  # partial sums meet in shared memory
    assert [(a["name"], a["access"]) for a in d["args"]] == [("src", "read"), ("dst", "write")]


def test_emit_host_and_hip_cli(tmp_path, capsys):
    assert main(["emit", "host", "example:softmax", "--pipeline", "nested-distribute-shuffles", "-o",
                 str(tmp_path / "s.cpp")]) == 0
    assert "static void run_workgroup(" in (tmp_path / "s.cpp").read_text()
    # shuffle_sum records no subgroup size: sm_90's 32 lanes, too few for its width-64 shuffles
    assert main(["emit", "host", str(KERNELS / "shuffle_sum.mlir"), "--block", "64", "-o", str(tmp_path / "h.cpp")]) == 2
    assert "shuffle width 64 does not fit the target's 32-lane subgroup" in capsys.readouterr().err
    assert main(["emit", "host", str(KERNELS / "shuffle_sum.mlir"), "--block", "64", "--target", "gfx942",
                 "-o", str(tmp_path / "h.cpp")]) == 0
    simt = tmp_path / "row_max.mlir"
    assert main(["opt", "example:row-max", "--pipeline", "nested-distribute", "-o", str(simt)]) == 0
    assert main(["emit", "host", str(simt), "-o", str(tmp_path / "r.cpp")]) == 0  # records 64 lanes: gfx942
    assert "SUBGROUP = 64;" in (tmp_path / "r.cpp").read_text()
    assert main(["emit", "hip", "example:row-max", "--pipeline", "nested-distribute"]) == 0
    hip = capsys.readouterr().out
    assert "#include <hip/hip_runtime.h>" in hip and "__shfl_xor(" in hip and "__shfl_xor_sync" not in hip


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_emit_check_reports_ptxas_next_to_the_simulator(capsys):
    assert main(["emit", "cuda", "example:matvec", "--pipeline", "nested-distribute-shuffles", "--check",
                 "-o", "/dev/null"]) == 0
    err = capsys.readouterr().err
    assert "check: matvec: nvcc compiles with no warning; ptxas:" in err and "simulator:" in err


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed")
def test_hip_compiles_for_gfx942(tmp_path):
    from simtify.codegen.benchmarks import GFX942_EXAMPLES
    from simtify.codegen.toolchain import compile_hip

    sources = {f"{n}.hip": emit_hip(b.distributed(), b.func, "gfx942", name=n.replace("-", "_")).source
               for n, b in GFX942_EXAMPLES.items()}
    report = compile_hip(sources)
    assert report.ok and not report.warnings, report.log


def test_hip_spells_amd_shuffles_over_64_lanes():
    from pathlib import Path

    m = parse((Path(__file__).parent / "kernels" / "shuffle_sum.mlir").read_text(), "shuffle_sum.mlir")
    src = emit_hip(m, "subgroup_sum", "gfx942", grid=(8,), block=(64,)).source
    assert "__shfl_xor(v, 32);" in src and "threadIdx.x % 64" in src


SIMT = """
func.func @f(%in: memref<64xf32>, %out: memref<64xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 64>} {
  %lane = gpu.lane_id
  %v = memref.load %in[%lane] : memref<64xf32>
  %o = arith.constant 32 : i32
  %w = arith.constant 64 : i32
  %s, %p = gpu.shuffle xor %v, %o, %w : f32
  memref.store %s, %out[%lane] : memref<64xf32>
  return
}
"""


def test_shuffle_wider_than_the_targets_subgroup_is_an_error():
    with pytest.raises(SimtifyError, match="64-lane subgroups; sm_90 runs 32 lanes"):
        emit_cuda(parse(SIMT, "f.mlir"), "f", "sm_90")
    with pytest.raises(SimtifyError, match="shuffle width 64 does not fit"):
        emit_cuda(parse(SIMT, "f.mlir"), "f", "sm_90", subgroup_size=32)


def test_workgroup_level_program_is_an_error_with_its_location(capsys):
    assert main(["emit", "cuda", "example:reduction"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: emit: a workgroup-level program: distribute it first")
    assert main(["emit", "cuda", "example:reduction", "--block", "256"]) == 2
    err = capsys.readouterr().err
    line = one_error(err)
    assert line.startswith("example:reduction:11:") and "iree_vector_ext.to_layout" in line
    assert "distribute the program first" in line


def test_unsupported_ops_and_targets_are_errors(capsys):
    text = SIMT.replace('%s, %p = gpu.shuffle xor %v, %o, %w : f32', '%s = math.ipowi %o, %o : i32\n  %t = arith.sitofp %s : i32 to f32')\
        .replace("memref.store %s", "memref.store %t")
    with pytest.raises(SimtifyError, match="'math.ipowi': cannot emit this op as HIP"):
        emit_hip(parse(text, "f.mlir"), "f", "gfx942")
    with pytest.raises(SimtifyError, match="CUDA is emitted for NVIDIA targets"):
        emit_cuda(parse(SIMT, "f.mlir"), "f", "gfx942")
    assert main(["emit", "cuda", "example:nope"]) == 2
    assert main(["emit", "fortran", "x.mlir"]) == 2
    assert capsys.readouterr().err.count("error:") == 2


def test_hip_spells_mfma_and_gather_to_lds_and_cuda_refuses_them():
    from test_codegen_host import _intrinsic_cases

    cases = _intrinsic_cases()
    mfma, gather, cp = (parse(cases[n][0], n) for n in ("mfma16", "gather_to_lds", "cp_async"))
    src = emit_hip(mfma, "mm", "gfx942").source
    assert src.count("__builtin_amdgcn_mfma_f32_16x16x16f16(a_frag, b_frag, c_frag, 0, 0, 0)") == 2  # bn = 2, in the K loop
    src = emit_hip(gather, "seed", "gfx942").source
    assert "__builtin_amdgcn_global_load_lds(" in src and "&lds[r * 64], 4, 0, 0);" in src
    with pytest.raises(SimtifyError, match="MFMA_F32_16x16x16_F16 runs on subgroups of 64 lanes, not 32"):
        emit_cuda(mfma, "mm", "sm_90", subgroup_size=32, block=(64,))
    with pytest.raises(SimtifyError, match="'nvgpu.device_async_copy': NVIDIA's cp.async has no HIP spelling"):
        emit_hip(cp, "cp", "gfx942", subgroup_size=64)
