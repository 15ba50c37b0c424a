"""XeGPU layouts: ``#xegpu.layout<sg_layout, sg_data, inst_data, lane_layout, lane_data, order>``
and ``#xegpu.slice<#parent, dims = [..]>``.

A workgroup tile is cut among subgroups, each subgroup's tile into instruction blocks
(``inst_data``), each block among lanes. At the subgroup and lane levels, ids come from
delinearizing the linear id over ``sg_layout`` / ``lane_layout`` with ``order[0]`` the
fastest-changing dim (default ``[r-1, ..., 0]``); a ``lane_layout`` of fewer lanes than
the subgroup (a divisor of it) repeats, lane ``l`` holding what lane ``l % lanes`` does,
as upstream's lane ids wrap. Per dim, a distribution unit is
``U = min(n, layout·data)``; for every unit base (row-major over the units) the id owns
``(base + id·data + k) % n`` for ``k < data``: round-robin when ``n`` is larger,
shared when smaller. A layout without ``lane_layout`` is subgroup-level: every lane holds
its subgroup's whole tile.

Register order (how `ownership` lists a thread's elements): subgroup rounds (row-major
over the unit bases), then instruction blocks (row-major), then the lane's own fragment
in row-major order of its per-dim local index — the order of the ops that workgroup
and instruction distribution unroll, each with the lane's flattened vector.

Even distributability follows the seed dim by dim (``n / sg_layout`` divides or
``sg_layout / n`` does; then ``sg_data`` divides that or is a multiple of it; instruction
and lane levels divide exactly, or wrap: an ``inst_data`` that is a multiple of the tile
is the whole tile, and more lanes (of ``lane_data`` 1) than a block has elements wrap
around it, lane ``l`` owning element ``l % block`` — upstream's "wrap-around" dims, e.g.
a 16x1 vector on ``lane_layout = [1, 16]``). Upstream's ``isEvenlyDistributable`` compares whole
arrays and rejects the seed's own 128x128 ``sg_data = [32, 128]`` example. We also
refuse ``sg_data`` larger than the dim, which would have a subgroup hold an element twice
— except on a dim no subgroups share out (``sg_layout`` 1) that the data is a multiple
of: there the tile is the whole dim (upstream clamps it so, e.g. a slice's parent written
for a broadcast result, read on the unit dims of its source).

The second half of the module is the algebra the passes reshape layouts with (the layout
of a transposed, reduced, broadcast or reshaped value, the parts each distribution level
peels off, equality by ownership map), as free functions that also take None (the layout
that gives every thread the whole value); the protocol's questions (`VectorLayout`) are
answered by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import Sequence, Union

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.ownership import OwnershipMap, check_map_size
from simtify.layout.protocol import VectorLayout
from simtify.layout.syntax import AttributeText, built_at, format_ints, int_list

LAYOUT_NAME = "#xegpu.layout"
SLICE_NAME = "#xegpu.slice"
FIELDS = ("sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data", "order")
# Intel Xe GPUs run 16-lane subgroups; the size used when a layout names no lanes.
DEFAULT_SUBGROUP_SIZE = 16
SUBGROUP_FIELDS = ("sg_layout", "sg_data")
LANE_FIELDS = ("lane_layout", "lane_data")


class _XeGPUQuestions(VectorLayout):
    """The protocol's questions for a layout and a slice alike, answered by the algebra
    below (`permute`, `reduce_dims`, `insert_dims`, `shape_cast_layout`)."""

    family = "XeGPU"

    def permute(self, perm: Sequence[int]) -> "Layout":
        return permute(self, perm)

    def project(self, dims: Sequence[int]) -> "Layout":
        return reduce_dims(self, dims)

    def insert_dims(self, positions: Sequence[int], sizes: Sequence[int]) -> "Layout":
        return insert_dims(self, positions, sizes)

    def reshape(self, shape: Sequence[int], source_shape: Sequence[int] | None = None) -> "Layout":
        """A shape_cast that adds or drops unit dims, or folds runs of dims into one (or
        splits one) where every thread keeps its elements (`shape_cast_layout`); it needs
        the value's shape."""
        if source_shape is None:
            raise SimtifyError(f"an XeGPU layout needs the source shape to reshape ({self})")
        out = shape_cast_layout(self, tuple(source_shape), tuple(shape))
        if out is None:
            raise SimtifyError(f"an XeGPU layout reshapes only by adding or dropping unit dims, or by folding or "
                               f"splitting runs of dims where every thread keeps its elements, not "
                               f"{list(source_shape)} to {list(shape)}")
        return out

    def distributed_shape_of(self, shape: Sequence[int]) -> tuple[int, ...]:
        """``[rounds.., instruction blocks.., lane fragment..]``: the registers in the
        order `ownership` lists them."""
        plans = plan(self, shape)
        return tuple(p.R for p in plans) + tuple(p.nb for p in plans) + tuple(p.lane_extent for p in plans)


