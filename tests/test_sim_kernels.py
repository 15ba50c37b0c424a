"""Hand-written kernels, SIMT and workgroup level, give numpy's answer in the simulator
(on random inputs, sanitizers on and silent)."""

from __future__ import annotations

import numpy as np
import pytest
from sim_kernels import KERNELS, inputs, simulate

from simtify.ir import parse
from simtify.sim import run

F32 = {"rtol": 1e-5, "atol": 1e-5}


def test_butterfly_shuffle_sum_of_each_row():
    x = inputs("shuffle_sum", "subgroup_sum", seed=1)
    r = simulate("shuffle_sum", "subgroup_sum", x, grid=(8,), block=(64,))
    assert r.launch.level == "simt" and r.findings == []
    np.testing.assert_allclose(r.outputs["out"], x["in"].sum(axis=1, dtype=np.float64), **F32)


def test_workgroup_tree_reduction_through_workgroup_memory():
    x = inputs("workgroup_sum", "workgroup_sum", seed=2)
    r = simulate("workgroup_sum", "workgroup_sum", x, grid=(4,), block=(256,))
    assert r.findings == []
    np.testing.assert_allclose(r.outputs["out"], x["in"].sum(axis=1, dtype=np.float64), **F32)


@pytest.mark.parametrize("padded", [True, False])
def test_transpose_through_workgroup_memory(padded):
    text = (KERNELS / "transpose.mlir").read_text()
    if not padded:
        text = text.replace("32x33xf32", "32x32xf32")
    x = inputs("transpose", "transpose", seed=3)
    r = run(parse(text, "transpose.mlir"), "transpose", {k: v.copy() for k, v in x.items()}, grid=(3, 2), block=(32, 8))
    assert r.findings == []
    np.testing.assert_array_equal(r.outputs["out"], x["in"].T)


def test_divergent_if_odd_and_even_threads_do_different_work():
    x = inputs("odd_even", "odd_even", seed=4)
    r = simulate("odd_even", "odd_even", x, grid=(4,), block=(64,))
    v = x["in"]
    odd = np.arange(256) % 2 == 1
    assert r.findings == []
    np.testing.assert_array_equal(r.outputs["out"], np.where(odd, v * np.float32(2), v + np.float32(1)))
    np.testing.assert_array_equal(r.outputs["odd"], v[1::2])
    np.testing.assert_array_equal(r.outputs["even"], -v[0::2])


def test_guarded_shift_leaves_the_first_element():
    x = inputs("shift", "shift", seed=5)
    r = simulate("shift", "shift", x, grid=(4,), block=(64,))
    assert r.findings == []
    np.testing.assert_array_equal(r.outputs["out"][1:], x["in"][:-1])
    assert r.outputs["out"][0] == x["out"][0]


def test_accumulate_and_reverse_through_workgroup_memory():
    x = inputs("accumulate", "accumulate", seed=6)
    r = simulate("accumulate", "accumulate", x, grid=(4,), block=(64,))
    assert r.findings == []
    s = (x["a"] + x["b"]).reshape(4, 64)
    np.testing.assert_array_equal(r.outputs["out"], s[:, ::-1].reshape(-1))


def test_reverse_lower_halves_barrier_outside_the_branch():
    x = inputs("reverse_halves", "reverse_halves", seed=7)
    r = simulate("reverse_halves", "reverse_halves", x, grid=(4,), block=(64,))
    assert r.findings == []
    want = x["out"].reshape(4, 64).copy()
    want[:, :32] = x["in"].reshape(4, 64)[:, 31::-1]
    np.testing.assert_array_equal(r.outputs["out"], want.reshape(-1))


# --- workgroup level ------------------------------------------------------------------


def _workgroup(func, seed):
    x = inputs("workgroup_level", func, seed=seed)
    r = simulate("workgroup_level", func, x, grid=(1,), block=(64,))
    assert r.launch.level == "workgroup" and r.findings == []
    return x, r.outputs


def test_workgroup_multi_reduction_over_rows():
    x, out = _workgroup("row_sum", 10)
    np.testing.assert_allclose(out["out"], x["in"].sum(axis=1), **F32)


def test_workgroup_multi_reduction_over_columns_with_accumulator():
    x, out = _workgroup("col_max", 11)
    np.testing.assert_array_equal(out["out"], np.maximum(x["in"].max(axis=0), x["out"]))


def test_workgroup_transpose():
    x, out = _workgroup("transpose", 12)
    np.testing.assert_array_equal(out["out"], x["in"].T)


def test_workgroup_contract_is_a_matmul():
    x, out = _workgroup("matmul", 13)
    want = x["c"].astype(np.float64) + x["a"].astype(np.float64) @ x["b"].astype(np.float64)
    np.testing.assert_allclose(out["c"], want, **F32)


def test_workgroup_linalg_generic_reduction():
    x, out = _workgroup("row_sum_of_squares", 14)
    np.testing.assert_allclose(out["out"], (x["in"].astype(np.float64) ** 2).sum(axis=1), **F32)


def test_workgroup_linalg_generic_reduction_with_an_ordered_body():
    x, out = _workgroup("row_running_mean", 15)
    acc = x["out"].astype(np.float32)
    for j in range(x["in"].shape[1]):
        acc = (acc + x["in"][:, j]) * np.float32(0.5)
    np.testing.assert_allclose(out["out"], acc, **F32)


def test_gpu_func_with_workgroup_and_private_attributions():
    x = inputs("gpu_module_sum", "workgroup_sum", seed=8)
    r = simulate("gpu_module_sum", "workgroup_sum", x, grid=(4,))  # block from known_block_size
    assert r.launch.block == (256, 1, 1)
    assert r.findings == []  # the private attribution is per thread: no race on it
    np.testing.assert_allclose(r.outputs["out"], x["in"].sum(axis=1, dtype=np.float64), **F32)
