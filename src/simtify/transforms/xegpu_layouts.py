"""XeGPU layouts as the passes reshape them: the layout of a transposed, reduced,
broadcast or reshaped value, the parts each distribution level peels off, and equality
by ownership map.

Every function returns a layout whose ownership map is what the op implies; slices
keep their ids from the whole parent, so a value that lost dims (a reduction) or gained
unit dims (a shape_cast of that reduction) keeps the owners of the elements it came
from. A slice whose removed dims are not distributed (layout 1 at subgroup and lane
level) is the parent without those dims, and is written that way.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence, Union

from simtify.errors import SimtifyError
from simtify.layout.xegpu import FIELDS, XeGPULayout, XeGPUSlice, _plan

Layout = Union[XeGPULayout, XeGPUSlice]
SUBGROUP_FIELDS = ("sg_layout", "sg_data")
LANE_FIELDS = ("lane_layout", "lane_data")


def flatten(layout: Layout) -> tuple[XeGPULayout, tuple[int, ...]]:
    """(base layout, removed base dims)."""
    return layout.flatten() if isinstance(layout, XeGPUSlice) else (layout, ())


def kept_dims(layout: Layout) -> list[int]:
    base, removed = flatten(layout)
    return [d for d in range(base.rank or 0) if d not in removed]


def fields(layout: XeGPULayout) -> dict[str, list[int] | None]:
    return {f: (list(getattr(layout, f)) if getattr(layout, f) is not None else None) for f in FIELDS}


def build(f: dict, removed: Sequence[int] = ()) -> Layout | None:
    """A layout (or slice of one) from per-field lists; None when nothing is distributed.
    Removed dims that distribute nothing are dropped from the parent instead."""
    f = dict(f)
    if f.get("sg_layout") is None and f.get("lane_layout") is None:
        f["order"] = None
    if f.get("sg_layout") is None:
        f["sg_data"] = None
    if f.get("lane_layout") is None:
        f["lane_data"] = None
    removed = sorted(removed)
    drop = [d for d in removed if _undistributed(f, d)]
    if drop:
        f = _delete_dims(f, drop)
        removed = [d - sum(1 for x in drop if x < d) for d in removed if d not in drop]
    if all(v is None for v in f.values()):
        return None
    if f.get("order") is not None and _default_order(f):
        f["order"] = None
    base = XeGPULayout(**{k: tuple(v) if v is not None else None for k, v in f.items()})
    return XeGPUSlice(base, tuple(removed)) if removed else base


def _undistributed(f: dict, d: int) -> bool:
    return all(f.get(k) is None or f[k][d] == 1 for k in ("sg_layout", "lane_layout"))


def _default_order(f: dict) -> bool:
    """Does `order` number the distributed dims as the default [r-1, ..., 0] would?"""
    moving = [d for d in f["order"] if not _undistributed(f, d)]
    return moving == sorted(moving, reverse=True)


def _rank(f: dict) -> int:
    return next(len(v) for v in f.values() if v is not None)


def _full_order(f: dict) -> list[int] | None:
    if f.get("order") is not None:
        return list(f["order"])
    if f.get("sg_layout") is None and f.get("lane_layout") is None:
        return None
    return list(range(_rank(f) - 1, -1, -1))


def _delete_dims(f: dict, dims: Sequence[int]) -> dict:
    order = _full_order(f)
    out = {k: ([x for d, x in enumerate(v) if d not in dims] if v is not None else None) for k, v in f.items()}
    if order is not None:
        out["order"] = [d - sum(1 for x in dims if x < d) for d in order if d not in dims]
    return out


def permute(layout: Layout, perm: Sequence[int]) -> Layout:
    """The layout of ``vector.transpose %v, perm`` when %v has `layout`: result dim i is
    source dim perm[i], and the same ids own the same (moved) elements."""
    base, removed = flatten(layout)
    kept = [d for d in range(base.rank) if d not in removed]
    new_of = list(range(base.rank))  # new base position -> old base dim
    for i, p in enumerate(perm):
        new_of[kept[i]] = kept[p]
    f = fields(base)
    order = _full_order(f)
    out = {k: ([v[new_of[j]] for j in range(base.rank)] if v is not None else None)
           for k, v in f.items() if k != "order"}
    if order is not None:
        where = {old: new for new, old in enumerate(new_of)}
        out["order"] = [where[d] for d in order]
    else:
        out["order"] = None
    return build(out, removed)


def reduce_dims(layout: Layout, dims: Sequence[int]) -> Layout:
    """The layout of a reduction over `dims`: the source layout sliced."""
    base, removed = flatten(layout)
    kept = [d for d in range(base.rank) if d not in removed]
    return build(fields(base), list(removed) + [kept[d] for d in dims])


def insert_dims(layout: Layout | None, positions: Sequence[int], sizes: Sequence[int]) -> Layout | None:
    """The layout of a value with new, undistributed dims of `sizes` at result
    `positions` (ascending): every id holds the whole of each new dim."""
    if layout is None:
        return None
    base, removed = flatten(layout)
    f = fields(base)
    order = _full_order(f)
    kept = [d for d in range(base.rank) if d not in removed]
    removed = list(removed)
    for pos, size in sorted(zip(positions, sizes)):
        at = kept[pos] if pos < len(kept) else base_rank_of(f)
        for k, v in f.items():
            if k == "order" or v is None:
                continue
            fill = 1 if k in ("sg_layout", "lane_layout") else size
            v.insert(at, fill)
        if order is not None:
            order = [d + 1 if d >= at else d for d in order] + [at]
        removed = [d + 1 if d >= at else d for d in removed]
        kept = [d + 1 if d >= at else d for d in kept]
        kept.insert(pos, at)
    f["order"] = order
    return build(f, removed)


def base_rank_of(f: dict) -> int:
    return next(len(v) for k, v in f.items() if v is not None and k != "order")


def remove_dims(layout: Layout | None, dims: Sequence[int]) -> Layout | None:
    """The layout of the value without `dims` (sliced away: ids keep coming from the parent)."""
    if layout is None:
        return None
    return reduce_dims(layout, dims) if dims else layout


def unit_view(layout: Layout | None, dims: Sequence[int]) -> Layout | None:
    """The layout of a value of the same shape but size 1 in `dims`, whose element
    ``x`` (with 0 in `dims`) is owned by the owners of ``x`` in `layout` — a broadcast
    source."""
    if layout is None or not dims:
        return layout
    sliced = remove_dims(layout, dims)
    positions = sorted(dims)
    return insert_dims(sliced, positions, [1] * len(positions))


def strip(layout: Layout | None, names: Sequence[str]) -> Layout | None:
    """`layout` without the fields in `names` (what a distribution level consumes)."""
    if layout is None:
        return None
    base, removed = flatten(layout)
    f = fields(base)
    for n in names:
        f[n] = None
    return build(f, removed)


def explicit_lane_data(layout: Layout | None) -> Layout | None:
    """`layout` with its default ``lane_data`` (the instruction block over the lanes)
    written out, so that it keeps its meaning once ``inst_data`` is consumed: on a
    ``2x32`` value, ``inst_data = [2, 16], lane_layout = [1, 16]`` gives each lane
    ``[2, 1]`` per block, while ``lane_layout = [1, 16]`` alone would give ``[2, 2]``."""
    if layout is None:
        return None
    base, removed = flatten(layout)
    f = fields(base)
    if f["lane_layout"] is None or f["lane_data"] is not None or f["inst_data"] is None:
        return layout
    f["lane_data"] = [i // ll for i, ll in zip(f["inst_data"], f["lane_layout"])]
    return build(f, removed)


def subgroup_part(layout: Layout | None) -> Layout | None:
    """Only what distributes among subgroups."""
    return strip(layout, ("inst_data", "lane_layout", "lane_data"))


def has(layout: Layout | None, name: str) -> bool:
    return layout is not None and getattr(flatten(layout)[0], name) is not None


def field_of(layout: Layout, name: str, dim: int) -> int | None:
    """`name` of kept dim `dim` (None when the layout does not give it)."""
    base, removed = flatten(layout)
    v = getattr(base, name)
    return None if v is None else v[kept_dims(layout)[dim]]


def plan(layout: Layout | None, shape: Sequence[int]):
    """Per kept dim, the `DimPlan` of `layout` on `shape` (a layout of None: one subgroup,
    one block, one lane holding everything)."""
    shape = tuple(shape)
    if layout is None:
        return _plan(XeGPULayout(), (), shape)
    base, removed = flatten(layout)
    return _plan(base, removed, shape)


def check_fits(layout: Layout | None, shape: Sequence[int], what: str) -> None:
    if layout is None:
        return
    try:
        layout.check_shape(tuple(shape))
    except SimtifyError as e:
        raise SimtifyError(f"{what}: {layout} does not distribute {'x'.join(map(str, shape))}: {e.what}") from None


@lru_cache(maxsize=4096)
def _flat(layout: Layout, shape: tuple, sg: int, threads: int):
    return layout.ownership(shape, sg, threads).flat


def same(a: Layout | None, b: Layout | None, shape: Sequence[int], subgroup_size: int, threads: int) -> bool:
    """Do `a` and `b` put every element of `shape` in the same thread and register?
    (None is the layout that gives every thread the whole value.)"""
    a = a if a is not None else XeGPULayout()
    b = b if b is not None else XeGPULayout()
    if a == b:
        return True
    import numpy as np

    shape = tuple(shape)
    try:
        fa, fb = _flat(a, shape, subgroup_size, threads), _flat(b, shape, subgroup_size, threads)
    except SimtifyError:
        return False
    return fa.shape == fb.shape and bool(np.array_equal(fa, fb))


def same_blocks(a: Layout | None, b: Layout | None, shape: Sequence[int]) -> bool:
    """Do `a` and `b` cut the value into the same pieces: subgroup tiles and rounds, then
    instruction blocks? (Equal ownership is not equal blocking: ``inst_data = [8, 16]``
    and ``[4, 16]`` give every lane the same registers, in pieces that an op cannot
    pair; so do ``sg_data = [1, 32]`` in 8 rounds and one 8x32 tile.)"""
    if a == b:
        return True
    try:
        return [(p.D, p.R, p.I) for p in plan(a, shape)] == [(p.D, p.R, p.I) for p in plan(b, shape)]
    except SimtifyError:
        return False
