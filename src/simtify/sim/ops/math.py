"""`math`: elementwise functions on numpy, rounded back to the result type."""

from __future__ import annotations

import numpy as np

from simtify.sim.handlers import handles
from simtify.sim.types import fit


def _erf(x):
    # Abramowitz & Stegun 7.1.26 refined with one Newton-free correction: |error| < 1.5e-7,
    # below float32 resolution of erf's range.
    x = np.asarray(x, dtype=np.float64)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def _erfc(x):
    # Numerical Recipes' Chebyshev fit (erfcc): relative error < 1.2e-7 for every x, so
    # the small values of large x keep float32 precision (1 - erf(x) would round to 0).
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    tail = t * np.exp(-z * z + poly)
    return np.where(x >= 0, tail, 2.0 - tail)


def _popcount(a):
    u = a.view(np.dtype(f"u{a.dtype.itemsize}")).astype(np.uint64)
    count = np.zeros(u.shape, dtype=np.int64)
    for _ in range(a.dtype.itemsize * 8):
        count += (u & 1).astype(np.int64)
        u >>= np.uint64(1)
    return count


def _ctlz(a):
    bits = a.dtype.itemsize * 8
    u = a.view(np.dtype(f"u{a.dtype.itemsize}")).astype(np.uint64)
    n = np.full(u.shape, bits, dtype=np.int64)
    for b in range(bits):
        n = np.where((u >> np.uint64(b)) & np.uint64(1), bits - 1 - b, n)
    return n


def _cttz(a):
    bits = a.dtype.itemsize * 8
    u = a.view(np.dtype(f"u{a.dtype.itemsize}")).astype(np.uint64)
    n = np.full(u.shape, bits, dtype=np.int64)
    for b in reversed(range(bits)):
        n = np.where((u >> np.uint64(b)) & np.uint64(1), b, n)
    return n


UNARY = {
    "math.exp": np.exp, "math.exp2": np.exp2, "math.expm1": np.expm1, "math.log": np.log, "math.log2": np.log2,
    "math.log10": np.log10, "math.log1p": np.log1p, "math.sqrt": np.sqrt, "math.rsqrt": lambda x: 1 / np.sqrt(x),
    "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan, "math.tanh": np.tanh, "math.sinh": np.sinh,
    "math.cosh": np.cosh, "math.asin": np.arcsin, "math.acos": np.arccos, "math.atan": np.arctan,
    "math.asinh": np.arcsinh, "math.acosh": np.arccosh, "math.atanh": np.arctanh,
    "math.absf": np.abs, "math.absi": np.abs, "math.ceil": np.ceil, "math.floor": np.floor,
    "math.round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "math.roundeven": np.rint, "math.trunc": np.trunc,
    "math.erf": _erf, "math.erfc": _erfc, "math.cbrt": np.cbrt, "math.ctpop": _popcount, "math.ctlz": _ctlz, "math.cttz": _cttz,
}
BINARY = {"math.powf": np.power, "math.atan2": np.arctan2, "math.copysign": np.copysign, "math.ipowi": np.power,
          "math.fpowi": lambda x, n: np.power(x, n.astype(x.dtype))}  # a float to an integer power


def _unary(fn):
    def run(sim, op):
        with np.errstate(all="ignore"):
            return [fit(fn(np.asarray(sim.get(op.operands[0]))), op.results[0].type)]

    return run


def _binary(fn):
    def run(sim, op):
        a, b = (np.asarray(sim.get(o)) for o in op.operands)
        with np.errstate(all="ignore"):
            return [fit(fn(a, b), op.results[0].type)]

    return run


for _n, _f in UNARY.items():
    handles(_n)(_unary(_f))
for _n, _f in BINARY.items():
    handles(_n)(_binary(_f))


@handles("math.fma")
def _fma(sim, op):
    a, b, c = (np.asarray(sim.get(o)) for o in op.operands)
    return [fit(a.astype(np.float64) * b + c, op.results[0].type)]