@dataclass(frozen=True)
class XeGPULayout(_XeGPUQuestions):
    sg_layout: tuple[int, ...] | None = None
    sg_data: tuple[int, ...] | None = None
    inst_data: tuple[int, ...] | None = None
    lane_layout: tuple[int, ...] | None = None
    lane_data: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None

    def __post_init__(self):
        present = {}
        for f in FIELDS:
            v = getattr(self, f)
            if v is not None:
                v = tuple(int(x) for x in v)
                object.__setattr__(self, f, v)
                present[f] = v
        ranks = {f: len(v) for f, v in present.items()}
        if ranks and len(set(ranks.values())) > 1:
            desc = ", ".join(f"{f} {r}" for f, r in ranks.items())
            raise SimtifyError(f"xegpu.layout fields must have the same rank, got {desc}")
        if self.sg_data is not None and self.sg_layout is None:
            raise SimtifyError("sg_data needs sg_layout")
        if self.lane_data is not None and self.lane_layout is None:
            raise SimtifyError("lane_data needs lane_layout")
        if self.order is not None:
            if self.sg_layout is None and self.lane_layout is None:
                raise SimtifyError("order needs sg_layout or lane_layout")
            if sorted(self.order) != list(range(len(self.order))):
                raise SimtifyError(f"order {list(self.order)} is not a permutation of 0..{len(self.order) - 1}")
        for f, v in present.items():
            if f != "order" and any(x < 1 for x in v):
                raise SimtifyError(f"{f} {list(v)} must be positive")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> "XeGPULayout":
        values: dict[str, tuple[int, ...]] = {}
        for key, value in attr.params:
            if key not in FIELDS:
                raise SimtifyError(f"unknown xegpu.layout parameter '{key}' (expected {', '.join(FIELDS)})", where)
            if key in values:
                raise SimtifyError(f"'{key}' is given twice", where)
            values[key] = int_list(value, key, where)
            if not values[key]:  # a value's layout has a rank (the rank-0 ones are made, never written)
                raise SimtifyError(f"{key} [] is empty: an xegpu.layout field has one entry per dim", where)
        return built_at(where, cls, **values)

    def __str__(self) -> str:
        body = ", ".join(f"{f} = {format_ints(getattr(self, f))}" for f in FIELDS if getattr(self, f) is not None)
        return f"{LAYOUT_NAME}<{body}>"

    @property
    def rank(self) -> int | None:
        for f in FIELDS:
            v = getattr(self, f)
            if v is not None:
                return len(v)
        return None

    def ownership(self, shape: Sequence[int], subgroup_size: int | None = None, num_threads: int | None = None) -> OwnershipMap:
        return _ownership(self, (), tuple(shape), subgroup_size, num_threads)

    def check_shape(self, shape: Sequence[int]) -> None:
        plan_dims(self, (), tuple(shape))

    def flatten(self) -> tuple["XeGPULayout", tuple[int, ...]]:
        """Itself and no removed dims (a slice's `flatten` gives its base layout)."""
        return self, ()

    @property
    def num_subgroups(self) -> int:
        return prod(self.sg_layout) if self.sg_layout else 1

    @property
    def default_subgroup_size(self) -> int:
        return prod(self.lane_layout) if self.lane_layout else DEFAULT_SUBGROUP_SIZE


