"""XeGPU layout propagation: give every vector value of a function a layout, starting
from the anchors (loads, stores, dpas, convert_layout, and any ``layout_result_i``).

The seed's rules, from an op's result to its operands and back:

- dpas: A takes C's ``sg_layout`` and rows and the whole K (``sg_data = [m, K]``), B the
  whole K and C's columns (``[K, n]``); their lanes are the target's DPAS lanes (B
  VNNI-packed for 16- and 8-bit types) — the subgroup that computes a C tile holds the
  A rows and B columns it needs;
- multi_reduction: the result is the source layout sliced by the reduced dims (a
  result layout that is no slice gives the source the reduced dims whole: layout 1);
- broadcast: the source is the result sliced by the new leading dims, and a unit dim
  is owned by whoever owns its row in the result;
- shape_cast adding or dropping unit dims: the same owners;
- transpose: the source layout is the result's under the inverse permutation;
- elementwise ops, ``scf.for`` / ``scf.if`` / ``scf.while`` carried values: one layout;
- gathers and scatters (``xegpu.load`` / ``xegpu.store``): the offsets and mask take the
  rows' layout without the chunk dim, and completion gives the rows one lane each
  (``lane_layout = [16, 1]``: a lane's chunk is contiguous) and 16-row instructions;
  ``load_matrix`` / ``store_matrix`` are anchors like block loads and stores.

The first layout a value gets stays (a layout missing inst or lane fields may be
refined by one that only adds them). A loop-carried value (an ``scf.for`` block argument
and its result, an ``scf.while`` after-argument and its result) is one value with one
layout. Then every use whose operand layout differs from what the op needs gets an
``xegpu.convert_layout`` on that edge (operand slot by slot; inits, yields and condition
operands included) — when the two ownership maps really differ, or when they cut the
value into different subgroup rounds or instruction blocks, not when the attributes
merely read differently. A dpas result whose layout comes from its users keeps only what
the DPAS runs, and an A or B layout that splits K is converted to the whole-K one. With completion on
(upstream's inst/lane layout kinds), missing ``inst_data`` and lane fields come from
the xe target (`xegpu_completion`), DPAS operands first.

    %a = xegpu.load_nd %t[0, 0] <{layout = #A}>   : ... -> vector<256x32xf16>
    %d = xegpu.dpas %a, %b, %c {layout_cd = #C}      // #A checked against A(#C)
    %s = vector.multi_reduction <add>, %d, %z [1]    // slice<#C, dims = [1]>
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.layout.xegpu import (
    Layout,
    XeGPUSlice,
    build,
    fields,
    flatten,
    has,
    insert_dims,
    permute,
    plan,
    reduce_dims,
    remove_dims,
    same,
    same_blocks,
    shape_cast_layout,
    subgroup_part,
    unit_view,
)
from simtify.target import Target, get_target
from simtify.target.xe import dpas_instruction, dpas_lane_layouts
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.propagate_layouts import is_elementwise
from simtify.transforms.propagation_engine import carried_results, is_vector
from simtify.transforms.xegpu_completion import complete, complete_gather, is_complete


def shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def is_per_element(op: Operation) -> bool:
    """Elementwise: every vector operand and result has the result's shape and layout."""
    if is_elementwise(op):
        return True
    if op.name in ("arith.select", "vector.bitcast") and op.results and is_vector(op.results[0]):
        return all(shape(v) == shape(op.results[0]) for v in op.operands if is_vector(v))
    return False


def _dims(attr) -> list[int]:
    return [int(x) for x in attr.get_values()]


@dataclass
class XeGPULayouts:
    """The outcome: a layout for each vector value, and the launch it was checked on."""

    func: Operation
    layouts: dict = field(default_factory=dict)
    subgroup_size: int = 16
    num_subgroups: int = 1
    target: Target | None = None

    @property
    def threads(self) -> int:
        return self.subgroup_size * self.num_subgroups

    def get(self, v: SSAValue) -> Layout | None:
        return self.layouts.get(v)

    def same(self, a: Layout | None, b: Layout | None, shape_) -> bool:
        return same(a, b, shape_, self.subgroup_size, self.threads)

    def alike(self, a: Layout | None, b: Layout | None, shape_) -> bool:
        """The same owners and the same instruction blocks: a value in `a` can stand
        where `b` is needed without a conversion."""
        return self.same(a, b, shape_) and same_blocks(a, b, shape_)

    @property
    def workgroup_level(self) -> bool:
        return self.num_subgroups > 1 or any(has(lay, "sg_layout") for lay in self.layouts.values())


