"""Arguments the simulator gives memory of its own making (`simtify.sim.arguments`):
memrefs of dynamic size (`--shape`, `shapes=`), block descriptors, shared-memory
matrices (mem_desc) and raw addresses taken from memrefs. Each is run before and after a
pass on random inputs, from Python and from the command line; bad input is a located
error."""

from __future__ import annotations

import json

import numpy as np
import pytest
from diagnostics import one_error
from xegpu_harness import check_xegpu, distribute

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_check(capsys, tmp_path, text: str, func: str, pipeline: str, *flags):
    """`simtify check` of `text` against what `pipeline` makes of it, with `flags`."""
    ref, new = tmp_path / "ref.mlir", tmp_path / "new.mlir"
    ref.write_text(text)
    new.write_text(distribute(text, pipeline))
    return cli(capsys, "check", ref, new, "--func", func, "--target", "xe", "--json", "--no-progress", *flags)


# --- memrefs of dynamic size -----------------------------------------------------------

GATHER = """gpu.module @m {
  gpu.func @gather(%src: memref<?xf32>, %dst: memref<256x4xf32>) {
    %offset = arith.constant dense<7> : vector<256xindex>
    %mask = arith.constant dense<true> : vector<256xi1>
    %v = xegpu.load %src[%offset], %mask <{chunk_size = 4, layout = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 4]>}>
      : memref<?xf32>, vector<256xindex>, vector<256xi1> -> vector<256x4xf32>
    %d = xegpu.create_nd_tdesc %dst : memref<256x4xf32> -> !xegpu.tensor_desc<256x4xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 4]>>
    xegpu.store_nd %v, %d[0, 0] : vector<256x4xf32>, !xegpu.tensor_desc<256x4xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 4]>>
    gpu.return
  }
}"""


def test_a_dynamic_memref_takes_its_shape_from_python():
    out = check_xegpu(GATHER, "gather", "xegpu-wg-to-sg", shapes={"src": (11,)})
    assert "memref<?xf32>" in out
    inputs = random_inputs(find_function(parse(GATHER), "gather"), 0, {"src": (11,)})
    assert inputs["src"].shape == (11,) and np.all(inputs["src"] != 0)
    got = run(parse(GATHER), "gather", inputs, target="xe", level="workgroup").arguments["dst"]
    np.testing.assert_array_equal(got, np.broadcast_to(inputs["src"][7:11], (256, 4)))


def test_a_dynamic_memref_too_small_for_the_gather_is_out_of_bounds():
    module = parse(GATHER)
    inputs = random_inputs(find_function(module, "gather"), 0, {"src": (9,)})
    findings = run(module, "gather", inputs, target="xe", level="workgroup").findings
    assert [f.kind for f in findings] == ["out-of-bounds"] and findings[0].buffer == "src"


def test_a_dynamic_memref_takes_its_shape_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, GATHER, "gather", "xegpu-wg-to-sg", "--shape", "src=11")
    assert code == 0 and json.loads(out)["equal"], out + err
    f = tmp_path / "in.mlir"
    f.write_text(GATHER)
    code, out, err = cli(capsys, "run", f, "--func", "gather", "--target", "xe", "--arg", "src=random",
                         "--arg", "dst=random", "--shape", "src=11", "--json", "--no-progress")
    assert code == 0 and json.loads(out)["outputs"] == ["dst"], err


@pytest.mark.parametrize("flags, message", [
    ((), "--shape: argument 'src' has a dynamic shape (memref<?xf32>); give it one with --shape src=SIZES"),
    (("--shape", "src=4x4"), "--shape: argument 'src' is a memref<?xf32>: give 1 positive sizes that keep its "
                             "static dims (?), not 4x4"),
    (("--shape", "src=0"), "give 1 positive sizes"),
    (("--shape", "dst=256x4"), "--shape: argument 'dst' is a memref<256x4xf32>, which has no dynamic dims to give"),
    (("--shape", "nope=4"), "--shape: the function has no argument 'nope' (arguments: src, dst)"),
    (("--shape", "src=four"), "--shape: 'src=four' is not NAME=AxB"),
    (("--shape", "src=11", "--shape", "src=12"), "--shape: argument 'src' is given two shapes"),
])
def test_bad_shapes_are_located_errors(capsys, tmp_path, flags, message):
    code, out, err = cli_check(capsys, tmp_path, GATHER, "gather", "xegpu-wg-to-sg", *flags)
    assert code == 2 and message in one_error(err), err


