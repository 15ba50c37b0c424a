"""The layouts of a dpas on the xe target: what A and B need for a C layout (the seed's
rule: each subgroup holds its C tiles' rows of A and columns of B with the whole K, in
the DPAS's lanes), what of a C layout the DPAS can compute, and the three layouts an op
ends up with (its anchors, else derived from C, completed where asked).

    %d = xegpu.dpas %a, %b, %c {layout_cd = #C}   // A: sg_data = [m, K], B: [K, n]

A dpas_mx's scales follow A and B with K counted in blocks (K / S elements each): scale_a
of A ``sg_data = [m, K]``, ``inst_data = [8, 32]`` is ``[m, S]``, ``[8, 1]``, its lanes one
row each (upstream's rule).
"""

from __future__ import annotations

from math import prod

from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.layout.xegpu import Layout, XeGPUSlice, build, fields, has, plan, same, subgroup_part
from simtify.target import Target
from simtify.target.xe import dpas_instruction, dpas_lane_layouts, mx_scale_lane_layouts
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.xegpu_completion import complete


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def dpas_operand_layouts(c: Layout, a_shape, b_shape, c_shape, a_type, subgroup_size: int, target: Target):
    """A and B layouts a dpas needs for result layout `c` (the seed's rule)."""
    if isinstance(c, XeGPUSlice):
        raise SimtifyError("a dpas result layout must be an #xegpu.layout, not a slice")
    f = fields(c)
    k = a_shape[1]
    a, b = {key: None for key in f}, {key: None for key in f}
    if f["sg_layout"] is not None:
        p = plan(c, c_shape)
        a["sg_layout"] = b["sg_layout"] = list(f["sg_layout"])
        a["sg_data"] = [p[0].D, k]
        b["sg_data"] = [k, p[1].D]
        a["order"] = b["order"] = f["order"]
    if f["inst_data"] is not None:
        inst_k = _target_k(target, a_type)
        a["inst_data"] = [f["inst_data"][0], inst_k or k]
        b["inst_data"] = [inst_k or k, f["inst_data"][1]]
    if f["lane_layout"] is not None:
        la, lb, lc = dpas_lane_layouts(a_type, subgroup_size)
        if list(lc.lane_layout) == f["lane_layout"] and list(lc.lane_data) == f["lane_data"]:
            a["lane_layout"], a["lane_data"] = list(la.lane_layout), list(la.lane_data)
            b["lane_layout"], b["lane_data"] = list(lb.lane_layout), list(lb.lane_data)
        else:
            # lanes the DPAS does not run: A and B share C's lanes along their own dims
            a["lane_layout"], a["lane_data"] = [f["lane_layout"][0], 1], [f["lane_data"][0], 1]
            b["lane_layout"], b["lane_data"] = [1, f["lane_layout"][1]], [1, f["lane_data"][1]]
            if prod(a["lane_layout"]) != subgroup_size or prod(b["lane_layout"]) != subgroup_size:
                a["lane_layout"] = a["lane_data"] = b["lane_layout"] = b["lane_data"] = None
    return build(a), build(b)


def _target_k(target: Target, a_type) -> int | None:
    try:
        return dpas_instruction(target, a_type).k
    except SimtifyError:
        return None


def runnable_c(layout: Layout, op: Operation, target: Target, subgroup_size: int) -> Layout | None:
    """What of `layout` a dpas can compute its result in: without instruction blocks
    the target has no DPAS for, or lanes other than the DPAS's (completion then gives
    the DPAS's own). A user that wants the rest converts."""
    if isinstance(layout, XeGPUSlice):
        return None
    f = fields(layout)
    t = op.lhs.type.element_type
    if f["inst_data"] is not None:
        try:
            mi = dpas_instruction(target, t)
            if not (1 <= f["inst_data"][0] <= mi.m and f["inst_data"][1] == mi.n):
                f["inst_data"] = None
        except SimtifyError:
            pass
    if f["lane_layout"] is not None:
        lc = dpas_lane_layouts(t, subgroup_size)[2]
        if f["lane_layout"] != list(lc.lane_layout) or (f["lane_data"] or [1, 1]) != list(lc.lane_data):
            f["lane_layout"] = f["lane_data"] = None
    return build(f)


