"""Which nested layout, if any, equals an XeGPU layout.

The candidate is built dim by dim (subgroups → subgroup tile and stride from ``order``,
instruction blocks and subgroup rounds → batch, lane rounds → outer, lanes → thread tile,
lane data → element tile) and then *checked against the ownership maps*: the answer is
never taken on faith. Two things nested layouts cannot say are reported as reasons:
round-robin over several subgroups (a nested subgroup owns one contiguous block per dim)
and sharing whose wrapped blocks are not a whole number of the dim.
"""

from __future__ import annotations

from dataclasses import dataclass

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