def test_bad_shapes_are_errors_from_python():
    func = find_function(parse(GATHER), "gather")
    with pytest.raises(SimtifyError, match="has a dynamic shape"):
        random_inputs(func)
    with pytest.raises(SimtifyError, match="no dynamic dims"):
        random_inputs(func, 0, {"src": (11,), "dst": (256, 4)})


# --- block descriptors ---------------------------------------------------------------

DESCRIPTORS = """gpu.module @m {
  gpu.func @mm(%a: !xegpu.tensor_desc<8x16xf16>, %b: !xegpu.tensor_desc<16x16xf16>, %c: !xegpu.tensor_desc<8x16xf32>) {
    %x = xegpu.load_nd %a : !xegpu.tensor_desc<8x16xf16> -> vector<8x16xf16>
    %y = xegpu.load_nd %b : !xegpu.tensor_desc<16x16xf16> -> vector<16x16xf16>
    %e = arith.addf %y, %y : vector<16x16xf16>
    %d = xegpu.dpas %x, %e : vector<8x16xf16>, vector<16x16xf16> -> vector<8x16xf32>
    xegpu.store_nd %d, %c : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
    gpu.return
  }
}"""


def test_a_descriptor_argument_is_a_buffer_of_its_shape():
    module = parse(DESCRIPTORS)
    inputs = random_inputs(find_function(module, "mm"), 3)
    assert {k: v.shape for k, v in inputs.items()} == {"a": (8, 16), "b": (16, 16), "c": (8, 16)}
    assert all(np.all(v != 0) for v in inputs.values()) and inputs["a"].dtype == np.float16
    result = run(module, "mm", inputs, target="xe", level="workgroup")
    want = inputs["a"].astype(np.float64) @ (2 * inputs["b"].astype(np.float64))
    np.testing.assert_allclose(result.arguments["c"], want, rtol=1e-2, atol=1e-2)
    assert list(result.outputs) == ["c"] and not result.findings


def test_descriptor_arguments_before_and_after_propagation():
    out = check_xegpu(DESCRIPTORS, "mm", "xegpu-propagate", rtol=1e-2, atol=1e-2)
    assert "layout_b = #xegpu.layout<inst_data = [16, 16], lane_layout = [1, 16], lane_data = [2, 1]>" in out


def test_descriptor_arguments_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, DESCRIPTORS, "mm", "xegpu-propagate", "--level", "workgroup",
                               "--rtol", "1e-2", "--atol", "1e-2")
    rows = json.loads(out)["results"]
    assert code == 0 and [r["argument"] for r in rows] == ["a", "b", "c"] and all(r["equal"] for r in rows), out + err
    np.save(tmp_path / "a.npy", np.ones((8, 16), np.float16))
    code, out, err = cli(capsys, "run", tmp_path / "ref.mlir", "--func", "mm", "--target", "xe", "--arg",
                         f"a={tmp_path / 'a.npy'}", "--arg", "b=random", "--arg", "c=random", "--no-progress",
                         "--out", tmp_path / "out.npz")
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["c"].shape == (8, 16)


@pytest.mark.parametrize("pipeline", ["xegpu-wg-to-sg", "xegpu-blocking", "xegpu-sg-to-lane", "xegpu-distribute"])
def test_descriptor_arguments_before_and_after_distribution(pipeline):
    """Each access takes the argument's whole block, so every level keeps the argument as
    the descriptor its accesses go through (the lanes each read their share of it)."""
    out = check_xegpu(DESCRIPTORS, "mm", pipeline, rtol=1e-2, atol=1e-2,
                      block=(16,) if pipeline == "xegpu-sg-to-lane" else None)
    assert "xegpu.create_nd_tdesc" not in out and "xegpu.load_nd %a[0, 0]" in out, out


def test_distributed_descriptor_arguments_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, DESCRIPTORS, "mm", "xegpu-distribute", "--rtol", "1e-2",
                               "--atol", "1e-2")
    rows = json.loads(out)["results"]
    assert code == 0 and [r["argument"] for r in rows] == ["a", "b", "c"] and all(r["equal"] for r in rows), out + err


