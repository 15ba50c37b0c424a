"""Workgroup→subgroup distribution: each subgroup keeps its own tiles of every value.

A subgroup's id ``gpu.subgroup_id`` is delinearized over ``sg_layout`` with ``order[0]``
fastest; per dim its tile of round ``q`` starts at ``(id·sg_data + q·U) mod n`` with
``U = min(n, sg_layout·sg_data)`` — rounds when the dim is larger than the subgroups
cover (each round one op), shared tiles when it is smaller. The seed's example:
``vector<128x128xf16>`` on ``sg_layout = [2, 2]``, ``sg_data = [32, 128]`` gives subgroup
(i, j) rows ``32·i`` and ``64 + 32·i`` (two rounds), all 128 columns (shared by j = 0, 1):

    %v = xegpu.load_nd %t[%m, 0] <{layout = #a}> -> vector<128x128xf16>
  becomes
    %v0 = xegpu.load_nd %t'[%m + 32·i, 0] <{layout = #a'}> -> vector<32x128xf16>
    %v1 = xegpu.load_nd %t'[%m + 32·i + 64, 0] <{layout = #a'}> -> vector<32x128xf16>

(#a' is #a without its subgroup fields.) What needs other subgroups' data goes through
a shared local memory matrix (``create_mem_desc``, ``store_matrix`` / ``load_matrix``,
as upstream does): a reduction over a dim split among subgroups writes each
subgroup's partial (one copy of each, from the first subgroup holding it), waits at a
barrier and reads back every partial; a ``convert_layout`` whose subgroup tiles differ
writes the value once, waits, and reads the new tiles. A dpas needs, in each subgroup,
the A rows and B columns of its C tiles with the whole K; propagation converts operands
whose layouts give it less (upstream distributes them anyway and computes partial sums it
never adds), and what still gives it less here is an error.

An ``scf.if`` with ``sg_id_range = #xegpu.range<[a, b]>`` hands its body to subgroups
``a`` to ``b - 1``: its layouts must use ``b - a`` subgroups, which take ids ``sgid - a``
there, and the distributed ``scf.if`` also asks ``a <= sgid < b``, so that the subgroups
outside the range do nothing whatever the condition says.
"""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.ir import xegpu as xegpu_ir
from simtify.layout.xegpu import SUBGROUP_FIELDS, Layout, delinearize, flatten, kept_dims, plan, strip
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import Emitter, kind_of
from simtify.transforms.xegpu_propagate import XeGPULayouts, is_vector, shape
from simtify.transforms.xegpu_pieces.descriptors import Index
from simtify.transforms.xegpu_pieces.level import XeGPULevel
from simtify.transforms.xegpu_pieces.rewriter import box_elements


