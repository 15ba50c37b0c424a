"""Blocking: a subgroup's tiles cut into the blocks one instruction handles
(``inst_data``), each block one op.

Block ``b`` of a tile starts at ``b·inst_data`` (row-major over the blocks, the register
order of `simtify.layout.xegpu`). A dpas becomes one DPAS per (M, N) block of C, chained
over the K blocks; each must be a shape the target runs (xe: M ≤ 8, N = 16, K = 16 for
f16/bf16, 32 for i8), which is what `xegpu_completion` derives when a layout gives no
``inst_data``. A convert_layout between two blockings re-cuts the tile with
``extract_strided_slice`` / ``insert_strided_slice``; what still differs between the
lanes is left as a convert_layout per block for the lane level.

    %d = xegpu.dpas %a, %b, %c : vector<32x32xf16>, vector<32x64xf16>, vector<32x64xf32>
  becomes, per C block (m, n), with K blocks k = 0, 1:
    %d_mn = xegpu.dpas %a_m0, %b_0n, %c_mn : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32>
    %d_mn' = xegpu.dpas %a_m1, %b_1n, %d_mn : ...
"""

from __future__ import annotations

from itertools import product

from xdsl.dialects.builtin import IndexType, IntegerType, VectorType
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import vector as vector_ir
from simtify.ir import xegpu as xegpu_ir
from simtify.ir.assembly import int_values
from simtify.layout.xegpu import check_block, explicit_lane_data, has, plan, strip, whole_blocks
from simtify.target import get_target
from simtify.target.xe import check_dpas_shape
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import Emitter
from simtify.transforms.xegpu_propagate import XeGPULayouts, is_vector, shape
from simtify.transforms.xegpu_pieces.level import XeGPULevel
from simtify.transforms.xegpu_pieces.rewriter import linear_index