BLOCKED_ARGUMENT = """func.func @blocked(%a: !xegpu.tensor_desc<16x32xf32>, %b: !xegpu.tensor_desc<16x32xf32>) {
  %v = xegpu.load_nd %a <{layout = #xegpu.layout<inst_data = [8, 16]>}> : !xegpu.tensor_desc<16x32xf32> -> vector<16x32xf32>
  xegpu.store_nd %v, %b <{layout = #xegpu.layout<inst_data = [8, 16]>}> : vector<16x32xf32>, !xegpu.tensor_desc<16x32xf32>
  return
}
"""


def test_a_descriptor_argument_cut_into_blocks_is_a_located_error(capsys, tmp_path):
    """Nothing makes an 8x16 descriptor over the memory behind a 16x32 argument."""
    f = tmp_path / "blocked.mlir"
    f.write_text(BLOCKED_ARGUMENT)
    code, out, err = cli(capsys, "opt", f, "--pipeline", "xegpu-blocking")
    assert code == 2 and one_error(err) == (
        f"{f}:2:3: error: a descriptor argument of !xegpu.tensor_desc<16x32xf32> is accessed in blocks of 8x16 by "
        "xegpu-blocking: nothing makes a smaller descriptor over the memory behind an argument; pass the memref and "
        "make the descriptor with create_nd_tdesc in the function"), err
    with pytest.raises(SimtifyError, match="accessed in blocks of 8x16"):
        distribute(BLOCKED_ARGUMENT, "xegpu-blocking")


ARRAY = """func.func @pair(%a: !xegpu.tensor_desc<8x16xf32, #xegpu.block_tdesc_attr<array_length = 2>>) -> vector<2x8x16xf32> {
  %v = xegpu.load_nd %a : !xegpu.tensor_desc<8x16xf32, #xegpu.block_tdesc_attr<array_length = 2>> -> vector<2x8x16xf32>
  return %v : vector<2x8x16xf32>
}"""


def test_a_descriptor_of_an_array_of_blocks_has_them_side_by_side():
    module = parse(ARRAY)
    inputs = random_inputs(find_function(module, "pair"), 0)
    assert inputs["a"].shape == (8, 32)
    [got] = run(module, "pair", inputs, target="xe", level="workgroup").returns
    np.testing.assert_array_equal(got[0, 0], np.stack([inputs["a"][:, :16], inputs["a"][:, 16:]]))


SHARED_DESCRIPTOR = """gpu.module @m {
  gpu.func @twice(%s: !xegpu.tensor_desc<16xf32, #xegpu.block_tdesc_attr<memory_space = slm>>) {
    %v = xegpu.load_nd %s : !xegpu.tensor_desc<16xf32, #xegpu.block_tdesc_attr<memory_space = slm>> -> vector<16xf32>
    %w = arith.addf %v, %v : vector<16xf32>
    xegpu.store_nd %w, %s : vector<16xf32>, !xegpu.tensor_desc<16xf32, #xegpu.block_tdesc_attr<memory_space = slm>>
    gpu.return
  }
}"""


def test_a_descriptor_in_shared_memory_is_each_workgroups_own():
    module = parse(SHARED_DESCRIPTOR)
    inputs = random_inputs(find_function(module, "twice"), 0)
    result = run(module, "twice", inputs, target="xe", level="workgroup", grid=(3,))
    assert result.arguments["s"].shape == (3, 16) and list(result.outputs) == ["s"] and not result.findings
    np.testing.assert_array_equal(result.arguments["s"], np.broadcast_to(2 * inputs["s"], (3, 16)))


def test_a_descriptor_argument_of_dynamic_shape_is_a_located_error(capsys, tmp_path):
    f = tmp_path / "dyn.mlir"
    f.write_text("func.func @f(%a: !xegpu.tensor_desc<?x16xf32>) {\n  return\n}\n")
    code, out, err = cli(capsys, "run", f, "--func", "f", "--target", "xe", "--arg", "a=random")
    assert code == 2 and one_error(err).startswith(f"{f}:1:"), err


