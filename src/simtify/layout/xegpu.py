"""XeGPU layouts: ``#xegpu.layout<sg_layout, sg_data, inst_data, lane_layout, lane_data, order>``
and ``#xegpu.slice<#parent, dims = [..]>``.

A workgroup tile is cut among subgroups, each subgroup's tile into instruction blocks
(``inst_data``), each block among lanes. At the subgroup and lane levels, ids come from
delinearizing the linear id over ``sg_layout`` / ``lane_layout`` with ``order[0]`` the
fastest-changing dim (default ``[r-1, ..., 0]``). Per dim, a distribution unit is
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
and lane levels divide exactly). Upstream's ``isEvenlyDistributable`` compares whole
arrays and rejects the seed's own 128x128 ``sg_data = [32, 128]`` example. We also
refuse ``sg_data`` larger than the dim, which would have a subgroup hold an element twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Sequence, Union

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.ownership import OwnershipMap
from simtify.layout.syntax import AttributeText, format_ints, int_list, parse_attribute

LAYOUT_NAME = "#xegpu.layout"
SLICE_NAME = "#xegpu.slice"
FIELDS = ("sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data", "order")
# Intel Xe GPUs run 16-lane subgroups; the size used when a layout names no lanes.
DEFAULT_SUBGROUP_SIZE = 16


@dataclass(frozen=True)
class XeGPULayout:
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
    def parse(cls, text: str, where: str = "layout") -> "XeGPULayout":
        return cls.from_attribute(parse_attribute(text, where), where)

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> "XeGPULayout":
        values: dict[str, tuple[int, ...]] = {}
        for key, value in attr.params:
            if key not in FIELDS:
                raise SimtifyError(f"unknown xegpu.layout parameter '{key}' (expected {', '.join(FIELDS)})", where)
            if key in values:
                raise SimtifyError(f"'{key}' is given twice", where)
            values[key] = int_list(value, key, where)
        try:
            return cls(**values)
        except SimtifyError as e:
            raise e.at(where)

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
        _plan(self, (), tuple(shape))

    @property
    def num_subgroups(self) -> int:
        return prod(self.sg_layout) if self.sg_layout else 1

    @property
    def default_subgroup_size(self) -> int:
        return prod(self.lane_layout) if self.lane_layout else DEFAULT_SUBGROUP_SIZE


@dataclass(frozen=True)
class XeGPUSlice:
    """The parent layout with `dims` removed; ids still come from the whole parent, so
    subgroups and lanes that differ only in sliced dims share data."""

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
        if prank is not None and len(dims) >= prank:
            raise SimtifyError("a slice must keep at least one dim")

    @classmethod
    def parse(cls, text: str, where: str = "layout") -> "XeGPUSlice":
        return cls.from_attribute(parse_attribute(text, where), where)

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> "XeGPUSlice":
        params = list(attr.params)
        if len(params) != 2 or params[0][0] is not None or params[1][0] != "dims":
            raise SimtifyError("expected #xegpu.slice<#xegpu.layout<...>, dims = [..]>", where)
        parent_attr = params[0][1]
        if not isinstance(parent_attr, AttributeText) or parent_attr.name not in (LAYOUT_NAME, SLICE_NAME):
            raise SimtifyError("a slice's parent must be an #xegpu.layout or #xegpu.slice", where)
        parent = (XeGPULayout if parent_attr.name == LAYOUT_NAME else XeGPUSlice).from_attribute(parent_attr, where)
        try:
            return cls(parent, int_list(params[1][1], "dims", where))
        except SimtifyError as e:
            raise e.at(where)

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
        _plan(base, removed, tuple(shape))

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


def _field(layout: XeGPULayout, name: str, dim: int) -> int | None:
    v = getattr(layout, name)
    return None if v is None else v[dim]


def _plan(base: XeGPULayout, removed: tuple[int, ...], shape: tuple[int, ...]) -> list[DimPlan]:
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
        if D > n:
            raise SimtifyError(f"dim {j}: sg_data {D} exceeds the size {n}: a subgroup would hold elements twice")
        U = min(n, L * D)
        I = _field(base, "inst_data", d) or D
        if D % I:
            raise SimtifyError(f"dim {j}: inst_data {I} does not divide the subgroup tile {D}")
        LL = _field(base, "lane_layout", d) or 1
        if I % LL:
            raise SimtifyError(f"dim {j}: lane_layout {LL} does not divide the {'instruction' if base.inst_data else 'subgroup'} tile {I}")
        LD = _field(base, "lane_data", d) or I // LL
        if I % (LL * LD):
            raise SimtifyError(f"dim {j}: lane_layout {LL} × lane_data {LD} does not divide the tile {I}")
        plans.append(DimPlan(n, L, D, U, n // U, I, D // I, LL, LD, I // (LL * LD)))
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


def launch(layout, subgroup_size: int | None, num_threads: int | None) -> tuple[int, int]:
    """Check and default the (subgroup size, thread count) of an XeGPU layout or slice."""
    base = layout.flatten()[0] if isinstance(layout, XeGPUSlice) else layout
    lanes = prod(base.lane_layout) if base.lane_layout else None
    if subgroup_size is None:
        subgroup_size = lanes or DEFAULT_SUBGROUP_SIZE
    if subgroup_size < 1:
        raise SimtifyError(f"subgroup size {subgroup_size} must be positive")
    if lanes is not None and lanes != subgroup_size:
        raise SimtifyError(f"lane_layout {list(base.lane_layout)} has {lanes} lanes but the subgroup has {subgroup_size}")
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
    plans = _plan(base, removed, shape)
    layout_for_launch = base
    subgroup_size, num_threads = launch(layout_for_launch, subgroup_size, num_threads)
    rank_full = base.rank or len(shape)
    kept = [d for d in range(rank_full) if d not in removed]
    tids = np.arange(num_threads, dtype=np.int64)
    sg_ids = delinearize(tids // subgroup_size, base.sg_layout or (1,) * rank_full, base.order if base.sg_layout else None)
    lane_ids = delinearize(tids % subgroup_size, base.lane_layout or (1,) * rank_full, base.order if base.lane_layout else None)
    # Register index space: (sg round, inst block, lane-local index) per dim, row-major.
    reg_shape = [p.R for p in plans] + [p.nb for p in plans] + [p.lane_extent for p in plans]
    k = len(plans)
    regs = np.indices(reg_shape, dtype=np.int64).reshape(3 * k, -1) if k else np.zeros((0, 1), np.int64)
    row_strides = [prod(shape[j + 1 :]) for j in range(k)]
    flat = np.zeros((num_threads, regs.shape[1]), dtype=np.int64)
    for j, (d, p) in enumerate(zip(kept, plans)):
        q, bl, loc = regs[j], regs[k + j], regs[2 * k + j]
        reg_part = q * p.U + bl * p.I + (loc // p.LD) * (p.LL * p.LD) + loc % p.LD
        thread_part = sg_ids[:, d] * p.D + lane_ids[:, d] * p.LD
        flat += ((thread_part[:, None] + reg_part[None, :]) % p.n) * row_strides[j]
    return OwnershipMap(shape, subgroup_size, flat, rows_distinct=True)
