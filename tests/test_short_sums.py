"""A short contiguous axis summed by strided adds (`simtify.sim.short_sums`) is einsum's sum,
bit for bit: `reduce` takes that path only where the probe of einsum says so, gives what
einsum gives on random rows with signed zeros, infinities and NaNs, and the probe refuses
an order that is not einsum's."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.sim import short_sums
from simtify.sim.ops import vector as vector_ops


def rows_of(dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)
    flat = a.reshape(-1, shape[-1])
    flat[:64] = -0.0
    flat[64:128, 0] = np.inf
    flat[128:192, 1] = np.nan
    flat[192:256] *= rng.choice([0.0, -0.0, 1.0], (64, shape[-1]))
    return a.astype(dtype)


def einsum_sum(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    letters = "abcdefghij"[: a.ndim]
    return np.einsum(f"{letters}->{''.join(c for k, c in enumerate(letters) if k not in axes)}", a)


CASES = [(np.float32, (64, 8, 32, 1, 4), (3, 4)), (np.float32, (128, 64, 2), (2,)), (np.float64, (512, 16, 2), (2,)),
         (np.int32, (64, 64, 8), (2,)), (np.int64, (32, 128, 1, 4, 1), (2, 3, 4)), (np.float32, (4096, 4), (1,))]


@pytest.mark.parametrize("dtype, shape, axes", CASES)
def test_reduce_equals_einsum_bit_for_bit(monkeypatch, dtype, shape, axes):
    a = rows_of(dtype, shape, seed=len(shape))
    n = int(np.prod([shape[k] for k in axes]))
    trees = []
    tree_sum = vector_ops.tree_sum
    monkeypatch.setattr(vector_ops, "tree_sum", lambda *x: trees.append(1) or tree_sum(*x))
    want = einsum_sum(a, axes)
    with np.errstate(all="ignore"):
        got = vector_ops.reduce("add", a, axes)
        into = np.full(want.shape, 3, dtype=a.dtype)
        vector_ops.reduce("add", a, axes, (), into=into)
    assert got.tobytes() == want.tobytes()
    assert into.tobytes() == want.tobytes()
    assert len(trees) == (2 if short_sums.einsum_sums_as_tree(np.dtype(dtype), n) else 0)


def test_the_row_sums_kernel_takes_the_tree_where_einsum_adds_that_way():
    """The distributed row sum sums four floats per thread: on x86-64 with AVX2 or AVX-512,
    einsum adds them as (a0 + a1) + (a2 + a3); integers add in any order alike."""
    assert short_sums.einsum_sums_as_tree(np.dtype(np.int32), 4)
    assert short_sums.einsum_sums_as_tree(np.dtype(np.int64), 8)
    if not short_sums.einsum_sums_as_tree(np.dtype(np.float32), 4):
        pytest.skip("this machine's einsum adds four floats in another order")


def test_strided_or_short_inputs_stay_with_einsum(monkeypatch):
    trees = []
    monkeypatch.setattr(vector_ops, "tree_sum", lambda *x: trees.append(1))
    a = rows_of(np.float32, (4096, 8), seed=1)
    vector_ops.reduce("add", a[:, :4], (1,))  # rows not contiguous
    vector_ops.reduce("add", a.T.copy().T[:, 2:6], (1,))
    vector_ops.reduce("add", a[:100, :4].copy(), (1,))  # too few rows for strided adds to pay
    vector_ops.reduce("add", np.ascontiguousarray(a[:, :4].T), (0,))  # the summed axis not last
    assert trees == []


def test_the_probe_refuses_another_order(monkeypatch):
    """Added left to right (and without einsum's final zero), the probe's rows differ
    from einsum's sums: the probe says no."""
    def left_to_right(rows, out):
        out[...] = rows[:, 0]
        for k in range(1, rows.shape[1]):
            out += rows[:, k]
        return out

    monkeypatch.setattr(short_sums, "tree_sum", left_to_right)
    short_sums.einsum_sums_as_tree.cache_clear()
    try:
        with np.errstate(all="ignore"):
            assert not short_sums.einsum_sums_as_tree(np.dtype(np.float32), 4)
            # two elements differ only where both are -0.0: einsum's sum then is +0.0
            assert not short_sums.einsum_sums_as_tree(np.dtype(np.float64), 2)
    finally:
        short_sums.einsum_sums_as_tree.cache_clear()


@pytest.mark.parametrize("then", [0.5, -3.0, 0.0, -0.0, np.inf, np.nan])
def test_a_value_added_last_is_added_as_after_einsum(then):
    """`then` added in place of einsum's final zero gives einsum's sum plus `then`, bit for
    bit, signed zeros included (-0.0 itself is added after the zero)."""
    if not short_sums.einsum_sums_as_tree(np.dtype(np.float32), 4):
        pytest.skip("this machine's einsum adds four floats in another order")
    a = rows_of(np.float32, (8192, 4), seed=9)
    t = np.float32(then)
    with np.errstate(all="ignore"):
        want = np.einsum("ij->i", a) + t
        got = short_sums.tree_sum(a, np.empty(8192, np.float32), t)
    assert got.tobytes() == want.tobytes()