def test_a_descriptor_argument_of_the_wrong_shape_is_an_error(capsys, tmp_path):
    (tmp_path / "ref.mlir").write_text(DESCRIPTORS)
    np.save(tmp_path / "a.npy", np.ones((16, 8), np.float16))
    code, out, err = cli(capsys, "run", tmp_path / "ref.mlir", "--func", "mm", "--target", "xe", "--arg",
                         f"a={tmp_path / 'a.npy'}", "--arg", "b=random", "--arg", "c=random")
    assert code == 2 and one_error(err) == ("error: --arg: argument 'a' must have shape [8, 16] for "
                                            "!xegpu.tensor_desc<8x16xf16>, got [16, 8]"), err


# --- memrefs in the workgroup address space -------------------------------------------

SHARED_MEMREF = """gpu.module @m {
  gpu.func @double(%s: memref<64xf32, 3>) {
    %i = gpu.thread_id x
    %v = memref.load %s[%i] : memref<64xf32, 3>
    %w = arith.addf %v, %v : f32
    memref.store %w, %s[%i] : memref<64xf32, 3>
    gpu.return
  }
}"""

# upstream's xegpu-blocking @unroll_load_matrix: a matrix of f32 over bytes of shared local memory
MATRIX_OVER_BYTES = """gpu.module @test_kernel {
  gpu.func @unroll_load_matrix(%arg0: memref<4096xi8, 3>) -> vector<32x32xf32> {
    %0 = xegpu.create_mem_desc %arg0 : memref<4096xi8, 3> -> !xegpu.mem_desc<32x32xf32>
    %1 = xegpu.load_matrix %0[0, 0] <{layout = #xegpu.layout<inst_data = [8, 16]>}>: !xegpu.mem_desc<32x32xf32> -> vector<32x32xf32>
    gpu.return %1: vector<32x32xf32>
  }
}"""


def test_a_workgroup_memref_argument_is_each_workgroups_own():
    module = parse(SHARED_MEMREF)
    inputs = random_inputs(find_function(module, "double"), 0)
    result = run(module, "double", inputs, target="xe", grid=(3,), block=(64,), sanitize=True)
    assert result.arguments["s"].shape == (3, 64) and list(result.outputs) == ["s"] and not result.findings
    np.testing.assert_array_equal(result.arguments["s"], np.broadcast_to(2 * inputs["s"], (3, 64)))


def test_a_matrix_over_a_byte_argument_reads_its_bytes():
    module = parse(MATRIX_OVER_BYTES)
    inputs = random_inputs(find_function(module, "unroll_load_matrix"), 0)
    assert inputs["arg0"].dtype == np.int8 and np.all(inputs["arg0"] != 0)
    result = run(module, "unroll_load_matrix", inputs, target="xe", level="workgroup", grid=(2,))
    assert not result.findings, result.findings
    np.testing.assert_array_equal(result.returns[0][0, 0], inputs["arg0"].view(np.float32).reshape(32, 32))


def test_a_matrix_over_a_byte_argument_before_and_after_blocking():
    check_xegpu(MATRIX_OVER_BYTES, "unroll_load_matrix", "xegpu-blocking")


def test_workgroup_memref_arguments_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, MATRIX_OVER_BYTES, "unroll_load_matrix", "xegpu-blocking")
    rows = json.loads(out)["results"]
    assert code == 0 and len(rows) == 2 and all(r["equal"] for r in rows), out + err
    np.save(tmp_path / "s.npy", np.arange(1, 65, dtype=np.float32))
    (tmp_path / "double.mlir").write_text(SHARED_MEMREF)
    code, out, err = cli(capsys, "run", tmp_path / "double.mlir", "--func", "double", "--target", "xe", "--grid", "2",
                         "--block", "64", "--arg", f"s={tmp_path / 's.npy'}", "--no-progress",
                         "--out", tmp_path / "out.npz")
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_array_equal(saved["s"], np.broadcast_to(2 * np.arange(1, 65, dtype=np.float32), (2, 64)))
    np.save(tmp_path / "s.npy", np.arange(1, 65, dtype=np.int32))
    code, out, err = cli(capsys, "run", tmp_path / "double.mlir", "--func", "double", "--target", "xe",
                         "--block", "64", "--arg", f"s={tmp_path / 's.npy'}")
    message = one_error(err)
    assert code == 2 and message.startswith("error: --arg: argument 's' must be float32 for memref<64xf32, 3") and \
        message.endswith("got int32"), err