@dataclass(frozen=True)
class XeGPUSlice(_XeGPUQuestions):
    """The parent layout with `dims` removed; ids still come from the whole parent, so
    subgroups and lanes that differ only in sliced dims share data. Removing every dim
    gives the layout of a scalar (a full reduction's result): every thread holds it."""

    parent: Union[XeGPULayout, "XeGPUSlice"]
    dims: tuple[int, ...]

    def __post_init__(self):
        dims = tuple(int(d) for d in self.dims)
        object.__setattr__(self, "dims", dims)
        if len(set(dims)) != len(dims):
            raise SimtifyError(f"slice dims {list(dims)} repeat a dim")
        prank = self.parent.rank
        if prank is not None and any(not 0 <= d < prank for d in dims):
            raise SimtifyError(f"slice dims {list(dims)} out of range for a parent of rank {prank}")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> "XeGPUSlice":
        params = list(attr.params)
        if len(params) != 2 or params[0][0] is not None or params[1][0] != "dims":
            raise SimtifyError("expected #xegpu.slice<#xegpu.layout<...>, dims = [..]>", where)
        parent_attr = params[0][1]
        if not isinstance(parent_attr, AttributeText) or parent_attr.name not in (LAYOUT_NAME, SLICE_NAME):
            raise SimtifyError("a slice's parent must be an #xegpu.layout or #xegpu.slice", where)
        parent = (XeGPULayout if parent_attr.name == LAYOUT_NAME else XeGPUSlice).from_attribute(parent_attr, where)
        return built_at(where, cls, parent, int_list(params[1][1], "dims", where))

    def __str__(self) -> str:
        return f"{SLICE_NAME}<{self.parent}, dims = {format_ints(self.dims)}>"

    def flatten(self) -> tuple[XeGPULayout, tuple[int, ...]]:
        """The base layout and the sorted base dims this (possibly nested) slice removes."""
        levels = []
        node: XeGPULayout | XeGPUSlice = self
        while isinstance(node, XeGPUSlice):
            levels.append(node.dims)
            node = node.parent
        remaining = list(range(node.rank or 0))
        for dims in reversed(levels):
            remaining = [d for k, d in enumerate(remaining) if k not in dims]
        removed = tuple(d for d in range(node.rank or 0) if d not in remaining)
        return node, removed

    @property
    def rank(self) -> int | None:
        base, removed = self.flatten()
        return None if base.rank is None else base.rank - len(removed)

    def ownership(self, shape: Sequence[int], subgroup_size: int | None = None, num_threads: int | None = None) -> OwnershipMap:
        base, removed = self.flatten()
        return _ownership(base, removed, tuple(shape), subgroup_size, num_threads)

    def check_shape(self, shape: Sequence[int]) -> None:
        base, removed = self.flatten()
        plan_dims(base, removed, tuple(shape))

    @property
    def num_subgroups(self) -> int:
        return self.flatten()[0].num_subgroups

    @property
    def default_subgroup_size(self) -> int:
        return self.flatten()[0].default_subgroup_size


# --- the distribution, dim by dim ---------------------------------------------------


@dataclass(frozen=True)
class DimPlan:
    """How one kept dim of extent n is cut: subgroups (L ids, data D, unit U, R rounds),
    instruction blocks (I, nb of them), lanes (LL ids, data LD, R2 rounds)."""

    n: int
    L: int
    D: int
    U: int
    R: int
    I: int
    nb: int
    LL: int
    LD: int
    R2: int

    @property
    def lane_extent(self) -> int:
        return self.R2 * self.LD

    @property
    def wraps(self) -> bool:
        """The lanes wrap around the block: lane ``l`` starts at ``l·LD % I``."""
        return self.LL * self.LD > self.I


def _field(layout: XeGPULayout, name: str, dim: int) -> int | None:
    v = getattr(layout, name)
    return None if v is None else v[dim]


