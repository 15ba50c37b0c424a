"""What a user may paste into any subcommand: the README's own commands, empty and
binary files, bad flags, and shapes too large to simulate. Each must end in one
diagnostic (`FILE:LINE:COL: error: <what>` or `error: <where>: <what>`) with exit 2 (or
work), never a traceback or exit 3, and never allocate the gigabytes a huge shape asks
for."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from diagnostics import LOCATED, one_error

from simtify.cli.main import main

NESTED_64 = ("<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [64], element_tile = [4], "
             "subgroup_strides = [0], thread_strides = [1]>")


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code, err, where: str, what: str):
    assert code == 2, err
    line = one_error(err)  # located at FILE:LINE:COL as MLIR prints it, or `error: WHERE: WHAT`
    assert line.startswith(where if LOCATED.fullmatch(line) else f"error: {where}") and what in line, err


def test_readme_softmax_row_commands_work_as_written(capsys, tmp_path):
    simt = tmp_path / "simt.mlir"
    code, _, err = cli(capsys, "opt", "example:softmax-row", "--pipeline", "nested-distribute", "--target", "gfx942",
                       "-o", simt)
    assert code == 0, err
    code, out, err = cli(capsys, "run", simt, "--func", "softmax", "--arg", "src=random", "--arg", "dst=random",
                         "--sanitize", "--stats", "--json")
    assert code == 0, err
    assert json.loads(out)["sanitizer"] == []
    code, out, err = cli(capsys, "check", "example:softmax-row", simt, "--func", "softmax", "--seed", "7")
    assert code == 0 and out.strip().endswith("equal"), out + err


@pytest.mark.parametrize("text", ["", "\n\n", "// only a comment\n"])
def test_input_without_operations_is_an_empty_module_as_in_mlir(capsys, tmp_path, text):
    path = tmp_path / "empty.mlir"
    path.write_text(text)
    code, out, err = cli(capsys, "opt", path)
    assert code == 0 and out == "builtin.module {\n}\n", err
    code, _, err = cli(capsys, "run", path, "--func", "f")
    assert_user_error(code, err, "--func", "no function named 'f'")


ADD_ONE = """func.func @f(%src: memref<4x64xf32>, %dst: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %one = arith.constant dense<1.0> : vector<4x64xf32>
  %v = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x64xf32>, vector<4x64xf32>
  %w = arith.addf %v, %one : vector<4x64xf32>
  vector.transfer_write %w, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<4x64xf32>, memref<4x64xf32>
  return
}
"""


@pytest.mark.parametrize("argv, where, what", [
    (["run", "{f}", "--func", "f", "--arg", "src=random:-1", "--arg", "dst=random"], "--arg", "must not be negative"),
    (["run", "{f}", "--func", "f", "--arg", "src=random", "--arg", "dst=random", "--subgroup-size", "0"],
     "--subgroup-size", "must be positive"),
    (["check", "{f}", "{f}", "--func", "f", "--seed", "-5"], "--seed", "must not be negative"),
    (["check", "{f}", "{f}", "--func", "f", "--rtol", "-1"], "--rtol", ">= 0"),
    (["check", "{f}", "{f}", "--func", "f", "--atol", "nan"], "--atol", ">= 0"),
])
def test_bad_run_and_check_flags_are_user_errors(capsys, tmp_path, argv, where, what):
    path = tmp_path / "add_one.mlir"
    path.write_text(ADD_ONE)
    code, _, err = cli(capsys, *[a.replace("{f}", str(path)) for a in argv])
    assert_user_error(code, err, where, what)


def test_run_writes_what_the_program_computes(capsys, tmp_path):
    path, out = tmp_path / "add_one.mlir", tmp_path / "o.npz"
    path.write_text(ADD_ONE)
    src = np.random.default_rng(5).uniform(0.5, 2.0, size=(4, 64)).astype(np.float32)
    np.save(tmp_path / "src.npy", src)
    code, _, err = cli(capsys, "run", path, "--func", "f", "--arg", f"src={tmp_path / 'src.npy'}",
                       "--arg", "dst=random:3", "--out", out)
    assert code == 0, err
    np.testing.assert_array_equal(np.load(out)["dst"], src + np.float32(1.0))


HUGE_ARGUMENT = """func.func @f(%src: memref<65536x65536xf32>, %dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %src[%c0, %c0] : memref<65536x65536xf32>
  memref.store %x, %dst[%c0] : memref<8xf32>
  return
}
"""
HUGE_VECTOR = """func.func @f(%src: memref<8x8xf32>, %dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad : memref<8x8xf32>, vector<65536x65536xf32>
  return
}
"""
HUGE_ALLOC = """func.func @f(%dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<65536x65536xf32, #gpu.address_space<workgroup>>
  %x = memref.load %a[%c0, %c0] : memref<65536x65536xf32, #gpu.address_space<workgroup>>
  memref.store %x, %dst[%c0] : memref<8xf32>
  return
}
"""


@pytest.mark.parametrize("text, args, where", [
    (HUGE_ARGUMENT, ["--arg", "src=random", "--arg", "dst=random"], "--arg"),
    (HUGE_VECTOR, ["--arg", "src=random", "--arg", "dst=random"], "@f"),
    (HUGE_ALLOC, ["--arg", "dst=random"], "{path}:3:3"),
])
def test_shapes_too_large_to_simulate_are_refused_before_allocating(capsys, tmp_path, text, args, where):
    path = tmp_path / "huge.mlir"
    path.write_text(text)
    code, _, err = cli(capsys, "run", path, "--func", "f", *args)
    assert_user_error(code, err, where.replace("{path}", str(path)), "more than the simulator holds")


def test_layout_commands_refuse_binary_files_and_huge_sizes(capsys, tmp_path):
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(bytes(np.random.default_rng(1).integers(128, 256, size=64, dtype=np.uint8)))
    code, _, err = cli(capsys, "layout", "show", f"@{garbage}")
    assert_user_error(code, err, str(garbage), "not UTF-8")
    huge = NESTED_64.replace("batch_tile = [1]", "batch_tile = [1000000]")
    code, _, err = cli(capsys, "layout", "owners", huge, "--json")
    assert_user_error(code, err, "layout", "layout commands handle at most")
    code, _, err = cli(capsys, "layout", "show", NESTED_64, "--threads", "100000000")
    assert_user_error(code, err, "--threads", "more than a workgroup can have")
    code, _, err = cli(capsys, "plan-conversion", NESTED_64, NESTED_64, "--threads", "100000000")
    assert_user_error(code, err, "--threads", "exceed gfx942's limit")
    code, out, err = cli(capsys, "plan-conversion", NESTED_64, NESTED_64, "--threads", "1024")
    assert code == 0 and "choice: noop" in out, err


def test_emit_refuses_a_block_the_function_was_not_compiled_for(capsys, tmp_path):
    simt = tmp_path / "row_max.mlir"
    code, _, err = cli(capsys, "opt", "example:row-max", "--pipeline", "nested-distribute", "-o", simt)
    assert code == 0, err
    block = re.search(r"workgroup_size = \[(\d+), 1, 1\]", simt.read_text()).group(1)
    code, out, err = cli(capsys, "emit", "hip", simt, "--block", block)
    assert code == 0 and f"block = ({block}, 1, 1)" in out, err
    code, _, err = cli(capsys, "emit", "hip", simt, "--block", str(int(block) // 2))
    assert_user_error(code, err, "--block", "compiled for workgroups of")
    code, _, err = cli(capsys, "emit", "hip", simt, "--subgroup-size", "0")
    assert_user_error(code, err, "--subgroup-size", "must be positive")


def test_a_huge_dense_literal_is_refused_where_it_is_written(capsys, tmp_path):
    path = tmp_path / "dense.mlir"
    path.write_text(ADD_ONE.replace("4x64", "65536x65536"))
    code, _, err = cli(capsys, "opt", path)
    assert_user_error(code, err, f"{path}:4:", "a dense literal of 4294967296 elements")


def test_location_aliases_defined_after_their_uses_read_as_in_mlir(capsys, tmp_path):
    """`iree-opt --mlir-print-debuginfo` writes `loc(#loc3)` in the body and `#loc3 = loc(...)`
    after the module; the program must read, keep its line numbers, and run unchanged."""
    lines = ADD_ONE.splitlines()
    with_locs = [line + f" loc(#loc{i})" if "=" in line and "func.func" not in line else line
                 for i, line in enumerate(lines)]
    with_locs[-1] = "} loc(#loc_fn)"
    text = "\n".join(with_locs) + "\n" + "".join(
        f'#loc{i} = loc("add_one.py":{i + 1}:3)\n' for i in range(len(lines))) + \
        '#loc_fn = loc(fused["a.py":1:1, #loc1])\n'
    path = tmp_path / "debuginfo.mlir"
    path.write_text(text)
    code, out, err = cli(capsys, "opt", path)
    plain = tmp_path / "plain.mlir"
    plain.write_text(ADD_ONE)
    assert code == 0 and main(["opt", str(plain)]) == 0 and capsys.readouterr()[0] == out, err
    code, out, err = cli(capsys, "check", plain, path, "--func", "f", "--seed", "11")
    assert code == 0 and out.strip().endswith("equal"), out + err
    path.write_text(text.replace("arith.addf %v, %one : vector<4x64xf32>", "arith.addf %v, %one : vector<4x64xf16>"))
    code, _, err = cli(capsys, "opt", path)
    assert code == 2 and one_error(err).startswith(f"{path}:6:"), err


ROW_SUM_LOOP = """func.func @g(%a: memref<?x8xf32>, %n: index) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (vector<8xf32>) {
    %v = vector.transfer_read %a[%i, %c0], %pad : memref<?x8xf32>, vector<8xf32>
    %w = arith.addf %acc, %v : vector<8xf32>
    scf.yield %w : vector<8xf32>
  }
  return %r : vector<8xf32>
}
"""


def test_run_saves_returned_values_with_out(capsys, tmp_path):
    path = tmp_path / "g.mlir"
    path.write_text(ROW_SUM_LOOP)
    a = np.random.default_rng(9).uniform(0.5, 2.0, size=(5, 8)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "n.npy", np.array(5, dtype=np.int64))
    out = tmp_path / "r.npz"
    code, text, err = cli(capsys, "run", path, "--func", "g", "--arg", f"a={tmp_path / 'a.npy'}",
                          "--arg", f"n={tmp_path / 'n.npy'}", "--out", out, "--sanitize")
    assert code == 0 and "returned 1 value(s)" in text, text + err
    np.testing.assert_allclose(np.load(out)["return0"].reshape(8), a.sum(axis=0), rtol=1e-6)


@pytest.mark.parametrize("target, size", [("gfx942", 128), ("gfx950", 32), ("sm_90", 64)])
def test_opt_refuses_a_subgroup_size_the_target_cannot_run(capsys, target, size):
    code, _, err = cli(capsys, "opt", "example:row-max", "--pipeline", "nested-distribute", "--target", target,
                       "--subgroup-size", size)
    assert_user_error(code, err, "--subgroup-size", f"not {size}")


FIXTURES = Path(__file__).parent / "fixtures"
RSUM_DIR = FIXTURES / "iree_dispatch"
RSUM = "rsum_dispatch_0_reduction_512x4096_f32"


def test_run_refuses_a_grid_too_large_to_simulate_instead_of_hanging(capsys):
    code, _, err = cli(capsys, "run", f"{RSUM_DIR}/rsum.distributed.mlir", "--func", RSUM, "--arg", "binding0=random",
                       "--arg", "binding1=random", "--grid", "9999999999")
    assert_user_error(code, err, "--grid", "9999999999 workgroups")


def test_run_says_an_npz_archive_is_not_one_argument(capsys, tmp_path):
    np.savez(tmp_path / "a.npz", x=np.ones(3, dtype=np.float32))
    code, _, err = cli(capsys, "run", f"{RSUM_DIR}/rsum.distributed.mlir", "--func", RSUM,
                       "--arg", f"binding0={tmp_path / 'a.npz'}", "--arg", "binding1=random")
    assert_user_error(code, err, "--arg", ".npz archive")


def test_opt_locates_a_pass_error_that_names_no_place(capsys):
    path = str(FIXTURES / "inner_tiled" / "tile_and_fuse_ops.mlir")
    code, _, err = cli(capsys, "opt", path, "--pipeline", "nested-distribute-mma")
    if code != 0:  # the pass may learn tensors one day; until then its error names the input
        assert_user_error(code, err, path, "")


def test_check_runs_workgroup_level_xegpu_with_a_barrier_without_block(capsys, tmp_path):
    """A barrier alone does not make a program per-thread: the README's check command works."""
    src = FIXTURES / "xegpu" / "store_then_load_matrix.mlir"
    out = tmp_path / "lane.mlir"
    code, _, err = cli(capsys, "opt", src, "--pipeline", "xegpu-distribute", "-o", out)
    assert code == 0, err
    code, text, err = cli(capsys, "check", src, out, "--func", "store_then_load_matrix", "--target", "xe")
    assert code == 0 and text.strip().endswith("equal"), text + err