# --- shared-memory matrices (mem_desc) -------------------------------------------------

LAYOUT = "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], lane_layout = [2, 8], lane_data = [1, 1]>"
MATRIX = f"""gpu.module @m {{
  gpu.func @neg(%m: !xegpu.mem_desc<32x64xf32>) {{
    %v = xegpu.load_matrix %m[0, 0] <{{layout = {LAYOUT}}}> : !xegpu.mem_desc<32x64xf32> -> vector<32x32xf32>
    %w = arith.negf %v {{layout_result_0 = {LAYOUT}}} : vector<32x32xf32>
    xegpu.store_matrix %w, %m[0, 32] <{{layout = {LAYOUT}}}> : vector<32x32xf32>, !xegpu.mem_desc<32x64xf32>
    gpu.return
  }}
}}"""


def test_a_matrix_argument_is_shared_memory_filled_in_every_workgroup():
    module = parse(MATRIX)
    inputs = random_inputs(find_function(module, "neg"), 0)
    assert inputs["m"].shape == (32, 64) and np.all(inputs["m"] != 0)
    result = run(module, "neg", inputs, target="xe", level="workgroup", grid=(2,))
    assert not result.findings and list(result.outputs) == ["m"]
    want = inputs["m"].copy()
    want[:, 32:] = -want[:, :32]
    np.testing.assert_array_equal(result.arguments["m"], np.broadcast_to(want, (2, 32, 64)))


def test_what_workgroups_leave_in_shared_memory_comes_back_from_every_process():
    module = parse(MATRIX)
    inputs = random_inputs(find_function(module, "neg"), 0)
    one, two = (run(module, "neg", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup",
                    grid=(8,), jobs=jobs) for jobs in (1, 2))
    assert two.timing["processes"] == 2 and two.arguments["m"].shape == (8, 32, 64)
    np.testing.assert_array_equal(two.arguments["m"], one.arguments["m"])


@pytest.mark.parametrize("pipeline", ["xegpu-wg-to-sg", "xegpu-distribute"])
def test_matrix_arguments_before_and_after_distribution(pipeline):
    out = check_xegpu(MATRIX, "neg", pipeline, grid=(2,))
    assert "!xegpu.mem_desc<32x64xf32>" in out


def test_matrix_arguments_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, MATRIX, "neg", "xegpu-distribute", "--grid", "2")
    assert code == 0 and json.loads(out)["results"] == [{"argument": "m", "equal": True, "max_error": 0.0}], out + err
    code, out, err = cli(capsys, "run", tmp_path / "new.mlir", "--func", "neg", "--target", "xe", "--grid", "2",
                         "--arg", "m=random", "--sanitize", "--no-progress", "--out", tmp_path / "out.npz")
    assert code == 0 and "wrote m" in out, out + err
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["m"].shape == (2, 32, 64)


BLOCKED = """func.func @read(%m: !xegpu.mem_desc<32x32xf32, #xegpu.mem_layout<stride = [1, 32], block = [16, 1]>>) -> vector<16x2xf32> {
  %v = xegpu.load_matrix %m[0, 1] : !xegpu.mem_desc<32x32xf32, #xegpu.mem_layout<stride = [1, 32], block = [16, 1]>> -> vector<16x2xf32>
  return %v : vector<16x2xf32>
}"""


def test_a_matrix_argument_is_the_matrix_whatever_its_memory_order():
    """The array is the matrix; the mem_layout (here blocks of 16x1, column-major) only
    says where each element lies in shared memory."""
    module = parse(BLOCKED)
    inputs = random_inputs(find_function(module, "read"), 0)
    assert inputs["m"].shape == (32, 32)
    result = run(module, "read", inputs, target="xe", level="workgroup")
    np.testing.assert_array_equal(result.returns[0][0, 0], inputs["m"][:16, 1:3])
    np.testing.assert_array_equal(result.arguments["m"][0], inputs["m"])


# --- raw addresses -----------------------------------------------------------------------

