"""Vectors whose elements are functions of their own positions, piece by piece:
``vector.step``, non-splat constants, and masks (``create_mask`` / ``constant_mask``).

A piece's elements lie at ``offset + step`` per dim (`PieceRewriter.piece_coordinates`:
a contiguous box for subgroup tiles and instruction blocks, rounds of ``lane_data`` for a
lane's fragment), where only the offset depends on the subgroup or lane. So a piece is
a fixed vector plus a splat of the offset, as upstream writes it:

    %s = vector.step {layout_result_0 = #xegpu.layout<sg_layout = [16], sg_data = [8]>} : vector<128xindex>
  becomes, in the subgroup at offset %o (= sgid·8 mod 128),
    %b = vector.step : vector<8xindex>
    %s0 = arith.addi %b, (vector.broadcast %o) : vector<8xindex>

A constant is distributed where its values are linear in their coordinates (upstream's
condition), or where every piece's offset is known; otherwise each piece takes its
elements out of the whole constant at its coordinates (``vector.extract`` at dynamic
positions, ``vector.from_elements``), as upstream's lane level does; a mask piece of a box is the box
clamped (``create_mask max(0, min(m - offset, size))``), of a fragment the comparison of
each element's coordinate with the bound.
"""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.errors import SimtifyError
from simtify.ir import vector as vector_ir
from simtify.ir.assembly import int_values
from simtify.transforms.emit import Emitter
from simtify.transforms.xegpu_pieces.descriptors import Index
from simtify.transforms.xegpu_pieces.rewriter import PieceRewriter
from simtify.transforms.xegpu_propagate import shape


# the most elements a piece of a non-linear constant takes one by one
MAX_GATHERED = 1024


