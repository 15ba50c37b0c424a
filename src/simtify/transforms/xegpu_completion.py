"""Filling in what a layout leaves out from the xe target (upstream's ``layout-kind =
inst`` and ``lane``): ``inst_data`` cuts a subgroup's tile into the blocks one
instruction handles, ``lane_layout``/``lane_data`` share a block among the 16 lanes.

DPAS operands take the DPAS shape (A M×K, B K×N, C M×N with M the largest divisor of
the tile's rows up to 8) and the DPAS lane layouts (`simtify.target.xe`). Any other
value puts its 16 lanes along the last dim whose tile they divide (the last dim
preferred, as 2D block loads do), one lane per element, and blocks of up to 8 rows.
Fields the layout already gives are kept; only missing ones are added.
"""

from __future__ import annotations

from typing import Sequence

from simtify.errors import SimtifyError
from simtify.layout.xegpu import Layout, XeGPULayout, XeGPUSlice, build, fields, flatten, kept_dims, plan
from simtify.target import Target
from simtify.target.xe import dpas_instruction, dpas_lane_layouts, is_mx

MAX_BLOCK_ROWS = 8


def subgroup_tile(layout: Layout | None, shape: Sequence[int]) -> tuple[int, ...]:
    """The shape of one subgroup's tile (its sg_data, or the whole value)."""
    return tuple(p.D for p in plan(layout, shape))


def complete(layout: Layout | None, shape: Sequence[int], subgroup_size: int, *, inst: bool, lanes: bool,
             role: str | None = None, target: Target | None = None, a_type=None) -> Layout | None:
    """`layout` with missing ``inst_data`` (when `inst`) and lane fields (when `lanes`);
    `role` "a", "b" or "c" asks for the DPAS operand's shape and lanes."""
    if isinstance(layout, XeGPUSlice):
        return _complete_slice(layout, shape, subgroup_size, inst=inst, lanes=lanes)
    f = fields(layout) if layout is not None else {k: None for k in fields(XeGPULayout())}
    tile = subgroup_tile(layout, shape)
    rank = len(tile)
    if role is not None:
        if is_mx(a_type) and not (inst and f["inst_data"] is None) and not (lanes and f["lane_layout"] is None):
            return layout  # nothing to fill in: a scaled DPAS's layouts as stated (upstream's tests
            # state shapes the hardware does not run, which the lane stage keeps on the op)
        mi = dpas_instruction(target, a_type)
        if rank != 2:
            raise SimtifyError(f"a dpas operand is 2-D, not {rank}-D")
        rows = _largest_divisor(tile[0], mi.m)
        block = {"a": (rows, mi.k), "b": (mi.k, mi.n), "c": (rows, mi.n)}[role]
        for d, (t, b) in enumerate(zip(tile, block)):
            if t % b:
                raise SimtifyError(f"dpas {role.upper()}: the subgroup tile {_text(tile)} is not a whole number of "
                                   f"{_text(block)} {target.name} DPAS blocks (dim {d})")
        default_lanes = dpas_lane_layouts(a_type, subgroup_size)["abc".index(role)]
        if inst and f["inst_data"] is None:
            f["inst_data"] = list(block)
        if lanes and f["lane_layout"] is None:
            f["lane_layout"] = list(default_lanes.lane_layout)
            f["lane_data"] = list(default_lanes.lane_data)
        return build(f)
    if lanes and f["lane_layout"] is None:
        block = f["inst_data"] or tile
        f["lane_layout"], f["lane_data"] = _default_lanes(block, subgroup_size)
        if f["lane_layout"] is None:
            # too small for the lanes: every lane holds it (an empty layout says so)
            f["inst_data"] = f["inst_data"] or list(tile)
    if inst and f["inst_data"] is None:
        f["inst_data"] = _default_inst(tile, f["lane_layout"], f["lane_data"])
    return build(f)


