"""Copies into workgroup memory written on tensors (before bufferization): they run in the
simulator as they are, and `lower-dma` gives them memory (`bufferize-tensor-copies`) and
lowers them like the memref form; every result is checked on random inputs against the
unlowered program and against the plain copy."""

from __future__ import annotations

import numpy as np
import pytest
from diagnostics import one_error
from dma_programs import check_lowering, cli, copy_program, lower, tensor_copy_program
from iree_oracle import run_iree_opt

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pass


def bufferized(text: str) -> str:
    """`text` after the pass `bufferize-tensor-copies` alone."""
    module = parse(text)
    run_pass(module, "bufferize-tensor-copies", Options())
    return print_module(module)


def plain_copy_output(shape, elem, src_shape=None, offset=None, seed=0) -> np.ndarray:
    """What `out` holds after the same copy written on memrefs with no DMA at all."""
    module = parse(copy_program(shape, elem, config="", readback="", src_shape=src_shape, offset=offset))
    inputs = random_inputs(find_function(module, "copy"), seed)
    return run(module, "copy", inputs, level="workgroup").arguments["out"]


def test_tensor_copy_runs_in_the_simulator():
    """Before any lowering: a workgroup-level program of tensors; `out` gets `src`."""
    module = parse(tensor_copy_program((16, 64), "f32"))
    inputs = random_inputs(find_function(module, "copy"), 3)
    res = run(module, "copy", {k: v.copy() for k, v in inputs.items()})
    assert res.launch.level == "workgroup" and not res.findings
    assert not np.array_equal(inputs["out"], inputs["src"])
    np.testing.assert_array_equal(res.arguments["out"], inputs["src"])


TENSOR_COPIES = [
    # shape, element, workgroup size, target, form, expected lowering
    ((64, 256), "i8", 256, "gfx942", "linalg", "amdgpu.gather_to_lds"),
    ((32, 64), "f16", 128, "gfx950", "linalg", "amdgpu.gather_to_lds"),
    ((4096,), "f32", 256, "gfx942", "tile", "amdgpu.gather_to_lds"),
    ((8, 16, 32), "f16", 128, "gfx942", "tile", "amdgpu.gather_to_lds"),
    ((32, 64), "f16", 128, "sm_90", "linalg", "nvgpu.device_async_copy"),
]


@pytest.mark.parametrize("shape, elem, wg, target, form, lowered_to", TENSOR_COPIES)
def test_tensor_copy_lowers_like_the_memref_form(shape, elem, wg, target, form, lowered_to):
    text = tensor_copy_program(shape, elem, op=form)
    out, res = check_lowering(text, "copy", target=target, workgroup_size=wg)
    assert lowered_to in out and "tensor" not in out and "bufferization" not in out
    assert "memref.alloc() : memref<" + "x".join(map(str, shape)) + f"x{elem}, #gpu.address_space<workgroup>>" in out
    np.testing.assert_array_equal(res.arguments["out"], plain_copy_output(shape, elem))
    assert res.stats["dma_bytes"] > 0


def test_tile_sliced_out_of_a_larger_tensor():
    """``tensor.extract_slice`` of the source becomes ``memref.subview`` of its memory."""
    text = tensor_copy_program((16, 64), "f32", src_shape=(64, 128), offset=(16, 32))
    out, res = check_lowering(text, "copy", workgroup_size=256)
    assert "memref.subview %src[16, 32] [16, 64] [1, 1]" in out
    np.testing.assert_array_equal(res.arguments["out"],
                                  plain_copy_output((16, 64), "f32", src_shape=(64, 128), offset=(16, 32)))


def test_readers_of_the_copied_tensor_read_the_allocation():
    """A transfer_read of a slice of the copied tensor reads a subview of the allocation;
    checked at workgroup level, the pass alone."""
    text = """
func.func @rows(%src: memref<32x64xf32>, %out: memref<8x64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %s = bufferization.to_tensor %src restrict : memref<32x64xf32> to tensor<32x64xf32>
  %e = tensor.empty() : tensor<32x64xf32>
  %c = linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%s : tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %part = tensor.extract_slice %c[8, 0] [8, 64] [1, 1] : tensor<32x64xf32> to tensor<8x64xf32>
  %v = vector.transfer_read %part[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x64xf32>, vector<8x64xf32>
  vector.transfer_write %v, %out[%c0, %c0] {in_bounds = [true, true]} : vector<8x64xf32>, memref<8x64xf32>
  return
}
"""
    module = parse(text)
    inputs = random_inputs(find_function(module, "rows"), 1)
    ref = run(module, "rows", {k: v.copy() for k, v in inputs.items()})
    np.testing.assert_array_equal(ref.arguments["out"], inputs["src"][8:16])
    out = bufferized(text)
    assert "tensor" not in out and "vector.transfer_read %part[" in out and "memref.subview %e[8, 0]" in out
    new = run(parse(out), "rows", {k: v.copy() for k, v in inputs.items()})
    assert not new.findings
    np.testing.assert_array_equal(new.arguments["out"], ref.arguments["out"])


@pytest.mark.parametrize("form", ["linalg", "tile"])
def test_cli_opt_run_and_check(form, tmp_path, capsys):
    src = tmp_path / "copy.mlir"
    src.write_text(tensor_copy_program((64, 256), "i8", op=form))
    lowered = tmp_path / "lowered.mlir"
    code, _, err = cli(["opt", str(src), "--pipeline", "lower-dma", "--workgroup-size", "256", "-o", str(lowered)],
                       capsys)
    assert code == 0, err
    code, out, err = cli(["run", str(src), "--func", "copy", "--arg", "src=random", "--arg", "out=random"], capsys)
    assert code == 0 and "workgroup level" in out, err
    code, out, err = cli(["run", str(lowered), "--func", "copy", "--arg", "src=random", "--arg", "out=random",
                          "--sanitize", "--stats"], capsys)
    assert code == 0 and "dma_bytes: 16384" in out, out + err
    code, out, err = cli(["check", str(src), str(lowered), "--func", "copy"], capsys)
    assert code == 0 and out.strip().endswith("equal"), out + err


