"""The ops every level rewrites the same way, piece by piece: splat constants,
transposes, broadcasts, unit-dim shape_casts, and reductions within the pieces."""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.transforms.emit import Emitter, kind_of, neutral_value
from simtify.transforms.xegpu_pieces.rewriter import PieceRewriter, linear_index
from simtify.transforms.xegpu_propagate import is_splat_constant, is_vector, shape


class VectorOps(PieceRewriter):
    def op_arith_constant(self, op: Operation, em: Emitter) -> None:
        r = op.results[0]
        if not is_vector(r):
            clone = op.clone()
            em.add(clone)
            self.value_pieces[r] = [clone.results[0]]
            return
        attr = op.properties.get("value") or op.attributes.get("value")
        vals = attr.get_values() if isinstance(attr, DenseIntOrFPElementsAttr) else None
        if vals is None:
            raise SimtifyError(f"a vector constant that is not a dense elements attribute is not distributed by "
                               f"{self.level}")
        if not is_splat_constant(op):
            self.constant_pieces(op, np.array(vals).reshape(shape(r)), em)
            return
        pt = self.piece_type(r)
        new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(pt, [vals[0]] * prod(pt.get_shape())), pt)
        self.annotate(new, r)
        v = em.value(new)
        self.value_pieces[r] = [v] * prod(self.grid_of(r))

    def op_vector_bitcast(self, op: Operation, em: Emitter) -> None:
        """Each piece reinterpreted; a width change needs the result laid out as the
        source with its last dim's data scaled (`last_dim_scaled`), so that every piece
        holds whole elements of both types."""
        from simtify.ir import vector as vector_ir
        from simtify.layout.xegpu import last_dim_scaled
        from simtify.target.xe import element_bits

        src, r = op.source, op.results[0]
        if shape(src) == shape(r):
            self.elementwise(op, em)
            return
        have, want = self.layout_of(src), self.layout_of(r)
        scaled = last_dim_scaled(have, element_bits(src.type.element_type), element_bits(r.type.element_type))
        if (have is None) != (want is None) or (have is not None and (
                scaled is None or not self.analysis.same(scaled, want, shape(r)))):
            raise SimtifyError(f"a bitcast from {src.type} to {r.type} is distributed where the result's layout is the "
                               f"source's with the last dim's data scaled by the width ratio; {have} gives "
                               f"{scaled}, not {want}")
        self.value_pieces[r] = [em.value(self.annotate(vector_ir.BitCastOp(p, self.piece_type(r)), r))
                                for p in self.pieces(src)]

    def op_vector_transpose(self, op: Operation, em: Emitter) -> None:
        from simtify.ir import vector as vector_ir

        perm = [int(x) for x in op.permutation.get_values()]
        src, r = op.vector, op.results[0]
        sgrid, rgrid = self.grid_of(src), self.grid_of(r)
        spieces = self.pieces(src)
        out = []
        for q in product(*[range(n) for n in rgrid]):
            qs = [0] * len(perm)
            for i, p in enumerate(perm):
                qs[p] = q[i]
            piece = spieces[linear_index(qs, sgrid)]
            new = vector_ir.TransposeOp(piece, perm, self.piece_type(r))
            out.append(em.value(self.annotate(new, r)))
        self.value_pieces[r] = out

    def op_vector_broadcast(self, op: Operation, em: Emitter) -> None:
        from simtify.ir import vector as vector_ir

        r = op.results[0]
        rgrid = self.grid_of(r)
        if not is_vector(op.source):
            v = em.value(self.annotate(vector_ir.BroadcastOp(self.one(op.source), self.piece_type(r)), r))
            self.value_pieces[r] = [v] * prod(rgrid)
            return
        src = op.source
        sshape, rshape = shape(src), shape(r)
        lead = len(rshape) - len(sshape)
        sgrid = self.grid_of(src)
        spieces = self.pieces(src)
        if any(s != rgrid[lead + j] for j, s in enumerate(sgrid) if not (sshape[j] == 1 and rshape[lead + j] != 1)):
            raise SimtifyError(f"internal: a broadcast source in {'x'.join(map(str, sgrid))} pieces ({self.layout_of(src)}) "
                               f"does not line up with its result in {'x'.join(map(str, rgrid))} ({self.layout_of(r)})",
                               location_of(op))
        out = []
        made: dict[int, SSAValue] = {}
        for q in product(*[range(n) for n in rgrid]):
            qs = [0 if sshape[j] == 1 and rshape[lead + j] != 1 else q[lead + j] for j in range(len(sshape))]
            k = linear_index(qs, sgrid)
            if k not in made:
                new = vector_ir.BroadcastOp(spieces[k], self.piece_type(r))
                made[k] = em.value(self.annotate(new, r))
            out.append(made[k])
        self.value_pieces[r] = out

    def op_vector_shape_cast(self, op: Operation, em: Emitter) -> None:
        from simtify.ir import vector as vector_ir
        from simtify.layout.xegpu import unit_dims_map

        src, r = op.source, op.results[0]
        m = unit_dims_map(shape(src), shape(r))
        if m is None:
            if not self.reshapes_pieces(src, r, em):
                raise SimtifyError(f"a shape_cast of {src.type} to {r.type} is distributed where it adds or drops "
                                   f"unit dims, or where each piece of the result holds the elements of the "
                                   f"source's piece in the same order; {self.layout_of(src)} and "
                                   f"{self.layout_of(r)} do not")
            self.value_pieces[r] = [em.value(self.annotate(vector_ir.ShapeCastOp(piece, self.piece_type(r)), r))
                                    for piece in self.pieces(src)]
            return
        drop, add = m
        sgrid, rgrid = self.grid_of(src), self.grid_of(r)
        spieces = self.pieces(src)
        out = []
        for q in product(*[range(n) for n in rgrid]):
            kept = [x for j, x in enumerate(q) if j not in add]
            qs = []
            it = iter(kept)
            for j in range(len(sgrid)):
                qs.append(0 if j in drop else next(it))
            new = vector_ir.ShapeCastOp(spieces[linear_index(qs, sgrid)], self.piece_type(r))
            out.append(em.value(self.annotate(new, r)))
        self.value_pieces[r] = out

    def reduce_pieces(self, op: Operation, em: Emitter, *, from_acc: bool) -> list[SSAValue]:
        """Per result piece, the reduction of every source piece that lands on it —
        starting from the accumulator's piece (`from_acc`) or from the neutral value."""
        from simtify.ir import vector as vector_ir

        src, r = op.source, op.results[0]
        dims = [int(x) for x in op.reduction_dims.get_values()]
        kind = kind_of(op)
        if not is_vector(r):
            return [self.reduce_pieces_to_scalar(op, em, from_acc=from_acc)]
        sgrid, rgrid = self.grid_of(src), self.grid_of(r)
        keep = [d for d in range(len(sgrid)) if d not in dims]
        if [sgrid[d] for d in keep] != list(rgrid):
            raise SimtifyError(f"the result layout {self.layout_of(r)} does not cut the kept dims as the source layout "
                               f"{self.layout_of(src)} does")
        spieces = self.pieces(src)
        pt = self.piece_type(r)
        accs = self.pieces(op.acc) if from_acc else None
        out = []
        for i, qr in enumerate(product(*[range(n) for n in rgrid])):
            acc = accs[i] if from_acc else self.splat(em, neutral_value(kind, pt.element_type), pt,
                                                      self.piece_layout(self.layout_of(r)))
            for qd in product(*[range(sgrid[d]) for d in dims]):
                qs = [0] * len(sgrid)
                for d, x in zip(keep, qr):
                    qs[d] = x
                for d, x in zip(dims, qd):
                    qs[d] = x
                new = vector_ir.MultiReductionOp(kind, spieces[linear_index(qs, sgrid)], acc, dims)
                acc = em.value(self.annotate(new, r))
            out.append(acc)
        return out

    def reduce_pieces_to_scalar(self, op: Operation, em: Emitter, *, from_acc: bool) -> SSAValue:
        """A reduction over every dim (to a scalar, which every lane holds; the verifier
        refuses a 0-d vector result, as MLIR's does)."""
        from simtify.ir import vector as vector_ir
        from simtify.transforms.emit import scalar_attr

        src, r = op.source, op.results[0]
        dims = list(range(len(shape(src))))
        kind = kind_of(op)
        if from_acc:
            acc = self.one(op.acc)
        else:
            acc = em.value(arith.ConstantOp(scalar_attr(neutral_value(kind, r.type), r.type), r.type))
        pieces = self.pieces(src)
        if len({p.type for p in pieces}) == 1:
            # pieces of one shape are combined element by element first: one reduction
            # (and, at the lane level, one cross-lane step) instead of one per piece
            whole = pieces[0]
            for piece in pieces[1:]:
                whole = em.combine(kind, whole, piece)
                self.annotate(whole.owner, src)
            pieces = [whole]
        for piece in pieces:
            acc = em.value(vector_ir.MultiReductionOp(kind, piece, acc, dims))
        return acc

    def op_vector_multi_reduction(self, op: Operation, em: Emitter) -> None:
        self.value_pieces[op.results[0]] = self.reduce_pieces(op, em, from_acc=True)