LANES = "#xegpu.layout<sg_layout = [4], sg_data = [32], lane_layout = [16], lane_data = [1]>"
RAW = f"""gpu.module @m {{
  gpu.func @shift(%a: memref<272xf32>, %b: memref<128xf32>) {{
    %pa = memref.extract_aligned_pointer_as_index %a : memref<272xf32> -> index
    %c64 = arith.constant 64 : index
    %qa = arith.addi %pa, %c64 : index
    %ia = arith.index_cast %qa : index to i64
    %pb = memref.extract_aligned_pointer_as_index %b : memref<128xf32> -> index
    %ib = arith.index_cast %pb : index to i64
    %step = vector.step {{layout_result_0 = {LANES}}} : vector<128xindex>
    %c2 = arith.constant {{layout_result_0 = {LANES}}} dense<2> : vector<128xindex>
    %offs = arith.muli %step, %c2 {{layout_result_0 = {LANES}}} : vector<128xindex>
    %mask = arith.constant {{layout_result_0 = {LANES}}} dense<true> : vector<128xi1>
    %v = xegpu.load %ia[%offs], %mask <{{layout = {LANES}}}> : i64, vector<128xindex>, vector<128xi1> -> vector<128xf32>
    %w = arith.negf %v {{layout_result_0 = {LANES}}} : vector<128xf32>
    xegpu.store %w, %ib[%step], %mask <{{layout = {LANES}}}> : vector<128xf32>, i64, vector<128xindex>, vector<128xi1>
    gpu.return
  }}
}}"""


def test_a_raw_address_names_a_buffer_and_an_element():
    module = parse(RAW)
    inputs = random_inputs(find_function(module, "shift"), 0)
    result = run(module, "shift", inputs, target="xe", level="workgroup")
    assert not result.findings and list(result.outputs) == ["b"]
    np.testing.assert_array_equal(result.arguments["b"], -inputs["a"][16:272:2])


@pytest.mark.parametrize("pipeline", ["xegpu-wg-to-sg", "xegpu-distribute"])
def test_raw_addresses_before_and_after_distribution(pipeline):
    out = check_xegpu(RAW, "shift", pipeline)
    assert "memref.extract_aligned_pointer_as_index" in out


def test_raw_addresses_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, RAW, "shift", "xegpu-distribute")
    assert code == 0 and [r["equal"] for r in json.loads(out)["results"]] == [True, True], out + err


def test_a_raw_address_past_its_buffer_is_out_of_bounds(capsys, tmp_path):
    (tmp_path / "small.mlir").write_text(RAW.replace("memref<272xf32>", "memref<256xf32>"))
    code, out, err = cli(capsys, "run", tmp_path / "small.mlir", "--func", "shift", "--target", "xe", "--arg",
                         "a=random", "--arg", "b=random", "--sanitize", "--json", "--no-progress")
    [finding] = json.loads(out)["sanitizer"]
    assert code == 1 and finding["kind"] == "out-of-bounds" and finding["buffer"] == "a", out
    assert finding["op"] == "xegpu.load" and finding["address"] == 256 * 4  # the first element past a's end


TWO = """func.func @both(%a: memref<16xf32>, %b: memref<16xf32>) -> vector<16xf32> {
  %pa = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<16xf32> -> index
  %apart = arith.subi %pb, %pa : index
  %c4 = arith.constant 4 : index
  %elements = arith.divui %apart, %c4 : index
  %to_b = vector.broadcast %elements : index to vector<16xindex>
  %zero = arith.constant dense<0> : vector<16xindex>
  %odd = arith.constant dense<[false, true, false, true, false, true, false, true, false, true, false, true, false, true, false, true]> : vector<16xi1>
  %jump = arith.select %odd, %to_b, %zero : vector<16xi1>, vector<16xindex>
  %step = vector.step : vector<16xindex>
  %offs = arith.addi %step, %jump : vector<16xindex>
  %mask = arith.constant dense<true> : vector<16xi1>
  %ia = arith.index_cast %pa : index to i64
  %v = xegpu.load %ia[%offs], %mask : i64, vector<16xindex>, vector<16xi1> -> vector<16xf32>
  return %v : vector<16xf32>
}"""


def test_one_gather_through_raw_addresses_may_read_two_buffers():
    module = parse(TWO)
    inputs = random_inputs(find_function(module, "both"), 0)
    result = run(module, "both", inputs, target="xe", level="workgroup")
    assert not result.findings
    np.testing.assert_array_equal(result.returns[0][0, 0], np.where(np.arange(16) % 2, inputs["b"], inputs["a"]))


