"""C types and literals for MLIR types and constants. Only types that need no header:
NVRTC, which compiles kernels at run time, has no <cstdint>."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import AnyFloat, IntegerType

from simtify.ir.vector import element_type_of


def int_width(t) -> int | None:
    e = element_type_of(t)
    if isinstance(e, IntegerType):
        return e.width.data
    return None


def is_float(t) -> bool:
    return isinstance(element_type_of(t), AnyFloat)


def byte_width_of(ctype: str) -> int:
    return {"float": 4, "double": 8, "f16_t": 2, "bool": 1, "signed char": 1, "short": 2, "int": 4,
            "long long": 8}[ctype]


UNSIGNED = {"signed char": "unsigned char", "short": "unsigned short", "int": "unsigned",
            "long long": "unsigned long long", "bool": "bool"}


def float_literal(x: float, ctype: str) -> str:
    if math.isnan(x):
        text = "NAN"
    elif math.isinf(x):
        text = "INFINITY" if x > 0 else "-INFINITY"
    elif ctype == "double":
        text = repr(float(x))
        return text if any(c in text for c in ".e") else text + ".0"
    else:
        text = str(np.float32(x))
        if not any(c in text for c in ".e"):
            text += ".0"
        text += "f"
    if ctype == "double" and text.endswith("INFINITY") or text == "NAN":
        return text if ctype != "f16_t" else f"f16_t({text})"
    return f"f16_t({text})" if ctype == "f16_t" else text


def int_literal(x: int, ctype: str) -> str:
    if ctype == "bool":
        return "true" if x else "false"
    if ctype == "long long" and not -(2**31) <= x < 2**31:
        return f"{x}LL"
    return str(x)
