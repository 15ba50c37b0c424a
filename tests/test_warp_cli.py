"""`simtify opt --pipeline warp-*`: options, clear errors for malformed regions (exit
2, no traceback), and output that iree-opt 3.12 reads (optional)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from iree_oracle import run_iree_opt

from simtify.cli.main import main
from simtify.ir import parse

FIXTURES = Path(__file__).parent / "fixtures" / "warp"
WARP_PIPELINES = ["warp-wrap", "warp-to-scf-if", "warp-propagate", "warp-distribute"]

COPY = """func.func @copy(%A: memref<128xf32>, %B: memref<128xf32>) {
  %gid = gpu.block_id x
  %c32 = arith.constant 32 : index
  %cst = arith.constant 0.0 : f32
  %i0 = arith.muli %gid, %c32 : index
  %l = vector.transfer_read %A[%i0], %cst {in_bounds = [true]} : memref<128xf32>, vector<32xf32>
  vector.transfer_write %l, %B[%i0] {in_bounds = [true]} : vector<32xf32>, memref<128xf32>
  return
}
"""

REGION = """func.func @f(%v: vector<4xf32>) -> vector<{out}xf32> {{
  %laneid = gpu.lane_id
  %r = gpu.warp_execute_on_lane_0(%laneid)[32] args(%v : vector<4xf32>) -> (vector<{out}xf32>) {{
  ^bb0(%a: vector<128xf32>):
    gpu.yield {yields}
  }}
  return %r : vector<{out}xf32>
}}
"""


def opt(args, capsys):
    code = main(["opt", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("pipeline", WARP_PIPELINES)
def test_pipelines_print_verified_modules(pipeline, tmp_path, capsys):
    path = tmp_path / "copy.mlir"
    path.write_text(COPY)
    code, out, err = opt([str(path), "--pipeline", pipeline, "--target", "sm_90"], capsys)
    assert (code, err) == (0, "")
    parse(out, "out.mlir")
    assert "workgroup_size = [32, 1, 1] subgroup_size = 32" in out


def test_warp_size_and_whole_write_options(tmp_path, capsys):
    path = tmp_path / "copy.mlir"
    path.write_text(COPY)
    code, out, _ = opt([str(path), "--pipeline", "warp-distribute", "--target", "sm_90", "--warp-size", "16"], capsys)
    assert code == 0 and "vector<2xf32>" in out and "arith.remui" in out
    code, out, _ = opt([str(path), "--pipeline", "warp-distribute", "--target", "gfx942",
                        "--max-whole-write", "32"], capsys)
    assert code == 0 and "vector<32xf32>" in out and "scf.if" in out  # the write stays whole on lane 0
    code, out, _ = opt([str(path), "--pipeline", "warp-wrap"], capsys)
    assert code == 0 and "gpu.warp_execute_on_lane_0(%laneid)[64]" in out  # gfx942's subgroup


@pytest.mark.parametrize("args,where,what", [
    (["--warp-size", "48", "--target", "sm_90"], "--warp-size", "must divide the 32-lane subgroup"),
    (["--warp-size", "0"], "--warp-size", "must be positive"),
    (["--max-whole-write", "-1"], "--max-whole-write", "must not be negative"),
    (["--workgroup-size", "48", "--target", "sm_90"], "--workgroup-size", "not a whole number of 32-lane warps"),
])
def test_bad_options(args, where, what, tmp_path, capsys):
    path = tmp_path / "copy.mlir"
    path.write_text(COPY)
    code, out, err = opt([str(path), "--pipeline", "warp-distribute", *args], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {where}: ") and what in err and "Traceback" not in err


@pytest.mark.parametrize("out_shape,yields,what", [
    ("2", "%a : vector<128xf32>", "vector<128xf32> split into vector<2xf32> uses 64 lanes, not the warp size 32"),
    ("4", "%a, %a : vector<128xf32>, vector<128xf32>", "region yields 2 values for 1 results"),
    ("3", "%a : vector<128xf32>", "dim 0 of vector<128xf32> (128) is not a multiple of dim 0 of vector<3xf32> (3)"),
])
@pytest.mark.parametrize("pipeline", [None, "warp-distribute"])
def test_malformed_regions(out_shape, yields, what, pipeline, tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text(REGION.format(out=out_shape, yields=yields))
    code, out, err = opt([str(path)] + (["--pipeline", pipeline] if pipeline else []), capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"{path}:3:3: error: 'gpu.warp_execute_on_lane_0' op ") and what in err


def test_simt_function_is_not_wrapped(tmp_path, capsys):
    path = tmp_path / "simt.mlir"
    path.write_text(COPY.replace("%gid = gpu.block_id x", "%gid = gpu.thread_id x"))
    code, _, err = opt([str(path), "--pipeline", "warp-wrap"], capsys)
    assert code == 2 and "'gpu.thread_id' makes @copy a SIMT function" in err and ": error: " in err.splitlines()[0]


@pytest.mark.parametrize("op", ["amdgpu.gather_to_lds", "iree_gpu.global_load_dma", "iree_gpu.coalesced_gather_dma",
                                "iree_vector_ext.to_simt", "gpu.subgroup_id"])
def test_per_lane_ops_are_not_wrapped(op):
    """Ops that mean something only per thread (`SimtOnly`): in a lane-0 region a per-lane
    DMA would copy lane 0's piece alone, so a function holding one is not wrapped, as the
    simulator also runs it per thread."""
    from simtify.ir.context import make_context
    from simtify.ir.effects import is_per_thread
    from simtify.transforms.warp_wrap import _simt_op

    op_type = make_context().get_optional_op(op)
    assert op_type is not None and is_per_thread(op_type)  # has_trait is a class method
    module = parse((Path(__file__).parent / "fixtures/iree/dma.mlir").read_text())
    assert _simt_op(module).name == "amdgpu.gather_to_lds"


def test_cli_subprocess_has_no_traceback(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(REGION.format(out="2", yields="%a : vector<128xf32>"))
    # the interpreter running the tests, not whatever `simtify` is on PATH (none in a venv
    # that is not activated)
    proc = subprocess.run([sys.executable, "-m", "simtify", "opt", str(path), "--pipeline", "warp-to-scf-if"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith(f"{path}:3:3: error: ") and "Traceback" not in proc.stderr


IREE_INPUTS = ["warp", "warp_scf_for", "vector_insert_1d", "vector_reduction_acc", "warp_execute_nd_distribute",
               "warp_propagate_masked_transfer_read", "rewrite_warp_op_to_scf_if", "warp_propagate_read_3d",
               "vector_extractelement_1d", "warp_propagate_multi_dim_create_mask"]


@pytest.mark.iree
@pytest.mark.parametrize("pipeline", WARP_PIPELINES)
def test_output_parses_in_iree_opt(pipeline, tmp_path, capsys):
    """One module with the seed's copy and several upstream inputs (32- and 64-lane
    warps, on gfx942's 64-lane subgroups)."""
    src = tmp_path / "inputs.mlir"
    src.write_text(COPY + "".join((FIXTURES / f"{name}.mlir").read_text() for name in IREE_INPUTS))
    code, out, err = opt([str(src), "--pipeline", pipeline, "--target", "gfx942"], capsys)
    assert code == 0, err
    dst = tmp_path / "out.mlir"
    dst.write_text(out)
    proc = run_iree_opt([dst])
    assert proc.returncode == 0, proc.stderr + out


@pytest.mark.parametrize("example, func", [("row-max", "row_max"), ("softmax-row", "softmax"),
                                           ("reduction", "reduction")])
@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
def test_layout_anchored_examples_go_through_the_warp_pipeline(example, func, target, tmp_path, capsys):
    """to_layout anchors nested distribution only: the warp pipeline drops them (a layout
    spanning 64 threads on one 32-lane warp was an internal error) and the result
    computes what the example does."""
    out = tmp_path / "out.mlir"
    assert main(["opt", f"example:{example}", "--pipeline", "warp-distribute", "--target", target,
                 "-o", str(out)]) == 0
    assert "to_layout" not in out.read_text()
    capsys.readouterr()
    assert main(["check", f"example:{example}", str(out), "--func", func, "--target", target]) == 0
    assert capsys.readouterr().out.strip().endswith("equal")
