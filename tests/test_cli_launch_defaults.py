"""The launch grid defaults to what the function records or implies (never a silent
(1, 1, 1)), and a run that leaves part of an output unwritten says how much."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simtify.cli.main import main
from simtify.ir import parse
from simtify.sim import find_function
from simtify.sim.grid import implied_grid


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_example_reduction_launches_every_row(capsys, tmp_path):
    x = np.random.default_rng(0).uniform(-1, 1, (8, 4096)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out_path = tmp_path / "o.npz"
    code, out, err = cli(capsys, "run", "example:reduction", "--func", "reduction", "--arg", f"src={tmp_path / 'x.npy'}",
                         "--arg", "dst=random", "--out", out_path, "--json")
    assert code == 0, err
    assert err == ""  # every element of dst written: no warning
    got = json.loads(out)
    assert got["launch"]["grid"] == [8, 1, 1] and got["unwritten"] == {}
    np.testing.assert_allclose(np.load(out_path)["dst"], x.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_emit_writes_the_grid_the_input_implies(capsys):
    code, out, err = cli(capsys, "emit", "cuda", "example:reduction", "--pipeline", "nested-distribute-shuffles")
    assert code == 0, err
    assert "grid = (8, 1, 1), block = (256, 1, 1)" in out


@pytest.mark.parametrize("example,func,target,grid", [
    ("reduction", "reduction", "sm_90", [8, 1, 1]),
    ("matvec", "matvec", "sm_90", [8, 1, 1]),
    ("transpose", "transpose", "sm_90", [3, 2, 1]),
])
def test_distribution_records_the_grid_and_run_uses_it(capsys, tmp_path, example, func, target, grid):
    simt = tmp_path / "simt.mlir"
    code, _, err = cli(capsys, "opt", f"example:{example}", "--pipeline", "nested-distribute", "--target", target,
                       "-o", simt)
    assert code == 0, err
    assert f"simtify.workgroup_count = array<i64: {', '.join(map(str, grid))}>" in simt.read_text()
    args = [f"--arg={n}=random" for n in {"reduction": ["src", "dst"], "matvec": ["a", "x", "y"],
                                           "transpose": ["src", "dst"]}[example]]
    code, out, err = cli(capsys, "run", simt, "--func", func, "--target", target, *args, "--json")
    assert code == 0, err
    assert json.loads(out)["launch"]["grid"] == grid and json.loads(out)["unwritten"] == {} and err == ""
    code, _, err = cli(capsys, "check", f"example:{example}", simt, "--func", func, "--target", target)
    assert code == 0, err


def test_a_grid_too_small_warns_with_the_count(capsys):
    code, out, err = cli(capsys, "run", "example:reduction", "--func", "reduction", "--arg", "src=random",
                         "--arg", "dst=random", "--grid", "3")
    assert code == 0, err
    assert err == "warning: dst: 5 of 8 elements never written by the launch (grid [3, 1, 1]); --grid sets it\n"


KNOWN = """gpu.module @m {
  gpu.func @k(%dst: memref<4xf32>) kernel attributes {known_block_size = array<i32: 2, 1, 1>,
      known_grid_size = array<i32: 2, 1, 1>} {
    %b = gpu.block_id x
    %t = gpu.thread_id x
    %c = arith.constant 1.0 : f32
    memref.store %c, %dst[%b] : memref<4xf32>
    gpu.return
  }
}
"""


def test_known_grid_size_wins_over_what_the_writes_imply(capsys, tmp_path):
    path = tmp_path / "k.mlir"
    path.write_text(KNOWN)
    code, out, err = cli(capsys, "run", path, "--func", "k", "--arg", "dst=random", "--json")
    assert code == 0, err
    assert json.loads(out)["launch"]["grid"] == [2, 1, 1] and json.loads(out)["unwritten"] == {"dst": 2}
    assert "warning: dst: 2 of 4 elements never written by the launch (grid [2, 1, 1], the default)" in err


def _tiles(in_bounds: str, size: int = 10) -> str:
    return f"""func.func @f(%dst: memref<{size}xf32>) {{
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant dense<1.0> : vector<4xf32>
  %b = gpu.block_id x
  %i = arith.muli %b, %c4 : index
  %j = arith.addi %i, %c1 : index
  vector.transfer_write %v, %dst[%j] {{in_bounds = [{in_bounds}]}} : vector<4xf32>, memref<{size}xf32>
  return
}}"""


@pytest.mark.parametrize("in_bounds,grid", [("true", (2, 1, 1)), ("false", (3, 1, 1))])
def test_implied_grid_counts_a_masked_last_tile_only_when_out_of_bounds_is_allowed(in_bounds, grid):
    func = find_function(parse(_tiles(in_bounds)), "f")
    assert implied_grid(func) == grid


def test_no_block_id_implies_no_grid():
    func = find_function(parse("func.func @f(%d: memref<4xf32>) {\n  return\n}"), "f")
    assert implied_grid(func) is None


# A func.func that records its workgroup size only as `gpu.known_block_size` (IREE's
# LLVMGPUDistribute pipeline, e.g. a scan, after its translation_info is dropped): each
# of 96 threads adds 1 to its element of a row
KNOWN_BLOCK = """
func.func @k(%x: memref<96xf32>, %y: memref<96xf32>) attributes {gpu.known_block_size = array<i32: 96, 1, 1>} {
  %t = gpu.thread_id x
  %one = arith.constant 1.0 : f32
  %v = memref.load %x[%t] : memref<96xf32>
  %w = arith.addf %v, %one : f32
  memref.store %w, %y[%t] : memref<96xf32>
  return
}
"""


def test_known_block_size_attribute_of_a_func_func_is_the_block(capsys, tmp_path):
    path = tmp_path / "k.mlir"
    path.write_text(KNOWN_BLOCK)
    x = np.random.default_rng(0).uniform(-1, 1, 96).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, out, err = cli(capsys, "run", path, "--func", "k", "--arg", f"x={tmp_path / 'x.npy'}", "--arg", "y=random",
                         "--out", tmp_path / "o.npz")
    assert code == 0, err
    assert "block [96, 1, 1]" in out + err
    assert np.array_equal(np.load(tmp_path / "o.npz")["y"], x + np.float32(1))
