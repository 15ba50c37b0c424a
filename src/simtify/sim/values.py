"""Turning IR attributes into simulator values, and common shape helpers.

The attribute readers (`int_array`, `bool_array`, `prop`) serve the passes too, which
run without numpy: it is imported by the functions that make arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    VectorType,
)

from simtify.errors import SimtifyError

if TYPE_CHECKING:
    import numpy as np


def constant(attr, t) -> np.ndarray:
    """The value of a constant attribute, shaped ``[1, 1, *shape]`` (uniform everywhere)."""
    import numpy as np

    from simtify.ir.vector import shape_of
    from simtify.sim.types import fit

    shape = shape_of(t)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        vals = np.asarray(attr.get_values())
        vals = vals.reshape(shape) if vals.size == int(np.prod(shape)) else np.broadcast_to(vals, shape)
        return fit(vals, t).reshape((1, 1) + shape)
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        v = attr.value.data
        return fit(np.full(shape, v), t).reshape((1, 1) + shape)
    raise SimtifyError(f"the simulator cannot read the constant {attr}")


def int_array(attr) -> list[int]:
    """A DenseArray / ArrayAttr of ints as a list."""
    if attr is None:
        return []
    if isinstance(attr, DenseArrayBase):
        return [int(x) for x in attr.get_values()]
    if hasattr(attr, "data"):
        return [int(getattr(x, "value", x).data if hasattr(x, "value") else x.data) for x in attr.data]
    raise SimtifyError(f"expected an integer array, found {attr}")


def bool_array(attr) -> list[bool]:
    """A DenseArray / ArrayAttr of i1 as a list."""
    return [bool(x) for x in int_array(attr)]


def prop(op, name: str):
    """An op's property, or its attribute of that name (generic syntax puts either)."""
    a = op.properties.get(name)
    return a if a is not None else op.attributes.get(name)


def lead(a) -> np.ndarray:
    """`a` as an array with the two leading [W, T] axes."""
    import numpy as np

    a = np.asarray(a)
    return a.reshape((1, 1) + a.shape) if a.ndim < 2 else a


def vec_shape(v: np.ndarray) -> tuple[int, ...]:
    import numpy as np

    return tuple(np.shape(v)[2:])


def is_vector(t) -> bool:
    return isinstance(t, VectorType)


def placeholder(t) -> np.ndarray:
    """A value of type `t` for results no active thread observes."""
    import numpy as np

    from simtify.ir.vector import shape_of
    from simtify.sim.types import dtype_of

    try:
        return np.zeros((1, 1) + shape_of(t), dtype=dtype_of(t))
    except SimtifyError:
        return np.zeros((1, 1))
