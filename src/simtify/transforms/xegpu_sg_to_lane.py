"""Subgroup→lane distribution: each instruction block becomes the vector one lane holds.

A lane's share of a block is what its lane layout gives it: per dim, round-robin
``lane_data`` chunks at lane ``lane_layout`` strides; its vector has, per dim, the
lane's local extent (``rounds · lane_data``), elements in row-major order of their local
index — the register order of `simtify.layout.xegpu`. A load or store whose lane layout
is the fragment a 2D block access gives without one (lanes along the last dim; a VNNI
pair of rows: ``packed``) is written as upstream's lane-level IR writes it, a 1-D vector
and no layout; others state the lane layout and move each lane's fragment, 1-D as
well (upstream's lane-level accesses take no 2-D shares). DPAS takes the fragments flattened and is checked against the target's DPAS
lanes:

    %a = xegpu.load_nd %ta {layout = #A} : ... -> vector<8x16xf16>
    %c = xegpu.dpas %a, %b, %acc {layout_a = #A, ...} : vector<8x16xf16>, vector<16x16xf16>, ...
  becomes
    %a1 = xegpu.load_nd %ta1 : !xegpu.tensor_desc<8x16xf16> -> vector<8xf16>
    %b1 = xegpu.load_nd %tb1 <{packed}> : !xegpu.tensor_desc<16x16xf16> -> vector<16xf16>
    %c1 = xegpu.dpas %a1, %b1, %acc1 : vector<8xf16>, vector<16xf16>, vector<8xf32> -> vector<8xf32>

Reductions reduce the lane's own elements, then across the lanes of the reduced dims
with ``gpu.subgroup_reduce`` clusters (size ``lane_layout``, stride its lane-id stride).
Lanes holding the same data store it once (a sliced-away dim, or lanes past a lane
layout smaller than the subgroup, which wrap around it). A conversion between two lane
layouts of a block goes through the subgroup's region of a shared local memory matrix
(each lane stores and loads its own blocks with store_matrix / load_matrix). Interleaves
rearrange each lane's own share where the ownership maps allow, and a piece every lane
holds whole goes into a lane's share element by element where it is narrower than a
lane round; a strided slice on no whole lane rounds goes through shared local memory.

A subgroup's program inside ``gpu.warp_execute_on_lane_0`` that hands distributed values
out keeps the region's meaning (DESIGN): lane ``l`` receives the ``l``-th contiguous block
of each yielded value. Where the value's layout gives lanes other elements (round-robin:
lane ``l`` elements ``l, l + 16, ...``), the value is converted at the boundary to the
layout the result type implies. Upstream instead reads the region by the layout and
exchanges nothing.
"""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr

from simtify.errors import SimtifyError
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.ir import xegpu as xegpu_ir
from simtify.layout.xegpu import (Layout, XeGPULayout, XeGPUSlice, contiguous_blocks, flatten, has, kept_dims,
                                  lane_slice, linear_strides, plan, remove_dims)
from simtify.target.xe import (block_load_layout, check_dpas_shape, dpas_lane_layouts, element_bits,
                               mx_scale_lane_layouts, vnni_factor)
from simtify.transforms.emit import Emitter, kind_of, neutral_value
from simtify.transforms import warp_region
from simtify.transforms.launch import recorded_threads
from simtify.transforms.xegpu_pieces.block_access import flat_type, flattened
from simtify.transforms.xegpu_pieces.descriptors import Index
from simtify.transforms.xegpu_pieces.level import XeGPULevel
from simtify.transforms.xegpu_pieces.positional import MAX_GATHERED
from simtify.transforms.xegpu_propagate import XeGPULayouts, is_vector, shape


