"""Accesses by offsets, piece by piece: gathers, scatters and prefetches (a piece of
the rows takes its piece of the offsets and mask, plus its start in the chunk), and
shared local memory matrices (``load_matrix`` / ``store_matrix``)."""

from __future__ import annotations

from itertools import product

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import xegpu as xegpu_ir
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import Emitter
from simtify.target.xe import element_bits
from simtify.transforms.launch import recorded_threads
from simtify.layout.xegpu import Layout, field_of
from simtify.transforms.xegpu_pieces.rewriter import PieceRewriter, linear_index, mixed_offsets
from simtify.transforms.xegpu_propagate import is_vector, shape


class ScatteredAccess(PieceRewriter):
    def gather_parts(self, op: Operation, value: SSAValue, em: Emitter) -> list[tuple[SSAValue, SSAValue | None,
                                                                                        dict]]:
        """Per piece of the rows `value`: (its offsets, its mask, its properties) — a
        piece that starts ``c`` elements into the chunk reads from the offsets plus ``c``."""
        lay, vshape = self.layout_of(value), shape(value)
        chunked = len(vshape) == len(shape(op.offsets)) + 1
        if chunked and lay is not None and (field_of(lay, "lane_layout", len(vshape) - 1) or 1) > 1:
            raise SimtifyError(f"each lane gathers whole chunks of {vshape[-1]}, but {lay} shares them among lanes "
                               "(use lane_layout = [16, 1])")
        ogrid, rgrid = self.grid_of(op.offsets), self.grid_of(value)
        if tuple(rgrid[:-1] if chunked else rgrid) != tuple(ogrid):
            raise SimtifyError(f"the offsets' layout {self.layout_of(op.offsets)} cuts them differently from the value's "
                               f"rows ({lay})")
        self.check_gather(op, value)
        opieces = self.pieces(op.offsets)
        mpieces = self.pieces(op.mask) if getattr(op, "mask", None) is not None else None
        props = {k: v for k, v in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint")}
        out = []
        for q in product(*[range(n) for n in rgrid]):
            k = linear_index(q[:len(ogrid)], ogrid)
            off = opieces[k]
            p = dict(props)
            if chunked:
                start = self.piece_offsets(lay, vshape, q, em)[-1]
                if not isinstance(start, int):
                    raise SimtifyError(f"{lay} splits a gather's chunk among subgroups; give the chunk dim "
                                       "sg_layout 1")
                width = self.piece_shape(lay, vshape)[-1]
                if width == 1 and vshape[-1] > 1:
                    raise SimtifyError(f"{lay} cuts a gather's chunk of {vshape[-1]} into single elements")
                if start:
                    off = self.shift_offsets(em, off, start, op.offsets)
                if width > 1:
                    p["chunk_size"] = IntegerAttr(width, 64)
            elif op.chunk_size is not None:
                p["chunk_size"] = op.chunk_size
            if self.gather_layout(lay) is not None:
                p["layout"] = notes.to_attr(self.gather_layout(lay))
            out.append((off, mpieces[k] if mpieces is not None else None, p))
        return out

    def shift_offsets(self, em: Emitter, off: SSAValue, by: int, old: SSAValue) -> SSAValue:
        layout = self.piece_layout(self.layout_of(old))
        step = self.splat(em, by, off.type, layout)
        new = arith.AddiOp(off, step)
        notes.set_result_layout(new, 0, layout)
        return em.value(new)

    def op_xegpu_load(self, op: Operation, em: Emitter) -> None:
        r = op.value
        if not is_vector(r):
            raise SimtifyError(f"a gather of a scalar is not distributed by {self.level}")
        pt = self.piece_type(r)
        gt = self.gather_type(pt, len(shape(r)) > len(shape(op.offsets)))
        out = []
        for off, mask, props in self.gather_parts(op, r, em):
            v = em.value(xegpu_ir.LoadGatherOp.build(operands=[self.one(op.source), off, mask], result_types=[gt],
                                                     properties=props))
            out.append(em.shape_cast(v, pt) if gt != pt else v)
        self.value_pieces[r] = out

    def op_xegpu_store(self, op: Operation, em: Emitter) -> None:
        v = op.value
        if not is_vector(v):
            raise SimtifyError(f"a scatter of a scalar is not distributed by {self.level}")
        parts = self.gather_parts(op, v, em)  # their offsets are computed before the guard, for every lane
        target = self.single_writer(self.layout_of(v), shape(v), em)
        gt = self.gather_type(self.piece_type(v), len(shape(v)) > len(shape(op.offsets)))
        for piece, (off, mask, props) in zip(self.pieces(v), parts):
            if piece.type != gt:
                piece = em.shape_cast(piece, gt)
            target.add(xegpu_ir.StoreScatterOp.build(operands=[piece, self.one(op.dest), off, mask],
                                                     properties=props))

    def op_xegpu_prefetch(self, op: Operation, em: Emitter) -> None:
        lay = self.layout_of(op.offsets)
        props = {k: v for k, v in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint",
                                                                 "offset_align_byte")}
        if self.gather_layout(lay) is not None:
            props["layout"] = notes.to_attr(self.gather_layout(lay))
        for off in self.pieces(op.offsets):
            em.add(xegpu_ir.PrefetchOp.build(operands=[self.one(op.source), off], properties=dict(props)))

    def simt_program(self) -> bool:
        """Does the rewritten function run per thread? (One subgroup's program blocked
        before any distribution is still the workgroup's.)"""
        return recorded_threads(self.func) is not None

    def single_writer(self, layout: Layout | None, vshape, em: Emitter) -> Emitter:
        """Where a scatter or a matrix store goes so that each element is written by one
        thread: at lane level, lanes that all hold the value (no lanes in its layout) leave
        it to lane 0. (Above it, a value without lanes is the subgroup's, and may still be
        split among the lanes later: a guard there would keep the other lanes' parts.)"""
        from simtify.ir import gpu as gpu_ir
        from simtify.layout.xegpu import has

        target = self.store_guard(layout, vshape, em)
        if has(layout, "lane_layout") or not self.simt_program() or self.holder != "lane":
            return target
        if self._lane_id is None:
            self._lane_id = self.prelude.value(gpu_ir.LaneIdOp())
        return target.if_then(target.cmpi("eq", self._lane_id, self.const(target, 0)))

    def shared_matrix(self, shape_, elt, em: Emitter) -> SSAValue:
        """A matrix of `shape_` in a new shared local memory buffer (bytes, memory space 3,
        viewed by ``create_mem_desc``): where a level exchanges values between the
        subgroups or lanes that hold them, as upstream's wg-to-sg does (2-D block
        descriptors over shared local memory are not allowed upstream)."""
        from math import prod

        from xdsl.dialects import memref
        from xdsl.dialects.builtin import IntegerType, i64

        size = prod(shape_) * max(1, element_bits(elt) // 8)
        buf = em.value(memref.AllocOp.get(IntegerType(8), shape=[size], memory_space=IntegerAttr(3, i64)))
        md = xegpu_ir.MemDescType(list(shape_), elt)
        return em.value(xegpu_ir.CreateMemDescOp.build(operands=[buf], result_types=[md]))

    def matrix_pieces(self, op: Operation, value: SSAValue, em: Emitter):
        """Per piece of `value`: its offsets in the matrix."""
        lay, vshape = self.layout_of(value), shape(value)
        base = mixed_offsets(op.const_offsets, [self.one(o) for o in op.offsets])
        k = len(base) - len(vshape)
        for q in product(*[range(n) for n in self.grid(lay, vshape)]):
            offs = self.piece_offsets(lay, vshape, q, em)
            yield base[:k] + [self.add(em, b, o) for b, o in zip(base[k:], offs)]

    def op_xegpu_load_matrix(self, op: Operation, em: Emitter) -> None:
        r = op.data
        if not is_vector(r):
            raise SimtifyError(f"a scalar load_matrix is not distributed by {self.level}")
        lay = self.layout_of(r)
        self.value_pieces[r] = [self.make_access(xegpu_ir.LoadMatrixOp, [self.one(op.mem_desc)], offs, {},
                                         self.gather_layout(lay), [self.piece_type(r)], em).results[0]
                        for offs in list(self.matrix_pieces(op, r, em))]

    def op_xegpu_store_matrix(self, op: Operation, em: Emitter) -> None:
        v = op.data
        if not is_vector(v):
            raise SimtifyError(f"a scalar store_matrix is not distributed by {self.level}")
        lay = self.layout_of(v)
        target = self.single_writer(lay, shape(v), em)
        for piece, offs in zip(self.pieces(v), list(self.matrix_pieces(op, v, target))):
            self.make_access(xegpu_ir.StoreMatrixOp, [piece, self.one(op.mem_desc)], offs, {},
                             self.gather_layout(lay), [], target)
