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