def dpas_layouts(op: Operation, users_c: Layout | None, *, subgroup_size: int, threads: int, target: Target,
                 inst: bool, lanes: bool) -> tuple[Layout | None, Layout | None, Layout | None]:
    """A, B and C of `op`: its anchors; C from its users (`users_c`) where it states
    none, and A and B from C where they do not give each subgroup its C tiles' rows or
    columns with the whole K (split K is the operand's to convert); completed with the
    target's inst and lane fields where asked."""
    a, b, c = notes.dpas_layouts(op)
    if c is None:
        c = users_c
    if c is not None:
        b_shape = _shape(op.rhs)
        if len(b_shape) == 3:
            b_shape = (b_shape[0] * b_shape[2], b_shape[1])
        da, db = dpas_operand_layouts(c, _shape(op.lhs), b_shape, _shape(op.result), op.lhs.type.element_type,
                                      subgroup_size, target)

        def whole_k(stated: Layout, derived: Layout | None, v: SSAValue) -> bool:
            if derived is None or not has(derived, "sg_layout") or len(_shape(v)) != 2:
                return True
            return same(subgroup_part(stated), subgroup_part(derived), _shape(v), subgroup_size, threads)

        a = a if a is not None and whole_k(a, da, op.lhs) else da
        b = b if b is not None and whole_k(b, db, op.rhs) else db
    if inst or lanes:
        kw = dict(inst=inst, lanes=lanes, target=target, a_type=op.lhs.type.element_type)
        if c is not None:
            c = complete(c, _shape(op.result), subgroup_size, role="c", **kw)
        if a is not None:
            a = complete(a, _shape(op.lhs), subgroup_size, role="a", **kw)
        if b is not None and len(_shape(op.rhs)) == 2:
            b = complete(b, _shape(op.rhs), subgroup_size, role="b", **kw)
    return a, b, c


def scale_layout(operand: Layout | None, operand_shape, scale_shape, k_axis: int, subgroup_size: int) -> Layout | None:
    """The layout of a dpas_mx scale from its operand's (A: `k_axis` 1, B: 0): the same
    subgroups, instruction blocks and order with K counted in scale blocks; the scaled
    DPAS's lanes."""
    if operand is None or isinstance(operand, XeGPUSlice) or len(scale_shape) != 2:
        return None
    block = operand_shape[k_axis] // scale_shape[k_axis]
    f = fields(operand)
    out = {key: None for key in f}

    def in_blocks(extents):
        e = list(extents)
        if e[k_axis] % block:
            return None
        e[k_axis] //= block
        return e

    if f["sg_layout"] is not None:
        out["sg_layout"] = list(f["sg_layout"])
        out["sg_data"] = in_blocks([p.D for p in plan(operand, operand_shape)])
        out["order"] = f["order"]
        if out["sg_data"] is None:
            return None
    if f["inst_data"] is not None:
        out["inst_data"] = in_blocks(f["inst_data"])
    if f["lane_layout"] is not None:
        lanes = mx_scale_lane_layouts(subgroup_size)[1 - k_axis]
        out["lane_layout"], out["lane_data"] = list(lanes.lane_layout), list(lanes.lane_data)
    return build(out)


def mx_scale_layouts(op: Operation, a: Layout | None, b: Layout | None,
                     subgroup_size: int) -> tuple[Layout | None, Layout | None]:
    """scale_a and scale_b of a dpas_mx: its anchors, else from A's and B's layouts."""
    sa, sb = notes.scale_layouts(op)
    if sa is None and op.scale_a is not None and len(_shape(op.scale_a)) == 2:
        sa = scale_layout(a, _shape(op.lhs), _shape(op.scale_a), 1, subgroup_size)
    if sb is None and op.scale_b is not None and len(_shape(op.scale_b)) == 2:
        sb = scale_layout(b, _shape(op.rhs), _shape(op.scale_b), 0, subgroup_size)
    return sa, sb