class PositionalOps(PieceRewriter):
    def coordinates_of(self, r: SSAValue, em: Emitter) -> list[list[tuple[Index, list[int]]]]:
        """Per piece of `r`, its `piece_coordinates`."""
        lay, vshape = self.layout_of(r), shape(r)
        return [self.piece_coordinates(lay, vshape, q, em) for q in product(*[range(n) for n in self.grid_of(r)])]

    def fixed(self, em: Emitter, r: SSAValue, values: np.ndarray) -> SSAValue:
        """A constant piece of `r` holding `values`."""
        pt = self.piece_type(r)
        new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(pt, values.reshape(-1).tolist()), pt)
        self.annotate(new, r)
        return em.value(new)

    def plus_offset(self, em: Emitter, r: SSAValue, values: np.ndarray, strides, coords) -> SSAValue:
        """`values` plus ``Σ strides[d] · offset[d]`` of a piece at `coords`: folded where
        the offsets are known, else added as a splat."""
        known = sum(s * o for s, (o, _) in zip(strides, coords) if isinstance(o, int))
        moving = [(s, o) for s, (o, _) in zip(strides, coords) if not isinstance(o, int) and s]
        base = self.fixed(em, r, values + known)
        if not moving:
            return base
        expr = AffineDimExpr(0) * moving[0][0]
        for i, (s, _) in enumerate(moving[1:], start=1):
            expr = expr + AffineDimExpr(i) * s
        shift = em.apply(expr, [o for _, o in moving])
        pt = self.piece_type(r)
        splat = em.value(self.annotate(vector_ir.BroadcastOp(shift, pt), r))
        return em.value(self.annotate(arith.AddiOp(base, splat), r))

    def op_vector_step(self, op: Operation, em: Emitter) -> None:
        r = op.results[0]
        self.value_pieces[r] = [self.plus_offset(em, r, np.array(c[0][1]), [1], c) for c in self.coordinates_of(r, em)]

    def constant_pieces(self, op: Operation, values: np.ndarray, em: Emitter) -> None:
        """A non-splat vector constant: each piece its elements, or (where offsets vary
        with the subgroup or lane) the elements at offset zero plus the linear offset."""
        r = op.results[0]
        strides = _linear_strides(values)
        out = []
        for coords in self.coordinates_of(r, em):
            if all(isinstance(o, int) for o, _ in coords):
                out.append(self.fixed(em, r, values[np.ix_(*[[o + k for k in steps] for o, steps in coords])]))
            elif strides is None:
                if op not in self.whole_constants:
                    self.whole_constants[op] = em.value(arith.ConstantOp(op.value, r.type))
                out.append(self.gathered(em, self.whole_constants[op], r, coords))
            else:
                out.append(self.plus_offset(em, r, values[np.ix_(*[steps for _, steps in coords])], strides, coords))
        self.value_pieces[r] = out

    def gathered(self, em: Emitter, whole: SSAValue, r: SSAValue, coords) -> SSAValue:
        """A piece of `r` whose values follow no linear rule: its elements taken out of
        `whole` (all of `r`, which every thread holds) one by one."""
        pt = self.piece_type(r)
        if pt.get_num_dims() and prod(pt.get_shape()) > MAX_GATHERED:
            raise SimtifyError(f"a vector whose values are not linear in their coordinates is distributed by "
                               f"{self.level} element by element, up to {MAX_GATHERED} per piece, "
                               f"not {prod(pt.get_shape())}")
        per_dim = [[o + k if isinstance(o, int) else (em.apply(AffineDimExpr(0) + k, [o]) if k else o) for k in steps]
                   for o, steps in coords]
        elements = [em.extract(whole, list(at), pt.element_type) for at in product(*per_dim)]
        return em.value(self.annotate(vector_ir.FromElementsOp.build(operands=[elements], result_types=[pt]), r))

    def op_vector_from_elements(self, op: Operation, em: Emitter) -> None:
        """A vector of scalars every thread holds: each piece the scalars at its
        coordinates, picked out of the whole vector where they depend on the id."""
        r = op.results[0]
        scalars = np.array([self.one(e) for e in op.operands], dtype=object).reshape(shape(r))
        whole = None
        out = []
        for coords in self.coordinates_of(r, em):
            if all(isinstance(o, int) for o, _ in coords):
                picked = scalars[np.ix_(*[[o + k for k in steps] for o, steps in coords])].reshape(-1).tolist()
                out.append(em.value(self.annotate(vector_ir.FromElementsOp.build(
                    operands=[picked], result_types=[self.piece_type(r)]), r)))
                continue
            if whole is None:
                whole = em.value(vector_ir.FromElementsOp.build(operands=[scalars.reshape(-1).tolist()],
                                                                result_types=[r.type]))
            out.append(self.gathered(em, whole, r, coords))
        self.value_pieces[r] = out

    def op_vector_extract_strided_slice(self, op: Operation, em: Emitter) -> None:
        """A slice of a vector every thread holds whole (a function argument the
        subgroup stage cut its tiles from): each piece of the slice is the source's
        elements at the piece's coordinates moved by the slice's offsets — a slice of
        its own where they are a known box, else taken out one by one."""
        src, r = op.source, op.results[0]
        whole = self.pieces(src)
        if self.layout_of(src) is not None or len(whole) != 1 or whole[0].type != src.type:
            raise SimtifyError(f"a vector.extract_strided_slice is distributed by {self.level} only from a vector "
                               f"every {self.holder} holds whole (no layout); this source has "
                               f"{self.layout_of(src)}")
        offsets = list(int_values(op.offsets)) + [0] * (len(shape(src)) - len(int_values(op.offsets)))
        pt = self.piece_type(r)
        out = []
        for coords in self.coordinates_of(r, em):
            moved = [(self.add(em, o, off), steps) for (o, steps), off in zip(coords, offsets)]
            if all(isinstance(o, int) for o, _ in moved) and all(steps == list(range(len(steps))) for _, steps in moved):
                out.append(em.value(self.annotate(vector_ir.ExtractStridedSliceOp(
                    whole[0], [o for o, _ in moved], list(pt.get_shape()), [1] * len(moved), pt), r)))
            else:
                out.append(self.gathered(em, whole[0], r, moved))
        self.value_pieces[r] = out

    def op_vector_create_mask(self, op: Operation, em: Emitter) -> None:
        self.mask_pieces(op, [self.one(v) for v in op.operands], em)

    def op_vector_constant_mask(self, op: Operation, em: Emitter) -> None:
        self.mask_pieces(op, [int(x) for x in op.mask_dim_sizes.get_values()], em)

    def mask_pieces(self, op: Operation, bounds: list[Index], em: Emitter) -> None:
        r = op.results[0]
        if not shape(r):
            raise SimtifyError(f"a 0-D mask is not distributed by {self.level}")
        pt = self.piece_type(r)
        out = []
        for coords in self.coordinates_of(r, em):
            if all(steps == list(range(len(steps))) for _, steps in coords):
                sizes = [self.clamp(em, b, o, len(steps)) for b, (o, steps) in zip(bounds, coords)]
                out.append(em.value(self.annotate(vector_ir.CreateMaskOp.build(
                    operands=[[self.index(em, x) for x in sizes]], result_types=[pt]), r)))
            else:
                out.append(self.compared(em, r, bounds, coords))
        self.value_pieces[r] = out

    def clamp(self, em: Emitter, bound: Index, offset: Index, size: int) -> Index:
        """``max(0, min(bound - offset, size))``: how far a box from `offset` is masked in."""
        if isinstance(bound, int) and isinstance(offset, int):
            return max(0, min(bound - offset, size))
        left = em.value(arith.SubiOp(self.index(em, bound), self.index(em, offset)))
        low = em.value(arith.MaxSIOp(left, self.const(em, 0)))
        return em.value(arith.MinSIOp(low, self.const(em, size)))

    def compared(self, em: Emitter, r: SSAValue, bounds: list[Index], coords) -> SSAValue:
        """A fragment's mask: each element's coordinate against the bound, per dim."""
        pt = self.piece_type(r)
        it = VectorType(IndexType(), pt.get_shape())
        mask = None
        for d, (b, (o, steps)) in enumerate(zip(bounds, coords)):
            grid = np.broadcast_to(np.array(steps).reshape([-1 if k == d else 1 for k in range(len(coords))]),
                                   pt.get_shape())
            at = em.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(it, grid.reshape(-1).tolist()), it))
            if not (isinstance(o, int) and o == 0):
                at = em.value(arith.AddiOp(at, em.value(vector_ir.BroadcastOp(self.index(em, o), it))))
            below = em.cmpi("slt", at, em.value(vector_ir.BroadcastOp(self.index(em, b), it)))
            mask = below if mask is None else em.andi(mask, below)
        self.annotate(mask.owner, r)
        return mask


def _linear_strides(values: np.ndarray) -> list[int] | None:
    """Per dim, the step between neighbours, where ``values`` is its first element plus
    a fixed step per dim (integers only); else None."""
    if values.dtype.kind not in "iu" or values.size == 0:
        return None
    strides = [int(values[tuple(1 if k == d else 0 for k in range(values.ndim))] - values.flat[0])
               if values.shape[d] > 1 else 0 for d in range(values.ndim)]
    grid = np.indices(values.shape)
    linear = values.flat[0] + sum(s * g for s, g in zip(strides, grid))
    return strides if np.array_equal(linear, values) else None
