"""The layout of a ``vector.shape_cast``: regroup the tiling levels of a nested layout.

A row-major vector's linear index is one mixed-radix number over every dim's levels in
turn (``S B O T E`` of dim 0, then of dim 1, ...). A shape_cast keeps that number, so
a new layout is found when the same sequence of level factors, cut at the new dims'
sizes (a factor may be split where the sizes divide it), gives every new dim its factors
in level order ``S ≤ B ≤ O ≤ T ≤ E``, with adjacent subgroup or thread factors whose
strides nest. (Conservative: relabelling a register digit's level, which can keep the
map, is not tried.) Register order is kept: batch factors stay in sequence, as do outer
and element ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from simtify.errors import SimtifyError

LEVELS = ("subgroup", "batch", "outer", "thread", "element")
_STRIDED = {0, 3}  # subgroup and thread factors carry a stride


@dataclass(frozen=True)
class _Factor:
    level: int
    size: int
    stride: int = 0  # for subgroup/thread factors: the id stride of the digit


def _factors(layout) -> list[_Factor]:
    out = []
    for i in range(layout.rank):
        sizes = (
            layout.subgroup_tile[i],
            layout.batch_tile[i],
            layout.outer_tile[i],
            layout.thread_tile[i],
            layout.element_tile[i],
        )
        strides = (layout.subgroup_strides[i], 0, 0, layout.thread_strides[i], 0)
        out += [_Factor(lv, n, s) for lv, (n, s) in enumerate(zip(sizes, strides)) if n > 1]
    return out


def _merge(dim_factors: list[_Factor], j: int) -> dict[int, _Factor]:
    merged: dict[int, _Factor] = {}
    last = -1
    for f in dim_factors:
        if f.level < last:
            raise SimtifyError(
                f"new dim {j} would need its {LEVELS[last]} factor outside its {LEVELS[f.level]} factor; "
                "a nested layout orders them subgroup, batch, outer, thread, element"
            )
        if f.level in merged:
            outer = merged[f.level]  # outer part seen first; f is the inner part
            if f.level in _STRIDED and outer.stride != f.stride * f.size:
                raise SimtifyError(
                    f"new dim {j} would merge {LEVELS[f.level]} factors whose strides do not nest "
                    f"({outer.size} at stride {outer.stride} over {f.size} at stride {f.stride})"
                )
            merged[f.level] = _Factor(f.level, outer.size * f.size, f.stride)
        else:
            merged[f.level] = f
        last = f.level
    return merged


def reshape_nested(layout, shape: tuple[int, ...]):
    from simtify.layout.nested import NestedLayout

    old = layout.undistributed_shape
    if not shape or any(d < 1 for d in shape):
        raise SimtifyError(f"cannot reshape to {list(shape)}: sizes must be positive")
    if prod(shape) != prod(old):
        raise SimtifyError(f"cannot reshape {list(old)} ({prod(old)} elements) to {list(shape)} ({prod(shape)})")
    queue = _factors(layout)
    fields = {k: [] for k in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile",
                              "subgroup_strides", "thread_strides")}
    for j, need in enumerate(shape):
        taken: list[_Factor] = []
        while need > 1:
            f = queue.pop(0)
            if need % f.size == 0:
                taken.append(f)
                need //= f.size
            elif f.size % need == 0:
                rest = f.size // need
                taken.append(_Factor(f.level, need, f.stride * rest if f.level in _STRIDED else 0))
                queue.insert(0, _Factor(f.level, rest, f.stride))
                need = 1
            else:
                raise SimtifyError(
                    f"cannot reshape to {list(shape)}: new dim {j} cuts the {LEVELS[f.level]} "
                    f"factor of size {f.size} at a size that does not divide it"
                )
        merged = _merge(taken, j)
        for lv, name in enumerate(LEVELS):
            f = merged.get(lv)
            fields[f"{name}_tile"].append(f.size if f else 1)
            if lv in _STRIDED:
                fields[f"{name}_strides"].append(f.stride if f else 0)
    return NestedLayout(**{k: tuple(v) for k, v in fields.items()})
