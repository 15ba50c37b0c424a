"""Which nested layout, if any, equals an XeGPU layout, and which XeGPU layout, if any,
equals a nested one.

The candidate is built dim by dim (subgroups → subgroup tile and stride from ``order``,
instruction blocks and subgroup rounds → batch, lane rounds → outer, lanes → thread tile,
lane data → element tile) and then *checked against the ownership maps*: the answer is
never taken on faith. Two things nested layouts cannot say are reported as reasons:
round-robin over several subgroups (a nested subgroup owns one contiguous block per dim)
and sharing whose wrapped blocks are not a whole number of the dim.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from math import prod

from simtify.errors import SimtifyError
from simtify.layout.nested import NestedLayout
from simtify.layout.xegpu import XeGPULayout, XeGPUSlice, launch, linear_strides, plan_dims


@dataclass(frozen=True)
class NestedConversion:
    layout: NestedLayout | None
    same_register_order: bool
    reason: str  # why none exists, or a note on the register order

    @property
    def exists(self) -> bool:
        return self.layout is not None


def _candidate(layout: XeGPULayout | XeGPUSlice, shape: tuple[int, ...]) -> NestedLayout:
    base, removed = layout.flatten()
    plans = plan_dims(base, removed, shape)
    rank_full = base.rank or len(shape)
    kept = [d for d in range(rank_full) if d not in removed]
    sg_strides = linear_strides(base.sg_layout, base.order) if base.sg_layout else (0,) * rank_full
    lane_strides = linear_strides(base.lane_layout, base.order) if base.lane_layout else (0,) * rank_full
    f = {k: [] for k in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile",
                         "subgroup_strides", "thread_strides")}
    for j, (d, p) in enumerate(zip(kept, plans)):
        if p.L > 1 and p.R > 1:
            raise SimtifyError(
                f"dim {j} is dealt round-robin to {p.L} subgroups in {p.R} rounds; a nested layout gives "
                "each subgroup one contiguous block per dim"
            )
        if p.L * p.D > p.n:  # shared: ids wrap onto n / D blocks
            if p.n % p.D or p.L % (p.n // p.D):
                raise SimtifyError(
                    f"dim {j} shares {p.n} elements among {p.L} subgroups with sg_data {p.D}, "
                    "whose wrapped blocks no nested subgroup tile repeats"
                )
            S, batch = p.n // p.D, p.nb
        else:
            S, batch = p.L, p.R * p.nb
        f["subgroup_tile"].append(S)
        f["subgroup_strides"].append(sg_strides[d] if S > 1 else 0)
        f["batch_tile"].append(batch)
        if p.wraps:
            raise SimtifyError(f"dim {j}: {p.LL} lanes of {p.LD} wrap around a block of {p.I}, which no nested "
                               "thread tile repeats")
        f["outer_tile"].append(p.R2)
        f["thread_tile"].append(p.LL)
        f["thread_strides"].append(lane_strides[d] if p.LL > 1 else 0)
        f["element_tile"].append(p.LD)
    return NestedLayout(**{k: tuple(v) for k, v in f.items()})


def xegpu_to_nested(
    layout: XeGPULayout | XeGPUSlice,
    shape,
    subgroup_size: int | None = None,
    num_threads: int | None = None,
) -> NestedConversion:
    """The nested layout whose ownership map equals the XeGPU layout's on `shape`."""
    shape = tuple(shape)
    subgroup_size, num_threads = launch(layout, subgroup_size, num_threads)
    target = layout.ownership(shape, subgroup_size, num_threads)
    try:
        nested = _candidate(layout, shape)
    except SimtifyError as e:
        return NestedConversion(None, False, e.what)
    got = nested.ownership(subgroup_size, num_threads)
    if got.identical(target):
        return NestedConversion(nested, True, "same owners, same register order")
    if got.same_ownership(target):
        return NestedConversion(
            nested, False,
            "same owners; registers are listed in nested order [batch.., outer.., element..] "
            "rather than XeGPU's per-dim fragment order",
        )
    diff = got.describe_difference(target)  # a construction bug if ever reached; say so plainly
    return NestedConversion(None, False, f"no nested layout found ({diff})")


