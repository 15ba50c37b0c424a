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

This is the propagation engine (`propagation_engine`) with XeGPU's table (`RULES`; the
elementwise, transpose and carrier requirements are the engine's shared rules) and
XeGPU's policy as the engine's hooks: the first layout a value gets stays, but a layout
missing inst or lane fields may be refined by one that only adds them (`refine`); a
loop-carried value (an ``scf.for`` block argument and its result, an ``scf.while``
after-argument and its result) is one value with one layout (`place`); and conflicts are
converted on operand edges only (`conflict_edges`): every use whose operand layout
differs from what the op needs gets an ``xegpu.convert_layout`` on that edge (operand
slot by slot; inits, yields and condition operands included) — when the two ownership
maps really differ, or when they cut the value into different subgroup rounds or
instruction blocks, not when the attributes merely read differently. A dpas result whose
layout comes from its users keeps only what the DPAS runs (`admit`), and an A or B
layout that splits K is converted to the whole-K one. With completion on (upstream's
inst/lane layout kinds), missing ``inst_data`` and lane fields come from the xe target
(`xegpu_completion`), DPAS operands first.

    %a = xegpu.load_nd %t[0, 0] <{layout = #A}>   : ... -> vector<256x32xf16>
    %d = xegpu.dpas %a, %b, %c {layout_cd = #C}      // #A checked against A(#C)
    %s = vector.multi_reduction <add>, %d, %z [1]    // slice<#C, dims = [1]>
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir.assembly import is_bitwise_splat
from simtify.layout.xegpu import (
    Layout,
    XeGPUSlice,

    broadcast_result,
    broadcast_source,
    check_block,
    flatten,
    gather_offsets_layout,
    gather_value_layout,
    has,
    is_whole_blocks,
    lane_slice,
    last_dim_scaled,
    reduce_dims,
    reduction_source,
    refines,
    same,
    same_blocks,
    shape_cast_layout,
    subgroup_part,
    whole_blocks,
)
from simtify.target import Target, get_target
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.launch import recorded_threads
from simtify.transforms.propagate_layouts import is_elementwise
from simtify.transforms.propagation_engine import (
    Elementwise,
    Engine,
    OpRule,
    ScfCondition,
    ScfFor,
    ScfIf,
    ScfWhile,
    ScfYield,
    Transpose,
    carried_ties,
    is_vector,
)
from simtify.transforms.xegpu_completion import complete, complete_gather, is_complete
from simtify.transforms.xegpu_dpas_layouts import dpas_layouts, mx_scale_layouts, runnable_c
from simtify.transforms.xegpu_subgroup_layouts import scalar_reduction_layout, store_layout

MATRIX_OPS = ("xegpu.dpas", "xegpu.dpas_mx")


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


# --- the rules, one per op (elementwise ops, transpose and the carriers' requirements
# are the engine's shared rules) --------------------------------------------------------


class FromNeeds(OpRule):
    """XeGPU's flow: forward, the results take what `gives` says (from operands and
    anchors); backward, each operand takes what its op requires."""

    def gives(self, p, op) -> list[tuple[SSAValue, Layout | None]]:
        return []

    def forward(self, p, op):
        for v, lay in self.gives(p, op):
            p.assign(v, lay)

    def backward(self, p, op):
        for i, need in p.required(op).items():
            p.assign(op.operands[i], need)


class XeGPURule(FromNeeds):
    """An op's rule as (operand, layout the op needs it in) pairs, `needs`."""

    def needs(self, p, op) -> list[tuple[SSAValue, Layout | None]]:
        return []

    def required(self, p, op):
        out: dict[int, Layout] = {}
        for v, lay in self.needs(p, op):
            if lay is not None and is_vector(v):
                # a value in two operand slots may be needed in two layouts
                out[next(i for i, o in enumerate(op.operands) if o is v and i not in out)] = lay
        return out


class LoadNd(XeGPURule):
    def gives(self, p, op):
        return [(op.value, notes.load_layout(op))]


class LoadMatrix(XeGPURule):
    def gives(self, p, op):
        return [(op.data, notes.own_layout(op))]


class StoreNd(XeGPURule):
    def needs(self, p, op):
        return [(op.value, p.anchor_need(notes.access_layout(op), op.value))]


class StoreMatrix(XeGPURule):
    def needs(self, p, op):
        return [(op.data, p.anchor_need(notes.own_layout(op), op.data))]


class Prefetch(XeGPURule):
    def needs(self, p, op):
        return [(op.offsets, notes.own_layout(op))]


class Gather(XeGPURule):
    """``xegpu.load`` / ``xegpu.store``: the offsets and mask take the rows' layout
    without the chunk dim; a load's rows take its anchor, or their offsets' with each
    row whole."""

    def gives(self, p, op):
        if op.name != "xegpu.load" or not is_vector(op.value):
            return []
        return [(op.value, notes.own_layout(op)),
                (op.value, gather_value_layout(p.layout_of(op.offsets), shape(op.value), shape(op.offsets)))]

    def needs(self, p, op):
        value, out = op.value, []
        own = notes.own_layout(op)
        if op.name == "xegpu.store":
            out.append((value, p.anchor_need(own, value)))
        if is_vector(value):
            off = gather_offsets_layout(own if own is not None else p.layout_of(value), shape(value), shape(op.offsets))
            out += [(op.offsets, off), (op.mask, off)]
        return out


class Dpas(XeGPURule):
    def gives(self, p, op):
        return [(op.result, p.dpas_layouts(op)[2])]

    def needs(self, p, op):
        a, b, c = p.dpas_layouts(op)
        return [(op.lhs, a), (op.rhs, b)] + ([(op.acc, c)] if op.acc is not None else [])


class DpasMx(Dpas):
    """As dpas, and the scales as A and B have them (`mx_scale_layouts`)."""

    def needs(self, p, op):
        sa, sb = p.scale_layouts(op)
        scales = [(v, lay) for v, lay in ((op.scale_a, sa), (op.scale_b, sb)) if v is not None and is_vector(v)]
        return super().needs(p, op) + scales


class ConvertLayout(XeGPURule):
    def gives(self, p, op):
        # the target as written; the source's layout where it only adds fields to it
        return [(op.result, op.target_layout.data), (op.result, p.layout_of(op.source))]

    def needs(self, p, op):
        # without an input_layout it anchors: the value is held as the result is (the
        # target, with the instruction blocks and lanes completion gives it), so that no
        # conversion goes in front of the one the program states
        if op.input_layout is not None:
            return [(op.source, op.input_layout.data)]
        return [(op.source, p.layout_of(op.result) or op.target_layout.data)]


class MultiReduction(XeGPURule):
    def gives(self, p, op):
        # a reduction over every dim gives a scalar: every lane holds it, so it needs
        # no layout (upstream gives it the source's layout sliced over all dims)
        s = p.layout_of(op.source) if is_vector(op.results[0]) else None
        return [(op.results[0], reduce_dims(s, _dims(op.reduction_dims)))] if s is not None else []

    def needs(self, p, op):
        r = p.layout_of(op.results[0])
        out = [(op.source, reduction_source(r, shape(op.source), _dims(op.reduction_dims)))]
        return out + ([(op.acc, r)] if is_vector(op.acc) else [])


class Broadcast(XeGPURule):
    def needs(self, p, op):
        if not is_vector(op.source):
            return []
        return [(op.source, broadcast_source(p.layout_of(op.results[0]), shape(op.source), shape(op.results[0])))]


class ShapeCast(XeGPURule):
    def gives(self, p, op):
        return [(op.results[0], shape_cast_layout(p.layout_of(op.source), shape(op.source), shape(op.results[0])))]

    def needs(self, p, op):
        return [(op.source, shape_cast_layout(p.layout_of(op.results[0]), shape(op.results[0]), shape(op.source)))]


def _read_whole(v: SSAValue) -> bool:
    """Is `v` only read element by element (scalar ``vector.extract``s, as the pieces of
    a vector with no linear rule take theirs)? Every thread then holds it whole."""
    return bool(v.uses) and all(u.operation.name == "vector.extract" and not is_vector(u.operation.results[0])
                                for u in v.uses)


def _ints(attr) -> list[int]:
    return [int(x.value.data) for x in attr.data]


def _holding(layout: Layout | None, op: Operation) -> bool:
    """Can lanes holding the whole value in `layout` slice or fill the slot of `op`?
    (A layout without lanes is a block each lane holds whole: its ``inst_data`` is that
    block's shape and says nothing of the other value.)"""
    if not has(layout, "lane_layout") or has(layout, "inst_data"):
        return False
    whole = op.source if op.name == "vector.extract_strided_slice" else op.dest
    part = op.results[0] if op.name == "vector.extract_strided_slice" else op.value_to_store
    try:
        check_block(layout, shape(part))  # lanes wrapping around the part hold no slice of it
        return lane_slice(layout, shape(whole), _ints(op.offsets), shape(part)) is not None
    except SimtifyError:
        return False


def _bits(v: SSAValue) -> int:
    from simtify.target.xe import element_bits

    return element_bits(v.type.element_type)


class Bitcast(XeGPURule):
    """``vector.bitcast``: the result holds the source's bytes where the source holds
    them, its last dim's data fields scaled by the width ratio (`last_dim_scaled`)."""

    def gives(self, p, op):
        return [(op.results[0], last_dim_scaled(p.layout_of(op.source), _bits(op.source), _bits(op.results[0])))]

    def needs(self, p, op):
        return [(op.source, last_dim_scaled(p.layout_of(op.results[0]), _bits(op.results[0]), _bits(op.source)))]


class Interleave(XeGPURule):
    """``vector.interleave``: the result holds each pair where the operands hold its
    elements, its last dim's data fields doubled (`last_dim_scaled`)."""

    def gives(self, p, op):
        return [(op.results[0], last_dim_scaled(p.layout_of(op.lhs), 2, 1))]


class Deinterleave(XeGPURule):
    """``vector.deinterleave``: both results are held where the source holds their
    elements, its last dim's data fields halved."""

    def gives(self, p, op):
        return [(r, last_dim_scaled(p.layout_of(op.source), 1, 2)) for r in op.results]


class StridedSlice(XeGPURule):
    """``extract_strided_slice`` / ``insert_strided_slice`` (what blocking re-cuts tiles
    with, below the subgroup level): the slice is held as the whole value is, and an
    insert's result as its destination — one layout, where its lanes hold the slice in
    whole lane rounds; elsewhere the layouts meet at the users, converted there. At the
    lane level a block every lane holds whole (`whole_blocks`) is sliced from and
    inserted into blocks every lane holds whole."""

    def gives(self, p, op):
        if op.name == "vector.extract_strided_slice":
            held = [p.layout_of(op.source)]
            if not p.inst and is_whole_blocks(held[0], shape(op.source)):
                return [(op.results[0], whole_blocks(shape(op.results[0])))]
        else:  # the destination's layout, else (a splat to fill) the inserted slice's
            held = [p.layout_of(op.dest), p.layout_of(op.value_to_store)]
            if not p.inst and is_whole_blocks(held[0], shape(op.dest)):
                return [(op.results[0], held[0])]
        return [(op.results[0], lay) for lay in held if _holding(lay, op)][:1]

    def needs(self, p, op):
        r = p.layout_of(op.results[0])
        if not p.inst and is_whole_blocks(r, shape(op.results[0])):
            # at the lane level, a block every lane holds whole: so are the others
            if op.name == "vector.extract_strided_slice":
                return [(op.source, whole_blocks(shape(op.source)))]
            return [(op.dest, r), (op.value_to_store, whole_blocks(shape(op.value_to_store)))]
        if not _holding(r, op):
            return []
        if op.name == "vector.extract_strided_slice":
            return [(op.source, r)]
        return [(op.dest, r), (op.value_to_store, r)]


class CarriedFor(FromNeeds, ScfFor):
    """An init, its block argument and the result meet; the argument and result are one
    value (`carried_ties`)."""

    def gives(self, p, op):
        out = []
        for o, r, a in zip(op.operands[3:], op.results, list(op.regions[0].blocks.first.args)[1:]):
            out += [(r, p.layout_of(o)), (a, p.layout_of(o)), (a, p.layout_of(r)), (r, p.layout_of(a))]
        return out


class CarriedWhile(FromNeeds, ScfWhile):
    """Before args take the inits and what the after region yields; condition operands,
    results and after args take each other's."""

    def gives(self, p, op):
        before, after = (r.blocks.first for r in op.regions)
        cond, yielded = before.ops.last, after.ops.last
        out = []
        for o, a, y in zip(op.operands, before.args, yielded.operands):
            out += [(a, p.layout_of(o)), (a, p.layout_of(y))]
        for c, r, a in zip(list(cond.operands)[1:], op.results, after.args):
            out += [(r, p.layout_of(c)), (a, p.layout_of(c)), (r, p.layout_of(a)), (a, p.layout_of(r))]
        return out


class CarriedIf(FromNeeds, ScfIf):
    """The results take what the regions yield."""

    def gives(self, p, op):
        out = []
        for region in op.regions:
            if region.blocks:
                out += [(r, p.layout_of(o)) for r, o in zip(op.results, region.blocks.first.ops.last.operands)]
        return out


class Yield(FromNeeds, ScfYield):
    pass


class Condition(FromNeeds, ScfCondition):
    pass


RULES: dict[str, OpRule] = {
    "xegpu.load_nd": LoadNd(),
    "xegpu.load_matrix": LoadMatrix(),
    "xegpu.store_nd": StoreNd(),
    "xegpu.store_matrix": StoreMatrix(),
    "xegpu.prefetch": Prefetch(),
    "xegpu.load": Gather(),
    "xegpu.store": Gather(),
    "xegpu.dpas": Dpas(),
    "xegpu.dpas_mx": DpasMx(),
    "xegpu.convert_layout": ConvertLayout(),
    "vector.multi_reduction": MultiReduction(),
    "vector.broadcast": Broadcast(),
    "vector.transpose": Transpose(),
    "vector.shape_cast": ShapeCast(),
    "vector.bitcast": Bitcast(),
    "vector.interleave": Interleave(),
    "vector.deinterleave": Deinterleave(),
    "vector.extract_strided_slice": StridedSlice(),
    "vector.insert_strided_slice": StridedSlice(),
    "scf.for": CarriedFor(),
    "scf.while": CarriedWhile(),
    "scf.if": CarriedIf(),
    "scf.yield": Yield(),
    "scf.condition": Condition(),
}


# --- the engine with XeGPU's rules, anchors and policy --------------------------------


class Propagation(Engine):
    """The engine with XeGPU's table. Its policy: a layout may be replaced by one that
    only adds fields (`refine`), a loop-carried value is one value (`place`), and
    conflicts are converted on operand edges only."""

    rules = RULES
    per_element = Elementwise()
    conflict_edges = ("operands",)

    def __init__(self, func: Operation, *, subgroup_size: int = 16, target: str = "xe", inst: bool = False,
                 lanes: bool = False, workgroup_input: bool = False):
        self.sg = subgroup_size
        self.workgroup_input = workgroup_input
        self.target = get_target(target)
        self.inst = inst
        self.lanes = lanes
        self.result = XeGPULayouts(func, subgroup_size=subgroup_size, num_subgroups=_count_subgroups(func),
                                   target=self.target)
        super().__init__(func, self.result.layouts)
        self.program = self.ops()
        self.tied = carried_ties(self.program)
        # dpas results whose layout comes from their users: they take only what the DPAS
        # runs, and the users convert
        self.dpas_results = {op.result: op for op in self.program if op.name in MATRIX_OPS
                             and notes.dpas_layouts(op)[2] is None}
        # `complete_one`'s values in the order it completes them, and the gathers' values
        self._completion_order: list[SSAValue] | None = None
        self._gathered: set[SSAValue] = set()

    # --- the family's policy --------------------------------------------------------

    def is_per_element(self, op: Operation) -> bool:
        return is_per_element(op)

    def admit(self, v: SSAValue, layout: Layout) -> Layout | None:
        if flatten(layout)[0].rank is None:
            return None  # `#xegpu.layout<>` distributes nothing: no layout
        if v in self.dpas_results:
            return runnable_c(layout, self.dpas_results[v], self.target, self.sg)
        return layout

    def refine(self, v: SSAValue, old: Layout, new: Layout) -> Layout | None:
        """`new` replaces `old` where it only adds fields (`refines`, `_completes`)."""
        new = self.admit(v, new)
        if new is not None and new != old and (refines(new, old) or self._completes(new, old, shape(v))):
            return new
        return None

    def place(self, v: SSAValue, layout: Layout) -> None:
        """`v` and the values it is carried as (one loop slot's block argument and
        result) take `layout`."""
        for t in self.tied.get(v, (v,)):
            super().place(t, layout)

    def _completes(self, new: Layout, old: Layout, shape_) -> bool:
        """`old` says only how subgroups share the value, and `new` says the same (by
        ownership) and adds instruction or lane fields."""
        if any(has(old, f) for f in ("inst_data", "lane_layout")):
            return False
        if not any(has(new, f) for f in ("inst_data", "lane_layout")):
            return False
        return self.result.same(subgroup_part(new), subgroup_part(old), shape_)

    # --- rules, located -------------------------------------------------------------

    # (plain try blocks, not a context manager: these run for every op on every sweep)

    @staticmethod
    def located(e: SimtifyError, op: Operation) -> SimtifyError:
        """An error a rule raised, naming `op` if it names no place."""
        return e if e.where else e.at(location_of(op))

    def forward(self, op: Operation) -> None:
        """The anchors an op states (``layout_result_i``) first, then its rule."""
        try:
            given = [(r, notes.result_layout(op, i)) for i, r in enumerate(op.results)]
            for r, lay in given:
                self.assign(r, lay)
            super().forward(op)
        except SimtifyError as e:
            raise self.located(e, op)

    def backward(self, op: Operation) -> None:
        try:
            super().backward(op)
        except SimtifyError as e:
            raise self.located(e, op)

    def required(self, op: Operation) -> dict[int, Layout]:
        try:
            return super().required(op)
        except SimtifyError as e:
            raise self.located(e, op)

    def anchor_need(self, anchor: Layout | None, v: SSAValue) -> Layout | None:
        """What a store needs its value in: its anchor, or the value's layout where that
        only completes the anchor (adds inst or lane fields), so that completion does not
        make the two differ."""
        have = self.layout_of(v) if is_vector(v) else None
        if anchor is None or have is None or have == anchor:
            return anchor
        if refines(have, anchor) or self._completes(have, anchor, shape(v)):
            return have
        return anchor

    def dpas_layouts(self, op: Operation) -> tuple[Layout | None, Layout | None, Layout | None]:
        """A, B and C of a dpas: its anchors', else C from its users and A and B from C."""
        return dpas_layouts(op, self.layout_of(op.result), subgroup_size=self.sg, threads=self.result.threads,
                            target=self.target, inst=self.inst, lanes=self.lanes)

    def scale_layouts(self, op: Operation) -> tuple[Layout | None, Layout | None]:
        a, b, _ = self.dpas_layouts(op)
        return mx_scale_layouts(op, a, b, self.sg)

    # --- the fixed point: the engine's flow, then XeGPU's defaults -------------------

    def flow(self, ops: list[Operation] | None = None) -> None:
        try:
            super().flow(self.program if ops is None else ops)
        except SimtifyError as e:
            raise e if e.where else e.at(location_of(self.func))

    def defaults_for_unanchored(self) -> None:
        """A program with no layout at all is one subgroup's: its dpas and stores get the
        target's lanes (upstream's lane layout kind), everything else follows."""
        if self.result.workgroup_level or not (self.inst or self.lanes):
            return
        for op in self.program:
            if op.name in MATRIX_OPS and self.layout_of(op.result) is None:
                self.assign(op.result, complete(None, shape(op.result), self.sg, role="c", inst=self.inst,
                                                lanes=self.lanes, target=self.target,
                                                a_type=op.lhs.type.element_type))

    def complete_one(self) -> bool:
        """Complete the first value whose layout misses inst or lane fields: what loads
        produce and stores consume first (the block accesses fix lanes, as upstream's
        layout kinds do), then the rest, each in program order; slices last, since the
        values they are sliced from usually complete them."""
        if self._completion_order is None:  # the program does not change while it runs
            ops = self.program
            anchored = [op.value for op in ops if op.name in ("xegpu.load_nd", "xegpu.store_nd", "xegpu.load",
                                                             "xegpu.store")]
            anchored += [op.data for op in ops if op.name in ("xegpu.load_matrix", "xegpu.store_matrix")]
            others = [v for op in ops for v in list(op.results) + [a for r in op.regions for b in r.blocks
                                                                   for a in b.args]]
            self._completion_order = [v for v in anchored + others if is_vector(v)]
            self._gathered = {op.value for op in ops if op.name in ("xegpu.load", "xegpu.store")}
        gathered, workgroup_level = self._gathered, self.result.workgroup_level
        for slices in (False, True):
            for v in self._completion_order:
                cur = self.layout_of(v)
                if is_complete(cur, inst=self.inst, lanes=self.lanes):
                    continue
                if isinstance(cur, XeGPUSlice) != slices or (cur is None and workgroup_level):
                    continue
                if cur is None and _read_whole(v):
                    continue
                op = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
                try:
                    fill = complete_gather if v in gathered else complete
                    self.place(v, fill(cur, shape(v), self.sg, inst=self.inst, lanes=self.lanes))
                except SimtifyError as e:
                    raise e.at(location_of(op))
                return True
        return False

    def broadcast_defaults(self) -> bool:
        """A broadcast result that nothing else gives a layout takes its source's owners
        (whole along the new dims), rather than none: every subgroup holding the whole
        value would not match the source's tiles. Last, since it is the costliest."""
        self.changed = False
        for op in self.program:
            if op.name == "vector.broadcast" and is_vector(op.source) and self.layout_of(op.results[0]) is None:
                self.assign(op.results[0], broadcast_result(self.layout_of(op.source), shape(op.source),
                                                            shape(op.results[0])))
        return self.changed

    def subgroup_defaults(self) -> bool:
        """Upstream's subgroup layout kind: in a kernel launched with several subgroups,
        a 2-D block store that no layout reaches shares its value among them, and so
        does the source of a reduction to a scalar
        (`simtify.transforms.xegpu_subgroup_layouts`); the rest follows from them.
        Only for a stage that reads workgroup-level IR: a later stage's kernel records
        the same launch, but each of its subgroups runs its own tiles."""
        threads = recorded_threads(self.func) if self.func.name == "gpu.func" and self.workgroup_input else None
        count = threads // self.sg if threads else 1
        stores = [op for op in self.program if op.name == "xegpu.store_nd" and is_vector(op.value)
                  and self.layout_of(op.value) is None]
        reductions = [op for op in self.program if op.name == "vector.multi_reduction"
                      and not is_vector(op.results[0]) and self.layout_of(op.source) is None]
        if count <= 1 or not (stores or reductions) or self.result.num_subgroups not in (1, count):
            return False
        self.result.num_subgroups = count
        self.revisit_all()  # the rules compare layouts over the threads launched
        for op in stores:
            self.assign(op.value, store_layout(shape(op.value), count))
        for op in reductions:
            if self.layout_of(op.source) is None:  # a store of the same value comes first
                self.assign(op.source, scalar_reduction_layout(shape(op.source), count))
        return self.changed

    def run(self) -> XeGPULayouts:
        self.flow()
        self.changed = False
        if self.subgroup_defaults():
            self.flow()
        self.defaults_for_unanchored()
        self.flow()
        while self.broadcast_defaults():
            self.flow()
        if self.inst or self.lanes:
            while self.complete_one():
                self.flow()
        for v, lay in list(self.layouts.items()):
            if lay is not None:
                try:
                    lay.check_shape(shape(v))
                except SimtifyError as e:
                    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
                    raise SimtifyError(f"{lay} does not distribute vector<{'x'.join(map(str, shape(v)))}>: {e.what}",
                                       location_of(owner)) from None
        return self.result

    # --- conflicts: operand edges only --------------------------------------------

    def before_resolve(self, op: Operation) -> None:
        """A reshaping shape_cast whose result took its users' layout, one no layout of
        its source casts to, takes the cast of its source's layout instead: its users
        then convert (a conversion in front of the cast could not give their layout).
        A layout the cast itself states is kept."""
        if op.name != "vector.shape_cast" or notes.result_layout(op, 0) is not None:
            return  # a layout the cast states stays
        src, res = op.source, op.results[0]
        have, given = self.layout_of(src), self.layout_of(res)
        if have is None or given is None or shape_cast_layout(given, shape(res), shape(src)) is not None:
            return
        cast = shape_cast_layout(have, shape(src), shape(res))
        if cast is not None and not self.result.alike(cast, given, shape(res)):
            self.place(res, cast)

    def must_convert(self, op: Operation, index: int, have: Layout, need: Layout) -> bool:
        return not self.result.alike(have, need, shape(op.operands[index]))

    def unreached_operand(self, op: Operation, index: int, need: Layout) -> None:
        self.place(op.operands[index], need)

    def convert_operand(self, op: Operation, index: int, need: Layout) -> None:
        """A convert_layout (or a clone of a splat constant) in front of the use."""
        from simtify.ir.xegpu import ConvertLayoutOp

        v = op.operands[index]
        have = self.layout_of(v)
        producer = v.owner
        if isinstance(producer, Operation) and producer.name == "arith.constant" and is_splat_constant(producer):
            new = producer.clone()
            producer.parent_block().insert_op_after(new, producer)
            replacement = new.results[0]
        else:
            new = ConvertLayoutOp.build(operands=[v], result_types=[v.type],
                                        properties={"input_layout": notes.to_attr(have),
                                                    "target_layout": notes.to_attr(need)})
            op.parent_block().insert_op_before(new, op)
            replacement = new.results[0]
        self.layouts[replacement] = need
        op.operands[index] = replacement


def is_splat_constant(op: Operation) -> bool:
    """A dense constant whose elements are all one value, bit for bit."""
    attr = op.properties.get("value") or op.attributes.get("value")
    return isinstance(attr, DenseIntOrFPElementsAttr) and is_bitwise_splat(attr)


def propagate(func: Operation, *, subgroup_size: int = 16, target: str = "xe", inst: bool = False,
              lanes: bool = False, workgroup_input: bool = False) -> XeGPULayouts:
    """Layouts for every vector value of `func`, conflicts resolved in the IR;
    `workgroup_input`: `func` is workgroup-level IR, whose launch stores share out."""
    p = Propagation(func, subgroup_size=subgroup_size, target=target, inst=inst, lanes=lanes,
                    workgroup_input=workgroup_input)
    p.run()
    p.resolve(p.program)
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
        elif name in MATRIX_OPS:
            notes.clear(op)
            keyed = [("layout_a", op.lhs), ("layout_b", op.rhs), ("layout_cd", op.result)]
            if name == "xegpu.dpas_mx":
                keyed += [(k, v) for k, v in (("layout_a_scale", op.scale_a), ("layout_b_scale", op.scale_b))
                          if v is not None and is_vector(v)]
            for key, v in keyed:
                notes.set_inherent(op, key, L(v))
        elif name == "xegpu.convert_layout":
            # a stated target that completion filled in (instruction blocks, lanes) is
            # written as the result is held, as an anchor's layout is, where no stated
            # input_layout says what it converts from (the source is then held so too)
            stated, held = notes.of_attr(op.target_layout), L(op.result)
            if op.input_layout is None and stated is not None and held is not None and \
                    refines(held, stated):
                notes.set_inherent(op, "target_layout", held)
            continue
        else:
            for i, r in enumerate(op.results):
                if is_vector(r):
                    notes.set_result_layout(op, i, L(r))
