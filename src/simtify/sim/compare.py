"""Comparing what two runs left in memory: floats within a tolerance that follows their
type, integers and booleans exactly, NaN only where the reference has NaN."""

from __future__ import annotations

import numpy as np

from simtify.ir.vector import element_type_of
from simtify.sim.narrow_floats import narrow_format
from simtify.sim.types import is_bf16


# f16's significand bits (with the implicit one), and the tolerance its values get
F16_BITS, F16_TOLERANCE = 11, 1e-2


def significand_bits(element_type) -> int | None:
    """The precision of an MLIR float type that numpy holds in float32 (bf16, the 8-bit
    and 4-bit floats); None for the others, whose numpy type has their precision."""
    if is_bf16(element_type):
        return 8
    fmt = narrow_format(element_type_of(element_type))
    return None if fmt is None else fmt.mantissa_bits + 1


def default_tolerance(dtype: np.dtype, element_type=None) -> tuple[float, float]:
    """(rtol, atol) for values of `dtype` computed two ways. Values of a narrower
    `element_type` held in float32 (bf16 sums round at 2^-8) get f16's tolerance scaled
    by the significand bits they lack."""
    bits = None if element_type is None or dtype.kind != "f" else significand_bits(element_type)
    if bits is not None and bits < F16_BITS:
        tol = F16_TOLERANCE * 2.0 ** (F16_BITS - bits)
        return tol, tol
    if dtype == np.float16:
        return F16_TOLERANCE, F16_TOLERANCE
    if dtype.kind == "f":
        return 1e-5, 1e-5
    return 0.0, 0.0


def mismatches(ref: np.ndarray, new: np.ndarray, rtol=None, atol=None,
               element_type=None) -> tuple[np.ndarray, np.ndarray]:
    """(per-element bool: differs, per-element absolute error) of two equal-shaped arrays
    (values of the MLIR `element_type`, where known)."""
    if ref.dtype.kind in "iub":
        diff = np.abs(ref.astype(np.int64) - new.astype(np.int64))
        return diff != 0, diff.astype(np.float64)
    r, a = default_tolerance(ref.dtype, element_type)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    ref64, new64 = ref.astype(np.float64), new.astype(np.float64)
    same_nan = np.isnan(ref64) == np.isnan(new64)
    ok = np.isclose(new64, ref64, rtol=r, atol=a, equal_nan=True) & same_nan
    return ~ok, np.abs(np.nan_to_num(ref64) - np.nan_to_num(new64))


def compare(ref: np.ndarray, new: np.ndarray, rtol=None, atol=None, element_type=None) -> tuple[bool, float]:
    """(equal within tolerance, max absolute error); integers must match exactly."""
    if ref.shape != new.shape:
        return False, float("inf")
    bad, err = mismatches(ref, new, rtol, atol, element_type)
    return bool(not bad.any()), float(err.max(initial=0.0))
