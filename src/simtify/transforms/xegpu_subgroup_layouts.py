"""Upstream's subgroup layout kind: how a kernel's launch is shared out over a tile
that no layout reaches.

In a kernel whose launch has several subgroups (a ``gpu.func`` with its
``known_block_size``), upstream's propagation gives a 2-D block store that has no
``sg_layout`` one (``XeGPUPropagateLayout.cpp``, ``visitStoreNdOp``): of the ways to
arrange the subgroups as ``[a, b]`` (``a · b`` the subgroup count) that cut the value into
equal tiles of whole store blocks, the most balanced (smallest ``|a - b|``, then the
smaller ``a``), each subgroup a ``shape / [a, b]`` tile. The block is what one 2-D block
store writes: rows the largest of 1, 2, 4, 8 that divides the value's rows, 16 columns.
A reduction to a scalar whose source no layout reaches spreads the subgroups over the
source's dims, outermost first, each taking as many as its size allows
(``XeGPULayoutImpl.cpp``, ``setupMultiReductionResultLayout`` with no consumer layout):
a 32x64 source on 32 subgroups is ``sg_layout = [32, 1], sg_data = [1, 64]``.
Everything else follows from the stores: a dpas takes its C layout from its user and A
and B from C (`simtify.transforms.xegpu_dpas_layouts`), as upstream's choice does when
the user's arrangement suits all three operands.
"""

from __future__ import annotations

from collections.abc import Sequence

from simtify.layout.xegpu import XeGPULayout

__all__ = ["STORE_BLOCK_COLUMNS", "STORE_BLOCK_ROWS", "scalar_reduction_layout", "store_layout",
           "subgroup_arrangements"]

STORE_BLOCK_ROWS = (1, 2, 4, 8)
STORE_BLOCK_COLUMNS = (16,)


def largest_divisor(n: int, candidates: Sequence[int]) -> int | None:
    """The largest of `candidates` that divides `n`."""
    fitting = [c for c in candidates if n % c == 0]
    return max(fitting) if fitting else None


def subgroup_arrangements(shape: Sequence[int], block: Sequence[int], count: int) -> list[tuple[int, int]]:
    """The ``[a, b]`` with ``a · b = count`` that cut a 2-D `shape` into equal tiles of
    whole `block`s, most balanced first (then the smaller ``a``)."""
    found = []
    for a in range(1, count + 1):
        if count % a:
            continue
        b = count // a
        if shape[0] % a or shape[1] % b or (shape[0] // a) % block[0] or (shape[1] // b) % block[1]:
            continue
        found.append((a, b))
    return sorted(found, key=lambda ab: (abs(ab[0] - ab[1]), ab[0]))


def store_layout(shape: Sequence[int], count: int) -> XeGPULayout | None:
    """The subgroup layout upstream gives a 2-D block store of `shape` on `count`
    subgroups, or None when no arrangement cuts it into whole blocks (upstream warns and
    leaves the store as it is)."""
    if len(shape) != 2:
        return None
    rows, columns = largest_divisor(shape[0], STORE_BLOCK_ROWS), largest_divisor(shape[1], STORE_BLOCK_COLUMNS)
    if rows is None or columns is None:
        return None
    arrangements = subgroup_arrangements(shape, (rows, columns), count)
    if not arrangements:
        return None
    a, b = arrangements[0]
    return XeGPULayout(sg_layout=(a, b), sg_data=(shape[0] // a, shape[1] // b))


def scalar_reduction_layout(shape: Sequence[int], count: int) -> XeGPULayout | None:
    """The subgroup layout upstream gives the source of a reduction to a scalar on
    `count` subgroups: per dim, outermost first, as many of the subgroups left as the dim
    has elements; None where they do not divide it evenly."""
    layout, data, left = [], [], count
    for n in shape:
        take = min(n, left)
        if n % take or left % take:
            return None
        layout.append(take)
        data.append(n // take)
        left //= take
    return XeGPULayout(sg_layout=tuple(layout), sg_data=tuple(data)) if left == 1 else None