@pytest.mark.parametrize("edit, message", [
    (("%c64 = arith.constant 64", "%c64 = arith.constant 66"), "raw address 65602 is not aligned to the 4-byte "
                                                               "elements of 'a'"),
    (("-> vector<128xf32>\n", "-> vector<128xi32>\n"), "a raw address into 'a' (of f32) is accessed as i32"),
])
def test_bad_raw_addresses_are_located_errors(capsys, tmp_path, edit, message):
    text = RAW.replace(*edit)
    if "i32" in edit[1]:
        text = text.replace("%w = arith.negf %v", "%w0 = arith.sitofp %v").replace(
            "vector<128xf32>\n    xegpu.store %w", "vector<128xi32> to vector<128xf32>\n    %w = arith.negf %w0 {layout_result_0 = " + LANES + "} : vector<128xf32>\n    xegpu.store %w")
    (tmp_path / "bad.mlir").write_text(text)
    code, out, err = cli(capsys, "run", tmp_path / "bad.mlir", "--func", "shift", "--target", "xe", "--arg",
                         "a=random", "--arg", "b=random", "--no-progress")
    line = one_error(err)
    assert code == 2 and line.startswith(f"{tmp_path / 'bad.mlir'}:13:") and message in line, err


# --- raw addresses given as arguments ----------------------------------------------------

POINTERS = """gpu.module @m {
  gpu.func @copy(%src: ui64, %dst: i64, %rows: index, %stride: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = xegpu.create_nd_tdesc %src[%c0, %c0], shape:[%rows, 16], strides:[%stride, %c1] : ui64 -> !xegpu.tensor_desc<16x16xf32>
    %v = xegpu.load_nd %a : !xegpu.tensor_desc<16x16xf32> -> vector<16x16xf32>
    %w = arith.negf %v : vector<16x16xf32>
    %b = xegpu.create_nd_tdesc %dst[%c0, %c0], shape:[16, 16], strides:[16, 1] : i64 -> !xegpu.tensor_desc<16x16xf32>
    xegpu.store_nd %w, %b : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
    gpu.return
  }
}"""


def test_a_raw_address_argument_is_a_buffer_as_long_as_its_descriptors_reach():
    module = parse(POINTERS)
    inputs = random_inputs(find_function(module, "copy"), 0)
    rows, stride = int(inputs["rows"]), int(inputs["stride"])
    assert inputs["src"].shape == ((rows - 1) * stride + 16,) and inputs["dst"].shape == (256,)
    result = run(module, "copy", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup")
    assert not result.findings and list(result.outputs) == ["dst"]
    got = result.arguments["dst"].reshape(16, 16)[:min(rows, 16)]
    want = -np.stack([inputs["src"][r * stride:r * stride + 16] for r in range(min(rows, 16))])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("pipeline", ["xegpu-sg-to-lane", "xegpu-distribute"])
def test_raw_address_arguments_before_and_after_distribution(pipeline):
    inputs = random_inputs(find_function(parse(POINTERS), "copy"), 0)
    inputs["rows"], inputs["stride"] = np.int64(24), np.int64(20)
    inputs["src"] = np.random.default_rng(1).uniform(0.5, 1, 23 * 20 + 16).astype(np.float32)
    check_xegpu(POINTERS, "copy", pipeline, inputs=inputs, block=(16,) if pipeline == "xegpu-sg-to-lane" else None)


def test_raw_address_arguments_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, POINTERS, "copy", "xegpu-distribute")
    rows = json.loads(out)["results"]
    assert code == 0 and [r["argument"] for r in rows] == ["src", "dst"] and all(r["equal"] for r in rows), out + err
    np.save(tmp_path / "rows.npy", np.int64(4))
    np.save(tmp_path / "stride.npy", np.int64(16))
    code, out, err = cli(capsys, "run", tmp_path / "ref.mlir", "--func", "copy", "--target", "xe", "--arg", "src=random",
                         "--arg", "dst=random", "--arg", f"rows={tmp_path / 'rows.npy'}", "--arg",
                         f"stride={tmp_path / 'stride.npy'}", "--no-progress", "--out", tmp_path / "out.npz")
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["dst"].shape == (256,)