def plan_dims(base: XeGPULayout, removed: tuple[int, ...], shape: tuple[int, ...]) -> list[DimPlan]:
    """Per dim of `shape` (the dims of `base` not in `removed`), how subgroups,
    instruction blocks and lanes cut it; a SimtifyError where the layout does not
    distribute the shape evenly (see the module docstring)."""
    kept = [d for d in range(base.rank or len(shape) + len(removed)) if d not in removed]
    if base.rank is not None and len(shape) != len(kept):
        raise SimtifyError(f"the layout has rank {len(kept)} but the shape {list(shape)} has rank {len(shape)}")
    plans = []
    for j, (d, n) in enumerate(zip(kept, shape)):
        L = _field(base, "sg_layout", d) or 1
        if n % L == 0:
            per = n // L
        elif L % n == 0:
            per = n
        else:
            raise SimtifyError(f"dim {j}: size {n} and sg_layout {L} do not divide each other")
        D = _field(base, "sg_data", d)
        if D is None:
            if n % L:
                raise SimtifyError(f"dim {j}: size {n} is not a multiple of sg_layout {L}; give sg_data")
            D = per
        if per % D and D % per:
            raise SimtifyError(f"dim {j}: sg_data {D} neither divides nor is a multiple of {per} (size {n} / sg_layout {L})")
        if D > n and L == 1 and D % n == 0:
            D = per = n  # the whole dim (see the module docstring)
        if D > n:
            raise SimtifyError(f"dim {j}: sg_data {D} exceeds the size {n}: a subgroup would hold elements twice")
        U = min(n, L * D)
        I = _field(base, "inst_data", d) or D
        if I > D and I % D == 0:
            I = D  # an instruction as wide as a multiple of the tile holds the whole tile
        if D % I:
            raise SimtifyError(f"dim {j}: inst_data {I} does not divide the subgroup tile {D}")
        LL = _field(base, "lane_layout", d) or 1
        if I % LL and LL % I:
            raise SimtifyError(f"dim {j}: lane_layout {LL} does not divide the {'instruction' if base.inst_data else 'subgroup'} tile {I}")
        LD = _field(base, "lane_data", d) or max(1, I // LL)
        if I % (LL * LD) == 0:
            R2 = I // (LL * LD)
        elif LD == 1 and LL > I and LL % I == 0:
            R2 = 1  # more lanes than elements: they wrap around the block
        else:
            raise SimtifyError(f"dim {j}: lane_layout {LL} × lane_data {LD} does not divide the tile {I}")
        plans.append(DimPlan(n, L, D, U, n // U, I, D // I, LL, LD, R2))
    return plans


def delinearize(ids: np.ndarray, layout: Sequence[int], order: Sequence[int] | None) -> np.ndarray:
    """``[len(ids), rank]`` digits of each linear id over `layout`, ``order[0]`` fastest."""
    order = tuple(order) if order is not None else tuple(range(len(layout) - 1, -1, -1))
    digits = np.zeros((len(ids), len(layout)), dtype=np.int64)
    stride = 1
    for d in order:
        digits[:, d] = (ids // stride) % layout[d]
        stride *= layout[d]
    return digits


def linear_strides(layout: Sequence[int], order: Sequence[int] | None) -> tuple[int, ...]:
    """Per dim, the linear-id stride of its digit under `order`."""
    order = tuple(order) if order is not None else tuple(range(len(layout) - 1, -1, -1))
    strides = [0] * len(layout)
    s = 1
    for d in order:
        strides[d] = s
        s *= layout[d]
    return tuple(strides)


def launch(layout: "Layout", subgroup_size: int | None, num_threads: int | None) -> tuple[int, int]:
    """Check and default the (subgroup size, thread count) of an XeGPU layout or slice."""
    base = flatten(layout)[0]
    lanes = prod(base.lane_layout) if base.lane_layout else None
    if subgroup_size is None:
        subgroup_size = lanes or DEFAULT_SUBGROUP_SIZE
    if subgroup_size < 1:
        raise SimtifyError(f"subgroup size {subgroup_size} must be positive")
    if lanes is not None and subgroup_size % lanes:
        raise SimtifyError(f"lane_layout {list(base.lane_layout)} has {lanes} lanes, which do not divide the "
                           f"{subgroup_size} lanes of the subgroup")
    need = base.num_subgroups * subgroup_size
    if num_threads is None:
        num_threads = need
    if num_threads < 1 or num_threads % subgroup_size:
        raise SimtifyError(f"{num_threads} threads is not a whole number of {subgroup_size}-lane subgroups")
    if num_threads < need:
        raise SimtifyError(
            f"sg_layout {list(base.sg_layout)} needs {base.num_subgroups} subgroups but {num_threads} threads "
            f"make only {num_threads // subgroup_size}"
        )
    return subgroup_size, num_threads


def _ownership(base: XeGPULayout, removed: tuple[int, ...], shape: tuple[int, ...], subgroup_size, num_threads) -> OwnershipMap:
    subgroup_size, num_threads = launch(base, subgroup_size, num_threads)
    plans = plan_dims(base, removed, shape)
    rank_full = base.rank or len(shape)
    kept = [d for d in range(rank_full) if d not in removed]
    tids = np.arange(num_threads, dtype=np.int64)
    sg_ids = delinearize(tids // subgroup_size, base.sg_layout or (1,) * rank_full, base.order if base.sg_layout else None)
    lane_ids = delinearize(tids % subgroup_size, base.lane_layout or (1,) * rank_full, base.order if base.lane_layout else None)
    # Register index space: (sg round, inst block, lane-local index) per dim, row-major.
    reg_shape = [p.R for p in plans] + [p.nb for p in plans] + [p.lane_extent for p in plans]
    check_map_size(num_threads, prod(reg_shape), shape)
    k = len(plans)
    regs = np.indices(reg_shape, dtype=np.int64).reshape(3 * k, -1) if k else np.zeros((0, 1), np.int64)
    row_strides = [prod(shape[j + 1 :]) for j in range(k)]
    flat = np.zeros((num_threads, regs.shape[1]), dtype=np.int64)
    for j, (d, p) in enumerate(zip(kept, plans)):
        q, bl, loc = regs[j], regs[k + j], regs[2 * k + j]
        reg_part = q * p.U + bl * p.I + (loc // p.LD) * (p.LL * p.LD) + loc % p.LD
        thread_part = sg_ids[:, d] * p.D + (lane_ids[:, d] * p.LD) % p.I
        flat += ((thread_part[:, None] + reg_part[None, :]) % p.n) * row_strides[j]
    return OwnershipMap(shape, subgroup_size, flat, rows_distinct=True)


# --- the algebra: layouts as the passes reshape them ----------------------------------
#
# Every function returns a layout whose ownership map is what the op implies; slices
# keep their ids from the whole parent, so a value that lost dims (a reduction) or gained
# unit dims (a shape_cast of that reduction) keeps the owners of the elements it came
# from. A slice whose removed dims are not distributed (layout 1 at subgroup and lane
# level) is the parent without those dims, and is written that way. A layout of None is
# the one that gives every thread the whole value.

Layout = Union[XeGPULayout, XeGPUSlice]



def flatten(layout: Layout) -> tuple[XeGPULayout, tuple[int, ...]]:
    """(base layout, the sorted base dims a slice removes)."""
    return layout.flatten()


def kept_dims(layout: Layout) -> list[int]:
    """The base dims the value has, in order."""
    base, removed = flatten(layout)
    return [d for d in range(base.rank or 0) if d not in removed]


def fields(layout: XeGPULayout) -> dict[str, list[int] | None]:
    """The layout's fields as lists, to edit and `build` again."""
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
    """The rank of the layout that `fields` gave."""
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
    # a dim a slice removed holds one position whatever its lanes: one element each
    f["lane_data"] = [1 if d in removed else i // ll for d, (i, ll) in enumerate(zip(f["inst_data"], f["lane_layout"]))]
    return build(f, removed)


def subgroup_part(layout: Layout | None) -> Layout | None:
    """Only what distributes among subgroups."""
    return strip(layout, ("inst_data", "lane_layout", "lane_data"))


def has(layout: Layout | None, name: str) -> bool:
    """Does `layout` give the field `name`?"""
    return layout is not None and getattr(flatten(layout)[0], name) is not None


def field_of(layout: Layout, name: str, dim: int) -> int | None:
    """`name` of kept dim `dim` (None when the layout does not give it)."""
    base, removed = flatten(layout)
    v = getattr(base, name)
    return None if v is None else v[kept_dims(layout)[dim]]


def lane_slice(layout: Layout | None, shape: Sequence[int], offsets: Sequence[int],
               sizes: Sequence[int]) -> tuple[list[int], list[int]] | None:
    """Where a strided slice (`offsets`, `sizes`) of a value of `shape` in `layout`
    lies in one lane's registers: (offsets, sizes) per dim, or None where the slice
    does not fall on whole lane rounds (``lane_layout · lane_data`` elements), so
    that no lane holds its part of it in one place. Without lanes every lane holds
    the whole value, as each lane does a dim its lanes do not split (of fewer elements
    than a lane round: the lanes hold it alike)."""
    if not has(layout, "lane_layout"):
        return list(offsets), list(sizes)
    out_o, out_s = [], []
    for p, o, s in zip(plan(layout, shape), offsets, sizes):
        if p.lane_extent == p.n:
            out_o.append(o)
            out_s.append(s)
            continue
        step = p.LL * p.LD
        if o % step or s % step:
            return None
        out_o.append(o // step * p.LD)
        out_s.append(s // step * p.LD)
    return out_o, out_s


def plan(layout: Layout | None, shape: Sequence[int]):
    """Per kept dim, the `DimPlan` of `layout` on `shape` (a layout of None: one subgroup,
    one block, one lane holding everything)."""
    shape = tuple(shape)
    if layout is None:
        return plan_dims(XeGPULayout(), (), shape)
    base, removed = flatten(layout)
    return plan_dims(base, removed, shape)


def check_block(layout: Layout, shape: Sequence[int]) -> None:
    """`check_shape` for a memory block: its lanes may not wrap around a dim (a block
    access gives each element one lane), as upstream's descriptors require."""
    layout.check_shape(tuple(shape))
    for j, p in enumerate(plan(layout, shape)):
        if p.wraps:
            raise SimtifyError(f"dim {j}: cannot distribute {p.I} over {p.LL} lanes with {p.LD} elements each")


def check_fits(layout: Layout | None, shape: Sequence[int], what: str) -> None:
    """`check_shape` with an error that names `what` holds the value."""
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


def unit_dims_map(src_shape, res_shape) -> tuple[list[int], list[int]] | None:
    """For a shape_cast that only adds or drops unit dims: (source unit dims that go,
    result unit dims that come); None for any other reshape."""
    i = j = 0
    drop, add = [], []
    while i < len(src_shape) or j < len(res_shape):
        if i < len(src_shape) and j < len(res_shape) and src_shape[i] == res_shape[j]:
            i += 1
            j += 1
        elif i < len(src_shape) and src_shape[i] == 1:
            drop.append(i)
            i += 1
        elif j < len(res_shape) and res_shape[j] == 1:
            add.append(j)
            j += 1
        else:
            return None
    return drop, add


def shape_cast_layout(layout: Layout | None, from_shape, to_shape) -> Layout | None:
    """The layout of the other side of a shape_cast: a unit-dim one keeps the layout on
    the other dims; any other where `layout` distributes only its last dim, in units
    that tile the other side's last dim (upstream's expanded and collapsed dims: a
    1024-vector in 16-blocks is an 8x8x16 one in 1x1x16-blocks), or where each dim of
    the shorter shape is a run of dims of the longer one (`_regrouped`); None where none
    gives every thread the same elements in the same order."""
    if layout is None:
        return None
    m = unit_dims_map(from_shape, to_shape)
    if m is None:
        return (_last_dim_reshaped(layout, tuple(from_shape), tuple(to_shape))
                or _regrouped(layout, tuple(from_shape), tuple(to_shape)))
    drop, add = m
    lay = remove_dims(layout, drop)
    return insert_dims(lay, add, [1] * len(add)) if add else lay


def _same_owners(layout: Layout, from_shape: tuple, new: Layout | None, to_shape: tuple) -> bool:
    """Does `new` on `to_shape` give every thread the elements `layout` gives it on
    `from_shape`, at the same row-major positions and in the same register order?"""
    if new is None:
        return False
    try:
        new.check_shape(to_shape)
        sg, threads = launch(layout, None, None)
        return np.array_equal(layout.ownership(from_shape, sg, threads).flat,
                              new.ownership(to_shape, sg, threads).flat)
    except SimtifyError:
        return False


def _last_dim_reshaped(layout: Layout, from_shape: tuple, to_shape: tuple) -> Layout | None:
    if not isinstance(layout, XeGPULayout) or layout.rank != len(from_shape) or not to_shape:
        return None
    f = fields(layout)
    if f["order"] is not None or any(v is not None and any(x != 1 for x in v[:-1]) for k, v in f.items()
                                     if k != "order"):
        return None
    last = {k: v[-1] for k, v in f.items() if v is not None}
    units = [last.get("inst_data", 1), last.get("lane_layout", 1) * last.get("lane_data", 1),
             last.get("sg_layout", 1) * last.get("sg_data", 1)]
    if any(from_shape[-1] % u or to_shape[-1] % u for u in units):  # whole units on both sides
        return None
    g = {k: ([1] * (len(to_shape) - 1) + [v[-1]] if v is not None else None) for k, v in f.items()}
    try:
        new = build(g)
    except SimtifyError:
        return None
    return new if _same_owners(layout, from_shape, new, to_shape) else None


def dim_runs(fine, coarse) -> list[list[int]] | None:
    """Per dim of `coarse`, the run of consecutive dims of `fine` whose sizes multiply
    to it (a unit dim of `coarse` may take none); None where `fine` does not fold into
    `coarse` that way."""
    runs, i = [], 0
    for j, c in enumerate(coarse):
        run, size = [], 1
        while i < len(fine) and (size < c or (fine[i] == 1 and j == len(coarse) - 1)):
            size *= fine[i]
            run.append(i)
            i += 1
        if size != c:
            return None
        runs.append(run)
    return runs if i == len(fine) else None


def _fill_inner(total: int, caps: Sequence[int]) -> list[int] | None:
    """`total` spread over dims of `caps`, innermost first, each taking what fits."""
    out, rem = [1] * len(caps), total
    for d in reversed(range(len(caps))):
        take = min(rem, caps[d])
        if rem % take or caps[d] % take:
            return None
        out[d], rem = take, rem // take
    return out if rem == 1 else None


def _spread_outer(count: int, positions: Sequence[int]) -> list[int] | None:
    """`count` ids spread over dims with `positions` places each, outermost first; ids
    beyond the places (they share the data) go to the innermost dim."""
    out, rem = [], count
    for n in positions:
        take = min(rem, n)
        if rem % take:
            return None
        out.append(take)
        rem //= take
    out[-1] *= rem
    return out


def _split_dim(p: DimPlan, sizes: Sequence[int], f: dict) -> dict | None:
    """The fields of one dim planned by `p` split over `sizes` (outer to inner), as
    upstream expands a collapsed dim: ids spread outermost first, data fills innermost
    first, within what the ids cover."""
    out: dict = {}
    tile = list(sizes)
    if f["sg_layout"] is not None:
        data, covered = _fill_inner(p.D, sizes), _fill_inner(p.U, sizes)
        if data is None or covered is None:
            return None
        out["sg_layout"] = _spread_outer(p.L, [c // d for c, d in zip(covered, data)])
        out["sg_data"] = tile = data
    if f["inst_data"] is not None:
        out["inst_data"] = tile = _fill_inner(p.I, tile)
    if f["lane_layout"] is not None and tile is not None:
        data, covered = _fill_inner(p.LD, tile), _fill_inner(min(p.I, p.LL * p.LD), tile)
        if data is None or covered is None:
            return None
        out["lane_layout"] = _spread_outer(p.LL, [c // d for c, d in zip(covered, data)])
        out["lane_data"] = data
    return None if any(v is None for v in out.values()) else out


def _regrouped(layout: Layout, from_shape: tuple, to_shape: tuple) -> Layout | None:
    """The layout across a shape_cast where each dim of the shorter shape is a run of
    consecutive dims of the longer one: collapsed, each field of a run multiplied;
    expanded, each dim split as `_split_dim` does (upstream's ``expandDim``); kept only
    where every thread holds the same elements in the same order."""
    if not isinstance(layout, XeGPULayout) or layout.rank != len(from_shape) or layout.order is not None:
        return None
    collapsing = len(to_shape) < len(from_shape)
    runs = dim_runs(from_shape, to_shape) if collapsing else dim_runs(to_shape, from_shape)
    if runs is None:
        return None
    try:
        plans = plan(layout, from_shape)
    except SimtifyError:
        return None
    f = fields(layout)
    present = [k for k in ("sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data") if f[k] is not None]
    if "sg_layout" in present and "sg_data" not in present:
        present.append("sg_data")
    effective = {"sg_layout": "L", "sg_data": "D", "inst_data": "I", "lane_layout": "LL", "lane_data": "LD"}
    g: dict = {k: None for k in f}
    for k in present:
        g[k] = []
    for j, run in enumerate(runs):
        if collapsing:
            for k in present:
                g[k].append(prod(getattr(plans[d], effective[k]) for d in run) if run else 1)
            continue
        if not run:
            return None
        split = _split_dim(plans[j], [to_shape[d] for d in run], f)
        if split is None:
            return None
        for k in present:
            g[k] += split[k]
    try:
        new = build(g)
    except SimtifyError:
        return None
    return new if _same_owners(layout, from_shape, new, to_shape) else None


# --- what ops do to layouts (the rules of XeGPU propagation) ------------------------


def last_dim_scaled(layout: Layout | None, num: int, den: int) -> Layout | None:
    """`layout` with its last dim's ``sg_data``, ``inst_data`` and ``lane_data`` scaled by
    ``num / den``: the layout of a value whose elements along the last dim are `num` of
    another's `den`, held by the same owners — a ``vector.bitcast`` from `num`-bit to
    `den`-bit elements (the same bytes), a ``vector.interleave`` (2 / 1: each element of
    an operand and its partner), a ``vector.deinterleave`` (1 / 2). None where a field
    would not hold whole elements (or the last dim is sliced away)."""
    if layout is None or num == den:
        return layout
    base, removed = flatten(layout)
    if base.rank is None or base.rank - 1 in removed:
        return None
    f = fields(base)
    last = base.rank - 1
    if f["lane_layout"] is not None and f["lane_data"] is None:
        return None  # the default lane data follows the shape: state it to scale it
    for name in ("sg_data", "inst_data", "lane_data"):
        if f[name] is not None:
            scaled = f[name][last] * num
            if scaled % den:
                return None
            f[name] = list(f[name])
            f[name][last] = scaled // den
    return build(f, removed)


def reduction_source(result: Layout | None, src_shape, dims) -> Layout | None:
    """The source layout a multi_reduction over `dims` needs for `result`."""
    if result is None:
        return None
    if isinstance(result, XeGPUSlice) and sorted(result.dims) == sorted(dims) and (
            result.parent.rank is None or result.parent.rank == len(src_shape)):
        parent = clamp_inst_data(result.parent, src_shape)
        if fits_unclamped(parent, src_shape):
            return parent
        shared = _reduced_dims_shared_out(result.parent, src_shape, dims)
        if shared is not None:
            return shared
        # a parent written for a wider reduced dim (a broadcast's): the source holds the
        # reduced dims whole instead
    return insert_dims(result, sorted(dims), [src_shape[d] for d in sorted(dims)])


def _reduced_dims_shared_out(parent: Layout, src_shape, dims) -> Layout | None:
    """`parent` (a slice itself, or with a subgroup tile that does not fit the source)
    with each reduced dim's ``sg_data`` its size over its ``sg_layout``: the subgroups
    share the reduced dims out evenly (upstream's rule for a consumer slice over the
    reduced dims); None where that does not distribute the source."""
    base, removed = flatten(parent)
    f = fields(base)
    if f["sg_layout"] is None or f["sg_data"] is None or base.rank is None:
        return None
    kept = kept_dims(parent)
    for d in dims:
        n, ids = src_shape[d], f["sg_layout"][kept[d]]
        if n % ids:
            return None
        f["sg_data"][kept[d]] = n // ids
    try:
        shared = build(f, removed)
    except SimtifyError:
        return None
    return shared if shared is not None and shared.fits(src_shape) else None


def whole_blocks(size: Sequence[int]) -> XeGPULayout:
    """The lane-level layout of a block every lane holds whole: an instruction block of
    its own size, no lanes (what completion gives a block too small for the lanes)."""
    return XeGPULayout(inst_data=tuple(size))


def contiguous_blocks(shape: Sequence[int], block: Sequence[int]) -> XeGPULayout | None:
    """The lane layout that gives lane ``l`` (row-major over ``shape / block``) the ``l``-th
    contiguous `block` of a value of `shape`: what a warp region's distributed type hands
    out (DESIGN: ``gpu.warp_execute_on_lane_0``). None where `block` does not tile `shape`."""
    if len(shape) != len(block) or any(b < 1 or n % b for n, b in zip(shape, block)):
        return None
    return XeGPULayout(lane_layout=tuple(n // b for n, b in zip(shape, block)), lane_data=tuple(block))


def is_whole_blocks(layout: Layout | None, shape: Sequence[int]) -> bool:
    """Is `layout` the `whole_blocks` layout of a value of `shape`?"""
    return isinstance(layout, XeGPULayout) and layout.lane_layout is None and layout.sg_layout is None \
        and layout.inst_data is not None and tuple(layout.inst_data) == tuple(shape)


def fits_unclamped(layout: Layout, shape: Sequence[int]) -> bool:
    """Does `layout` distribute a value of `shape` with no field wider than its dim
    (no subgroup tile cut to the dim, no lanes wrapping around a block)?"""
    if not isinstance(layout, XeGPULayout) or layout.rank != len(shape) or not layout.fits(shape):
        return False
    for d, n in enumerate(shape):
        tile = _field(layout, "inst_data", d) or _field(layout, "sg_data", d) or n
        if (_field(layout, "sg_data", d) or 1) > n or (_field(layout, "lane_layout", d) or 1) > min(tile, n):
            return False
    return True


def clamp_inst_data(layout: Layout, shape: Sequence[int]) -> Layout:
    """`layout` with each ``inst_data`` larger than its dim of `shape` cut to the dim (a
    reduced dim narrower than the instruction the result's layout was written for, as
    upstream clamps it: a 1x16x1 source of a slice of ``inst_data = [1, 1, 16]`` is
    blocked ``[1, 1, 1]``)."""
    if not isinstance(layout, XeGPULayout) or layout.inst_data is None or layout.rank != len(shape):
        return layout
    inst = [min(i, n) if i > n and i % n == 0 else i for i, n in zip(layout.inst_data, shape)]
    if inst == list(layout.inst_data):
        return layout
    f = fields(layout)
    f["inst_data"] = inst
    return build(f)


def broadcast_source(result: Layout | None, src_shape, res_shape) -> Layout | None:
    if result is None:
        return None
    lead = len(res_shape) - len(src_shape)
    lay = remove_dims(result, list(range(lead)))
    units = [d for d, (s, r) in enumerate(zip(src_shape, res_shape[lead:])) if s == 1 and r != 1]
    return unit_view(lay, units)


def broadcast_result(source: Layout | None, src_shape, res_shape) -> Layout | None:
    """The layout a broadcast gives its result from its source's: the source's owners,
    every id holding the whole of each new leading dim and of each stretched unit dim."""
    if source is None:
        return None
    lead = len(res_shape) - len(src_shape)
    units = [d for d, (s, r) in enumerate(zip(src_shape, res_shape[lead:])) if s == 1 and r != 1]
    lay = remove_dims(source, units)
    if units:
        lay = insert_dims(lay, units, [res_shape[lead + d] for d in units])
    return insert_dims(lay, list(range(lead)), list(res_shape[:lead])) if lead else lay


def gather_offsets_layout(layout: Layout | None, value_shape, offsets_shape) -> Layout | None:
    """The layout of a gather's offsets and mask: the value's without its chunk dim (the
    owners of a row own its offset)."""
    if layout is None or len(value_shape) == len(offsets_shape):
        return layout
    return remove_dims(layout, [len(value_shape) - 1])


def gather_value_layout(offsets: Layout | None, value_shape, offsets_shape) -> Layout | None:
    """The layout of a gather's rows from its offsets': each row whole with its offset."""
    if offsets is None or len(value_shape) == len(offsets_shape):
        return offsets
    return insert_dims(offsets, [len(offsets_shape)], [value_shape[-1]])


def refines(new: Layout, old: Layout) -> bool:
    """`new` only adds fields `old` lacks."""
    if isinstance(new, XeGPUSlice) != isinstance(old, XeGPUSlice):
        return False
    nb, nr = flatten(new)
    ob, orem = flatten(old)
    if nr != orem or nb.rank != ob.rank:
        return False
    fn, fo = fields(nb), fields(ob)
    added = False
    for k in fn:
        if fo[k] is None:
            added |= fn[k] is not None
        elif fn[k] != fo[k] and k != "order":
            return False
    return added
