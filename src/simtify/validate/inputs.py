"""The bindings a dispatch is validated on, and whether they can be exact.

Stages reassociate float sums, so random floats agree only within a tolerance, and a
tolerance can hide a wrong index whose value happens to be close. Small non-zero
integers make every sum, product, max and min of a kernel without division or
transcendental functions exact in f32 (and, with overwhelming probability, in f16:
partial sums of random ±1, ±2 stay far below its 2048), so stages must agree bit for bit.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import MemRefType

from simtify.sim.arguments import random_array
from simtify.sim.types import dtype_of, fit

# Float ops whose result on integers is not an integer, or not the same one computed
# another way: with them a kernel is compared within a tolerance.
_INEXACT = ("arith.divf", "arith.remf")
_EXACT_MATH = frozenset({"math.absf", "math.copysign", "math.fma", "math.ceil", "math.floor", "math.round",
                         "math.roundeven", "math.trunc", "math.absi", "math.ctlz", "math.cttz", "math.ctpop"})
# The largest magnitude drawn for each float width.
_MAGNITUDE = {16: 2, 32: 3, 64: 3}


def inexact_reason(func) -> str | None:
    """Why integer inputs would not make `func` exact (the first such op), or None."""
    for op in func.walk():
        name = op.name
        if name in _INEXACT or (name.startswith("math.") and name not in _EXACT_MATH):
            return f"the kernel uses {name}"
    return None


def draw_inputs(signature: list[tuple[str, object]], seed: int, exact: bool) -> dict[str, np.ndarray]:
    """One array per binding, never zero: small integers when `exact`, else random
    floats in ±[0.05, 1) (integers and booleans alike either way)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, t in signature:
        shape = tuple(t.get_shape()) if isinstance(t, MemRefType) else ()
        element = t.element_type if isinstance(t, MemRefType) else t
        dt = dtype_of(element)
        if exact and dt.kind == "f":
            m = _MAGNITUDE.get(dt.itemsize * 8, 2)
            v = rng.integers(1, m + 1, size=shape) * rng.choice([-1, 1], size=shape)
            out[name] = fit(v.astype(np.float64), element)
        else:
            out[name] = random_array(t, shape, rng)
    return out