def _count_subgroups(func: Operation) -> int:
    counts = set()

    def see(layout):
        if layout is not None and has(layout, "sg_layout"):
            counts.add(flatten(layout)[0].num_subgroups)

    for op in func.walk():
        for v in list(op.properties.values()) + list(op.attributes.values()):
            see(notes.of_attr(v))
        for r in op.results:
            see(notes.descriptor_layout(r.type))
    return max(counts) if counts else 1


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


def reduction_source(result: Layout | None, src_shape, dims) -> Layout | None:
    """The source layout a multi_reduction over `dims` needs for `result`."""
    if result is None:
        return None
    if isinstance(result, XeGPUSlice) and sorted(result.dims) == sorted(dims) and (
            result.parent.rank is None or result.parent.rank == len(src_shape)):
        return result.parent
    return insert_dims(result, sorted(dims), [src_shape[d] for d in sorted(dims)])


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


class Propagation:
    def __init__(self, func: Operation, *, subgroup_size: int = 16, target: str = "xe", inst: bool = False,
                 lanes: bool = False):
        self.func = func
        self.sg = subgroup_size
        self.target = get_target(target)
        self.inst = inst
        self.lanes = lanes
        self.result = XeGPULayouts(func, subgroup_size=subgroup_size, num_subgroups=_count_subgroups(func),
                                   target=self.target)
        self.L = self.result.layouts
        self.ops = [op for op in func.walk() if op is not func]
        self.tied = carried_ties(self.ops)
        # dpas results whose layout comes from their users: they take only what the DPAS
        # runs, and the users convert
        self.dpas_results = {op.result: op for op in self.ops if op.name == "xegpu.dpas"
                             and notes.dpas_layouts(op)[2] is None}

    # --- assignment ---------------------------------------------------------------

    def _set(self, v: SSAValue, layout: Layout) -> None:
        """Give `v` a layout, and the values it is carried as the same (one loop slot's
        block argument and result) the same one."""
        for t in self.tied.get(v, (v,)):
            self.L[t] = layout

    def offer(self, v: SSAValue, layout: Layout | None) -> bool:
        if layout is None or not is_vector(v) or flatten(layout)[0].rank is None:
            return False  # `#xegpu.layout<>` distributes nothing: no layout
        if v in self.dpas_results:
            layout = self.runnable_c(layout, self.dpas_results[v])
            if layout is None:
                return False
        cur = self.L.get(v)
        if cur is None:
            self._set(v, layout)
            return True
        if cur != layout and (_refines(layout, cur) or self._completes(layout, cur, shape(v))):
            self._set(v, layout)
            return True
        return False

    def _completes(self, new: Layout, old: Layout, shape_) -> bool:
        """`old` says only how subgroups share the value, and `new` says the same (by
        ownership) and adds instruction or lane fields."""
        if any(has(old, f) for f in ("inst_data", "lane_layout")):
            return False
        if not any(has(new, f) for f in ("inst_data", "lane_layout")):
            return False
        return self.result.same(subgroup_part(new), subgroup_part(old), shape_)

    # --- rules --------------------------------------------------------------------

    def needs(self, op: Operation) -> list[tuple[SSAValue, Layout]]:
        """(operand, layout the op needs it in), from the op's anchors and result layouts."""
        L = self.L.get
        name = op.name
        out: list[tuple[SSAValue, Layout | None]] = []
        if name == "xegpu.store_nd":
            out.append((op.value, self.anchor_need(notes.access_layout(op), op.value)))
        elif name in ("xegpu.load", "xegpu.store"):
            value = op.value
            have = L(value) if is_vector(value) else None
            own = notes.own_layout(op)
            if name == "xegpu.store":
                out.append((value, self.anchor_need(own, value)))
            lay = own if own is not None else have
            if is_vector(value):
                off = gather_offsets_layout(lay, shape(value), shape(op.offsets))
                out += [(op.offsets, off), (op.mask, off)]
        elif name == "xegpu.prefetch":
            out.append((op.offsets, notes.own_layout(op)))
        elif name == "xegpu.store_matrix":
            out.append((op.data, self.anchor_need(notes.own_layout(op), op.data)))
        elif name == "xegpu.dpas":
            a, b, c = self.dpas_layouts(op)
            out += [(op.lhs, a), (op.rhs, b)]
            if op.acc is not None:
                out.append((op.acc, c))
        elif name == "xegpu.convert_layout":
            out.append((op.source, op.input_layout.data))
        elif is_per_element(op):
            r = L(op.results[0])
            out += [(o, r) for o in op.operands if is_vector(o)]
        elif name == "vector.multi_reduction":
            r = L(op.results[0])
            out.append((op.source, reduction_source(r, shape(op.source), _dims(op.reduction_dims))))
            if is_vector(op.acc):
                out.append((op.acc, r))
        elif name == "vector.broadcast" and is_vector(op.source):
            out.append((op.source, broadcast_source(L(op.results[0]), shape(op.source), shape(op.results[0]))))
        elif name == "vector.transpose":
            perm = _dims(op.permutation)
            inv = [perm.index(i) for i in range(len(perm))]
            r = L(op.results[0])
            out.append((op.vector, permute(r, inv) if r is not None else None))
        elif name == "vector.shape_cast":
            out.append((op.source, shape_cast_layout(L(op.results[0]), shape(op.results[0]), shape(op.source))))
        elif name == "scf.for":
            out += [(o, L(r)) for o, r in zip(op.operands[3:], op.results)]
        elif name == "scf.yield" and op.parent_op() is not None and op.parent_op().name in ("scf.for", "scf.if"):
            out += [(o, L(r)) for o, r in zip(op.operands, op.parent_op().results)]
        elif name == "scf.while":
            before = op.regions[0].blocks.first
            out += [(o, L(a)) for o, a in zip(op.operands, before.args)]
        elif name == "scf.yield" and op.parent_op() is not None and op.parent_op().name == "scf.while":
            out += [(o, L(a)) for o, a in zip(op.operands, op.parent_op().regions[0].blocks.first.args)]
        elif name == "scf.condition":
            out += [(o, L(r)) for o, r in zip(op.operands[1:], op.parent_op().results)]
        return [(v, lay) for v, lay in out if lay is not None and is_vector(v)]

    def anchor_need(self, anchor: Layout | None, v: SSAValue) -> Layout | None:
        """What a store needs its value in: its anchor, or the value's layout where that
        only completes the anchor (adds inst or lane fields), so that completion does not
        make the two differ."""
        have = self.L.get(v) if is_vector(v) else None
        if anchor is None or have is None or have == anchor:
            return anchor
        if _refines(have, anchor) or self._completes(have, anchor, shape(v)):
            return have
        return anchor

    def gives(self, op: Operation) -> list[tuple[SSAValue, Layout]]:
        """(result, layout) an op's operands (or anchors) imply."""
        L = self.L.get
        name = op.name
        out: list[tuple[SSAValue, Layout | None]] = []
        if name == "xegpu.load_nd":
            out.append((op.value, notes.load_layout(op)))
        elif name == "xegpu.load_matrix":
            out.append((op.data, notes.own_layout(op)))
        elif name == "xegpu.load" and is_vector(op.value):
            out.append((op.value, notes.own_layout(op)))
            out.append((op.value, gather_value_layout(L(op.offsets), shape(op.value), shape(op.offsets))))
        elif name == "xegpu.dpas":
            out.append((op.result, self.dpas_layouts(op)[2]))
        elif name == "xegpu.convert_layout":
            # the target as written; the source's layout where it only adds fields to it
            out += [(op.result, op.target_layout.data), (op.result, L(op.source))]
        elif is_per_element(op):
            known = [L(o) for o in op.operands if is_vector(o) and L(o) is not None]
            if known:
                out += [(r, known[0]) for r in op.results]
        elif name == "vector.multi_reduction":
            # a reduction over every dim gives a scalar: every lane holds it, so it needs
            # no layout (upstream gives it the source's layout sliced over all dims)
            s = L(op.source) if is_vector(op.results[0]) else None
            if s is not None:
                out.append((op.results[0], reduce_dims(s, _dims(op.reduction_dims))))
        elif name == "vector.transpose":
            s = L(op.vector)
            if s is not None:
                out.append((op.results[0], permute(s, _dims(op.permutation))))
        elif name == "vector.shape_cast":
            out.append((op.results[0], shape_cast_layout(L(op.source), shape(op.source), shape(op.results[0]))))
        elif name == "scf.for":
            body = op.regions[0].blocks.first
            for o, r, a in zip(op.operands[3:], op.results, list(body.args)[1:]):
                out += [(r, L(o)), (a, L(o)), (a, L(r)), (r, L(a))]
        elif name == "scf.while":
            # before args = inits = what the after region yields; condition operands =
            # results = after args
            before, after = (r.blocks.first for r in op.regions)
            cond, yielded = before.ops.last, after.ops.last
            for o, a, y in zip(op.operands, before.args, yielded.operands):
                out += [(a, L(o)), (a, L(y))]
            for c, r, a in zip(list(cond.operands)[1:], op.results, after.args):
                out += [(r, L(c)), (a, L(c)), (r, L(a)), (a, L(r))]
        elif name == "scf.if":
            for region in op.regions:
                if region.blocks:
                    y = region.blocks.first.ops.last
                    out += [(r, L(o)) for r, o in zip(op.results, y.operands)]
        for i, r in enumerate(op.results):
            given = notes.result_layout(op, i)
            if given is not None:
                out.insert(0, (r, given))
        return [(v, lay) for v, lay in out if lay is not None]

    def runnable_c(self, layout: Layout, op: Operation) -> Layout | None:
        """What of `layout` a dpas can compute its result in: without instruction blocks
        the target has no DPAS for, or lanes other than the DPAS's (completion then gives
        the DPAS's own). A user that wants the rest converts."""
        if isinstance(layout, XeGPUSlice):
            return None
        f = fields(layout)
        t = op.lhs.type.element_type
        if f["inst_data"] is not None:
            try:
                mi = dpas_instruction(self.target, t)
                if not (1 <= f["inst_data"][0] <= mi.m and f["inst_data"][1] == mi.n):
                    f["inst_data"] = None
            except SimtifyError:
                pass
        if f["lane_layout"] is not None:
            lc = dpas_lane_layouts(t, self.sg)[2]
            if f["lane_layout"] != list(lc.lane_layout) or (f["lane_data"] or [1, 1]) != list(lc.lane_data):
                f["lane_layout"] = f["lane_data"] = None
        return build(f)

    def dpas_layouts(self, op: Operation) -> tuple[Layout | None, Layout | None, Layout | None]:
        a, b, c = notes.dpas_layouts(op)
        if c is None:
            c = self.L.get(op.result)
        if c is not None:
            da, db = dpas_operand_layouts(c, shape(op.lhs), self._b_shape(op), shape(op.result),
                                          op.lhs.type.element_type, self.sg, self.target)
            # an A or B the anchor states that does not give each subgroup its C tiles'
            # rows or columns with the whole K (split K) is the operand's to convert
            a = a if a is not None and self._gives_whole_k(a, da, op.lhs) else da
            b = b if b is not None and self._gives_whole_k(b, db, op.rhs) else db
        if self.inst or self.lanes:
            t = op.lhs.type.element_type
            kw = dict(inst=self.inst, lanes=self.lanes, target=self.target, a_type=t)
            if c is not None:
                c = complete(c, shape(op.result), self.sg, role="c", **kw)
            if a is not None:
                a = complete(a, shape(op.lhs), self.sg, role="a", **kw)
            if b is not None and len(shape(op.rhs)) == 2:
                b = complete(b, shape(op.rhs), self.sg, role="b", **kw)
        return a, b, c

    def _gives_whole_k(self, stated: Layout, derived: Layout | None, v: SSAValue) -> bool:
        if derived is None or not has(derived, "sg_layout") or len(shape(v)) != 2:
            return True
        return self.result.same(subgroup_part(stated), subgroup_part(derived), shape(v))

    @staticmethod
    def _b_shape(op):
        s = shape(op.rhs)
        return (s[0] * s[2], s[1]) if len(s) == 3 else s

    # --- the fixpoint ---------------------------------------------------------------

    def located(self, rule, op: Operation) -> list[tuple[SSAValue, Layout]]:
        try:
            return rule(op)
        except SimtifyError as e:
            raise e if e.where else e.at(location_of(op))

    def sweep(self) -> bool:
        changed = False
        for op in self.ops:
            for v, lay in self.located(self.gives, op):
                changed |= self.offer(v, lay)
        for op in reversed(self.ops):
            for v, lay in self.located(self.needs, op):
                changed |= self.offer(v, lay)
        return changed

    def neighbours(self, v: SSAValue) -> list[Operation]:
        """Ops whose rules read `v`'s layout (or that of a value tied to it)."""
        return [n for t in self.tied.get(v, (v,)) for n in self._neighbours(t)]

    def _neighbours(self, v: SSAValue) -> list[Operation]:
        owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
        out = [owner] if owner is not None and owner is not self.func else []
        for use in v.uses:
            out.append(use.operation)
            if use.operation.name in ("scf.yield", "scf.condition") and use.operation.parent_op() is not None:
                out.append(use.operation.parent_op())
        if owner is not None and owner.name in ("scf.for", "scf.if", "scf.while"):
            out += [r.blocks.first.ops.last for r in owner.regions if r.blocks]
        return out

    def fixpoint(self, start: list[Operation] | None = None) -> None:
        """Apply the rules until nothing changes: one sweep (forward then backward),
        then only the ops around values that changed."""
        from collections import deque

        try:
            if start is None:
                if not self.sweep():
                    return
                start = self.ops
            work = deque(start)
            queued = set(map(id, start))
            while work:
                op = work.popleft()
                queued.discard(id(op))
                for v, lay in self.located(self.gives, op) + self.located(self.needs, op):
                    if self.offer(v, lay):
                        for n in self.neighbours(v):
                            if id(n) not in queued:
                                queued.add(id(n))
                                work.append(n)
        except SimtifyError as e:
            raise e if e.where else e.at(location_of(self.func))

    def defaults_for_unanchored(self) -> None:
        """A program with no layout at all is one subgroup's: its dpas and stores get the
        target's lanes (upstream's lane layout kind), everything else follows."""
        if self.result.workgroup_level or not (self.inst or self.lanes):
            return
        for op in self.ops:
            if op.name == "xegpu.dpas" and self.L.get(op.result) is None:
                self.offer(op.result, complete(None, shape(op.result), self.sg, role="c", inst=self.inst,
                                               lanes=self.lanes, target=self.target,
                                               a_type=op.lhs.type.element_type))

    def complete_one(self) -> bool:
        """Complete the first value whose layout misses inst or lane fields: what loads
        produce and stores consume first (the block accesses fix lanes, as upstream's
        layout kinds do), then the rest, each in program order; slices last, since the
        values they are sliced from usually complete them."""
        anchored = [op.value for op in self.ops if op.name in ("xegpu.load_nd", "xegpu.store_nd", "xegpu.load",
                                                              "xegpu.store")]
        anchored += [op.data for op in self.ops if op.name in ("xegpu.load_matrix", "xegpu.store_matrix")]
        gathered = {op.value for op in self.ops if op.name in ("xegpu.load", "xegpu.store")}
        others = [v for op in self.ops for v in list(op.results) + [a for r in op.regions for b in r.blocks
                                                                    for a in b.args]]
        for slices in (False, True):
            for v in anchored + others:
                cur = self.L.get(v)
                if not is_vector(v) or is_complete(cur, inst=self.inst, lanes=self.lanes):
                    continue
                if isinstance(cur, XeGPUSlice) != slices or (cur is None and self.result.workgroup_level):
                    continue
                op = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
                try:
                    fill = complete_gather if v in gathered else complete
                    self._set(v, fill(cur, shape(v), self.sg, inst=self.inst, lanes=self.lanes))
                except SimtifyError as e:
                    raise e.at(location_of(op))
                self._completed = v
                return True
        return False

    def broadcast_defaults(self) -> list[Operation]:
        """A broadcast result that nothing else gives a layout takes its source's owners
        (whole along the new dims), rather than none: every subgroup holding the whole
        value would not match the source's tiles. Last, since it is the costliest."""
        changed = []
        for op in self.ops:
            if op.name == "vector.broadcast" and is_vector(op.source) and self.L.get(op.results[0]) is None:
                lay = broadcast_result(self.L.get(op.source), shape(op.source), shape(op.results[0]))
                if self.offer(op.results[0], lay):
                    changed += self.neighbours(op.results[0])
        return changed

    def run(self) -> XeGPULayouts:
        self.fixpoint()
        self.defaults_for_unanchored()
        self.fixpoint()
        while changed := self.broadcast_defaults():
            self.fixpoint(changed)
        if self.inst or self.lanes:
            while self.complete_one():
                self.fixpoint(self.neighbours(self._completed))
        for v, lay in list(self.L.items()):
            if lay is not None:
                try:
                    lay.check_shape(shape(v))
                except SimtifyError as e:
                    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
                    raise SimtifyError(f"{lay} does not distribute vector<{'x'.join(map(str, shape(v)))}>: {e.what}",
                                       location_of(owner)) from None
        return self.result

    # --- conflicts ------------------------------------------------------------------

    def resolve(self) -> None:
        """Put a convert_layout (or a clone of a splat constant) in front of every use
        whose layout differs from what its op needs."""
        for op in list(self.ops):
            taken: set[int] = set()  # a value in two operand slots may be needed in two layouts
            for v, need in self.located(self.needs, op):
                index = next(i for i, o in enumerate(op.operands) if o is v and i not in taken)
                taken.add(index)
                have = self.L.get(v)
                if have is None:
                    self._set(v, need)
                    continue
                if self.result.alike(have, need, shape(v)):
                    continue
                self._convert_use(op, index, v, have, need)

    def _convert_use(self, op: Operation, index: int, v: SSAValue, have: Layout, need: Layout) -> None:
        from simtify.ir.xegpu import ConvertLayoutOp

        producer = v.owner
        if isinstance(producer, Operation) and producer.name == "arith.constant" and _is_splat(producer):
            new = producer.clone()
            producer.parent_block().insert_op_after(new, producer)
            replacement = new.results[0]
        else:
            new = ConvertLayoutOp.build(operands=[v], result_types=[v.type],
                                        properties={"input_layout": notes.to_attr(have),
                                                    "target_layout": notes.to_attr(need)})
            op.parent_block().insert_op_before(new, op)
            replacement = new.results[0]
        self.L[replacement] = need
        op.operands[index] = replacement