class Blocking(XeGPULevel):
    level = "xegpu-blocking"
    holder = "instruction block"

    def __init__(self, func: Operation, analysis: XeGPULayouts, target: str = "xe"):
        super().__init__(func, analysis)
        self.target = get_target(target)

    def _plans(self, layout, shape_):
        if has(layout, "sg_layout"):
            raise SimtifyError(f"{layout} still distributes among subgroups; run xegpu-wg-to-sg before "
                               "xegpu-blocking")
        return plan(layout, shape_)

    def grid(self, layout, shape_):
        return tuple(p.nb for p in self._plans(layout, shape_))

    def piece_shape(self, layout, shape_):
        return tuple(p.I for p in self._plans(layout, shape_))

    def piece_layout(self, layout):
        return strip(explicit_lane_data(layout), ("inst_data",))

    def piece_offsets(self, layout, shape_, q, em):
        return [b * p.I for b, p in zip(q, self._plans(layout, shape_))]

    def split_argument(self, old: SSAValue, new: SSAValue, em: Emitter) -> list[SSAValue]:
        """A vector argument cut into its blocks (as upstream does)."""
        lay, vshape = self.layout_of(old), shape(old)
        size = self.piece_shape(lay, vshape)
        return [self._recut([new], [1] * len(vshape), vshape, self.piece_layout(lay), [x * s for x, s in zip(q, size)],
                            size, old.type.element_type, em) for q in product(*[range(n) for n in self.grid(lay, vshape)])]

    def op_vector_extract_strided_slice(self, op: Operation, em: Emitter) -> None:
        """Each block of the slice re-cut from the source's blocks (a function argument
        the subgroup stage cut its tiles from, held whole or in blocks; strides are 1,
        as the op's verifier requires)."""
        src, r = op.source, op.results[0]
        lay_s, lay_r, sshape, rshape = self.layout_of(src), self.layout_of(r), shape(src), shape(r)
        at = list(int_values(op.offsets)) + [0] * (len(sshape) - len(int_values(op.offsets)))
        size = self.piece_shape(lay_r, rshape)
        self.value_pieces[r] = [
            self._recut(self.pieces(src), self.grid(lay_s, sshape), self.piece_shape(lay_s, sshape),
                        self.piece_layout(lay_r), [o + x * s for o, x, s in zip(at, q, size)], size,
                        r.type.element_type, em)
            for q in product(*[range(n) for n in self.grid(lay_r, rshape)])]

    def assemble(self, v: SSAValue, em: Emitter) -> SSAValue:
        """A returned value's blocks inserted back into the whole tile (as upstream does)."""
        lay, vshape = self.layout_of(v), shape(v)
        return self._recut(self.pieces(v), self.grid(lay, vshape), self.piece_shape(lay, vshape),
                           self.piece_layout(lay), [0] * len(vshape), vshape, v.type.element_type, em)

    # --- dpas -------------------------------------------------------------------------

    def op_xegpu_dpas(self, op: Operation, em: Emitter) -> None:
        a, b, c = self.layout_of(op.lhs), self.layout_of(op.rhs), self.layout_of(op.result)
        if len(shape(op.rhs)) != 2:
            raise SimtifyError("blocking takes B as KxN, not VNNI-packed")
        (bm, bk), (bk2, bn), (cm, cn) = self.grid_of(op.lhs), self.grid_of(op.rhs), self.grid_of(op.result)
        (im, ik), (ik2, in_), (jm, jn) = (self.piece_shape(x, shape(v)) for x, v in
                                           ((a, op.lhs), (b, op.rhs), (c, op.result)))
        if (im, ik) != (jm, ik2) or (in_ != jn) or (bm, bk, bn) != (cm, bk2, cn):
            raise SimtifyError(f"dpas blocks do not line up: A {im}x{ik}, B {ik2}x{in_}, C {jm}x{jn} "
                               f"(inst_data of {a}, {b}, {c})")
        check_dpas_shape(self.target, op.lhs.type.element_type, jm, jn, ik)
        stated = {"layout_a": a, "layout_b": b, "layout_cd": c}
        scales = [None, None]
        if op.name == "xegpu.dpas_mx":
            scales = [self.scale_blocks(op, v, want) for v, want in ((op.scale_a, (bm, bk)), (op.scale_b, (bk, bn)))]
            stated.update(layout_a_scale=self.layout_of(op.scale_a) if scales[0] else None,
                          layout_b_scale=self.layout_of(op.scale_b) if scales[1] else None)
        layouts = {key: self.piece_layout(x) if x is not None else None for key, x in stated.items()}
        ap, bp = self.pieces(op.lhs), self.pieces(op.rhs)
        cp = self.pieces(op.acc) if op.acc is not None else None
        rt = self.piece_type(op.result)
        out = []
        for i, j in product(range(cm), range(cn)):
            acc = cp[i * cn + j] if cp is not None else None
            for k in range(bk):
                sa = scales[0][i * bk + k if len(scales[0]) > 1 else 0] if scales[0] else None
                sb = scales[1][k * bn + j if len(scales[1]) > 1 else 0] if scales[1] else None
                acc = em.value(self.matrix_piece(op, ap[i * bk + k], bp[k * bn + j], acc, (sa, sb), rt, layouts))
            out.append(acc)
        self.value_pieces[op.result] = out

    op_xegpu_dpas_mx = op_xegpu_dpas

    def scale_blocks(self, op: Operation, v: SSAValue | None, want: tuple[int, int]) -> list[SSAValue] | None:
        """A dpas_mx scale's blocks: one per block of its operand (a scalar scale: itself)."""
        if v is None:
            return None
        if not is_vector(v):
            return [self.one(v)]
        got = self.grid_of(v)
        if got != want:
            raise SimtifyError(f"dpas_mx: the scale {shape(v)} is cut into {got[0]}x{got[1]} blocks, its operand into "
                               f"{want[0]}x{want[1]} (inst_data of {self.layout_of(v)})")
        return self.pieces(v)

    # --- re-cutting a tile ---------------------------------------------------------------

    def op_xegpu_convert_layout(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.result
        if not is_vector(src):  # a scalar (a fully sliced layout): one piece, nothing to re-cut
            self.value_pieces[r] = self.pieces(src)
            return
        have, want = self.layout_of(src), self.layout_of(r)
        vshape = shape(src)
        hgrid, wgrid = self.grid(have, vshape), self.grid(want, vshape)
        if hgrid == wgrid and self.analysis.same(have, want, vshape):
            self.value_pieces[r] = self.pieces(src)
            return
        hsize, wsize = self.piece_shape(have, vshape), self.piece_shape(want, vshape)
        hl, wl = self.piece_layout(have), self.piece_layout(want)
        hp = self.pieces(src)
        elt = src.type.element_type
        # a side with no lane fields left is a whole-block value: nothing to convert
        # here, the lane stage converts what it needs
        lanes_differ = hl is not None and wl is not None
        if lanes_differ and not _fits(hl, wsize):
            # the lanes of `have` cannot hold a block of `want` (16 lanes along rows, 8-row
            # blocks): convert the whole tile, then cut it into `want`'s blocks
            tile = [p.D for p in self._plans(have, vshape)]
            whole = self._recut(hp, hgrid, hsize, hl, [0] * len(tile), tile, elt, em)
            whole = self._convert(whole, hl, wl, tile, em, whole=True)
            self.value_pieces[r] = [self._recut([whole], [1] * len(tile), tile, wl, [x * s for x, s in zip(q, wsize)],
                                        wsize, elt, em) for q in product(*[range(n) for n in wgrid])]
            return
        layout = hl
        if hl is not None and wl is None and not _fits(hl, wsize):
            # `want` gives every lane whole blocks that `have`'s lanes cannot hold: make
            # `have`'s blocks whole in every lane first
            hp = [self._convert(p, hl, whole_blocks(hsize), hsize, em) for p in hp]
            layout = REPLICATED
        elif hl is None and wl is not None:
            layout = REPLICATED  # whole blocks in every lane, re-cut, then to `want`'s lanes
        out = []
        for q in product(*[range(n) for n in wgrid]):
            lo = [x * s for x, s in zip(q, wsize)]
            piece = self._recut(hp, hgrid, hsize, layout, lo, wsize, elt, em)
            if lanes_differ:
                piece = self._convert(piece, hl, wl, wsize, em)
            elif layout is REPLICATED and wl is not None and piece not in hp:
                piece = self._convert(piece, whole_blocks(wsize), wl, wsize, em)
            out.append(piece)
        self.value_pieces[r] = out

    def _convert(self, piece: SSAValue, have, want, size, em: Emitter, *, whole: bool = False) -> SSAValue:
        """`piece` from `have` to `want`; a whole tile is relabelled even where the owners
        agree, since the slices cut from it follow `want`'s lane rounds."""
        if have == want or (not whole and self.analysis.same(have, want, size)):
            return piece
        props = {"input_layout": notes.to_attr(have), "target_layout": notes.to_attr(want)}
        return em.value(xegpu_ir.ConvertLayoutOp.build(operands=[piece], result_types=[piece.type], properties=props))

    def _recut(self, pieces, grid, size, layout, lo, want, elt, em: Emitter) -> SSAValue:
        """The block at `lo` of shape `want`, cut from blocks of `size` (in `layout`, or
        whole in every lane: `REPLICATED`)."""
        if layout is REPLICATED:
            made: list[Operation] = []
            out = self._recut(pieces, grid, size, None, lo, want, elt, _Recording(em, made))
            for op in made:  # each op says so for its own shape
                notes.set_result_layout(op, 0, whole_blocks(op.results[0].type.get_shape()))
            return out
        first = [x // s for x, s in zip(lo, size)]
        last = [(x + w - 1) // s for x, w, s in zip(lo, want, size)]
        vt = VectorType(elt, list(want))
        if first == last:
            piece = pieces[linear_index(first, grid)]
            offs = [x - f * s for x, f, s in zip(lo, first, size)]
            if list(want) == list(size):
                return piece
            new = vector_ir.ExtractStridedSliceOp(piece, offs, list(want), [1] * len(want), vt)
            notes.set_result_layout(new, 0, layout)
            return em.value(new)
        acc = self.splat(em, 0 if isinstance(elt, (IntegerType, IndexType)) else 0.0, vt, layout)
        for blk in product(*[range(f, e + 1) for f, e in zip(first, last)]):
            start = [b * s for b, s in zip(blk, size)]
            a = [max(x, st) for x, st in zip(lo, start)]
            z = [min(x + w, st + s) for x, w, st, s in zip(lo, want, start, size)]
            part_shape = [e - s for s, e in zip(a, z)]
            part = pieces[linear_index(blk, grid)]
            if part_shape != list(size):
                new = vector_ir.ExtractStridedSliceOp(part, [x - st for x, st in zip(a, start)], part_shape,
                                                      [1] * len(want), VectorType(elt, part_shape))
                notes.set_result_layout(new, 0, layout)
                part = em.value(new)
            new = vector_ir.InsertStridedSliceOp(part, acc, [x - y for x, y in zip(a, lo)], [1] * len(want))
            notes.set_result_layout(new, 0, layout)
            acc = em.value(new)
        return acc


REPLICATED = object()  # blocks every lane holds whole


class _Recording:
    """An emitter that remembers the ops it adds."""

    def __init__(self, em: Emitter, made: list):
        self._em, self._made = em, made

    def value(self, op):
        self._made.append(op)
        return self._em.value(op)

    def __getattr__(self, name):
        return getattr(self._em, name)


def _fits(layout, size) -> bool:
    """Do `layout`'s lanes hold a block of `size`, each element in one lane?"""
    try:
        check_block(layout, size)
    except SimtifyError:
        return False
    return True


def block(func: Operation, analysis: XeGPULayouts, opts=None) -> None:
    Blocking(func, analysis).run()