def _subgroup_grid(nested: NestedLayout, order: tuple[int, ...]) -> tuple[int, ...] | None:
    """``sg_layout`` for the nested subgroup tiles and strides, numbered densely in
    `order` (fastest first): a stride gap before a dim widens the dim numbered before it,
    whose subgroups then share its blocks (XeGPU's sharing, ``sg_layout · sg_data`` over
    the dim); None when the strides are no such numbering."""
    grid = list(nested.subgroup_tile)
    numbered = 1  # subgroups numbered by the dims before this one
    previous = None
    for d in order:
        tile, stride = nested.subgroup_tile[d], nested.subgroup_strides[d]
        if tile == 1:  # a dim of no subgroups: numbered here, it can widen for the next gap
            previous = d
            continue
        if stride < numbered or stride % numbered:
            return None
        if stride > numbered:
            if previous is None:
                return None
            grid[previous] *= stride // numbered
        numbered = stride * tile
        previous = d
    return tuple(grid)


def _xegpu_reading(nested: NestedLayout, order: tuple[int, ...]) -> XeGPULayout | None:
    """The XeGPU layout that reads `nested` dim by dim: its subgroups as ``sg_layout``
    (`_subgroup_grid`), a subgroup's block (batch · outer · thread · element) as
    ``sg_data``, threads and elements as ``lane_layout`` / ``lane_data`` (batch and
    outer tiles are the lane tile's repeats in both), numbered in `order`. No subgroup
    fields when one subgroup holds the value, no lane fields when every lane holds all
    of it."""
    block = tuple(b * o * t * e for b, o, t, e in
                  zip(nested.batch_tile, nested.outer_tile, nested.thread_tile, nested.element_tile))
    subgroups = any(s > 1 for s in nested.subgroup_tile)
    grid = _subgroup_grid(nested, order) if subgroups else None
    if subgroups and grid is None:
        return None
    lanes = any(t > 1 for t in nested.thread_tile)
    return XeGPULayout(sg_layout=grid, sg_data=block if subgroups else None,
                       lane_layout=nested.thread_tile if lanes else None,
                       lane_data=nested.element_tile if lanes else None,
                       order=order if subgroups or lanes else None)


def nested_to_xegpu(nested: NestedLayout, subgroup_size: int | None = None,
                    num_threads: int | None = None) -> tuple[XeGPULayout | None, str]:
    """``(XeGPULayout, note)`` whose ownership map equals the nested layout's, or
    ``(None, why)``. XeGPU linearizes subgroups and lanes in one ``order`` over dense
    tiles; a nested layout may give threads and subgroups other strides, replicate
    lanes, or use some but not all of a subgroup's lanes, and then has no XeGPU reading. Every
    order is tried, the one the thread strides imply first; the answer is checked on
    ownership maps."""
    target = nested.ownership(subgroup_size or nested.default_subgroup_size, num_threads)
    lanes = prod(nested.thread_tile)
    if lanes not in (1, target.subgroup_size):
        return None, (f"the thread tile {list(nested.thread_tile)} spans {lanes} of a subgroup's "
                      f"{target.subgroup_size} lanes; XeGPU's lane_layout spans all of them (or, absent, "
                      "gives every lane the whole block)")
    rank = nested.rank
    by_stride = tuple(sorted(range(rank), key=lambda d: (nested.thread_strides[d] if nested.thread_tile[d] > 1
                                                          else 1 << 60, d)))
    orders = [by_stride] + [o for o in permutations(range(rank)) if o != by_stride]
    same_owners = None
    for order in orders:
        candidate = _xegpu_reading(nested, order)
        if candidate is None:
            continue
        try:
            got = candidate.ownership(target.shape, target.subgroup_size, target.num_threads)
        except SimtifyError:
            continue
        if got.identical(target):
            return candidate, "same owners, same register order"
        if same_owners is None and got.same_ownership(target):
            same_owners = candidate
    if same_owners is not None:
        return same_owners, ("same owners; registers are listed in XeGPU's per-dim fragment order rather than "
                             "nested order [batch.., outer.., element..]")
    return None, (f"no XeGPU layout has these owners: XeGPU numbers subgroups and lanes densely in one order, and "
                  f"this layout's subgroup strides {list(nested.subgroup_strides)} and thread strides "
                  f"{list(nested.thread_strides)} are not such a numbering")