def test_run_json_reports_a_partial_last_subgroup(capsys, tmp_path):
    path = tmp_path / "ids.mlir"
    path.write_text("""func.func @ids(%out: memref<96xi32>) {
  %t = gpu.thread_id x
  %v = arith.index_cast %t : index to i32
  memref.store %v, %out[%t] : memref<96xi32>
  return
}
""")
    out_file = tmp_path / "out.npz"
    code, out, err = cli(capsys, "run", path, "--func", "ids", "--arg", "out=random", "--block", "96",
                         "--target", "gfx942", "--stats", "--json", "--sanitize", "--out", out_file)
    assert code == 0, err
    report = json.loads(out)
    assert report["sanitizer"] == [] and report["outputs"] == ["out"]
    np.testing.assert_array_equal(np.load(out_file)["out"], np.arange(96, dtype=np.int32))
    code, out, err = cli(capsys, "run", path, "--func", "ids", "--arg", "out=random", "--block", "96",
                         "--target", "gfx942", "--sanitize")
    assert code == 0 and "(last subgroup: 32 of 64 lanes active)" in out, out + err


def test_per_lane_xegpu_code_needs_the_xe_target(tmp_path, capsys):
    """XeGPU lane code run with another target's subgroups gave a silent mismatch."""
    from simtify.cli.main import main

    src = Path(__file__).parent / "fixtures" / "xegpu" / "gather_load_with_non_unit_chunk_size.mlir"
    out = tmp_path / "o.mlir"
    assert main(["opt", str(src), "--pipeline", "xegpu-distribute", "-o", str(out)]) == 0
    capsys.readouterr()
    code = main(["check", str(src), str(out), "--func", "load_with_non_unit_chunk_size"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --target: per-lane XeGPU code runs on Intel Xe GPUs, not gfx942")
    assert main(["check", str(src), str(out), "--func", "load_with_non_unit_chunk_size", "--target", "xe"]) == 0


@pytest.mark.parametrize("attrs, what", [
    ("{permutation_map = 3 : i64}", "permutation_map must be an affine map, not 3 : i64"),
    ("{in_bounds = 3}", "should be of base attribute array"),
])
def test_transfer_attributes_of_the_wrong_kind(capsys, tmp_path, attrs, what):
    path = tmp_path / "bad.mlir"
    path.write_text(ADD_ONE.replace("{in_bounds = [true, true]} : memref", f"{attrs} : memref", 1))
    code, _, err = cli(capsys, "opt", path)
    assert_user_error(code, err, str(path), what)
