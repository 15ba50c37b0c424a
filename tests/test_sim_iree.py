"""IREE 3.12's own distributed reductions (fixtures of the IR issue) run in the simulator
and give numpy's answer; `simtify check` finds them equal to their inputs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from simtify.cli.main import main
from simtify.ir import parse
from simtify.sim import run

IREE = Path(__file__).parent / "fixtures" / "iree"
CASES = {
    # fixture, function, input rows x columns, numpy reduction, shuffles per workgroup
    "row_sum": ("row_sum_distributed.mlir", "row_sum", (4, 64), np.sum, 4),
    "row_max": ("row_max_4_subgroups_distributed.mlir", "row_max", (4, 1024), np.max, None),
}


@cache
def fixture(name: str):
    path = IREE / name
    return parse(path.read_text(), str(path))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("grid", [1, 2, 5])
def test_distributed_reduction_gives_numpys_answer(case, grid):
    file, func, shape, reduce, shuffles = CASES[case]
    rng = np.random.default_rng(grid)
    x = (rng.uniform(0.1, 1.0, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
    out = rng.uniform(5, 6, shape[0]).astype(np.float32)
    # the kernel ignores the workgroup id: every workgroup computes (and writes) the same rows
    r = run(fixture(file), func, {"arg0": x, "arg1": out}, grid=(grid,))
    assert r.launch.block == (64 if case == "row_sum" else 256, 1, 1)  # from translation_info
    assert r.launch.level == "simt" and r.findings == []
    np.testing.assert_allclose(r.outputs["arg1"], reduce(x.astype(np.float64), axis=1), rtol=1e-5, atol=1e-5)
    if shuffles is not None:  # subgroup_reduce over clusters of 16 lanes: log2(16) steps
        assert r.stats["shuffles"] == shuffles * grid


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_finds_input_and_distributed_output_equal(case, capsys):
    file, func, *_ = CASES[case]
    code = main(["check", str(IREE / "inputs" / file.replace("_distributed", "")), str(IREE / file),
                 "--func", func, "--grid", "3"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[-1] == "equal"
    assert "dst: equal" in out or "arg1: equal" in out


GATHER_WITH_MASK_MAP = """
func.func @g(%idx_mem: memref<16xindex>, %m_mem: memref<16xi1>, %src: memref<64x8xf32>, %out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %f = arith.constant false
  %pad = arith.constant -7.5 : f32
  %idx = vector.transfer_read %idx_mem[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %m = vector.transfer_read %m_mem[%c0], %f {in_bounds = [true]} : memref<16xi1>, vector<16xi1>
  %v = iree_vector_ext.transfer_gather %src[%c0, %c0] [%idx : vector<16xindex>], %pad, %m {indexing_maps = [affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>, affine_map<(d0, d1)[s0] -> (d0)>]} : memref<64x8xf32>, vector<16x8xf32>, vector<16xi1>
  vector.transfer_write %v, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
"""


def test_transfer_gather_reads_its_mask_through_the_masks_own_map():
    """A row mask (map d0 -> rows) on a 16x8 gather masks whole rows, not columns."""
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 64, 16)
    mask = rng.random(16) < 0.5
    mask[:2] = [True, False]
    src = (rng.uniform(0.1, 1.0, (64, 8)) * rng.choice([-1, 1], (64, 8))).astype(np.float32)
    out = rng.uniform(5, 6, (16, 8)).astype(np.float32)
    r = run(parse(GATHER_WITH_MASK_MAP, "g.mlir"), "g", {"idx_mem": idx, "m_mem": mask, "src": src, "out": out},
            level="workgroup")
    want = np.where(mask[:, None], src[idx], np.float32(-7.5))
    np.testing.assert_array_equal(r.outputs["out"], want)