def _program(body: str, args: str = "%src: memref<64x64xf32>, %out: memref<64x64xf32>") -> str:
    return f"""func.func @f({args}) {{
  %s = bufferization.to_tensor %src restrict : memref<64x64xf32> to tensor<64x64xf32>
{body}
  return
}}
"""


T = "tensor<64x64xf32>"
COPY = f"linalg.copy {{lowering_config = #iree_gpu.use_global_load_dma}} ins(%s : {T}) outs(%e : {T}) -> {T}"
STORE = f"bufferization.materialize_in_destination %c in restrict writable %out : ({T}, memref<64x64xf32>) -> ()"
LDS_T = "memref<64x64xf32, #gpu.address_space<workgroup>>"

TENSOR_ERRORS = {
    "destination not a tensor.empty": (
        _program(f"  %e = bufferization.to_tensor %w : {LDS_T} to {T}\n  %c = {COPY}\n  {STORE}",
                 f"%src: memref<64x64xf32>, %out: memref<64x64xf32>, %w: {LDS_T}"),
        (4, 3), "the copy's destination tensor is not a tensor.empty"),
    "a use that cannot read the allocation": (
        _program(f"  %e = tensor.empty() : {T}\n  %c = {COPY}\n  %d = tensor.empty() : {T}\n"
                 f"  %x = linalg.copy ins(%c : {T}) outs(%d : {T}) -> {T}\n  {STORE}"),
        (6, 3), "is used by 'linalg.copy', which cannot read it from the allocation here"),
    "lane-level form on tensors": (
        _program(f"  %i = arith.constant 0 : index\n  %e = tensor.empty() : {T}\n"
                 f"  %c = iree_gpu.global_load_dma %s[%i, %i] -> %e[%i, %i] : {T}, {T} -> {T}\n  {STORE}"),
        (5, 3), "the lane-level global_load_dma on tensors writes into a loop-carried tensor"),
    "rank-reducing slice": (
        _program(f"  %r = tensor.extract_slice %s[0, 0] [1, 64] [1, 1] : {T} to tensor<64xf32>\n"
                 f"  %e = tensor.empty() : tensor<64xf32>\n"
                 "  %c = linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%r : tensor<64xf32>) "
                 "outs(%e : tensor<64xf32>) -> tensor<64xf32>",
                 "%src: memref<64x64xf32>"),
        (3, 3), "a rank-reducing tensor.extract_slice has no one-to-one subview here"),
}


@pytest.mark.parametrize("name", sorted(TENSOR_ERRORS))
def test_errors(name, tmp_path, capsys):
    text, (line, col), message = TENSOR_ERRORS[name]
    f = tmp_path / "in.mlir"
    f.write_text(text)
    code, out, err = cli(["opt", str(f), "--pipeline", "lower-dma"], capsys)
    assert code == 2, out + err
    assert f"{f}:{line}:{col}: error: " in err and message in one_error(err), err
    assert "Traceback" not in err


def test_reading_an_empty_tensor_is_an_uninitialised_read(tmp_path, capsys):
    f = tmp_path / "e.mlir"
    f.write_text("""func.func @f(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %v = vector.transfer_read %e[%c0], %pad {in_bounds = [true]} : tensor<4xf32>, vector<4xf32>
  vector.transfer_write %v, %out[%c0] {in_bounds = [true]} : vector<4xf32>, memref<4xf32>
  return
}
""")
    code, out, _ = cli(["run", str(f), "--func", "f", "--arg", "out=random", "--sanitize"], capsys)
    assert code == 1 and "5:3: uninitialized-read in 'vector.transfer_read'" in out, out


@pytest.mark.iree
def test_tensor_program_and_its_lowering_parse_in_iree_opt(tmp_path):
    text = tensor_copy_program((16, 64), "f32", src_shape=(64, 128), offset=(16, 32))
    for name, body in (("in.mlir", text), ("memref.mlir", bufferized(text)),
                       ("out.mlir", lower(text, "lower-dma", workgroup_size=256))):
        f = tmp_path / name
        f.write_text(body)
        r = run_iree_opt([f])
        assert r.returncode == 0, name + "\n" + r.stderr


def test_tensor_arguments_are_refused_when_run(tmp_path, capsys):
    f = tmp_path / "t.mlir"
    f.write_text("""func.func @f(%src: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %r = linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%src : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
""")
    code, _, err = cli(["run", str(f), "--func", "f", "--arg", "src=random"], capsys)
    assert code == 2 and "error: --arg: argument 'src' is a tensor<64x64xf32>: the simulator gives functions memory" \
        in err, err
    with pytest.raises(SimtifyError, match="argument 'src' is a tensor"):
        random_inputs(find_function(parse(f.read_text()), "f"))


def test_register_path_copy_on_tensors():
    """A copy tagged derived_thread_config on tensors gets the same allocation and goes
    through registers."""
    text = tensor_copy_program((16, 64), "f32", config="#iree_gpu.derived_thread_config")
    out, res = check_lowering(text, "copy", workgroup_size=64)
    assert "gather_to_lds" not in out and "vector.transfer_read %src" in out and res.stats["dma_bytes"] == 0
    np.testing.assert_array_equal(res.arguments["out"], plain_copy_output((16, 64), "f32"))
