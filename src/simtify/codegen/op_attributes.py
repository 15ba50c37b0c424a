"""Reading op attributes the same way in every handler: enum cases, and the static
lists with dynamic holes (positions, offsets, bases) that MLIR ops carry."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from simtify.codegen.expressions import Lin
from simtify.ir.assembly import DYNAMIC


def enum_name(attr) -> str:
    """The case of an enum attribute (a gpu dimension, a shuffle mode, a reduction kind)."""
    return attr.data.value if hasattr(attr.data, "value") else str(attr.data)


def static_or_dynamic(static: Iterable[int], dynamic: Iterable, value_of: Callable[..., Lin]) -> list[Lin]:
    """The static values, each DYNAMIC one replaced by the next dynamic operand's value."""
    it = iter(dynamic)
    return [value_of(next(it)) if s == DYNAMIC else Lin(s) for s in static]
