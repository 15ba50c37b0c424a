"""Subgroup→lane distribution: each instruction block becomes the vector one lane holds.

A lane's share of a block is what its lane layout gives it: per dim, round-robin
``lane_data`` chunks at lane ``lane_layout`` strides; its vector has, per dim, the
lane's local extent (``rounds · lane_data``), elements in row-major order of their local
index — the register order of `simtify.layout.xegpu`. Loads and stores keep the block
and state the lane layout, so each lane reads its fragment; DPAS takes the fragments
flattened (1-D, as upstream's lane-level IR does) and is checked against the target's
DPAS lanes:

    %c = xegpu.dpas %a, %b, %acc {layout_a = #A, ...} : vector<8x16xf16>, vector<16x16xf16>, ...
  becomes
    %a1 = vector.shape_cast %a : vector<8x1xf16> to vector<8xf16>
    %c1 = xegpu.dpas %a1, %b1, %acc1 : vector<8xf16>, vector<16xf16>, vector<8xf32> -> vector<8xf32>

Reductions reduce the lane's own elements, then across the lanes of the reduced dims
with ``gpu.subgroup_reduce`` clusters (size ``lane_layout``, stride its lane-id stride).
Lanes holding the same data store it once. A conversion between two lane layouts of a
block goes through the subgroup's region of shared local memory.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.errors import SimtifyError
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.ir import xegpu as xegpu_ir
from simtify.layout.xegpu import XeGPUSlice, linear_strides
from simtify.target.xe import check_dpas_shape, dpas_lane_layouts
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import Emitter
from simtify.transforms.xegpu_layouts import Layout, flatten, has, kept_dims, plan
from simtify.transforms.xegpu_propagate import XeGPULayouts, is_vector, shape
from simtify.transforms.xegpu_unroll import Unroller, kind_of, neutral


class LaneDistribution(Unroller):
    level = "xegpu-sg-to-lane"

    def __init__(self, func: Operation, analysis: XeGPULayouts, num_subgroups: int = 1):
        super().__init__(func, analysis)
        self.num_subgroups = num_subgroups
        self.lane_digit_cache: dict = {}
        self.sgid: SSAValue | None = None

    def _plans(self, layout, shape_):
        if has(layout, "sg_layout"):
            raise SimtifyError(f"{layout} still distributes among subgroups; run xegpu-wg-to-sg first")
        plans = plan(layout, shape_)
        if any(p.nb > 1 for p in plans):
            raise SimtifyError(f"{layout} cuts vector<{'x'.join(map(str, shape_))}> into several instruction "
                               "blocks; run xegpu-blocking first")
        return plans

    def grid(self, layout, shape_):
        return tuple(1 for _ in self._plans(layout, shape_))

    def piece_shape(self, layout, shape_):
        return tuple(p.lane_extent for p in self._plans(layout, shape_))

    def piece_layout(self, layout):
        return None

    def piece_block(self, layout, shape_):
        return tuple(shape_)

    def access_layout(self, layout):
        return layout

    def piece_offsets(self, layout, shape_, q, em):
        return [0] * len(shape_)

    def annotate(self, op, old, i=0):
        return op

    # --- ids ----------------------------------------------------------------------------

    def subgroup_id(self) -> SSAValue:
        if self.sgid is None:
            self.sgid = self.prelude.value(gpu_ir.SubgroupIdOp())
        return self.sgid

    def lane_digits(self, layout: Layout) -> list[SSAValue | None]:
        base, _ = flatten(layout)
        if base.lane_layout is None:
            return [None] * (base.rank or 0)
        order = base.order if base.order is not None else tuple(range(base.rank - 1, -1, -1))
        key = (base.lane_layout, order)
        if key not in self.lane_digit_cache:
            lane = self.prelude.value(gpu_ir.LaneIdOp())
            moving = [d for d in reversed(order) if base.lane_layout[d] > 1]
            out: list[SSAValue | None] = [None] * base.rank
            if moving:
                results = self.prelude.delinearize(lane, [base.lane_layout[d] for d in moving])[1:]
                for d, r in zip(moving, results):
                    out[d] = r
            self.lane_digit_cache[key] = out
        return self.lane_digit_cache[key]

    def store_guard(self, layout, vshape, em: Emitter) -> Emitter:
        """Lanes that differ only in a sliced-away dim hold the same data: the first stores it."""
        if not isinstance(layout, XeGPUSlice):
            return em
        base, removed = flatten(layout)
        digits = self.lane_digits(layout)
        conds = [em.cmpi("eq", digits[d], self.const(em, 0)) for d in removed if digits[d] is not None]
        if not conds:
            return em
        cond = conds[0]
        for c in conds[1:]:
            cond = em.andi(cond, c)
        return em.if_then(cond)

    # --- dpas -------------------------------------------------------------------------

    def op_xegpu_dpas(self, op: Operation, em: Emitter) -> None:
        a, b, c = self.L(op.lhs), self.L(op.rhs), self.L(op.result)
        (m, k), (n,) = shape(op.lhs), shape(op.result)[1:]
        a_t = op.lhs.type.element_type
        check_dpas_shape(self.A.target, a_t, m, n, k)
        want = dpas_lane_layouts(a_t, self.A.subgroup_size)
        for what, got, need, v in (("A", a, want[0], op.lhs), ("B", b, want[1], op.rhs), ("C", c, want[2], op.result)):
            if not self.A.same(got, need, shape(v)):
                raise SimtifyError(f"dpas {what}: {self.A.target.name}'s DPAS takes lane_layout = "
                                   f"{list(need.lane_layout)}, lane_data = {list(need.lane_data)}, not {got}")
        flat = [self._flat(self.one(v), em) for v in (op.lhs, op.rhs)]
        if op.acc is not None:
            flat.append(self._flat(self.one(op.acc), em))
        rt = VectorType(op.result.type.element_type, [prod(self.piece_shape(c, shape(op.result)))])
        new = xegpu_ir.DpasOp.build(operands=[flat[0], flat[1], flat[2:]], result_types=[rt])
        for key, x in (("layout_a", a), ("layout_b", b), ("layout_cd", c)):
            notes.set_inherent(new, key, x)
        d = em.value(new)
        self.vmap[op.result] = [em.shape_cast(d, self.piece_type(op.result))]

    @staticmethod
    def _flat(v: SSAValue, em: Emitter) -> SSAValue:
        return em.shape_cast(v, VectorType(v.type.element_type, [prod(v.type.get_shape())]))

    # --- across lanes ---------------------------------------------------------------------

    def op_vector_multi_reduction(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.results[0]
        s_lay = self.L(src)
        dims = [int(x) for x in op.reduction_dims.get_values()]
        if not is_vector(r):
            raise SimtifyError("a multi_reduction to a scalar is not distributed; keep one dim")
        clusters = []
        if s_lay is not None:
            base, _ = flatten(s_lay)
            if base.lane_layout is not None:
                strides = linear_strides(base.lane_layout, base.order)
                kept = kept_dims(s_lay)
                clusters = sorted((strides[kept[j]], base.lane_layout[kept[j]]) for j in dims
                                  if base.lane_layout[kept[j]] > 1)
        kind = kind_of(op)
        x = self.one(src)
        acc = self.one(op.acc)
        if not clusters:
            self.vmap[r] = [em.multi_reduction(kind, x, acc, dims)]
            return
        pt = self.piece_type(r)
        part = em.multi_reduction(kind, x, self.splat(em, neutral(kind, pt.element_type), pt, None), dims)
        flat = self._flat(part, em)
        sg = self.A.subgroup_size
        for stride, size in _merge(clusters):
            cluster = None if size * stride == sg and stride == 1 else size
            flat = em.subgroup_reduce(kind, flat, cluster, stride)
        self.vmap[r] = [em.combine(kind, em.shape_cast(flat, pt), acc)]

    def op_xegpu_convert_layout(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.result
        have, want = self.L(src), self.L(r)
        vshape = shape(src)
        if self.A.same(have, want, vshape):
            self.vmap[r] = [em.shape_cast(self.one(src), self.piece_type(r))]
            return
        elt = src.type.element_type
        rows = vshape[0]
        buf = em.workgroup_alloc([self.num_subgroups * rows] + list(vshape[1:]), elt)
        t = xegpu_ir.TensorDescType(list(vshape), elt)
        tdesc = em.value(xegpu_ir.CreateNdDescOp.build(operands=[buf, [], [], []], result_types=[t]))
        if self.num_subgroups > 1:
            row = em.apply(AffineDimExpr(0) * rows, [self.subgroup_id()])
        else:
            row = 0
        offs = [row] + [0] * (len(vshape) - 1)
        if _in_loop(op, self.func):
            em.barrier()
        target = self.store_guard(have, vshape, em)
        self.make_access(xegpu_ir.StoreNdOp, [self.one(src), tdesc], offs, {}, have, [], target)
        em.barrier()
        self.vmap[r] = [self.make_access(xegpu_ir.LoadNdOp, [tdesc], offs, {}, want, [self.piece_type(r)],
                                         em).results[0]]

    # --- re-cut blocks from blocking --------------------------------------------------------

    def _lane_slice(self, layout, vshape, offsets, sizes) -> tuple[list[int], list[int]]:
        out_o, out_s = [], []
        for p, o, s in zip(self._plans(layout, vshape), offsets, sizes):
            step = p.LL * p.LD
            if o % step or s % step:
                raise SimtifyError(f"a slice at {o} of {s} elements does not fall on whole lane rounds of {step}")
            out_o.append(o // step * p.LD)
            out_s.append(s // step * p.LD)
        return out_o, out_s

    def op_vector_extract_strided_slice(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.results[0]
        offs, sizes = self._lane_slice(self.L(src), shape(src), _ints(op.offsets), _ints(op.sizes))
        new = vector_ir.ExtractStridedSliceOp(self.one(src), offs, sizes, [1] * len(offs), self.piece_type(r))
        self.vmap[r] = [em.value(new)]

    def op_vector_insert_strided_slice(self, op: Operation, em: Emitter) -> None:
        dest, r = op.dest, op.results[0]
        sizes = list(shape(op.value_to_store))
        offs, _ = self._lane_slice(self.L(dest), shape(dest), _ints(op.offsets), sizes)
        self.vmap[r] = [em.insert_strided(self.one(op.value_to_store), self.one(dest), offs)]


def _ints(attr) -> list[int]:
    return [int(x.value.data) for x in attr.data]


def _merge(clusters: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(stride, size) lane clusters, adjacent ones merged into one."""
    out: list[tuple[int, int]] = []
    for stride, size in clusters:
        if out and out[-1][0] * out[-1][1] == stride:
            out[-1] = (out[-1][0], out[-1][1] * size)
        else:
            out.append((stride, size))
    return out


def _in_loop(op: Operation, func: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not func:
        if parent.name in ("scf.for", "scf.while"):
            return True
        parent = parent.parent_op()
    return False


def distribute_to_lanes(func: Operation, analysis: XeGPULayouts) -> None:
    from simtify.transforms.xegpu_pipeline import SUBGROUP_SIZE, recorded_threads

    threads = recorded_threads(func) or SUBGROUP_SIZE
    LaneDistribution(func, analysis, max(1, threads // SUBGROUP_SIZE)).run()