def complete_gather(layout: Layout | None, shape: Sequence[int], subgroup_size: int, *, inst: bool,
                    lanes: bool) -> Layout | None:
    """A gather's or scatter's rows (``offsets x chunk``): one row per lane
    (``lane_layout = [16, 1]``, each lane its whole chunk, as the hardware's per-lane
    address does), 16-row instructions."""
    if isinstance(layout, XeGPUSlice):
        return complete(layout, shape, subgroup_size, inst=inst, lanes=lanes)
    f = fields(layout) if layout is not None else {k: None for k in fields(XeGPULayout())}
    tile = subgroup_tile(layout, shape)
    rank = len(tile)
    if lanes and f["lane_layout"] is None and tile[0] % subgroup_size == 0:
        f["lane_layout"] = [subgroup_size] + [1] * (rank - 1)
        f["lane_data"] = [1] * rank
    if f["inst_data"] is None and (inst or (lanes and f["lane_layout"] is None)):
        rows = f["lane_layout"][0] * f["lane_data"][0] if f["lane_layout"] is not None else tile[0]
        f["inst_data"] = [rows] + list(tile[1:])
    return build(f)


def _complete_slice(layout, shape, subgroup_size: int, *, inst: bool, lanes: bool) -> Layout:
    """A slice completed on its kept dims (the removed ones take 1: they distribute
    nothing more)."""
    base, removed = flatten(layout)
    f = fields(base)
    kept = kept_dims(layout)
    tile = subgroup_tile(layout, shape)
    view = {k: ([v[d] for d in kept] if v is not None else None) for k, v in f.items() if k != "order"}
    if lanes and f["lane_layout"] is None:
        ll, ld = _default_lanes(view["inst_data"] or tile, subgroup_size)
        if ll is not None:
            f["lane_layout"] = [ll[kept.index(d)] if d in kept else 1 for d in range(base.rank)]
            f["lane_data"] = [ld[kept.index(d)] if d in kept else 1 for d in range(base.rank)]
            view["lane_layout"], view["lane_data"] = ll, ld
        elif f["inst_data"] is None:
            f["inst_data"] = [tile[kept.index(d)] if d in kept else 1 for d in range(base.rank)]
    if inst and f["inst_data"] is None:
        block = _default_inst(tile, view["lane_layout"], view["lane_data"])
        f["inst_data"] = [block[kept.index(d)] if d in kept else 1 for d in range(base.rank)]
    return build(f, removed)


def _default_lanes(block: Sequence[int], subgroup_size: int) -> tuple[list[int] | None, list[int] | None]:
    """Lanes along the last dim they divide; none (every lane holds the whole block)
    when no dim is a multiple of the subgroup."""
    rank = len(block)
    for d in range(rank - 1, -1, -1):
        if block[d] % subgroup_size == 0:
            layout = [1] * rank
            layout[d] = subgroup_size
            return layout, [1] * rank
    return None, None


def _default_inst(tile: Sequence[int], lane_layout, lane_data) -> list[int]:
    out = []
    rank = len(tile)
    for d, t in enumerate(tile):
        ll = lane_layout[d] if lane_layout else 1
        ld = lane_data[d] if lane_data else 1
        if ll > 1:
            out.append(ll * ld)
        elif d == rank - 2 or rank == 1:
            out.append(_largest_divisor(t, max(MAX_BLOCK_ROWS, ld), multiple_of=ld))
        elif d == rank - 1:
            out.append(t)
        else:
            out.append(ld)
    return out


def _largest_divisor(n: int, limit: int, multiple_of: int = 1) -> int:
    for k in range(min(n, limit), 0, -1):
        if n % k == 0 and k % multiple_of == 0:
            return k
    return n


def _text(shape) -> str:
    return "x".join(map(str, shape))


def is_complete(layout: Layout | None, *, inst: bool, lanes: bool) -> bool:
    """Does `layout` give what the levels ask for? (A block too small for the lanes
    says so with ``inst_data`` and no lanes.)"""
    if layout is None:
        return not (inst or lanes)
    base = flatten(layout)[0]
    has_inst = base.inst_data is not None
    return (not inst or has_inst) and (not lanes or base.lane_layout is not None or has_inst)
