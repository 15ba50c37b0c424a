"""Sums of a short contiguous axis, in the order einsum adds them, by strided adds.

The simulator sums a thread's few elements with einsum (`simtify.sim.ops.vector.reduce`):
one call of its inner loop per thread, which for a vector of 4 floats per thread on 1M
threads costs more than the additions. Einsum adds such a row as a SIMD vector: the
elements in a tree of adjacent pairs, ``(a0 + a1) + (a2 + a3)``, and then zero (its
accumulator and its output start at zero, which turns a sum of -0.0 into +0.0). The same
tree as strided adds over every row at once is the same sum, bit for bit, in n - 1 passes.
The tree depends on the machine's SIMD width and numpy's build, so it is measured: a probe
of einsum on rows chosen to tell association orders apart (magnitudes from 1e-8 to 1e8,
signed zeros, infinities, NaNs) says, per dtype and length, whether einsum adds that way
here; where it does not, `reduce` keeps einsum.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# The lengths summed as a tree: einsum's horizontal sum covers them in one SIMD vector.
TREE_LENGTHS = (2, 4, 8)
# Fewer rows than this are summed by einsum: its call per row costs less than n - 1 passes.
TREE_ROWS = 2048


def tree_sum(rows: np.ndarray, out: np.ndarray, then=None) -> np.ndarray:
    """Each row of C-contiguous `rows` ``[m, n]`` (n in `TREE_LENGTHS`) summed as adjacent
    pairs, then pairs of those, then plus zero, into `out` ``[m]``; `then`, a scalar, added
    last. Adding zero changes only a sum of -0.0, which adding any `then` but -0.0 changes
    alike: such a `then` is added instead of zero, in one pass."""
    with np.errstate(all="ignore"):  # as einsum: infinities and NaNs pass silently
        _pairs(rows, 0, rows.shape[1], out)
        if then is None or (then == 0 and np.signbit(then)):
            np.add(out, out.dtype.type(0), out=out)
        return out if then is None else np.add(out, then, out=out)


def _pairs(rows: np.ndarray, lo: int, hi: int, out: np.ndarray) -> None:
    """The tree sum of columns [lo, hi) of `rows` (a power of two of them) into `out`."""
    if hi - lo == 2:
        np.add(rows[:, lo], rows[:, lo + 1], out=out)
        return
    mid = (lo + hi) // 2
    right = np.empty_like(out)
    _pairs(rows, lo, mid, out)
    _pairs(rows, mid, hi, right)
    np.add(out, right, out=out)


@lru_cache(maxsize=None)
def einsum_sums_as_tree(dtype: np.dtype, n: int) -> bool:
    """Whether einsum's sum of each row of a C-contiguous ``[m, n]`` array of `dtype` is
    `tree_sum`'s, bit for bit, on a probe that tells association orders apart."""
    if n not in TREE_LENGTHS:
        return False
    rng = np.random.default_rng(0)
    m = 4096
    if dtype.kind == "f":
        probe = rng.standard_normal((m, n)) * 10.0 ** rng.integers(-8, 9, (m, n))
        probe[: m // 8] = -0.0  # rows of signed zeros, and zeros among other values
        probe[m // 8: m // 4] *= rng.choice([0.0, -0.0, 1.0], (m // 8, n))
        special = rng.choice([np.inf, -np.inf, np.nan, 1.0], (m // 8, n), p=[0.1, 0.1, 0.1, 0.7])
        probe[m // 4: 3 * m // 8] *= special
        probe = probe.astype(dtype)
    else:
        info = np.iinfo(dtype)
        probe = rng.integers(info.min, info.max, (m, n), dtype=dtype, endpoint=True)
    want = np.einsum("ij->i", probe)
    got = tree_sum(probe, np.empty(m, dtype=dtype))
    return want.tobytes() == got.tobytes()
