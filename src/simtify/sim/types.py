"""MLIR element types as numpy dtypes.

bf16 has no numpy dtype: it is held in float32 and rounded to bf16 (round to nearest
even) after every op that produces it, so values are exactly what bf16 hardware holds.
The narrower floats (f8E4M3FN, f8E5M2, f4E2M1FN, f8E8M0FNU) are held the same way,
rounded as `simtify.sim.narrow_floats` says.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type
from xdsl.dialects.builtin import IndexType, IntegerType

from simtify.errors import SimtifyError
from simtify.ir.vector import element_type_of
from simtify.sim.narrow_floats import narrow_format


def dtype_of(t) -> np.dtype:
    """The numpy dtype holding values of scalar or vector type `t`."""
    e = element_type_of(t)
    if isinstance(e, IndexType):
        return np.dtype(np.int64)
    if isinstance(e, IntegerType):
        w = e.width.data
        if w == 1:
            return np.dtype(np.bool_)
        for bits, dt in ((8, np.int8), (16, np.int16), (32, np.int32), (64, np.int64)):
            if w <= bits:
                return np.dtype(dt)
    if isinstance(e, Float16Type):
        return np.dtype(np.float16)
    if isinstance(e, (Float32Type, BFloat16Type)):
        return np.dtype(np.float32)
    if isinstance(e, Float64Type):
        return np.dtype(np.float64)
    if narrow_format(e) is not None:
        return np.dtype(np.float32)
    raise SimtifyError(f"the simulator has no numpy type for {e}")


def byte_width(t) -> int:
    """Bytes one element of `t` occupies in memory (index: 8, i1: 1, bf16: 2)."""
    e = element_type_of(t)
    if isinstance(e, IndexType):
        return 8
    if isinstance(e, IntegerType):
        return max(1, (e.width.data + 7) // 8)
    if isinstance(e, (Float16Type, BFloat16Type)):
        return 2
    if isinstance(e, Float32Type):
        return 4
    if isinstance(e, Float64Type):
        return 8
    if narrow_format(e) is not None:
        return 1  # f4E2M1FN, as i4, takes a byte of its own
    raise SimtifyError(f"the simulator has no byte width for {e}")


def is_bf16(t) -> bool:
    return isinstance(element_type_of(t), BFloat16Type)


def round_bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bf16 (ties to even), kept in float32."""
    a = np.asarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, out)


def _odd_width(e) -> bool:
    """An integer type numpy holds in a wider one (i4, i24): its values need wrapping."""
    return isinstance(e, IntegerType) and e.width.data not in (1, 8, 16, 32, 64)


def held_as_is(dtype: np.dtype, t) -> bool:
    """Whether values of numpy `dtype` are values of `t` unchanged (`fit` returns them
    as they are)."""
    e = element_type_of(t)
    return dtype == dtype_of(t) and not is_bf16(t) and not _odd_width(e) and narrow_format(e) is None


def fit(value: np.ndarray, t) -> np.ndarray:
    """`value` converted to the numpy type of `t`, wrapping integers as MLIR does."""
    dt = dtype_of(t)
    e = element_type_of(t)
    value = np.asarray(value)
    if _odd_width(e):
        w = e.width.data
        v = value.astype(np.int64) & ((1 << w) - 1)
        return np.where(v >= (1 << (w - 1)), v - (1 << w), v).astype(dt)
    narrow = narrow_format(e)
    if narrow is not None:  # rounded from the value as given (f64 is not rounded twice)
        return narrow.round(value)
    if value.dtype != dt:
        with np.errstate(over="ignore", invalid="ignore"):
            value = value.astype(dt)
    return round_bf16(value) if is_bf16(t) else value


def undefined(dt: np.dtype):
    """What a read the program cannot rely on yields (workgroup memory nobody wrote, an
    inactive lane): NaN for floats, the most negative integer, true for i1 — never a
    plausible value, and the same on every run."""
    dt = np.dtype(dt)
    return np.nan if dt.kind == "f" else (True if dt.kind == "b" else np.iinfo(dt).min)


def bit_width(t) -> int:
    """Bits of one element of `t` as a bitcast sees them (bf16: 16, f4E2M1FN: 4)."""
    e = element_type_of(t)
    narrow = narrow_format(e)
    if narrow is not None:
        return narrow.bits
    if isinstance(e, IntegerType):
        return e.width.data
    if is_bf16(e) or isinstance(e, Float16Type):
        return 16
    return dtype_of(e).itemsize * 8


def bits_of(values: np.ndarray, t) -> np.ndarray:
    """The bit patterns (uint64) of values of element type `t`."""
    e = element_type_of(t)
    w = bit_width(e)
    narrow = narrow_format(e)
    if narrow is not None:
        return narrow.encode(values).astype(np.uint64)
    v = np.ascontiguousarray(values)
    if is_bf16(e):
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint64)
    if v.dtype == np.bool_:
        return v.astype(np.uint64)
    u = v.view(np.dtype(f"u{v.dtype.itemsize}")).astype(np.uint64)
    return u & np.uint64((1 << w) - 1) if w < 64 else u


def from_bits(bits: np.ndarray, t) -> np.ndarray:
    """Values of element type `t` from their bit patterns (uint64)."""
    e = element_type_of(t)
    narrow = narrow_format(e)
    bits = np.asarray(bits, dtype=np.uint64)
    if narrow is not None:
        return narrow.decode(bits)
    if is_bf16(e):
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    dt = dtype_of(e)
    if dt == np.bool_:
        return bits.astype(bool)
    raw = bits.astype(np.dtype(f"u{dt.itemsize}")).view(dt)
    return fit(raw, e) if _odd_width(e) else raw