@pytest.mark.parametrize("edit, arg, message", [
    (None, "src=2x3", "argument 'src' is a raw address the function accesses f32 through: give it a 1-D float32 array of "
                      "the memory there, not float32 [2, 3]"),
    (("%stride, %c1]", "%stride, %rows]"), None, "the memory behind raw address argument 'src' reaches as far as"),
    (("shape:[%rows, 16]", "shape:[%c0, 16]"), None, "has shape [0, 16] and strides"),
])
def test_bad_raw_address_arguments_are_located_errors(capsys, tmp_path, edit, arg, message):
    text = POINTERS if edit is None else POINTERS.replace(*edit)
    if edit == ("%stride, %c1]", "%stride, %rows]"):  # a stride the program computes
        text = text.replace("%c1 = arith.constant 1 : index",
                            "%c1 = arith.constant 1 : index\n    %twice = arith.addi %rows, %rows : index").replace(
            "%stride, %rows]", "%stride, %twice]")
    f = tmp_path / "p.mlir"
    f.write_text(text)
    args = ["--arg", "dst=random", "--arg", "rows=random", "--arg", "stride=random"]
    if arg is not None:
        np.save(tmp_path / "src.npy", np.ones((2, 3), np.float32))
        args += ["--arg", f"src={tmp_path / 'src.npy'}"]
    else:
        args += ["--arg", "src=random"]
    code, out, err = cli(capsys, "run", f, "--func", "copy", "--target", "xe", *args)
    assert code == 2 and message in one_error(err), err
    if arg is None:
        assert one_error(err).startswith(f"{f}:"), err


RAW_GATHER = GATHER.replace("%src: memref<?xf32>", "%src: ui64").replace(": memref<?xf32>, vector<256xindex>",
                                                                          ": ui64, vector<256xindex>")


def test_a_raw_address_a_gather_reads_is_a_buffer_as_long_as_its_offsets_reach():
    """The gather reads 4 elements at offset 7: the memory there is 11 elements long."""
    module = parse(RAW_GATHER)
    inputs = random_inputs(find_function(module, "gather"), 0)
    assert inputs["src"].shape == (11,) and inputs["src"].dtype == np.float32
    result = run(module, "gather", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup")
    assert not result.findings
    np.testing.assert_array_equal(result.arguments["dst"], np.broadcast_to(inputs["src"][7:11], (256, 4)))
    check_xegpu(RAW_GATHER, "gather", "xegpu-distribute")


def test_a_raw_address_gather_at_computed_offsets_needs_its_memory_given():
    text = RAW_GATHER.replace("%offset = arith.constant dense<7> : vector<256xindex>",
                              "%seven = arith.constant dense<7> : vector<256xindex>\n"
                              "    %offset = arith.addi %seven, %seven : vector<256xindex>")
    with pytest.raises(SimtifyError, match="reaches as far as this access's offsets, which the simulator needs as a "
                                           "constant") as e:
        random_inputs(find_function(parse(text), "gather"), 0)
    assert e.value.where == "<input>:6:5"  # the gather


ADDRESS_ONLY = """func.func @address(%p: i64, %dst: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %v = vector.broadcast %p : i64 to vector<4xi64>
  vector.transfer_write %v, %dst[%c0] {in_bounds = [true]} : vector<4xi64>, memref<4xi64>
  return
}"""


def test_an_integer_argument_given_memory_is_its_address():
    """A raw address that no access of the function reads through (a pass removed the
    accesses that the input it is checked against makes) still names the memory given."""
    module = parse(ADDRESS_ONLY)
    memory = np.arange(1, 7, dtype=np.float32)
    result = run(module, "address", {"p": memory, "dst": np.zeros(4, np.int64)})
    address = result.arguments["dst"]
    assert len(set(address.tolist())) == 1 and address[0] > 0 and not result.findings
    with pytest.raises(SimtifyError, match=r"argument 'p' must have shape \[\] for i64, got \[2, 3\]"):
        run(module, "address", {"p": memory.reshape(2, 3), "dst": np.zeros(4, np.int64)})
    with pytest.raises(SimtifyError, match="give it a scalar, or a 1-D array of the memory its address names"):
        run(module, "address", {"p": memory.astype(np.complex64), "dst": np.zeros(4, np.int64)})
