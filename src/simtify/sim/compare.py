"""Comparing what two runs left in memory: floats within a tolerance that follows their
type, integers and booleans exactly, NaN only where the reference has NaN."""

from __future__ import annotations

import numpy as np


def default_tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for values of `dtype` computed two ways."""
    if dtype == np.float16:
        return 1e-2, 1e-2
    if dtype.kind == "f":
        return 1e-5, 1e-5
    return 0.0, 0.0


def mismatches(ref: np.ndarray, new: np.ndarray, rtol=None, atol=None) -> tuple[np.ndarray, np.ndarray]:
    """(per-element bool: differs, per-element absolute error) of two equal-shaped arrays."""
    if ref.dtype.kind in "iub":
        diff = np.abs(ref.astype(np.int64) - new.astype(np.int64))
        return diff != 0, diff.astype(np.float64)
    r, a = default_tolerance(ref.dtype)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    ref64, new64 = ref.astype(np.float64), new.astype(np.float64)
    same_nan = np.isnan(ref64) == np.isnan(new64)
    ok = np.isclose(new64, ref64, rtol=r, atol=a, equal_nan=True) & same_nan
    return ~ok, np.abs(np.nan_to_num(ref64) - np.nan_to_num(new64))


def compare(ref: np.ndarray, new: np.ndarray, rtol=None, atol=None) -> tuple[bool, float]:
    """(equal within tolerance, max absolute error); integers must match exactly."""
    if ref.shape != new.shape:
        return False, float("inf")
    bad, err = mismatches(ref, new, rtol, atol)
    return bool(not bad.any()), float(err.max(initial=0.0))
