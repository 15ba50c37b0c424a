"""Floats narrower than bf16: ``f8E4M3FN``, ``f8E5M2``, ``f4E2M1FN`` (MX element types) and
``f8E8M0FNU`` (MX block scales).

numpy has none of them, so the simulator holds their values in float32, each exactly a
value of its format: every op producing one rounds as LLVM's APFloat converts (round to
nearest, ties to even), and a bitcast goes through the format's bit patterns.

=============  ====  =====  ====  ================================================
format         bits  e, m   bias  beyond the largest finite value
=============  ====  =====  ====  ================================================
f8E4M3FN       8     4, 3   7     no infinity: overflow and ±inf give NaN
                                  (S.1111.111); the largest finite is 448
f8E5M2         8     5, 2   15    IEEE: ±inf (exponent all ones, mantissa 0), NaN
f4E2M1FN       4     2, 1   1     no infinity, no NaN: ±{0, 0.5, 1, 1.5, 2, 3, 4, 6};
                                  overflow saturates to ±6 (APFloat's FiniteOnly)
f8E8M0FNU      8     8, 0   127   unsigned powers of two 2^-127 .. 2^127, NaN 0xFF;
                                  no zero (0 and values below 2^-127 give 2^-127),
                                  a tie (1.5·2^e) rounds up, overflow gives NaN
=============  ====  =====  ====  ================================================

A negative f8E8M0FNU has no encoding (LLVM refuses it): it gives NaN, as does a NaN
meant for f4E2M1FN, which has no NaN — the simulator's mark of a value the program
cannot rely on (its bits, if bitcast, are 0)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class NarrowFloat:
    """One format: its widths, bias and what it does past its largest value."""

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    overflow: str  # "inf", "nan" or "saturate"
    nan_code: int | None  # the pattern a NaN is written as (None: the format has no NaN)

    @property
    def signed(self) -> bool:
        return self.name != "f8E8M0FNU"

    @cached_property
    def table(self) -> np.ndarray:
        """The value of every bit pattern, indexed by the pattern (float32)."""
        return decode_fields(self, np.arange(1 << self.bits))

    @cached_property
    def largest(self) -> float:
        return float(np.nanmax(np.where(np.isinf(self.table), np.nan, self.table)))

    @cached_property
    def _keys(self) -> tuple[np.ndarray, np.ndarray]:
        """float32 bit patterns of the non-NaN values, sorted, and their codes."""
        codes = np.flatnonzero(~np.isnan(self.table))
        keys = self.table[codes].view(np.uint32)
        order = np.argsort(keys)
        return keys[order], codes[order]

    def round(self, x) -> np.ndarray:
        """`x` rounded to this format (as APFloat converts, ties to even), in float32."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if not self.signed:
                return _round_scale(x).astype(np.float32)
            a = np.abs(x)
            _, ex = np.frexp(a)  # a = m·2^ex, m in [0.5, 1): a's binade starts at 2^(ex-1)
            quantum = np.exp2(np.maximum(ex - 1, 1 - self.bias) - self.mantissa_bits)
            r = np.round(a / quantum) * quantum  # numpy rounds halves to even
            beyond = (r > self.largest) | np.isinf(a)
            past = {"inf": np.inf, "nan": np.nan, "saturate": self.largest}[self.overflow]
            r = np.where(beyond, past, r)
            return np.copysign(r, x).astype(np.float32)

    def encode(self, values) -> np.ndarray:
        """Bit patterns (uint8) of values of this format."""
        v = self.round(values)
        keys, codes = self._keys
        k = v.view(np.uint32)
        i = np.clip(np.searchsorted(keys, k), 0, len(keys) - 1)
        nan = self.nan_code if self.nan_code is not None else 0
        return np.where(np.isnan(v), nan, codes[i]).astype(np.uint8)

    def decode(self, codes) -> np.ndarray:
        """Values (float32) of bit patterns; bits above the format's width are ignored."""
        return self.table[np.asarray(codes).astype(np.int64) & ((1 << self.bits) - 1)]


def decode_fields(fmt: NarrowFloat, codes: np.ndarray) -> np.ndarray:
    """Values of bit patterns read field by field (sign, exponent, mantissa)."""
    c = np.asarray(codes, dtype=np.int64)
    m_bits, e_bits = fmt.mantissa_bits, fmt.exponent_bits
    mant = c & ((1 << m_bits) - 1)
    expo = (c >> m_bits) & ((1 << e_bits) - 1)
    if not fmt.signed:
        v = np.exp2(expo.astype(np.float64) - fmt.bias)
        return np.where(c == fmt.nan_code, np.nan, v).astype(np.float32)
    sign = np.where((c >> (m_bits + e_bits)) & 1, -1.0, 1.0)
    frac = mant / float(1 << m_bits)
    v = np.where(expo == 0, frac * 2.0 ** (1 - fmt.bias), (1 + frac) * np.exp2(expo.astype(np.float64) - fmt.bias))
    top = expo == (1 << e_bits) - 1
    if fmt.overflow == "inf":  # IEEE: the top exponent is infinity or NaN
        v = np.where(top, np.where(mant == 0, np.inf, np.nan), v)
    elif fmt.overflow == "nan":  # only all ones is NaN
        v = np.where(top & (mant == (1 << m_bits) - 1), np.nan, v)
    return (sign * v).astype(np.float32)


def _round_scale(x: np.ndarray) -> np.ndarray:
    """f8E8M0FNU: to the nearest power of two, a tie up; no zero, no sign."""
    a = np.where(x == 0, 0.0, x)
    m, ex = np.frexp(np.where(a > 0, a, 1.0))  # a = 2m·2^(ex-1), 2m in [1, 2)
    e = np.where(2 * m < 1.5, ex - 1, ex)
    e = np.maximum(e, -127)  # below 2^-127 (zero included): the smallest value
    r = np.where(e > 127, np.nan, np.exp2(e.astype(np.float64)))
    return np.where((a < 0) | np.isnan(a) | np.isinf(a), np.nan, np.where(a == 0, 2.0 ** -127, r))


FORMATS = {
    f.name: f
    for f in (
        NarrowFloat("f8E4M3FN", 8, 4, 3, 7, "nan", 0x7F),
        NarrowFloat("f8E5M2", 8, 5, 2, 15, "inf", 0x7E),
        NarrowFloat("f4E2M1FN", 4, 2, 1, 1, "saturate", None),
        NarrowFloat("f8E8M0FNU", 8, 8, 0, 127, "nan", 0xFF),
    )
}


def narrow_format(element_type) -> NarrowFloat | None:
    """The format of an MLIR element type, or None where it is not one of these."""
    return FORMATS.get(str(element_type))


def random_values(fmt: NarrowFloat, shape, rng) -> np.ndarray:
    """Random values of `fmt`, never zero, of magnitude in [1/4, 2] (products of a few
    stay ordinary floats)."""
    t = fmt.table
    pool = t[np.isfinite(t) & (np.abs(t) >= 1 / 4) & (np.abs(t) <= 2)]
    return rng.choice(pool, size=shape).astype(np.float32)