def carried_ties(ops: list[Operation]) -> dict[SSAValue, tuple[SSAValue, ...]]:
    """Values that are one region-carried value and so have one layout: an ``scf.for``
    slot's block argument and result, an ``scf.while``'s after-region argument and
    result. What flows into them (inits, yields, condition operands) meets that layout
    on its own edge, converted where it differs."""
    tied: dict[SSAValue, tuple[SSAValue, ...]] = {}
    for op in ops:
        for a, r in carried_results(op):
            if is_vector(r):
                tied[a] = tied[r] = (a, r)
    return tied


def _refines(new: Layout, old: Layout) -> bool:
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


def _is_splat(op: Operation) -> bool:
    attr = op.properties.get("value") or op.attributes.get("value")
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        return False
    vals = attr.get_values()
    return len(vals) == 1 or len(set(vals)) == 1


def propagate(func: Operation, *, subgroup_size: int = 16, target: str = "xe", inst: bool = False,
              lanes: bool = False) -> XeGPULayouts:
    """Layouts for every vector value of `func`, conflicts resolved in the IR."""
    p = Propagation(func, subgroup_size=subgroup_size, target=target, inst=inst, lanes=lanes)
    p.run()
    p.resolve()
    return p.result


def annotate(analysis: XeGPULayouts) -> None:
    """Write the layouts back: anchors' own layouts, ``layout_result_i`` elsewhere."""
    L = analysis.get
    for op in analysis.func.walk():
        if op is analysis.func:
            continue
        name = op.name
        if name == "xegpu.load_nd":
            notes.set_inherent(op, "layout", L(op.value))
        elif name in ("xegpu.load", "xegpu.store"):
            if is_vector(op.value):
                notes.set_inherent(op, "layout", L(op.value))
                notes.set_result_layout(op, 0, None)
        elif name == "xegpu.prefetch":
            notes.set_inherent(op, "layout", L(op.offsets) or notes.own_layout(op))
        elif name in ("xegpu.load_matrix", "xegpu.store_matrix"):
            if is_vector(op.data):
                notes.set_inherent(op, "layout", L(op.data))
                notes.set_result_layout(op, 0, None)
        elif name == "xegpu.store_nd":
            notes.set_inherent(op, "layout", L(op.value))
        elif name == "xegpu.dpas":
            notes.clear(op)
            for key, v in (("layout_a", op.lhs), ("layout_b", op.rhs), ("layout_cd", op.result)):
                notes.set_inherent(op, key, L(v))
        elif name == "xegpu.convert_layout":
            continue
        else:
            for i, r in enumerate(op.results):
                if is_vector(r):
                    notes.set_result_layout(op, i, L(r))