class SubgroupDistribution(XeGPULevel):
    level = "xegpu-wg-to-sg"
    holder = "subgroup"

    def __init__(self, func: Operation, analysis: XeGPULayouts):
        super().__init__(func, analysis)
        self.num_subgroups = analysis.num_subgroups
        self.digit_caches: dict[int, dict] = {}  # per start of a subgroup range
        self.offset_cache: dict = {}
        self.range: tuple[int, int] | None = None  # the sg_id_range of the region being rewritten
        self.ranged_ids: dict[int, SSAValue] = {}

    # --- pieces -----------------------------------------------------------------------

    def grid(self, layout, shape_):
        return tuple(p.R for p in plan(layout, shape_))

    def piece_shape(self, layout, shape_):
        return tuple(p.D for p in plan(layout, shape_))

    def piece_layout(self, layout):
        return strip(layout, SUBGROUP_FIELDS)

    def start(self, prelude: Emitter) -> None:
        self.sgid = prelude.value(gpu_ir.SubgroupIdOp())
        self.sgid.name_hint = "sgid"

    def subgroup(self) -> SSAValue:
        """This subgroup's id among those running the region: ``sgid - a`` in a range
        starting at ``a``."""
        start = self.range[0] if self.range else 0
        if start == 0:
            return self.sgid
        if start not in self.ranged_ids:
            self.ranged_ids[start] = self.prelude.apply(AffineDimExpr(0) - start, [self.sgid])
        return self.ranged_ids[start]

    def digits(self, layout: Layout | None) -> list[SSAValue | None]:
        """Per base dim, this subgroup's digit of `layout`'s sg_layout (None: layout 1)."""
        if layout is None:
            return []
        cache = self.digit_caches.setdefault(self.range[0] if self.range else 0, {})
        return self.id_digits(layout, "sg_layout", self.subgroup, cache)

    def piece_offsets(self, layout, shape_, q, em) -> list[Index]:
        plans = plan(layout, shape_)
        kept = kept_dims(layout) if layout is not None else list(range(len(shape_)))
        digits = self.digits(layout)
        out: list[Index] = []
        for j, (p, qj) in enumerate(zip(plans, q)):
            if p.n % p.D:
                raise SimtifyError(f"dim {j}: sg_data {p.D} does not divide the size {p.n}: a subgroup's tile "
                                   "would wrap around the end")
            digit = digits[kept[j]] if digits else None
            if digit is None or p.D == p.n:  # one subgroup along the dim, or all share it
                out.append(qj * p.U)
                continue
            key = (id(digit), p.D, p.U, p.n, qj)
            if key not in self.offset_cache:
                expr = AffineDimExpr(0) * p.D + qj * p.U
                if p.L * p.D + qj * p.U > p.n:
                    expr = expr % p.n
                self.offset_cache[key] = self.prelude.apply(expr, [digit])
            out.append(self.offset_cache[key])
        return out

    def split_argument(self, old: SSAValue, new: SSAValue, em: Emitter) -> list[SSAValue]:
        """Every subgroup receives a vector argument whole (upstream leaves such an
        argument as it is); its tiles are cut from it in registers. A tile's start
        depends on the subgroup id, so per dim the tile at each start a subgroup can
        have is cut and the one at this subgroup's start selected::

            %a: vector<24x32xf32>    // #a: sg_layout = [2, 2], sg_data = [12, 32]
          becomes, in subgroup (i, j), rows 12·i of it
            %r0 = vector.extract_strided_slice %a {offsets = [0, 0], sizes = [12, 32] ..}
            %r1 = vector.extract_strided_slice %a {offsets = [12, 0], sizes = [12, 32] ..}
            %a0 = arith.select (12·i == 12), %r1, %r0"""
        lay, vshape = self.layout_of(old), shape(old)
        starts = self.host_offsets(lay, vshape)
        out = []
        tests: dict = {}  # (start, candidate): whether this subgroup's tile starts there
        for q in product(*[range(n) for n in self.grid(lay, vshape)]):
            v = new
            for j, (off, (size, at)) in enumerate(zip(self.piece_offsets(lay, vshape, q, em), starts)):
                piece = None
                for c in sorted({int(x) for x in at[:, q[j]]}):
                    cut = self.cut(v, j, c, size, em)
                    if piece is not None:
                        if (off, c) not in tests:
                            tests[off, c] = em.cmpi("eq", self.index(em, off), self.const(em, c))
                        cut = em.select(tests[off, c], cut, piece)
                    piece = cut
                v = piece
            if v is not new:
                notes.set_result_layout(v.owner, 0, self.piece_layout(lay))
            out.append(v)
        return out

    def cut(self, v: SSAValue, dim: int, start: int, size: int, em: Emitter) -> SSAValue:
        """`v`'s elements ``[start, start + size)`` along `dim` (`v` itself where that is all)."""
        vshape = list(v.type.get_shape())
        if start == 0 and size == vshape[dim]:
            return v
        offsets, sizes = [0] * len(vshape), list(vshape)
        offsets[dim], sizes[dim] = start, size
        return em.value(vector_ir.ExtractStridedSliceOp(v, offsets, sizes, [1] * len(vshape),
                                                        VectorType(v.type.element_type, sizes)))

    def reshapes_pieces(self, src: SSAValue, r: SSAValue, em: Emitter) -> bool:
        """As the rewriter asks it, per subgroup: a tile's start depends on the subgroup
        id, so each subgroup's tiles of `src` and `r` are compared on the host, element by
        element (a 1x16x32 tile of an 8x16x32 value is the 512-tile of its 4096 elements)."""
        lay_s, lay_r, sshape, rshape = self.layout_of(src), self.layout_of(r), shape(src), shape(r)
        hs, hr = self.host_offsets(lay_s, sshape), self.host_offsets(lay_r, rshape)
        qs = list(product(*[range(n) for n in self.grid(lay_s, sshape)]))
        qr = list(product(*[range(n) for n in self.grid(lay_r, rshape)]))
        if len(qs) != len(qr):
            return False
        for sg in range(self.num_subgroups):
            for a, b in zip(qs, qr):
                box_s = box_elements(sshape, [at[sg, k] for (_, at), k in zip(hs, a)], [size for size, _ in hs])
                box_r = box_elements(rshape, [at[sg, k] for (_, at), k in zip(hr, b)], [size for size, _ in hr])
                if not np.array_equal(box_s, box_r):
                    return False
        return True

    # --- which subgroups hold what ------------------------------------------------------

    def host_offsets(self, layout: Layout | None, shape_) -> list[tuple[int, np.ndarray]]:
        """Per kept dim, (tile size, ``[subgroups, rounds]`` tile starts) — the same
        formula `piece_offsets` emits, on the host."""
        plans = plan(layout, shape_)
        ids = np.arange(self.num_subgroups)
        if layout is not None and flatten(layout)[0].sg_layout is not None:
            base, _ = flatten(layout)
            dig = delinearize(ids, base.sg_layout, base.order)
            kept = kept_dims(layout)
        else:
            dig, kept = np.zeros((self.num_subgroups, len(shape_)), np.int64), list(range(len(shape_)))
        out = []
        for j, p in enumerate(plans):
            q = np.arange(p.R)
            out.append((p.D, (dig[:, kept[j]][:, None] * p.D + q[None, :] * p.U) % p.n))
        return out

    def writer(self, layout: Layout | None, shape_, em: Emitter, skip=()) -> SSAValue | None:
        """True in one subgroup among those holding the same tiles (None: no sharing);
        base dims in `skip` are the caller's business."""
        conds = []
        running = self.range[1] - self.range[0] if self.range else self.num_subgroups
        if layout is None or flatten(layout)[0].sg_layout is None:
            return em.cmpi("eq", self.subgroup(), self.const(em, 0)) if running > 1 else None
        base, removed = flatten(layout)
        digits = self.digits(layout)
        if base.num_subgroups < running:  # later subgroups wrap around onto the first ones
            conds.append(em.cmpi("ult", self.subgroup(), self.const(em, base.num_subgroups)))
        for d in removed:
            if digits[d] is not None and d not in skip:
                conds.append(em.cmpi("eq", digits[d], self.const(em, 0)))
        for j, (d, p) in enumerate(zip(kept_dims(layout), plan(layout, shape_))):
            if digits[d] is not None and p.L * p.D > p.n:
                conds.append(em.cmpi("ult", digits[d], self.const(em, p.n // p.D)))
        return _all(em, conds)

    def simt_program(self) -> bool:
        return True

    def single_writer(self, layout, vshape, em: Emitter) -> Emitter:
        """One subgroup among those holding the same tiles stores them (then one lane,
        where every lane holds them)."""
        guard = self.writer(layout, vshape, em)
        return super().single_writer(layout, vshape, em.if_then(guard) if guard is not None else em)

    # --- dpas -------------------------------------------------------------------------

    def op_xegpu_dpas(self, op: Operation, em: Emitter) -> None:
        a, b, c = self.layout_of(op.lhs), self.layout_of(op.rhs), self.layout_of(op.result)
        if len(shape(op.rhs)) != 2:
            raise SimtifyError("a workgroup-level dpas takes B as KxN, not VNNI-packed")
        k = shape(op.lhs)[1]
        oa, ob, oc = (self.host_offsets(x, shape(v)) for x, v in ((a, op.lhs), (b, op.rhs), (c, op.result)))
        for what, (size, offs) in (("A", oa[1]), ("B", ob[0])):
            if offs.shape[1] != 1 or size != k:
                raise SimtifyError(f"dpas: {what}'s layout gives a subgroup {size} of the K = {k} elements in "
                                   f"{offs.shape[1]} round(s); each subgroup needs the whole K of its C tiles")
        self.check_rows(op, "layout_a", a, oa[0], c, oc[0], "A rows")
        self.check_rows(op, "layout_b", b, ob[1], c, oc[1], "B columns")
        scales = [None, None]
        if op.name == "xegpu.dpas_mx":
            for i, (v, axis) in enumerate(((op.scale_a, 0), (op.scale_b, 1))):
                if v is None or not is_vector(v):
                    scales[i] = [self.one(v)] if v is not None else None
                    continue
                lay = self.layout_of(v)
                offs = self.host_offsets(lay, shape(v))
                size, k_offs = offs[1 - axis]
                if k_offs.shape[1] != 1 or size != shape(v)[1 - axis]:
                    raise SimtifyError(f"dpas_mx: {('scale_a', 'scale_b')[i]}'s layout gives a subgroup {size} of its "
                                       f"{shape(v)[1 - axis]} blocks along K; each subgroup needs them all")
                self.check_rows(op, ("layout_a_scale", "layout_b_scale")[i], lay, offs[axis], c, oc[axis],
                                ("scale_a rows", "scale_b columns")[i])
                scales[i] = self.pieces(v)
        ap, bp = self.pieces(op.lhs), self.pieces(op.rhs)
        cp = self.pieces(op.acc) if op.acc is not None else None
        rm, rn = self.grid_of(op.result)
        stated = {"layout_a": a, "layout_b": b, "layout_cd": c}
        if op.name == "xegpu.dpas_mx":
            stated.update(layout_a_scale=self.layout_of(op.scale_a) if scales[0] else None,
                          layout_b_scale=self.layout_of(op.scale_b) if scales[1] else None)
        layouts = {key: self.piece_layout(x) if x is not None else None for key, x in stated.items()}
        out = []
        for i, j in product(range(rm), range(rn)):
            sa = scales[0][i if len(scales[0]) > 1 else 0] if scales[0] else None
            sb = scales[1][j if len(scales[1]) > 1 else 0] if scales[1] else None
            acc = cp[i * rn + j] if cp is not None else None
            out.append(em.value(self.matrix_piece(op, ap[i], bp[j], acc, (sa, sb), self.piece_type(op.result),
                                                  layouts)))
        self.value_pieces[op.result] = out

    op_xegpu_dpas_mx = op_xegpu_dpas

    def check_rows(self, op: Operation, key: str, have, have_offs, c, c_offs, what: str) -> None:
        """Each subgroup's tiles of an operand along M (N) are its C tiles'."""
        if have_offs[0] != c_offs[0] or not np.array_equal(have_offs[1], c_offs[1]):
            raise SimtifyError(f"{op.name[6:]}: {key} {have} does not give each subgroup the {what} of its C tiles "
                               f"(layout_cd {c})")

    # --- across subgroups: shared local memory --------------------------------------------

    def in_loop(self, op: Operation) -> bool:
        parent = op.parent_op()
        while parent is not None and parent is not self.func:
            if parent.name in ("scf.for", "scf.while"):
                return True
            parent = parent.parent_op()
        return False

    def op_scf_if(self, op: Operation, em: Emitter) -> None:
        """A branch handed to a range of subgroups (``sg_id_range``): its ids count from
        the range's start, and only the range enters it."""
        rng = _range_of(op)
        if rng is None:
            return super().op_scf_if(op, em)
        self.check_range(op, rng)
        cond = op.operands[0]
        given = self.value_pieces[cond]
        self.value_pieces[cond] = [_all(em, [self.one(cond), em.cmpi("uge", self.sgid, self.const(em, rng[0])),
                                             em.cmpi("ult", self.sgid, self.const(em, rng[1]))])]
        outer, self.range = self.range, rng
        try:
            super().op_scf_if(op, em)
        finally:
            self.range, self.value_pieces[cond] = outer, given

    def check_range(self, op: Operation, rng: tuple[int, int]) -> None:
        """Every layout in the branch uses as many subgroups as the range holds (upstream
        leaves an op whose layout does not unconverted)."""
        for inner in op.walk():
            for v in inner.results:
                layout = self.analysis.layouts.get(v)
                base = flatten(layout)[0] if layout is not None else None
                if base is not None and base.sg_layout is not None and base.num_subgroups != rng[1] - rng[0]:
                    raise SimtifyError(f"{layout} uses {base.num_subgroups} subgroups, but the sg_id_range "
                                       f"[{rng[0]}, {rng[1]}] of the enclosing scf.if holds {rng[1] - rng[0]}",
                                       location_of(inner))

    def op_xegpu_convert_layout(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.result
        if not is_vector(src):  # a scalar, its layout sliced in every dimension: every subgroup holds it
            self.value_pieces[r] = self.pieces(src)
            return
        have, want = self.layout_of(src), self.layout_of(r)
        if self.same_tiles(have, want, shape(src)):
            pieces = []
            for piece in self.pieces(src):
                ph, pw = self.piece_layout(have), self.piece_layout(want)
                if self.analysis.alike(ph, pw, self.piece_shape(have, shape(src))):
                    pieces.append(piece)
                    continue
                new = xegpu_ir.ConvertLayoutOp.build(operands=[piece], result_types=[piece.type], properties={
                    "input_layout": notes.to_attr(ph), "target_layout": notes.to_attr(pw)})
                pieces.append(em.value(new))
            self.value_pieces[r] = pieces
            return
        self.value_pieces[r] = self.exchange(op, self.pieces(src), have, want, shape(src), src.type.element_type, em)

    # --- interleaving ----------------------------------------------------------------------

    def op_vector_interleave(self, op: Operation, em: Emitter) -> None:
        """Each subgroup interleaves its own tiles, where its tiles of the result are its
        tiles of the operands interleaved: as wide again in the last dim, at twice the
        start (upstream's case: ``sg_data`` doubled on the last dim)::

            %r = vector.interleave %a, %b : vector<256x128xf32> -> vector<256x256xf32>
                    // #a: sg_layout = [8, 4], sg_data = [32, 32]; #r: sg_data = [32, 64]
          becomes
            %r0 = vector.interleave %a0, %b0 : vector<32x32xf32> -> vector<32x64xf32>"""
        a, b, r = op.lhs, op.rhs, op.results[0]
        if not (self.interleaves(a, r) and self.interleaves(b, r)):
            raise SimtifyError(f"a vector.interleave is distributed to subgroups where each subgroup's tiles of the "
                               f"result are its tiles of the operands interleaved (the last dim's sg_data doubled); "
                               f"{self.layout_of(a)} and {self.layout_of(b)} give {self.layout_of(r)} not")
        out = []
        for pa, pb in zip(self.pieces(a), self.pieces(b)):
            new = vector_ir.InterleaveOp.build(operands=[pa, pb], result_types=[self.piece_type(r)])
            out.append(em.value(self.annotate(new, r)))
        self.value_pieces[r] = out

    def op_vector_deinterleave(self, op: Operation, em: Emitter) -> None:
        """Each subgroup deinterleaves its own tiles, where its tiles of each result are
        the even (odd) elements of its tiles of the source (the last dim's ``sg_data``
        halved)."""
        src, results = op.source, list(op.results)
        if not all(self.interleaves(r, src) for r in results):
            raise SimtifyError(f"a vector.deinterleave is distributed to subgroups where each subgroup's tiles of the "
                               f"results are the even and odd elements of its tiles of the source (the last dim's "
                               f"sg_data halved); {self.layout_of(src)} gives {self.layout_of(results[0])} and "
                               f"{self.layout_of(results[1])} not")
        outs: list[list[SSAValue]] = [[], []]
        for piece in self.pieces(src):
            new = vector_ir.DeinterleaveOp.build(operands=[piece], result_types=[self.piece_type(results[0])] * 2)
            for k, r in enumerate(results):
                self.annotate(new, r, k)
                outs[k].append(new.results[k])
            em.add(new)
        for r, pieces in zip(results, outs):
            self.value_pieces[r] = pieces

    def interleaves(self, half: SSAValue, whole: SSAValue) -> bool:
        """Does every subgroup hold, in each round, the tile of `whole` (as long again in
        the last dim) that interleaves its tile of `half` with another value's?"""
        hh, hw = self.host_offsets(self.layout_of(half), shape(half)), self.host_offsets(self.layout_of(whole),
                                                                                          shape(whole))
        *lead_h, (size_h, starts_h) = hh
        *lead_w, (size_w, starts_w) = hw
        return (all(x[0] == y[0] and np.array_equal(x[1], y[1]) for x, y in zip(lead_h, lead_w))
                and size_w == 2 * size_h and np.array_equal(starts_w, 2 * starts_h))

    def same_tiles(self, a: Layout | None, b: Layout | None, shape_) -> bool:
        ha, hb = self.host_offsets(a, shape_), self.host_offsets(b, shape_)
        return all(x[0] == y[0] and np.array_equal(x[1], y[1]) for x, y in zip(ha, hb))

    def exchange(self, op, pieces, have, want, shape_, elt, em: Emitter) -> list[SSAValue]:
        """The value stored to a shared local memory matrix in `have`'s tiles, loaded in
        `want`'s (upstream's convert_layout across subgroups)::

            %w = xegpu.convert_layout %v <{input_layout = #a, target_layout = #b}> : vector<32x64xf32>
          becomes
            %m = xegpu.create_mem_desc %slm : memref<8192xi8, 3> -> !xegpu.mem_desc<32x64xf32>
            xegpu.store_matrix %v0, %m[%i, %j] <{layout = #a'}> : vector<32x16xf32>, ...   // one holder of each tile
            gpu.barrier
            %w0 = xegpu.load_matrix %m[%k, %l] <{layout = #b'}> : ... -> vector<16x32xf32>"""
        mem = self.shared_matrix(shape_, elt, em)
        if self.in_loop(op):
            em.barrier()
        guard = self.writer(have, shape_, em)
        target = em.if_then(guard) if guard is not None else em
        for q, piece in zip(product(*[range(n) for n in self.grid(have, shape_)]), pieces):
            offs = self.piece_offsets(have, shape_, q, target)
            self.make_access(xegpu_ir.StoreMatrixOp, [piece, mem], offs, {}, self.piece_layout(have), [], target)
        em.barrier()
        out = []
        pt = VectorType(elt, list(self.piece_shape(want, shape_)))
        for q in product(*[range(n) for n in self.grid(want, shape_)]):
            offs = self.piece_offsets(want, shape_, q, em)
            out.append(self.make_access(xegpu_ir.LoadMatrixOp, [mem], offs, {}, self.piece_layout(want), [pt],
                                        em).results[0])
        return out

    def op_vector_multi_reduction(self, op: Operation, em: Emitter) -> None:
        src, r = op.source, op.results[0]
        s_lay = self.layout_of(src)
        dims = [int(x) for x in op.reduction_dims.get_values()]
        plans = plan(s_lay, shape(src))
        groups = []
        for j in dims:
            p = plans[j]
            groups.append(1 if p.L == 1 else (p.L if p.U == p.L * p.D else p.n // p.D))
        if prod(groups) == 1:
            self.value_pieces[r] = self.reduce_pieces(op, em, from_acc=True)
            return
        partials = self.reduce_pieces(op, em, from_acc=False)
        kind = kind_of(op)
        r_lay = self.layout_of(r)
        scalar = not is_vector(r)
        if scalar:
            # a reduction over every dim: each subgroup's partial goes through shared local
            # memory as a vector<1>, held whole by every lane (no layout)
            elt = r.type
            partials = [em.broadcast(partials[0], VectorType(elt, [1]))]
            r_lay, rshape = None, (1,)
        else:
            rshape = shape(r)
            elt = r.type.element_type
        G = prod(groups)
        mem = self.shared_matrix((G * rshape[0],) + rshape[1:], elt, em)
        if self.in_loop(op):
            em.barrier()
        digits = self.digits(s_lay)
        kept = kept_dims(s_lay)
        conds = []
        group_digits = []
        for j, g in zip(dims, groups):
            d = digits[kept[j]]
            if d is None:
                continue
            if g > 1:
                group_digits.append((d, g))
        # one copy of each partial: subgroups past the first g along a reduced dim, or
        # sharing a kept dim or a sliced-away one, hold copies
        row_guard = self.writer(s_lay, shape(src), em)
        guard = _all(em, conds + ([row_guard] if row_guard is not None else []))
        if len(group_digits) == 1:
            gid = group_digits[0][0]
        else:
            gid = em.linearize([d for d, _ in group_digits], [g for _, g in group_digits])
        target = em.if_then(guard) if guard is not None else em
        pshape = self.piece_shape(r_lay, rshape)
        playout = self.piece_layout(r_lay)
        grid = self.grid(r_lay, rshape)
        for q, piece in zip(product(*[range(n) for n in grid]), partials):
            offs = self.piece_offsets(r_lay, rshape, q, target)
            offs[0] = self.add(target, target.apply(AffineDimExpr(0) * rshape[0], [gid]), offs[0])
            self.make_access(xegpu_ir.StoreMatrixOp, [piece, mem], offs, {}, playout, [], target)
        em.barrier()
        accs = self.pieces(op.acc)
        out = []
        pt = VectorType(elt, list(pshape))
        for i, q in enumerate(product(*[range(n) for n in grid])):
            total = None
            for g in range(G):
                offs = self.piece_offsets(r_lay, rshape, q, em)
                offs[0] = self.add(em, offs[0], g * rshape[0])
                v = self.make_access(xegpu_ir.LoadMatrixOp, [mem], offs, {}, playout, [pt], em).results[0]
                total = v if total is None else self.combine(em, kind, total, v, r)
            if scalar:  # the vector<1>'s element combined with the accumulator
                out.append(em.multi_reduction(kind, total, accs[i], [0]))
                continue
            out.append(self.combine(em, kind, total, accs[i], r))
        self.value_pieces[r] = out

    def combine(self, em: Emitter, kind: str, a: SSAValue, b: SSAValue, like: SSAValue) -> SSAValue:
        v = em.combine(kind, a, b)
        notes.set_result_layout(v.owner, 0, self.piece_layout(self.layout_of(like)))
        return v


def _range_of(op: Operation) -> tuple[int, int] | None:
    attr = op.attributes.get("sg_id_range")
    return attr.data if isinstance(attr, xegpu_ir.RangeAttr) else None


def _all(em: Emitter, conds: list[SSAValue]) -> SSAValue | None:
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = em.andi(out, c)
    return out


def distribute(func: Operation, analysis: XeGPULayouts) -> None:
    SubgroupDistribution(func, analysis).run()