class LaneDistribution(XeGPULevel):
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

    def reshapes_pieces(self, src, r, em):
        """A lane's fragment of `r` holds the elements of its fragment of `src` in the
        same order (the ownership maps, by row-major element index, agree)."""
        lay_s, lay_r = self.layout_of(src), self.layout_of(r)
        if lay_s is None or lay_r is None:
            return lay_s is None and lay_r is None
        sg = self.analysis.subgroup_size
        try:
            a, b = lay_s.ownership(shape(src), sg, sg), lay_r.ownership(shape(r), sg, sg)
        except SimtifyError:
            return False
        return a.flat.shape == b.flat.shape and bool((a.flat == b.flat).all())

    def piece_offsets(self, layout, shape_, q, em):
        return [0] * len(shape_)

    def split_argument(self, old: SSAValue, new: SSAValue, em: Emitter) -> list[SSAValue]:
        """A vector argument every lane receives whole: each lane takes its fragment
        out of it, element by element at the fragment's coordinates."""
        if self.piece_type(old) == old.type:
            return [new]
        return [self.gathered(em, new, old, coords) for coords in self.coordinates_of(old, em)]

    def annotate(self, op, old, i=0):
        return op

    def piece_coordinates(self, layout, shape_, q, em):
        """A lane's fragment: per dim, rounds of ``lane_data`` elements ``lane_layout ·
        lane_data`` apart, from ``lane digit · lane_data``."""
        plans = self._plans(layout, shape_)
        kept = kept_dims(layout) if layout is not None else list(range(len(shape_)))
        digits = self.lane_digits(layout) if has(layout, "lane_layout") else [None] * (max(kept, default=-1) + 1)
        out = []
        for j, p in enumerate(plans):
            digit = digits[kept[j]]
            start = _lane_start(p)
            offset = 0 if digit is None else self.prelude.apply(start, [digit])
            out.append((offset, [k // p.LD * p.LL * p.LD + k % p.LD for k in range(p.lane_extent)]))
        return out

    def run(self) -> None:
        super().run()
        # the 2-D views of 1-D fragments nothing else reads (upstream canonicalizes them away)
        for op in reversed(list(self.func.walk())):
            if op.name == "vector.shape_cast" and not op.results[0].uses:
                op.detach()
                op.erase()

    def block_fragment(self, layout, vshape, element_type):
        """Upstream's lane-level form where the lane layout is the fragment a 2D block
        load gives without one (`block_load_layout`): lanes along the last dim, one row
        each, or a VNNI pair (quad) of rows for a packed load."""
        if not isinstance(layout, XeGPULayout) or len(vshape) not in (1, 2) or has(layout, "inst_data"):
            return None
        if any(p.wraps for p in plan(layout, vshape)):
            return None  # lanes wrapping around the block hold it more than once
        bits, sg = element_bits(element_type), self.analysis.subgroup_size
        for packed in (False, True) if len(vshape) == 2 and vnni_factor(bits) > 1 else (False,):
            want = block_load_layout(len(vshape), bits, packed, sg)
            # the fields, not only the owners: a VNNI pair of rows owns what two rows do
            if (layout.lane_layout, layout.lane_data) == (want.lane_layout, want.lane_data) and \
                    self.analysis.same(layout, want, vshape):
                return packed
        return None

    def op_xegpu_load_nd(self, op: Operation, em: Emitter) -> None:
        """An ``array_length`` load whose result stacks the blocks in a leading dim
        (older IR's form): one load of the lane's share of every block, 1-D, laid out as
        each block is::

            %v = xegpu.load_nd %t : !xegpu.tensor_desc<16x16xf16, #xegpu.block_tdesc_attr<array_length = 2>>
              -> vector<2x16x16xf16>                      // lane_layout = [1, 1, 16]
          becomes
            %v1 = xegpu.load_nd %t1 : ... -> vector<32xf16>
            %v2 = vector.shape_cast %v1 : vector<32xf16> to vector<2x16x1xf16>

        The blocks one under another (upstream's form, ``vector<64x16xf16>`` for two
        32x16 blocks) are the same when every lane holds the rows whole."""
        t, r = op.tensor_desc.type, op.value
        stacked = len(shape(r)) == t.rank + 1
        if t.array_length == 1 or not (stacked or len(shape(r)) == t.rank and shape(r)[0] == t.array_length * t.get_shape()[0]) or \
                op.transpose is not None or op.packed is not None:
            super().op_xegpu_load_nd(op, em)
            return
        lay = self.layout_of(r)
        if lay is not None and any(p.lane_extent != p.n for p in self._plans(lay, shape(r))[:1]):
            raise SimtifyError(f"the blocks of an array_length load are laid out alike: {lay} shares them among lanes")
        block_lay = remove_dims(lay, [0]) if stacked else lay
        piece = self.piece_type(r)
        offs = self.access_offsets(op, op.tensor_desc, em)
        tdesc = self.descriptor(op.tensor_desc, t.get_shape(), None, em)
        props = {k: v for k, v in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint")}
        stated = None if self.block_fragment(block_lay, t.get_shape(), piece.element_type) is False else block_lay
        new = self.make_access(xegpu_ir.LoadNdOp, [tdesc], offs, props, stated, [flat_type(piece)], em)
        self.value_pieces[r] = [em.shape_cast(new.results[0], piece)]

    # --- gathers and scatters -------------------------------------------------------------

    def gather_type(self, piece: VectorType, chunked: bool) -> VectorType:
        """One offset's chunk is a 1-D vector, as upstream's lane-level IR writes it."""
        shape_ = piece.get_shape()
        if chunked and prod(shape_[:-1]) == 1:
            return VectorType(piece.element_type, [shape_[-1]])
        return piece

    def gather_layout(self, layout):
        return None  # a lane's own gather

    def check_gather(self, op: Operation, value: SSAValue) -> None:
        """Each lane gathers from its own offsets, whole chunks (the hardware's per-lane
        address): the chunk dim is not shared among lanes."""
        lay, vshape = self.layout_of(value), shape(value)
        chunked = len(vshape) == len(shape(op.offsets)) + 1
        piece = self.piece_shape(lay, vshape)
        if chunked and piece[-1] != vshape[-1]:
            raise SimtifyError(f"each lane gathers whole chunks of {vshape[-1]}, but {lay} shares them among "
                               "lanes (use lane_layout = [16, 1])")
        rows = piece[:-1] if chunked else piece
        have = self.piece_shape(self.layout_of(op.offsets), shape(op.offsets))
        if tuple(have) != tuple(rows):
            raise SimtifyError(f"a lane holds {'x'.join(map(str, have))} offsets ({self.layout_of(op.offsets)}) but "
                               f"{'x'.join(map(str, rows))} rows of the value ({lay})")

    # --- shared local memory matrices ------------------------------------------------------

    def simt_program(self) -> bool:
        return True

    def lane_runs(self, layout, vshape, em: Emitter) -> list[tuple[tuple[Index, int, int], ...]]:
        """This lane's share of a block as blocks of its own, one per combination of runs:
        per dim (offset in the block, offset in the lane's vector, size) — all of the dim
        where one lane spans it, else each ``lane_data`` run, ``lane_layout x lane_data``
        apart."""
        if layout is None:
            return [tuple((0, 0, n) for n in vshape)]
        digits = self.lane_digits(layout) if has(layout, "lane_layout") else None
        kept = kept_dims(layout)
        per_dim = []
        for d, p in enumerate(self._plans(layout, vshape)):
            if p.LL == 1 or digits is None or digits[kept[d]] is None:
                per_dim.append([(0, 0, p.lane_extent)])
                continue
            start = _lane_start(p)
            per_dim.append([(em.apply(start + r * p.LL * p.LD, [digits[kept[d]]]), r * p.LD, p.LD)
                            for r in range(p.R2)])
        return list(product(*per_dim))

    def op_xegpu_load_matrix(self, op: Operation, em: Emitter) -> None:
        r = op.data
        if not is_vector(r):
            raise SimtifyError(f"a scalar load_matrix is not distributed by {self.level}")
        base = next(iter(self.matrix_pieces(op, r, em)))
        self.value_pieces[r] = [self.load_runs(self.one(op.mem_desc), base, self.layout_of(r), shape(r),
                                               self.piece_type(r), em)]

    def op_xegpu_store_matrix(self, op: Operation, em: Emitter) -> None:
        v = op.data
        if not is_vector(v):
            raise SimtifyError(f"a scalar store_matrix is not distributed by {self.level}")
        target = self.single_writer(self.layout_of(v), shape(v), em)
        base = next(iter(self.matrix_pieces(op, v, target)))
        self.store_runs(self.one(v), self.one(op.mem_desc), base, self.layout_of(v), shape(v), target)

    def load_runs(self, mem: SSAValue, base: list[Index], layout, vshape, pt: VectorType, em: Emitter,
                  read=None) -> SSAValue:
        """This lane's share (`pt`) of the block at `base` of matrix `mem` held in
        `layout`: one load_matrix of the lane's own block per run (`read(offsets, type)`
        instead, for other memory)."""
        if read is None:
            def read(offs, vt):
                return self.make_access(xegpu_ir.LoadMatrixOp, [mem], offs, {}, None, [vt], em).results[0]
        k = len(base) - len(vshape)
        runs = self.lane_runs(layout, vshape, em)
        out = None
        for run in runs:
            offs = base[:k] + [self.add(em, b, m) for b, (m, _, _) in zip(base[k:], run)]
            v = read(offs, VectorType(pt.element_type, [n for _, _, n in run]))
            if len(runs) == 1:
                return v
            if out is None:
                zero = 0.0 if isinstance(pt.element_type, AnyFloat) else 0
                out = self.splat(em, zero, pt, None)
            out = em.insert_strided(v, out, [at for _, at, _ in run])
        return out

    def op_vector_load(self, op: Operation, em: Emitter) -> None:
        """Each lane reads its own share from memory: one vector.load of each of its
        blocks (`lane_runs`), as a load_matrix of shared local memory is read::

            %v = vector.load %m[%c0, %c0, %c0] : memref<1x16x32xf32>, vector<1x16x32xf32>
                                                           // lane_layout = [1, 1, 16]
          becomes, on lane l
            %a = vector.load %m[%c0, %c0, l] : memref<1x16x32xf32>, vector<1x16x1xf32>
            %b = vector.load %m[%c0, %c0, l + 16] : ...;  %v1 = %a and %b side by side"""
        r = op.result
        base = [self.one(i) for i in op.indices]

        def read(offs, vt):
            return em.value(vector_ir.LoadOp(self.one(op.base), [self.index(em, o) for o in offs], vt))
        self.value_pieces[r] = [self.load_runs(None, base, self.layout_of(r), shape(r), self.piece_type(r), em,
                                               read)]

    def op_vector_store(self, op: Operation, em: Emitter) -> None:
        """Each lane writes its own share: one vector.store of each of its blocks, lanes
        holding the same data writing it once (`store_guard`)."""
        v = op.value_to_store
        lay = self.layout_of(v)
        target = self.store_guard(lay, shape(v), em)

        def write(part, offs):
            target.add(vector_ir.StoreOp(part, self.one(op.base), [self.index(target, o) for o in offs]))
        self.store_runs(self.one(v), None, [self.one(i) for i in op.indices], lay, shape(v), target, write)

    def store_runs(self, piece: SSAValue, mem: SSAValue, base: list[Index], layout, vshape, target: Emitter,
                   write=None) -> None:
        """This lane's share `piece` of the block at `base` of matrix `mem` held in
        `layout`: one store_matrix of the lane's own block per run (`write(part,
        offsets)` instead, for other memory)."""
        if write is None:
            def write(part, offs):
                self.make_access(xegpu_ir.StoreMatrixOp, [part, mem], offs, {}, None, [], target)
        k = len(base) - len(vshape)
        runs = self.lane_runs(layout, vshape, target)
        for run in runs:
            offs = base[:k] + [self.add(target, b, m) for b, (m, _, _) in zip(base[k:], run)]
            part = piece
            if len(runs) > 1:
                sizes = [n for _, _, n in run]
                part = target.value(vector_ir.ExtractStridedSliceOp(
                    piece, [at for _, at, _ in run], sizes, [1] * len(sizes),
                    VectorType(piece.type.element_type, sizes)))
            write(part, offs)

    # --- ids ----------------------------------------------------------------------------

    def subgroup_id(self) -> SSAValue:
        if self.sgid is None:
            self.sgid = self.prelude.value(gpu_ir.SubgroupIdOp())
        return self.sgid

    def lane_id(self) -> SSAValue:
        if self._lane_id is None:
            self._lane_id = self.prelude.value(gpu_ir.LaneIdOp())
        return self._lane_id

    def lane_digits(self, layout: Layout) -> list[SSAValue | None]:
        return self.id_digits(layout, "lane_layout", lambda: self.prelude.value(gpu_ir.LaneIdOp()),
                              self.lane_digit_cache)

    def store_guard(self, layout, vshape, em: Emitter) -> Emitter:
        """Lanes that hold the same data store it once: of lanes that differ only in a
        sliced-away dim, the first; of lanes past a lane layout smaller than the subgroup
        (they wrap around it, lane ``l`` holding what lane ``l % lanes`` does), none."""
        if layout is None:
            return em
        base, removed = flatten(layout)
        conds = []
        lanes = prod(base.lane_layout) if base.lane_layout is not None else self.analysis.subgroup_size
        if lanes < self.analysis.subgroup_size:
            conds.append(em.cmpi("ult", self.lane_id(), self.const(em, lanes)))
        if isinstance(layout, XeGPUSlice):
            digits = self.lane_digits(layout)
            conds += [em.cmpi("eq", digits[d], self.const(em, 0)) for d in removed if digits[d] is not None]
        if not conds:
            return em
        cond = conds[0]
        for c in conds[1:]:
            cond = em.andi(cond, c)
        return em.if_then(cond)

    # --- dpas -------------------------------------------------------------------------

    def op_xegpu_dpas(self, op: Operation, em: Emitter) -> None:
        a, b, c = self.layout_of(op.lhs), self.layout_of(op.rhs), self.layout_of(op.result)
        (m, k), (n,) = shape(op.lhs), shape(op.result)[1:]
        a_t = op.lhs.type.element_type
        check_dpas_shape(self.analysis.target, a_t, m, n, k)
        want = dpas_lane_layouts(a_t, self.analysis.subgroup_size)
        for what, got, need, v in (("A", a, want[0], op.lhs), ("B", b, want[1], op.rhs), ("C", c, want[2], op.result)):
            if not self.analysis.same(got, need, shape(v)):
                raise SimtifyError(f"dpas {what}: {self.analysis.target.name}'s DPAS takes lane_layout = "
                                   f"{list(need.lane_layout)}, lane_data = {list(need.lane_data)}, not {got}")
        flat = [flattened(self.one(v), em) for v in (op.lhs, op.rhs)]
        if op.acc is not None:
            flat.append(flattened(self.one(op.acc), em))
        rt = VectorType(op.result.type.element_type, [prod(self.piece_shape(c, shape(op.result)))])
        # the lanes are the target's DPAS lanes (checked above): the op states no layouts, as upstream's
        d = em.value(xegpu_ir.DpasOp.build(operands=[flat[0], flat[1], flat[2:]], result_types=[rt]))
        self.value_pieces[op.result] = [em.shape_cast(d, self.piece_type(op.result))]

    def op_xegpu_dpas_mx(self, op: Operation, em: Emitter) -> None:
        """Each lane's fragments of A, B, C and the scales into one lane-level dpas_mx. Where
        an operand's lanes are not the scaled DPAS's (`simtify.target.xe`) the op states
        them, so that it still says which lane holds what (upstream's test inputs use
        others, and shapes the hardware does not run)."""
        sg = self.analysis.subgroup_size
        want = dpas_lane_layouts(op.lhs.type.element_type, sg) + mx_scale_lane_layouts(sg)
        keyed = [("layout_a", op.lhs), ("layout_b", op.rhs), ("layout_cd", op.result), ("layout_a_scale", op.scale_a),
                 ("layout_b_scale", op.scale_b)]
        layouts = {}
        for (key, v), need in zip(keyed, want):
            if v is None or not is_vector(v):
                continue
            got = self.layout_of(v)
            if got is None:
                raise SimtifyError(f"dpas_mx: its {key[7:] or 'operand'} ({v.type}) has no layout to distribute it by")
            if not self.analysis.same(got, need, shape(v)):
                layouts[key] = got

        def lane_value(v):
            if v is None:
                return None
            return flattened(self.one(v), em) if is_vector(v) else self.one(v)

        rt = VectorType(op.result.type.element_type, [prod(self.piece_shape(self.layout_of(op.result),
                                                                            shape(op.result)))])
        new = self.matrix_piece(op, lane_value(op.lhs), lane_value(op.rhs), lane_value(op.acc),
                                (lane_value(op.scale_a), lane_value(op.scale_b)), rt, layouts)
        self.value_pieces[op.result] = [em.shape_cast(em.value(new), self.piece_type(op.result))]

    # --- across lanes ---------------------------------------------------------------------

    def op_vector_multi_reduction(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.results[0]
        s_lay = self.layout_of(src)
        dims = [int(x) for x in op.reduction_dims.get_values()]
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
            self.value_pieces[r] = [em.multi_reduction(kind, x, acc, dims)]
            return
        if not is_vector(r):
            # to a scalar: each lane's part, then across the lanes; every lane holds it
            part = self.reduce_pieces_to_scalar(op, em, from_acc=False)
            sg = self.analysis.subgroup_size
            for stride, size in _merge(clusters):
                cluster = None if size * stride == sg and stride == 1 else size
                part = em.subgroup_reduce(kind, part, cluster, stride)
            self.value_pieces[r] = [em.combine(kind, part, acc)]
            return
        pt = self.piece_type(r)
        part = em.multi_reduction(kind, x, self.splat(em, neutral_value(kind, pt.element_type), pt, None), dims)
        flat = flattened(part, em)
        sg = self.analysis.subgroup_size
        for stride, size in _merge(clusters):
            cluster = None if size * stride == sg and stride == 1 else size
            flat = em.subgroup_reduce(kind, flat, cluster, stride)
        self.value_pieces[r] = [em.combine(kind, em.shape_cast(flat, pt), acc)]

    def op_gpu_warp_execute_on_lane_0(self, op: Operation, em: Emitter) -> None:
        """A warp region handing distributed values out, its body already moved before it
        (`xegpu_pipeline._open_warp_regions`): each result is this lane's share of the
        value yielded. The region hands lane ``l`` the ``l``-th contiguous block of it
        (`warp_region.lane_blocks`, DESIGN's contract), whatever the value's layout says.
        Where the layout gives each lane those elements in that order, its share is the
        result as it is (the same elements in another shape only where dropping unit dims
        leaves the same shape). Where it gives them otherwise — round-robin, lane ``l``
        elements ``l, l + 16, ...`` — the value is converted at the boundary to the layout
        the distributed type implies (`contiguous_blocks`), through shared local memory as
        any conversion between lane layouts, so that the program keeps the region's
        meaning. Upstream instead reads the region by the layout and exchanges nothing::

            %r = gpu.warp_execute_on_lane_0(%l)[16] -> (vector<2xf32>) {
              gpu.yield %v : vector<32xf32>          // lane_layout = [16], lane_data = [1]
            }
          becomes, on each lane (elements 2l and 2l + 1, as the region hands them out)
            %r = <%v's share converted to lane_layout = [16], lane_data = [2]>"""
        for i, (r, v) in enumerate(zip(op.results, warp_region.yield_of(op).operands)):
            if v.type != r.type and r.uses and self.layout_of(r) is not None:
                raise SimtifyError(f"the warp region's result {i} is each lane's share ({r.type}), but it is "
                                   f"used after the region as a subgroup's value of layout {self.layout_of(r)}: "
                                   "after a region handing out distributed values the program is the lanes' "
                                   "(write its ops there at lane level, without layouts)")
            share = self.one(v)
            if share.type == r.type and not is_vector(v):
                self.value_pieces[r] = [share]
                continue
            layout = self.layout_of(v)
            what = f"the warp region's result {i}"
            if not is_vector(r) or share.type.element_type != r.type.element_type:
                raise SimtifyError(f"{what} is {r.type}, but each lane's share of the {v.type} it yields is "
                                   f"{share.type} (layout {layout})")
            sg = self.analysis.subgroup_size
            whole = np.tile(np.arange(prod(shape(v))), (sg, 1))  # uniform: every lane holds all of it
            blocks = whole if v.type == r.type else warp_region.lane_blocks(v.type, r.type)
            if not _same_elements(blocks, whole if layout is None else layout.ownership(shape(v), sg, sg).flat):
                handover = contiguous_blocks(shape(v), shape(r))
                if layout is None or handover is None or \
                        not _same_elements(blocks, handover.ownership(shape(v), sg, sg).flat):
                    raise SimtifyError(f"{what} hands lane l the l-th contiguous block of the {v.type} it yields, "
                                       f"as {r.type}, which no layout of {sg} lanes gives to convert the value's "
                                       f"({layout}) to")
                share = self.converted(share, v, handover, op, em)
            squeezed = [tuple(d for d in shape(x) if d != 1) for x in (share, r)]
            if squeezed[0] != squeezed[1]:
                raise SimtifyError(f"{what} is {r.type}, but each lane's share of the {v.type} it yields is "
                                   f"{share.type} (layout {layout})")
            self.value_pieces[r] = [em.shape_cast(share, r.type)]

    def op_xegpu_convert_layout(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.result
        if not is_vector(src):  # a scalar (a fully sliced layout): every lane holds it already
            self.value_pieces[r] = [self.one(src)]
            return
        self.value_pieces[r] = [self.converted(self.one(src), src, self.layout_of(r), op, em)]

    def converted(self, piece: SSAValue, v: SSAValue, want, op: Operation, em: Emitter) -> SSAValue:
        """This lane's share (`piece`) of `v` as the share `want` gives it: the same
        registers where the two agree, else through the subgroup's region of a shared
        local memory matrix."""
        have, vshape = self.layout_of(v), shape(v)
        pt = VectorType(v.type.element_type, self.piece_shape(want, vshape))
        if self.analysis.same(have, want, vshape):
            return em.shape_cast(piece, pt)
        return self.exchanged(vshape, [(piece, have, vshape, None)], (want, vshape, None, pt), op, em)

    def exchanged(self, vshape, writes, read, op: Operation, em: Emitter) -> SSAValue:
        """This lane's share of a block of a `vshape` matrix in the subgroup's region of
        shared local memory, after each lane stored its shares there: `writes` are
        (piece, its layout, its shape, where it lies or None for the origin), stored in
        turn (lanes holding the same data once each); `read` is (layout, shape, where,
        the lane's type) of what is loaded back."""
        elt = read[3].element_type
        rows = vshape[0]
        mem = self.shared_matrix([self.num_subgroups * rows] + list(vshape[1:]), elt, em)
        if self.num_subgroups > 1:
            row = em.apply(AffineDimExpr(0) * rows, [self.subgroup_id()])
        else:
            row = 0

        def offsets(at):
            at = list(at) if at is not None else [0] * len(vshape)
            return [self.add(em, row, at[0])] + at[1:]

        if _in_loop(op, self.func):
            em.barrier()
        for piece, layout, pshape, at in writes:
            self.store_runs(piece, mem, offsets(at), layout, pshape, self.store_guard(layout, pshape, em))
            em.barrier()
        layout, pshape, at, pt = read
        return self.load_runs(mem, offsets(at), layout, pshape, pt, em)

    # --- positions ------------------------------------------------------------------------

    def _position_held_whole(self, op: Operation, lay, vshape) -> tuple[list, bool]:
        """A vector.extract's or insert's position (its dynamic indices each lane's own)
        and whether every lane holds the dims it lies in whole under `lay`."""
        dynamic = iter(op.dynamic_position)
        position = [self.one(next(dynamic)) if x == DYNAMIC_INDEX else x for x in op.static_position.get_values()]
        return position, all(p.lane_extent == p.n for p in self._plans(lay, vshape)[:len(position)])

    def op_vector_extract(self, op: Operation, em: Emitter) -> None:
        """A position in leading dims every lane holds whole (an ``array_length`` load's
        blocks, unit dims): each lane takes it from its own share::

            %b = vector.extract %v[0] : vector<16x16xf16> from vector<2x16x16xf16>
          becomes, on lane_layout = [1, 16],
            %b = vector.extract %v1[0] : vector<16x1xf16> from vector<2x16x1xf16>"""
        src, r = op.vector, op.result
        lay = self.layout_of(src)
        position, whole = self._position_held_whole(op, lay, shape(src))
        k = len(position)
        if not whole or (is_vector(r) and not self.analysis.same(
                self.layout_of(r), remove_dims(lay, list(range(k))), shape(r))):
            raise SimtifyError(f"a vector.extract is distributed to lanes where every lane holds the whole of the "
                               f"dims it takes a position in, and the result keeps the source's layout of the "
                               f"others; {lay} gives {self.layout_of(r)} not")
        rt = self.piece_type(r) if is_vector(r) else r.type
        self.value_pieces[r] = [em.value(vector_ir.ExtractOp(self.one(src), position, rt))]

    def op_vector_insert(self, op: Operation, em: Emitter) -> None:
        """A position in leading dims every lane holds whole, as for vector.extract: each
        lane puts its share of the value into its own share of the destination::

            %r = vector.insert %v, %d[2] : vector<16xf32> into vector<8x16xf32>
          becomes, on lane_layout = [1, 16],
            %r = vector.insert %v1, %d1[2] : vector<1xf32> into vector<8x1xf32>"""
        value, dest, r = op.value_to_store, op.dest, op.result
        lay = self.layout_of(dest)
        position, whole = self._position_held_whole(op, lay, shape(dest))
        k = len(position)
        if not whole or not self.analysis.same(self.layout_of(r), lay, shape(r)) or (is_vector(value) and not (
                self.analysis.same(self.layout_of(value), remove_dims(lay, list(range(k))), shape(value)))):
            raise SimtifyError(f"a vector.insert is distributed to lanes where every lane holds the whole of the "
                               f"dims it puts a position in, and the value and result keep the destination's "
                               f"layout of the others; {lay} gives {self.layout_of(value)} and {self.layout_of(r)} "
                               f"not")
        self.value_pieces[r] = [em.value(vector_ir.InsertOp(self.one(value), self.one(dest), position))]

    # --- interleaving ---------------------------------------------------------------------

    def op_vector_interleave(self, op: Operation, em: Emitter) -> None:
        """Each lane interleaves its own pieces where its share of the result is its
        shares of the operands interleaved (upstream's case: ``lane_data`` doubled on the
        last dim); operands every lane holds whole are interleaved whole and the lane
        takes its share of the result."""
        a, b, r = op.lhs, op.rhs, op.results[0]
        ea, eb = (self._owned_elements(v, _interleaved_index(shape(a), odd)) for v, odd in ((a, False), (b, True)))
        er = self._owned_elements(r)
        if ea is not None and eb is not None and er is not None and \
                ea.shape == eb.shape and len(ea.shape) > 1 and 2 * ea.size == er.size and \
                np.array_equal(np.stack([ea, eb], axis=-1).reshape(er.shape), er):
            self.value_pieces[r] = [em.value(vector_ir.InterleaveOp.build(
                operands=[self.one(a), self.one(b)], result_types=[self.piece_type(r)]))]
            return
        if not (self._held_whole(a) and self._held_whole(b)):
            raise SimtifyError(f"a vector.interleave is distributed to lanes where each lane's share of the result "
                               f"is its shares of the operands interleaved, or the operands are held whole; "
                               f"{self.layout_of(a)} and {self.layout_of(b)} give {self.layout_of(r)} neither")
        whole = em.value(vector_ir.InterleaveOp.build(operands=[self.one(a), self.one(b)], result_types=[r.type]))
        self.value_pieces[r] = [self._share_of_whole(whole, r, em)]

    def op_vector_deinterleave(self, op: Operation, em: Emitter) -> None:
        """Each lane deinterleaves its own piece where its shares of the results are the
        even and odd elements of its share of the source; a source every lane holds whole
        is deinterleaved whole and each lane takes its shares of the results."""
        src, results = op.source, list(op.results)
        es = self._owned_elements(src)
        per_lane = es is not None and len(es.shape) > 1 and es.shape[-1] % 2 == 0
        if per_lane:
            half = list(es.shape[:-1]) + [es.shape[-1] // 2, 2]
            for k, r in enumerate(results):
                er = self._owned_elements(r, _interleaved_index(shape(r), bool(k)))
                per_lane = per_lane and er is not None and 2 * er.size == es.size and \
                    np.array_equal(es.reshape(half)[..., k].reshape(er.shape), er)
        if per_lane:
            new = em.add(vector_ir.DeinterleaveOp.build(operands=[self.one(src)],
                                                        result_types=[self.piece_type(results[0])] * 2))
            for r, v in zip(results, new.results):
                self.value_pieces[r] = [v]
            return
        if not self._held_whole(src):
            raise SimtifyError(f"a vector.deinterleave is distributed to lanes where each lane's shares of the "
                               f"results are the even and odd elements of its share of the source, or the source "
                               f"is held whole; {self.layout_of(src)} gives {self.layout_of(results[0])} and "
                               f"{self.layout_of(results[1])} neither")
        new = em.add(vector_ir.DeinterleaveOp.build(operands=[self.one(src)], result_types=[results[0].type] * 2))
        for r, v in zip(results, new.results):
            self.value_pieces[r] = [self._share_of_whole(v, r, em)]

    def _owned_elements(self, v: SSAValue, index=None) -> np.ndarray | None:
        """Per lane, the elements of `v` it holds in register order, shaped as its piece
        (`index` maps them to another value's flat indices); None where the layout
        cannot say."""
        sg = self.analysis.subgroup_size
        lay = self.layout_of(v) or XeGPULayout()
        try:
            flat = lay.ownership(tuple(shape(v)), sg, sg).flat
        except SimtifyError:
            return None
        if index is not None:
            flat = index(flat)
        return flat.reshape((sg, *self.piece_shape(self.layout_of(v), shape(v))))

    def _held_whole(self, v: SSAValue) -> bool:
        return tuple(self.piece_shape(self.layout_of(v), shape(v))) == tuple(shape(v))

    def _share_of_whole(self, whole: SSAValue, r: SSAValue, em: Emitter) -> SSAValue:
        """This lane's share of `r` taken out of `whole`, all of `r`."""
        if self._held_whole(r):
            return whole
        [coords] = self.coordinates_of(r, em)
        return self.gathered(em, whole, r, coords)

    def _select_into_share(self, value: SSAValue, dest: SSAValue, at: list[int], em: Emitter) -> SSAValue:
        """This lane's share of `dest` with the elements that fall in the slice at `at`
        taken from `value`, which every lane holds whole (blocking's pieces of a value
        the lanes share out, where a piece is narrower than a lane round): element by
        element, each lane picking what its own coordinates cover::

            %d2 = vector.insert_strided_slice %p, %d offsets = [0, 5, 0]
                : vector<1x1x1xf16> into vector<1x16x1xf16>      // %d on lane_layout = [1, 16, 1]
          becomes, on each lane (its row l),
            %x = vector.extract %p[0, 0, 0];  %d2 = select(l == 5, %x, %d1[0, 0, 0]) ..."""
        pt = self.piece_type(dest)
        if prod(pt.get_shape()) > MAX_GATHERED:
            raise SimtifyError(f"a slice is inserted into a lane's share element by element, up to {MAX_GATHERED} "
                               f"elements, not {prod(pt.get_shape())}")
        sizes = shape(value)
        [coords] = self.coordinates_of(dest, em)
        share = self.one(dest)
        elt = pt.element_type
        out = []
        for local in product(*[range(len(steps)) for _, steps in coords]):
            inside, position = None, []
            for (offset, steps), k, o, n in zip(coords, local, at, sizes):
                if isinstance(offset, int):
                    c = offset + steps[k] - o
                    if not 0 <= c < n:
                        inside = False
                        break
                    position.append(c)
                    continue
                c = em.apply(AffineDimExpr(0) + (steps[k] - o), [offset])
                ok = em.andi(em.cmpi("sge", c, self.const(em, 0)), em.cmpi("slt", c, self.const(em, n)))
                position.append(em.select(ok, c, self.const(em, 0)))  # in range where it is not picked
                inside = ok if inside is None else em.andi(inside, ok)
            old = em.extract(share, list(local), elt)
            if inside is False:
                out.append(old)
                continue
            new = em.extract(self.one(value), position, elt)
            out.append(new if inside is None else em.select(inside, new, old))
        return em.value(vector_ir.FromElementsOp.build(operands=[out], result_types=[pt]))


    # --- re-cut blocks from blocking --------------------------------------------------------

    def _lane_slice(self, layout, vshape, offsets, sizes) -> tuple[list[int], list[int]]:
        got = lane_slice(layout, vshape, offsets, sizes)
        if got is None:
            raise SimtifyError(f"a slice at {list(offsets)} of {list(sizes)} elements does not fall on whole lane "
                               f"rounds of {layout}")
        return got

    def op_vector_extract_strided_slice(self, op: Operation, em: Emitter) -> None:
        """Each lane slices its own share where the slice falls on whole lane rounds; a
        source every lane holds whole is sliced whole and each lane takes its share; any
        other slice goes through the subgroup's region of shared local memory (upstream
        leaves such a slice undistributed)::

            %s = vector.extract_strided_slice %v {offsets = [3], sizes = [32], strides = [1]}
                : vector<64xf32> to vector<32xf32>           // both lane_layout = [16]
          becomes, on each lane
            store_matrix of its share of %v;  barrier;  load_matrix of its share of %s at [3]"""
        src, r = op.source, op.results[0]
        lay = self.layout_of(src)
        if lay is None:  # held whole: each lane takes its fragment out
            super().op_vector_extract_strided_slice(op, em)
            return
        at, sizes = _ints(op.offsets), _ints(op.sizes)
        got = lane_slice(lay, shape(src), at, sizes)
        if got is not None and self.analysis.same(self.layout_of(r), lay, shape(r)):
            offs, lane_sizes = got
            new = vector_ir.ExtractStridedSliceOp(self.one(src), offs, lane_sizes, [1] * len(offs),
                                                  self.piece_type(r))
            self.value_pieces[r] = [em.value(new)]
            return
        if self._held_whole(src):
            whole = em.value(vector_ir.ExtractStridedSliceOp(self.one(src), at, sizes, [1] * len(at), r.type))
            self.value_pieces[r] = [self._share_of_whole(whole, r, em)]
            return
        at = at + [0] * (len(shape(src)) - len(at))
        self.value_pieces[r] = [self.exchanged(shape(src), [(self.one(src), lay, shape(src), None)],
                                               (self.layout_of(r), shape(r), at, self.piece_type(r)), op, em)]

    def op_vector_insert_strided_slice(self, op: Operation, em: Emitter) -> None:
        dest, r = op.dest, op.results[0]
        at = _ints(op.offsets)
        # a value of lower rank fills the trailing dims: one element of each leading dim
        sizes = [1] * (len(at) - len(shape(op.value_to_store))) + list(shape(op.value_to_store))
        slot = lane_slice(self.layout_of(dest), shape(dest), at, sizes)
        if self._held_whole(op.value_to_store) and (slot is None or not _fills(self.one(op.value_to_store), slot[1])):
            # a value every lane holds whole (a block without lanes) where the slice falls on
            # no whole lane rounds, or on rounds that give each lane less than the whole:
            # each lane takes its own elements of it. The result may be laid out other than
            # the destination (blocking's last piece of a value that a reduction then takes
            # whole): converted after
            inserted = self._select_into_share(op.value_to_store, dest, at, em)
            self.value_pieces[r] = [self.converted(inserted, dest, self.layout_of(r), op, em)]
            return
        d_lay, r_lay, v = self.layout_of(dest), self.layout_of(r), op.value_to_store
        d_piece, value = self.one(dest), self.one(v)
        if lane_slice(d_lay, shape(dest), at, sizes) is None and r_lay is not None and \
                len(shape(v)) == len(shape(dest)) and lane_slice(r_lay, shape(dest), at, sizes) is not None:
            # the slice falls on whole lane rounds of the result's layout (every lane holds
            # the rows where lanes share none): both operands converted to it
            d_piece, d_lay = self.converted(d_piece, dest, r_lay, op, em), r_lay
            value = self.converted(value, v, r_lay, op, em)
        if lane_slice(d_lay, shape(dest), at, sizes) is None:
            # the slice falls on no whole lane rounds: the destination's shares and then the
            # value's put in place in the subgroup's region of shared local memory, and
            # each lane's share of the result loaded back (upstream leaves it undistributed)
            self.value_pieces[r] = [self.exchanged(shape(dest), [(self.one(dest), self.layout_of(dest), shape(dest),
                                                                  None), (value, self.layout_of(v), shape(v), at)],
                                                   (r_lay, shape(r), None, self.piece_type(r)), op, em)]
            return
        offs, lane_sizes = self._lane_slice(d_lay, shape(dest), at, sizes)
        if not _fills(value, lane_sizes):
            # the piece was distributed over other lanes than the block it lands in: inserting
            # it would put one lane's elements where another lane's belong
            raise SimtifyError(f"a {'x'.join(map(str, sizes))} piece held per lane as {value.type} does not fit the "
                               f"{'x'.join(map(str, lane_sizes))} slot its block's lanes give it (open: a piece "
                               "distributed over other lanes than its block's)")
        self.value_pieces[r] = [em.insert_strided(value, d_piece, offs)]


def _fills(piece: SSAValue, lane_sizes) -> bool:
    """Does a lane's `piece` fill exactly the slot of `lane_sizes` elements its block's
    lanes give it (leading unit dims aside)?"""
    lead = len(lane_sizes) - len(piece.type.get_shape())
    return list(piece.type.get_shape()) == list(lane_sizes[lead:]) and all(n == 1 for n in lane_sizes[:lead])


def _same_elements(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Do two per-lane element maps give every lane the same elements in the same order?"""
    return a is not None and b is not None and a.shape == b.shape and bool((a == b).all())


def _interleaved_index(vshape, odd: bool):
    """Flat indices of a vector of `vshape` to those of its elements in the vector twice
    as long in the last dim that interleaves it (`odd`: as the second operand)."""
    n = vshape[-1] if vshape else 1

    def index(flat: np.ndarray) -> np.ndarray:
        return flat // n * 2 * n + flat % n * 2 + int(odd)
    return index


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
    threads = recorded_threads(func) or analysis.subgroup_size
    LaneDistribution(func, analysis, max(1, threads // analysis.subgroup_size)).run()


def _lane_start(p) -> AffineExpr:
    """Where lane ``d0``'s first element of a dim planned by `p` lies: ``d0·LD``, modulo
    the block where the lanes wrap around it."""
    return AffineDimExpr(0) * p.LD % p.I if p.wraps else AffineDimExpr(0) * p.LD
