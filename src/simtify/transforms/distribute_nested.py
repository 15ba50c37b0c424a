"""Nested (IREE-style) distribution: rewrite a workgroup-level function whose vectors
carry nested layouts into the per-thread (SIMT) program.

Every vector value becomes its thread's registers, ``vector<B.. x O.. x E..>``; the
code asks the layout which elements those are. A thread's coordinate in dim i for
register (b, o, e) is ``x = ((((s·B + b)·O + o)·T + t)·E + e)`` with ``t`` and ``s`` its
thread and subgroup digits, computed once at the function entry from the
workgroup-linear thread id. Ops are rewritten one by one:

    %v = vector.transfer_read %m[%i, %j] ... : vector<64x64xf32>   // layout #L
  becomes, for each batch/outer register group (b, o),
    %p = vector.transfer_read %m[%i + x0(b, o), %j + x1(b, o)] ... : vector<E0xE1xf32>
    %acc = vector.insert_strided_slice %p, %acc offsets = [b.., o.., 0..] ...

Reductions go in four steps (per thread; across lanes with ``gpu.subgroup_reduce`` over
clusters, or through workgroup memory where the lanes of a cluster are not a power-of-two
strided set inside one subgroup; across subgroups through workgroup memory, reading back
every subgroup's partial; then the accumulator). Writes of replicated values are done
by one owner only. Layout conversions are free when the ownership maps agree; otherwise
`plan_conversion` chooses a register permutation, lane shuffles or workgroup memory
(padded or swizzled so that neither side has bank conflicts, with the widest vector
accesses). A contraction whose operands carry a matrix intrinsic's layouts (`mma_kind`)
becomes one `amdgpu.mfma` / `nvgpu.mma.sync` per batch tile of M, N and K.
"""

from __future__ import annotations

from itertools import pairwise, product
from math import prod

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    VectorType,
    i1,
    i32,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.ir import gpu as gpu_ir
from simtify.layout import NestedLayout
from simtify.sim.affine_eval import result_dims
from simtify.transforms.emit import Emitter, neutral_value, scalar_attr
from simtify.transforms.propagate_layouts import (
    LayoutAnalysis,
    is_elementwise,
    is_vector,
    mask_layout,
)


def _where(op: Operation) -> str:
    from simtify.sim.interpreter import location_of

    return location_of(op)


def dist_type(t: VectorType, layout: NestedLayout) -> VectorType:
    return VectorType(t.element_type, list(layout.distributed_shape))


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _kind(op: Operation) -> str:
    k = op.kind.data
    return k.value if hasattr(k, "value") else str(k)


class NestedDistribution:
    def __init__(self, func: Operation, analysis: LayoutAnalysis, subgroup_size: int, threads: int,
                 target: str | None = None):
        from simtify.target import get_target

        self.target = get_target(target or ("gfx942" if subgroup_size == 64 else "sm_90"))
        self.func = func
        self.analysis = analysis
        self.sg = subgroup_size
        self.threads = threads
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.digit_cache: dict = {}
        self.const_cache: dict[int, SSAValue] = {}
        self.writer_cache: dict = {}
        self.loop_depth = 0  # scf.for bodies being distributed around the current op

    # --- entry: thread ids and uniform index math ---------------------------------

    def run(self) -> None:
        old_entry = self.func.body.blocks.first
        new_entry = Block(arg_types=[a.type for a in old_entry.args])
        for old, new in zip(old_entry.args, new_entry.args):
            if is_vector(old):
                raise SimtifyError("vector function arguments are not distributed; pass memrefs", _where(self.func))
            new.name_hint = old.name_hint
            self.vmap[old] = new
        self.entry = Emitter(new_entry)
        tx, ty, tz = (self.entry.value(gpu_ir.ThreadIdOp(d)) for d in "xyz")
        tx.name_hint, ty.name_hint, tz.name_hint = "thread_id_x", "thread_id_y", "thread_id_z"
        bx, by, bz = self.block_dims
        self.tid = self.entry.linearize([tz, ty, tx], [bz, by, bx])
        self.tid.name_hint = "tid"
        self.const_cache[0] = self.entry.index(0)
        self.const_cache[0].name_hint = "c0"
        # prelude ops (constants, digits) go before this marker, rewritten ops after it
        marker = self.entry.add(arith.ConstantOp(IntegerAttr(0, IndexType())))
        body = Emitter(new_entry)
        self.entry = Emitter(new_entry, before=marker)
        results = self.distribute_block(old_entry, body)
        terminator = old_entry.ops.last
        body.add(type(terminator).create(operands=results, properties=dict(terminator.properties),
                                         attributes=dict(terminator.attributes)))
        marker.detach()
        marker.erase()
        region = self.func.body
        region.detach_block(old_entry)
        region.add_block(new_entry)
        old_entry.erase(safe_erase=False)

    @property
    def block_dims(self) -> tuple[int, int, int]:
        return (self.threads, 1, 1)

    def c(self, n: int) -> SSAValue:
        if n not in self.const_cache:
            v = self.entry.index(n)
            v.name_hint = f"c{n}"
            self.const_cache[n] = v
        return self.const_cache[n]

    def _digits_of(self, x: SSAValue, tiles, strides, scale: int) -> list[SSAValue | None]:
        """Per dim, ``(x // (stride·scale)) % tile`` (None where the tile is 1), with one
        delinearize over the strides' nest when they nest, else affine.apply per dim."""
        dims = sorted((st * scale, n, d) for d, (n, st) in enumerate(zip(tiles, strides)) if n > 1)
        out: list[SSAValue | None] = [None] * len(tiles)
        if not dims:
            return out
        factors: list[tuple[int, int | None]] = []  # (size, dim) inner to outer
        cur = 1
        nests = True
        for st, n, d in dims:
            if st % cur:
                nests = False
                break
            if st > cur:
                factors.append((st // cur, None))
            factors.append((n, d))
            cur = st * n
        if nests:
            basis = [f for f, _ in reversed(factors)]
            results = self.entry.delinearize(x, basis)[1:]  # drop the unbounded outermost digit
            for (n, d), r in zip(reversed(factors), results):
                if d is not None:
                    out[d] = r
            return out
        for st, n, d in dims:
            e = (AffineDimExpr(0) // st) % n
            out[d] = self.entry.apply(e, [x])
        return out

    def digits(self, layout: NestedLayout) -> tuple[list, list]:
        key = (layout.subgroup_tile, layout.subgroup_strides, layout.thread_tile, layout.thread_strides)
        if key not in self.digit_cache:
            t = self._digits_of(self.tid, layout.thread_tile, layout.thread_strides, 1)
            s = self._digits_of(self.tid, layout.subgroup_tile, layout.subgroup_strides, self.sg)
            self.digit_cache[key] = (s, t)
        return self.digit_cache[key]

    def thread_base(self, layout: NestedLayout, d: int) -> SSAValue | None:
        """The coordinate of register (0, 0, 0) of this thread in dim d (None: 0)."""
        s, t = self.digits(layout)
        key = ("base", layout.subgroup_tile[d], layout.batch_tile[d], layout.outer_tile[d], layout.thread_tile[d],
               layout.element_tile[d], s[d], t[d])
        if s[d] is None and t[d] is None:
            return None
        if key not in self.digit_cache:
            S, B, O, T, E = (layout.subgroup_tile[d], layout.batch_tile[d], layout.outer_tile[d],
                             layout.thread_tile[d], layout.element_tile[d])
            self.digit_cache[key] = self.entry.linearize(
                [s[d] or self.c(0), self.c(0), self.c(0), t[d] or self.c(0), self.c(0)], [S, B, O, T, E])
        return self.digit_cache[key]

    def writer(self, layout: NestedLayout, thread_dims=None, subgroup_dims=None) -> SSAValue | None:
        """An i1 that is true on exactly one thread among those holding the same data
        (the same thread digits of `thread_dims` and subgroup digits of `subgroup_dims`):
        the smallest such tid. None when no data is replicated. Decided on the host for
        the launch's threads: the arithmetic form ``tid == Σ t·stride + sg·Σ s·stride``
        when it picks exactly those threads, else a per-thread table."""
        thread_dims = list(range(layout.rank) if thread_dims is None else thread_dims)
        subgroup_dims = list(range(layout.rank) if subgroup_dims is None else subgroup_dims)
        key = ("writer", layout.subgroup_tile, layout.subgroup_strides, layout.thread_tile, layout.thread_strides,
               tuple(thread_dims), tuple(subgroup_dims))
        if key in self.writer_cache:
            return self.writer_cache[key]
        tids = np.arange(self.threads)
        s_dig, t_dig = layout.thread_digits(tids, self.sg)
        digits = np.concatenate([t_dig[:, thread_dims], s_dig[:, subgroup_dims]], axis=1)
        first = np.unique(digits, axis=0, return_index=True)[1] if digits.shape[1] else np.array([0])
        chosen = np.zeros(self.threads, dtype=bool)
        chosen[first] = True
        if chosen.all():
            self.writer_cache[key] = None
            return None
        formula = np.zeros(self.threads, dtype=np.int64)
        for d in thread_dims:
            formula += t_dig[:, d] * layout.thread_strides[d]
        for d in subgroup_dims:
            formula += s_dig[:, d] * layout.subgroup_strides[d] * self.sg
        s, t = self.digits(layout)
        if np.array_equal(formula == tids, chosen):
            expr: AffineExpr = AffineConstantExpr(0)
            operands = []
            for d in thread_dims:
                if t[d] is not None:
                    expr = expr + AffineDimExpr(len(operands)) * layout.thread_strides[d]
                    operands.append(t[d])
            for d in subgroup_dims:
                if s[d] is not None:
                    expr = expr + AffineDimExpr(len(operands)) * (layout.subgroup_strides[d] * self.sg)
                    operands.append(s[d])
            canonical = self.entry.apply(expr, operands) if operands else self.c(0)
            cond = self.entry.cmpi("eq", self.tid, canonical)
        else:
            from simtify.ir import vector as vector_ir

            table = self.entry.dense(VectorType(i1, [self.threads]), [bool(x) for x in chosen])
            cond = self.entry.value(vector_ir.ExtractOp(table, [self.tid], i1))
        self.writer_cache[key] = cond
        return cond

    # --- walking ------------------------------------------------------------------

    def L(self, v: SSAValue) -> NestedLayout:
        lay = self.analysis.get(v)
        if lay is None:
            raise SimtifyError(f"no layout for a {v.type} value", _where(v.owner) if isinstance(v.owner, Operation) else "")
        return lay

    def m(self, v: SSAValue) -> SSAValue:
        return self.vmap[v]

    def distribute_block(self, old: Block, em: Emitter) -> list[SSAValue]:
        for op in old.ops:
            if op.name in ("scf.yield", "func.return", "gpu.return", "gpu.yield"):
                return [self.m(v) for v in op.operands]
            try:
                self.distribute(op, em)
            except SimtifyError as e:
                raise e.at(_where(op))
        return []

    def distribute(self, op: Operation, em: Emitter) -> None:
        if not op.regions and _only_zero_d(op):
            self.zero_d(op, em)
            return
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is not None:
            handler(op, em)
            return
        if is_elementwise(op):
            self.elementwise(op, em)
            return
        vectors = [v for v in list(op.operands) + list(op.results) if is_vector(v)]
        if vectors or op.regions:
            raise SimtifyError(f"nested distribution does not support '{op.name}' here")
        clone = op.clone(value_mapper=dict(self.vmap))
        em.add(clone)
        for old, new in zip(op.results, clone.results):
            self.vmap[old] = new

    # --- ops ----------------------------------------------------------------------

    def zero_d(self, op: Operation, em: Emitter) -> None:
        """An op on 0-d vectors only: every thread holds the whole (one-element) value,
        as with scalars; a write of one is done by thread 0 alone."""
        target = em
        if op.name in ("vector.transfer_write", "vector.store", "memref.store"):
            target = em.if_then(em.cmpi("eq", self.tid, self.c(0)))
        clone = op.clone(value_mapper=dict(self.vmap))
        target.add(clone)
        for old, new in zip(op.results, clone.results):
            self.vmap[old] = new

    def elementwise(self, op: Operation, em: Emitter) -> None:
        lay = self.L(op.results[0])
        operands = [self.m(o) for o in op.operands]
        types = [dist_type(r.type, lay) if is_vector(r) else r.type for r in op.results]
        new = type(op).create(operands=operands, result_types=types, properties=dict(op.properties),
                              attributes=dict(op.attributes))
        em.add(new)
        for old, v in zip(op.results, new.results):
            self.vmap[old] = v

    def op_arith_constant(self, op: Operation, em: Emitter) -> None:
        r = op.results[0]
        if not is_vector(r):
            self.vmap[r] = em.add(op.clone()).results[0]
            return
        lay = self.L(r)
        attr = op.properties.get("value")
        attr = attr if attr is not None else op.attributes["value"]
        dt = dist_type(r.type, lay)
        vals = attr.get_values() if isinstance(attr, DenseIntOrFPElementsAttr) else None
        if vals is not None and len(set(vals)) == 1:
            new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(dt, [vals[0]] * prod(dt.get_shape())), dt)
            self.vmap[r] = em.value(new)
            return
        # a non-splat constant: each thread picks its elements out of the whole vector
        whole = em.add(op.clone()).results[0]
        self.vmap[r] = self.gather_registers(whole, lay, em)

    def gather_registers(self, whole: SSAValue, lay: NestedLayout, em: Emitter) -> SSAValue:
        """This thread's registers of a vector every thread holds whole."""
        from simtify.ir import vector as vector_ir

        elt = whole.type.element_type
        scalars = []
        for regs in product(*[range(n) for n in lay.distributed_shape]):
            pos = []
            for d in range(lay.rank):
                b, o, e = regs[d], regs[lay.rank + d], regs[2 * lay.rank + d]
                k = (b * lay.outer_tile[d] + o) * lay.thread_tile[d] * lay.element_tile[d] + e
                base = self.thread_base(lay, d)
                pos.append(em.apply(AffineDimExpr(0) + k, [base]) if base is not None else self.c(k))
            scalars.append(em.value(vector_ir.ExtractOp(whole, pos, elt)))
        flat = em.value(vector_ir.FromElementsOp.build(operands=[scalars], result_types=[
            VectorType(elt, [len(scalars)])]))
        return em.shape_cast(flat, dist_type(whole.type, lay))

    def op_iree_vector_ext_to_layout(self, op: Operation, em: Emitter) -> None:
        src = op.operands[0]
        self.vmap[op.results[0]] = self.convert(self.m(src), self.L(src), op.nested_layout, src.type, em,
                                                force_memory=op.shared_memory_conversion is not None)

    def op_vector_transpose(self, op: Operation, em: Emitter) -> None:
        perm = list(op.permutation.get_values())
        r = len(perm)
        full = perm + [r + p for p in perm] + [2 * r + p for p in perm]
        self.vmap[op.results[0]] = em.transpose(self.m(op.operands[0]), full)

    def op_vector_shape_cast(self, op: Operation, em: Emitter) -> None:
        self.vmap[op.results[0]] = em.shape_cast(self.m(op.operands[0]), dist_type(op.results[0].type,
                                                                               self.L(op.results[0])))

    def op_vector_broadcast(self, op: Operation, em: Emitter) -> None:
        lay = self.L(op.results[0])
        dt = dist_type(op.results[0].type, lay)
        src = op.source
        if not is_vector(src):
            self.vmap[op.results[0]] = em.broadcast(self.m(src), dt)
            return
        lead = lay.rank - len(src.type.get_shape())
        sl = self.L(src)
        shape = []
        for group in (sl.batch_tile, sl.outer_tile, sl.element_tile):
            shape += [1] * lead + list(group)
        v = em.shape_cast(self.m(src), VectorType(dt.element_type, shape))
        self.vmap[op.results[0]] = em.broadcast(v, dt)

    def op_vector_step(self, op: Operation, em: Emitter) -> None:
        self.vmap[op.results[0]] = self.coordinates(self.L(op.results[0]), 0, em)

    def coordinates(self, lay: NestedLayout, d: int, em: Emitter) -> SSAValue:
        """A vector<index> of the distributed shape holding each register's coordinate in dim d."""
        shape = lay.distributed_shape
        offsets = []
        for regs in product(*[range(n) for n in shape]):
            b, o, e = regs[d], regs[lay.rank + d], regs[2 * lay.rank + d]
            offsets.append((b * lay.outer_tile[d] + o) * lay.thread_tile[d] * lay.element_tile[d] + e)
        vt = VectorType(IndexType(), list(shape))
        cst = em.dense(vt, offsets)
        base = self.thread_base(lay, d)
        if base is None:
            return cst
        return em.value(arith.AddiOp(em.broadcast(base, vt), cst))

    def op_vector_create_mask(self, op: Operation, em: Emitter) -> None:
        self.vmap[op.results[0]] = self.mask(self.L(op.results[0]), [self.m(o) for o in op.operands], em)

    def op_vector_constant_mask(self, op: Operation, em: Emitter) -> None:
        sizes = list(op.mask_dim_sizes.get_values())
        self.vmap[op.results[0]] = self.mask(self.L(op.results[0]), [self.c(s) for s in sizes], em)

    def mask(self, lay: NestedLayout, bounds, em: Emitter) -> SSAValue:
        vt = VectorType(IndexType(), list(lay.distributed_shape))
        result = None
        for d, bound in enumerate(bounds):
            coords = self.coordinates(lay, d, em)
            inside = em.cmpi("slt", coords, em.broadcast(bound, vt))
            result = inside if result is None else em.andi(result, inside)
        return result

    # --- control flow -------------------------------------------------------------

    def op_scf_for(self, op: Operation, em: Emitter) -> None:
        old_body = op.regions[0].blocks.first
        inits = [self.m(v) for v in op.operands[3:]]
        body = Block(arg_types=[IndexType()] + [v.type for v in inits])
        for old, new in zip(old_body.args, body.args):
            new.name_hint = old.name_hint
            self.vmap[old] = new
        self.loop_depth += 1
        try:
            results = self.distribute_block(old_body, Emitter(body))
        finally:
            self.loop_depth -= 1
        body.add_op(scf.YieldOp(*results))
        new = scf.ForOp(self.m(op.operands[0]), self.m(op.operands[1]), self.m(op.operands[2]), inits, Region(body))
        em.add(new)
        for old, v in zip(op.results, new.results):
            self.vmap[old] = v

    def op_scf_if(self, op: Operation, em: Emitter) -> None:
        types = [dist_type(r.type, self.L(r)) if is_vector(r) else r.type for r in op.results]
        regions = []
        for region in op.regions:
            if not region.blocks:
                regions.append(None)
                continue
            block = Block()
            results = self.distribute_block(region.blocks.first, Emitter(block))
            block.add_op(scf.YieldOp(*results))
            regions.append(Region(block))
        new = scf.IfOp(self.m(op.operands[0]), types, regions[0], regions[1])
        em.add(new)
        for old, v in zip(op.results, new.results):
            self.vmap[old] = v

    # --- memory -------------------------------------------------------------------

    def register_groups(self, lay: NestedLayout):
        """(b, o) per dim for every batch/outer register group, in register order."""
        r = lay.rank
        for bo in product(*[range(n) for n in lay.batch_tile + lay.outer_tile]):
            yield bo[:r], bo[r:]

    def index_for(self, base: SSAValue, lay: NestedLayout, k: int, b, o, em: Emitter) -> SSAValue:
        """base + this thread's coordinate of register group (b, o) in layout dim k."""
        off = (b[k] * lay.outer_tile[k] + o[k]) * lay.thread_tile[k] * lay.element_tile[k]
        tb = self.thread_base(lay, k)
        operands = [base] + ([tb] if tb is not None else [])
        expr = AffineDimExpr(0) + off
        if tb is not None:
            expr = expr + AffineDimExpr(1)
        return em.apply(expr, operands)

    def read_groups(self, source, bases, perm, lay: NestedLayout, vt: VectorType, padding, in_bounds, em: Emitter,
                    mask=None, mask_lay=None) -> SSAValue:
        r = lay.rank
        elt = vt.element_type
        ebox = VectorType(elt, list(lay.element_tile))
        perm_map = AffineMap(len(bases), 0, tuple(AffineDimExpr(d) if d is not None else AffineConstantExpr(0)
                                                  for d in perm))
        acc = em.broadcast(padding, dist_type(vt, lay))
        for b, o in self.register_groups(lay):
            idx = list(bases)
            for k, d in enumerate(perm):
                if d is not None:
                    idx[d] = self.index_for(bases[d], lay, k, b, o, em)
            m = self.mask_group(mask, mask_lay, perm, b, o, em) if mask is not None else None
            piece = em.transfer_read(source, idx, padding, ebox, perm_map, in_bounds, m)
            acc = em.insert_strided(piece, acc, list(b) + list(o) + [0] * r)
        return acc

    def mask_group(self, mask, mask_lay, perm, b, o, em):
        order = [k for _, k in sorted((d, k) for k, d in enumerate(perm) if d is not None)]
        pos = [b[k] for k in order] + [o[k] for k in order]
        return em.extract(mask, pos, VectorType(mask.type.element_type, list(mask_lay.element_tile)))

    def write_groups(self, value, dest, bases, perm, lay: NestedLayout, in_bounds, em: Emitter, mask=None,
                     mask_lay=None) -> None:
        r = lay.rank
        elt = value.type.element_type
        ebox = VectorType(elt, list(lay.element_tile))
        perm_map = AffineMap(len(bases), 0, tuple(AffineDimExpr(d) if d is not None else AffineConstantExpr(0)
                                                  for d in perm))
        for b, o in self.register_groups(lay):
            idx = list(bases)
            for k, d in enumerate(perm):
                if d is not None:
                    idx[d] = self.index_for(bases[d], lay, k, b, o, em)
            piece = em.extract(value, list(b) + list(o), ebox) if r else value
            m = self.mask_group(mask, mask_lay, perm, b, o, em) if mask is not None else None
            em.transfer_write(piece, dest, idx, perm_map, in_bounds, m)

    def op_vector_transfer_read(self, op: Operation, em: Emitter) -> None:
        lay = self.L(op.results[0])
        perm = result_dims(op.permutation_map.data)
        in_bounds = [bool(x.value.data) for x in op.in_bounds.data]
        mask = self.m(op.mask) if op.mask is not None else None
        self.vmap[op.results[0]] = self.read_groups(
            self.m(op.source), [self.m(i) for i in op.indices], perm, lay, op.results[0].type, self.m(op.padding),
            in_bounds, em, mask, mask_layout(op, lay) if mask is not None else None)

    def op_vector_transfer_write(self, op: Operation, em: Emitter) -> None:
        lay = self.L(op.vector)
        perm = result_dims(op.permutation_map.data)
        in_bounds = [bool(x.value.data) for x in op.in_bounds.data]
        guard = self.writer(lay)
        target = em.if_then(guard) if guard is not None else em
        mask = self.m(op.mask) if op.mask is not None else None
        self.write_groups(self.m(op.vector), self.m(op.source), [self.m(i) for i in op.indices], perm, lay, in_bounds,
                          target, mask, mask_layout(op, lay) if mask is not None else None)

    def op_iree_vector_ext_transfer_gather(self, op: Operation, em: Emitter) -> None:
        """Per register group, a gather of the thread's element block: offsets move by
        the group's coordinate on the dims the source map reads directly; index vectors
        and mask are cut to the same block."""
        from simtify.ir.iree_vector_ext import TransferGatherOp

        if op.indexing_maps is None:
            raise SimtifyError("transfer_gather is distributed in IREE 3.12's indexing_maps form")
        lay = self.L(op.results[0])
        r = lay.rank
        maps = [m.data for m in op.indexing_maps.data]
        vt = op.results[0].type
        ebox = VectorType(vt.element_type, list(lay.element_tile))
        offsets = [self.m(o) for o in op.offsets]
        direct: dict[int, int] = {}
        for j, e in enumerate(maps[0].results):
            if isinstance(e, AffineDimExpr):
                direct[j] = e.position
            elif e.used_dims() if hasattr(e, "used_dims") else False:
                raise SimtifyError("transfer_gather source maps must read a vector dim directly (d_k), "
                                   "a symbol or a constant")
        acc = em.broadcast(self.m(op.padding), dist_type(vt, lay))
        for b, o in self.register_groups(lay):
            offs = list(offsets)
            for j, k in direct.items():
                offs[j] = self.index_for(offsets[j], lay, k, b, o, em)
            vecs = []
            for vec, m in zip(op.index_vecs, maps[1:]):
                if not is_vector(vec):
                    vecs.append(self.m(vec))
                    continue
                dims = result_dims(m)
                sub = lay.apply(dims)
                vecs.append(em.extract(self.m(vec), [b[d] for d in dims] + [o[d] for d in dims],
                                       VectorType(vec.type.element_type, list(sub.element_tile))))
            mask = []
            if op.mask is not None:
                mask = [em.extract(self.m(op.mask), list(b) + list(o),
                                   VectorType(op.mask.type.element_type, list(lay.element_tile)))]
            piece = em.value(TransferGatherOp.build(
                operands=[self.m(op.base), offs, vecs, self.m(op.padding), mask], result_types=[ebox],
                properties={"indexing_maps": op.indexing_maps}))
            acc = em.insert_strided(piece, acc, list(b) + list(o) + [0] * r)
        self.vmap[op.results[0]] = acc

    # --- conversions --------------------------------------------------------------

    def convert(self, value: SSAValue, src: NestedLayout, dst: NestedLayout, vtype: VectorType, em: Emitter,
                force_memory: bool = False) -> SSAValue:
        """Move `value` from layout `src` to `dst` the way `plan_conversion` chooses:
        nothing, a register permutation, lane shuffles, or workgroup memory."""
        from simtify.transforms.plan_conversion import plan_conversion

        if not force_memory and self.analysis.same(src, dst):
            # identical ownership maps: the same registers in the same order, maybe
            # grouped into a differently shaped [B.., O.., E..]
            return em.shape_cast(value, dist_type(vtype, dst))
        if not force_memory and self._batch_outer_only(src, dst):
            return self._batch_outer_permute(value, src, dst, vtype, em)
        plan = plan_conversion(src, dst, subgroup_size=self.sg, threads=self.threads, target=self.target,
                               element_bytes=_element_bytes(vtype.element_type), force_memory=force_memory,
                               barriers=2 if self.in_loop(em) else 1)
        if plan.kind in ("registers", "shuffles"):
            return self.through_lanes(value, plan.lanes, dst, vtype, em)
        return self.through_memory(value, src, dst, vtype, em, plan.memory)

    def in_loop(self, em: Emitter) -> bool:
        """Whether code emitted by `em` may run more than once (inside a loop)."""
        if self.loop_depth:
            return True
        op = em.block.parent_op()
        while op is not None and op is not self.func:
            if op.name in ("scf.for", "scf.while", "scf.forall"):
                return True
            op = op.parent_op()
        return False

    @staticmethod
    def _batch_outer_only(src: NestedLayout, dst: NestedLayout) -> bool:
        return (src.subgroup_tile == dst.subgroup_tile and src.thread_tile == dst.thread_tile
                and src.element_tile == dst.element_tile and src.subgroup_strides == dst.subgroup_strides
                and src.thread_strides == dst.thread_strides
                and all(a * b == c * d for a, b, c, d in zip(src.batch_tile, src.outer_tile, dst.batch_tile,
                                                              dst.outer_tile)))

    def _batch_outer_permute(self, value, src, dst, vtype, em):
        """Same elements per thread, batch/outer split differently: per dim the index
        b·O + o is kept, so regroup [B.., O.., E..] -> per dim (B·O) -> [B'.., O'.., E..]."""
        r = src.rank
        elt = vtype.element_type
        inter = [x for d in range(r) for x in (d, r + d)] + [2 * r + d for d in range(r)]
        v = em.transpose(value, inter)
        merged = VectorType(elt, [src.batch_tile[d] * src.outer_tile[d] for d in range(r)] + list(src.element_tile))
        v = em.shape_cast(v, merged)
        split = VectorType(elt, [x for d in range(r) for x in (dst.batch_tile[d], dst.outer_tile[d])]
                           + list(dst.element_tile))
        v = em.shape_cast(v, split)
        back = [2 * d for d in range(r)] + [2 * d + 1 for d in range(r)] + [2 * r + d for d in range(r)]
        return em.transpose(v, back)

    # --- conversions through lanes -------------------------------------------------

    def tid_table(self, values, elt) -> SSAValue:
        """This thread's entry of a per-thread constant table (indexed by tid)."""
        from simtify.ir import vector as vector_ir

        key = ("table", str(elt), tuple(int(v) if elt != i1 else bool(v) for v in values))
        if key not in self.writer_cache:
            table = self.entry.dense(VectorType(elt, [self.threads]), list(key[2]))
            self.writer_cache[key] = self.entry.value(vector_ir.ExtractOp(table, [self.tid], elt))
        return self.writer_cache[key]

    def i32(self, n: int) -> SSAValue:
        key = ("i32", n)
        if key not in self.writer_cache:
            self.writer_cache[key] = self.entry.value(arith.ConstantOp(IntegerAttr(n, i32)))
        return self.writer_cache[key]

    def f2_lane(self, const: int, columns) -> SSAValue:
        """The i32 lane ``const ^ XOR_j columns[j]·bit_j(lane)``, computed once per thread."""
        key = ("f2", const, tuple(columns))
        if key in self.writer_cache:
            return self.writer_cache[key]
        from simtify.ir import arith as arith_ir

        # contiguous runs of lane bits that move as a block (columns[j+k] = columns[j]·2^k)
        # become one floordiv/mod/mul term; the terms are XORed
        terms: list[SSAValue] = []
        j = 0
        while j < len(columns):
            if not columns[j]:
                j += 1
                continue
            k = j
            while k + 1 < len(columns) and columns[k + 1] == columns[j] << (k + 1 - j) \
                    and _is_pow2(columns[j]):
                k += 1
            n = k - j + 1
            if _is_pow2(columns[j]):
                e = ((AffineDimExpr(0) // (1 << j)) % (1 << n)) * columns[j]
            else:
                e = ((AffineDimExpr(0) // (1 << j)) % 2) * columns[j]
                k, n = j, 1
            terms.append(self.entry.apply(e, [self.tid]))
            j = k + 1
        if const or not terms:
            terms.append(self.c(const))
        lane = terms[0]
        for t in terms[1:]:
            lane = self.entry.value(arith.XOrIOp(lane, t))
        out = self.entry.value(arith_ir.IndexCastOp(lane, i32))
        self.writer_cache[key] = out
        return out

    def member_test(self, rnd) -> SSAValue:
        """i1: whether this thread takes round `rnd` (lane bit-field tests, else a table)."""
        if not rnd.member_fields:
            return self.tid_table(rnd.members, i1)
        key = ("members", rnd.member_fields)
        if key in self.writer_cache:
            return self.writer_cache[key]
        cond = None
        for shift, n, v in rnd.member_fields:
            f = self.entry.apply((AffineDimExpr(0) // (1 << shift)) % (1 << n), [self.tid])
            c = self.entry.cmpi("eq", f, self.c(v))
            cond = c if cond is None else self.entry.andi(cond, c)
        self.writer_cache[key] = cond
        return cond

    def through_lanes(self, value: SSAValue, plan, dst: NestedLayout, vtype: VectorType, em: Emitter) -> SSAValue:
        """Each destination register from its rounds: the source register, from this
        thread (no shuffle) or from another lane of the subgroup (gpu.shuffle), selected
        per thread where several rounds feed one register."""
        from simtify.ir import arith as arith_ir
        from simtify.ir import vector as vector_ir

        elt = vtype.element_type
        src_regs = prod(value.type.get_shape())
        flat = em.shape_cast(value, VectorType(elt, [src_regs]))
        scalars: dict[int, SSAValue] = {}
        regs: list[SSAValue | None] = [None] * plan.dst_registers
        for rnd in plan.rounds:
            if rnd.src not in scalars:
                scalars[rnd.src] = em.extract(flat, [rnd.src], elt)
            v = scalars[rnd.src]
            if rnd.is_shuffle:
                if rnd.mode in ("xor", "idx"):
                    offset = self.i32(rnd.value)
                elif rnd.mode == "f2":
                    offset = self.f2_lane(rnd.value, rnd.columns)
                else:
                    offset = self.tid_table(rnd.lanes, i32)
                v = em.add(gpu_ir.ShuffleOp("xor" if rnd.mode == "xor" else "idx", v, offset, self.i32(self.sg))
                           ).results[0]
            prev = regs[rnd.dst]
            if prev is None:
                regs[rnd.dst] = v
            else:
                regs[rnd.dst] = em.value(arith_ir.SelectOp(self.member_test(rnd), v, prev))
        out = em.value(vector_ir.FromElementsOp.build(operands=[regs], result_types=[
            VectorType(elt, [plan.dst_registers])]))
        return em.shape_cast(out, dist_type(vtype, dst))

    # --- conversions through workgroup memory --------------------------------------

    def buffer_address(self, lay: NestedLayout, buf, offset, em: Emitter) -> SSAValue:
        """The buffer address of this thread's run starting at coordinate base + `offset`
        (see `plan_conversion.BufferLayout.address`)."""
        weights = buf.weights
        bases = [(d, self.thread_base(lay, d)) for d in range(lay.rank)]
        if buf.swizzle is not None:
            vec, per_phase, max_phase = buf.swizzle
            fast = buf.order[-1]
            row_expr: AffineExpr = AffineConstantExpr(sum(offset[d] * weights[d] // buf.pitch
                                                          for d in range(lay.rank) if d != fast))
            operands = []
            for d, b in bases:
                if d != fast and b is not None:
                    row_expr = row_expr + AffineDimExpr(len(operands)) * (weights[d] // buf.pitch)
                    operands.append(b)
            row = em.apply(row_expr, operands) if operands else self.c(int(row_expr.value))
            fb = bases[fast][1]
            col = em.apply(AffineDimExpr(0) + offset[fast], [fb]) if fb is not None else self.c(offset[fast])
            g = em.apply(((AffineDimExpr(0) // per_phase) % max_phase) * vec, [row])
            colx = em.value(arith.XOrIOp(col, g))
            return em.apply(AffineDimExpr(0) * buf.pitch + AffineDimExpr(1), [row, colx])
        const = sum(offset[d] * weights[d] for d in range(lay.rank))
        plain = self.plain_address(bases, weights, const, em)
        if not buf.xor_columns:
            return plain
        import numpy as _np

        per_run = int(buf.xor_of(_np.array([const]))[0])
        thread_xor = self.thread_swizzle(lay, buf, bases, weights)
        if thread_xor is None:
            return plain if per_run == 0 else em.value(arith.XOrIOp(plain, self.c(per_run)))
        x = thread_xor if per_run == 0 else em.value(arith.XOrIOp(thread_xor, self.c(per_run)))
        return em.value(arith.XOrIOp(plain, x))

    def plain_address(self, bases, weights, const: int, em: Emitter) -> SSAValue:
        expr: AffineExpr = AffineConstantExpr(const)
        operands = []
        for d, b in bases:
            if b is not None:
                expr = expr + AffineDimExpr(len(operands)) * weights[d]
                operands.append(b)
        return em.apply(expr, operands) if operands else self.c(const)

    def thread_swizzle(self, lay: NestedLayout, buf, bases, weights) -> SSAValue | None:
        """The thread's part of the F2 swizzle: XOR over the high bits b of its base
        address of b's mask (None when 0 for every thread)."""
        key = ("swizzle", lay, buf)
        if key in self.digit_cache:
            return self.digit_cache[key]
        base = self.plain_address(bases, weights, 0, self.entry)
        result = None
        for bit, mask in buf.xor_columns:
            term = self.entry.apply(((AffineDimExpr(0) // (1 << bit)) % 2) * mask, [base])
            result = term if result is None else self.entry.value(arith.XOrIOp(result, term))
        self.digit_cache[key] = result
        return result

    def through_memory(self, value, src, dst, vtype, em, plan=None) -> SSAValue:
        """Write with the source layout (one owner per element), barrier, read with the
        target layout, each thread's runs as the widest vector accesses the plan allows,
        at the plan's padded or swizzled addresses; inside a loop a second barrier keeps
        the next iteration's writes behind these reads."""
        from simtify.ir import vector as vector_ir
        from simtify.transforms.plan_conversion import plan_conversion

        in_loop = self.in_loop(em)
        if plan is None:
            plan = plan_conversion(src, dst, subgroup_size=self.sg, threads=self.threads, target=self.target,
                                   element_bytes=_element_bytes(vtype.element_type), force_memory=True,
                                   barriers=2 if in_loop else 1).memory
        elt = vtype.element_type
        buf = self.entry.workgroup_alloc([plan.buffer.elements], elt)
        flat = em.shape_cast(value, VectorType(elt, [prod(src.distributed_shape)]))
        guard = self.writer(src)
        target = em.if_then(guard) if guard is not None else em
        for run, offset in zip(plan.write.runs, plan.write.offsets):
            piece = _gather(flat, run, elt, target)
            addr = self.buffer_address(src, plan.buffer, offset, target)
            target.add(vector_ir.StoreOp(piece, buf, [addr]))
        em.barrier()
        regs = prod(dst.distributed_shape)
        pad = em.value(arith.ConstantOp(_zero_attr(elt)))
        acc = em.broadcast(pad, VectorType(elt, [regs]))
        for run, offset in zip(plan.read.runs, plan.read.offsets):
            addr = self.buffer_address(dst, plan.buffer, offset, em)
            piece = em.value(vector_ir.LoadOp(buf, [addr], VectorType(elt, [len(run)])))
            acc = _scatter(piece, acc, run, elt, em)
        if in_loop:
            em.barrier()
        return em.shape_cast(acc, dist_type(vtype, dst))

    # --- reductions ---------------------------------------------------------------

    def op_vector_multi_reduction(self, op: Operation, em: Emitter) -> None:
        kind = _kind(op)
        src = op.source
        lay = self.L(src)
        red = sorted(op.reduction_dims.get_values())
        r = lay.rank
        kept = [d for d in range(r) if d not in red]
        elt = src.type.element_type
        scalar_result = not is_vector(op.results[0])
        # 1. per thread: batch, outer and element digits of the reduced dims
        axes = [d for d in red] + [r + d for d in red] + [2 * r + d for d in red]
        kept_lay = lay.project(red) if kept else None
        if scalar_result:
            part_t = elt
        else:
            part_t = dist_type(op.results[0].type, kept_lay)
        neutral = self.neutral(kind, part_t, em)
        part = em.multi_reduction(kind, self.m(src), neutral, axes)
        part = self.reduce_across(kind, part, lay, red, op.results[0].type, em)
        # 4. the accumulator, once
        self.vmap[op.results[0]] = em.combine(kind, part, self.m(op.acc))

    def reduce_across(self, kind: str, part: SSAValue, lay: NestedLayout, red: list[int], result_type,
                      em: Emitter) -> SSAValue:
        """Steps 2 and 3 of a reduction: `part` holds each thread's partial over the
        reduced dims `red` of `lay` (distributed as ``lay.project(red)``); combine the
        partials across lanes (cluster subgroup_reduce, or memory when the lanes are
        not a power-of-two strided set inside one subgroup) and across subgroups."""
        kept = [d for d in range(lay.rank) if d not in red]
        mem_thread_dims = []
        for d in red:
            T, st = lay.thread_tile[d], lay.thread_strides[d]
            if T == 1:
                continue
            if _is_pow2(T) and _is_pow2(st) and self.sg % (T * st) == 0:
                part = self.cluster_reduce(kind, part, T, st, em)
            else:
                mem_thread_dims.append(d)
        mem_sub_dims = [d for d in red if lay.subgroup_tile[d] > 1]
        if mem_thread_dims or mem_sub_dims:
            part = self.reduce_through_memory(kind, part, lay, red, kept, mem_thread_dims, mem_sub_dims,
                                              result_type, em)
        return part

    def op_vector_contract(self, op: Operation, em: Emitter) -> None:
        """Per thread a contract over its batch/outer/element registers, then the
        cross-lane and cross-subgroup steps of a reduction over the contracted dims."""
        from simtify.ir import vector as vector_ir

        kind = _kind(op)
        from simtify.transforms.propagate_layouts import mma_of

        mma = mma_of(op)
        if mma is not None:
            if kind != "add":
                raise SimtifyError(f"a matrix intrinsic accumulates with add, not <{kind}>")
            self.mma_contract(op, *mma, em)
            return
        maps = [result_dims(m.data) for m in op.indexing_maps.data]
        iters = [it.data.value if hasattr(it.data, "value") else str(it.data) for it in op.iterator_types.data]
        n = len(iters)
        lay_l, lay_r = self.L(op.lhs), self.L(op.rhs)
        per_dim = {}
        for lay, m in ((lay_l, maps[0]), (lay_r, maps[1])):
            for k, d in enumerate(m):
                per_dim.setdefault(d, tuple(getattr(lay, f)[k] for f in _FIELDS))
        it = NestedLayout(**{f: tuple(per_dim[d][i] for d in range(n)) for i, f in enumerate(_FIELDS)})
        red = [d for d in range(n) if iters[d] == "reduction"]
        acc_dims = maps[2]
        res = op.results[0]

        def local_map(dims):
            exprs = [AffineDimExpr(g * n + d) for g in range(3) for d in dims]
            return AffineMap(3 * n, 0, tuple(exprs))

        local_maps = [local_map(m) for m in maps]
        local_iters = [iters[d] for g in range(3) for d in range(n)]
        if is_vector(res):
            acc_lay = self.L(res)
            part_t = dist_type(res.type, acc_lay)
        else:
            part_t = res.type
        zero = self.neutral(kind, part_t, em)
        part = em.value(vector_ir.ContractionOp(self.m(op.lhs), self.m(op.rhs), zero, local_maps, local_iters,
                                                kind))
        # reorder the iteration layout as [acc dims.., reduced dims..] so that its
        # projection is the accumulator's layout
        order = list(acc_dims) + red
        lay = it.apply(order)
        part = self.reduce_across(kind, part, lay, list(range(len(acc_dims), len(order))), res.type, em)
        self.vmap[res] = em.combine(kind, part, self.m(op.acc))

    def mma_contract(self, op: Operation, intr, dims, em: Emitter) -> None:
        """A contraction whose operands carry an intrinsic's layouts: per (m, n) batch
        tile, the accumulator fragment goes through one intrinsic op per k batch tile.

            %c = vector.contract ... %a, %b, %acc      // A: [Bm, Bk] tiles, B: [Bk, Bn]
          becomes, for every (bm, bn) and bk in order,
            %d = amdgpu.mfma 16x16x16 %a[bm, bk] * %b[bk, bn] + %d : ...  (or nvgpu.mma.sync)
        """
        from simtify.ir import amdgpu as amdgpu_ir
        from simtify.ir import nvgpu as nvgpu_ir

        dm, dn, dk = dims
        maps = [result_dims(m.data) for m in op.indexing_maps.data]
        canon = {"a": (dm, dk), "b": (dk, dn), "c": (dm, dn)}
        for role, v, want in (("a", op.lhs, intr.a_type), ("b", op.rhs, intr.b_type), ("c", op.acc, intr.c_type)):
            if str(v.type.element_type) != want:
                raise SimtifyError(f"{intr.name} takes {want} for {role.upper()}, not {v.type.element_type}")
        frags = {}
        for role, v, m in (("a", op.lhs, maps[0]), ("b", op.rhs, maps[1]), ("c", op.acc, maps[2])):
            lay = self.L(v)
            order = [m.index(d) for d in canon[role]]
            can = lay.apply(order)
            if not intr.matches(role, can):
                raise SimtifyError(f"the {role.upper()} operand's layout {lay} is not made of {intr.name}'s tiles")
            full = order + [2 + i for i in order] + [4 + i for i in order]
            frags[role] = (em.transpose(self.m(v), full), can)
        (a, la), (b, lb), (c, lc) = frags["a"], frags["b"], frags["c"]
        elt_c = op.acc.type.element_type
        bm, bk, bn = la.batch_tile[0], la.batch_tile[1], lb.batch_tile[1]
        result = c
        for i in range(bm):
            for j in range(bn):
                d = self.to_fragment(em.extract(c, [i, j], VectorType(elt_c, list(lc.distributed_shape[2:]))),
                                     intr, "c", em)
                for kk in range(bk):
                    fa = self.to_fragment(em.extract(a, [i, kk], VectorType(op.lhs.type.element_type,
                                                                              list(la.distributed_shape[2:]))),
                                          intr, "a", em)
                    fb = self.to_fragment(em.extract(b, [kk, j], VectorType(op.rhs.type.element_type,
                                                                              list(lb.distributed_shape[2:]))),
                                          intr, "b", em)
                    if intr.op == "amdgpu.mfma":
                        d = em.value(amdgpu_ir.MFMAOp(fa, fb, d, (intr.m, intr.n, intr.k)))
                    else:
                        d = em.value(nvgpu_ir.MmaSyncOp(fa, fb, d, (intr.m, intr.n, intr.k)))
                back = self.from_fragment(d, intr, "c", VectorType(elt_c, list(lc.distributed_shape[2:])), em)
                result = em.value(_insert(back, result, [i, j]))
        order = [canon["c"].index(d) for d in maps[2]]
        full = order + [2 + i for i in order] + [4 + i for i in order]
        self.vmap[op.results[0]] = em.transpose(result, full)

    def to_fragment(self, regs: SSAValue, intr, role: str, em: Emitter) -> SSAValue:
        """A tile's registers ``[O.., E..]`` in the intrinsic op's operand shape and order."""
        return _reorder(regs, intr.order(role), VectorType(regs.type.element_type, list(intr.shape(role))), em)

    def from_fragment(self, frag: SSAValue, intr, role: str, vt: VectorType, em: Emitter) -> SSAValue:
        order = intr.order(role)
        inverse = [order.index(i) for i in range(len(order))]
        return _reorder(frag, tuple(inverse), vt, em)

    def neutral(self, kind: str, t, em: Emitter) -> SSAValue:
        elt = t.element_type if isinstance(t, VectorType) else t
        value = neutral_value(kind, elt)
        if isinstance(t, VectorType):
            return em.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value] * prod(t.get_shape())), t))
        return em.value(arith.ConstantOp(scalar_attr(value, elt)))

    def cluster_reduce(self, kind: str, part: SSAValue, size: int, stride: int, em: Emitter) -> SSAValue:
        t = part.type
        if not isinstance(t, VectorType):
            return em.subgroup_reduce(kind, part, size if size < self.sg or stride > 1 else None, stride)
        n = prod(t.get_shape())
        flat = em.shape_cast(part, VectorType(t.element_type, [n]))
        red = em.subgroup_reduce(kind, flat, size if size < self.sg or stride > 1 else None, stride)
        return em.shape_cast(red, t)

    def reduce_scalars_through_memory(self, kind, part, lay, writer_dims, counts, slot_digits, elt, em):
        """Scalar partials: each slot's writer stores its partial at the slot's linear
        index; after the barrier every thread reads all partials with one vector load
        (the same words for every lane: a broadcast, no bank conflict) and reduces them."""
        from simtify.ir import vector as vector_ir

        n = prod(counts)
        buf = self.entry.workgroup_alloc([n], elt)
        guard = self.writer(lay, thread_dims=list(writer_dims), subgroup_dims=range(lay.rank))
        target = em.if_then(guard) if guard is not None else em
        slot = target.linearize(slot_digits, counts) if len(counts) > 1 else slot_digits[0]
        target.add(_memref_store(part, buf, [slot]))
        em.barrier()
        allv = em.value(vector_ir.LoadOp(buf, [self.c(0)], VectorType(elt, [n])))
        result = em.value(vector_ir.ReductionOp(kind, allv))
        if self.in_loop(em):
            em.barrier()
        return result

    def reduce_through_memory(self, kind, part, lay, red, kept, thread_dims, sub_dims, result_type, em) -> SSAValue:
        """Every (thread digit, subgroup digit) of the named reduced dims writes its
        partial; after a barrier each thread combines all of them, in the same order. The
        buffer is this reduction's own, so no barrier is needed before the writes; inside
        a loop one after the reads keeps the next iteration's writes behind them."""
        counts = [lay.thread_tile[d] for d in thread_dims] + [lay.subgroup_tile[d] for d in sub_dims]
        s, t = self.digits(lay)
        slot_digits = [t[d] for d in thread_dims] + [s[d] for d in sub_dims]
        kept_shape = [lay.undistributed_shape[d] for d in kept]
        elt = part.type.element_type if isinstance(part.type, VectorType) else part.type
        kept_lay = lay.project(red) if kept else None
        if kept_lay is None:
            return self.reduce_scalars_through_memory(kind, part, lay, thread_dims, counts, slot_digits, elt, em)
        if prod(kept_shape) == 1:  # one kept element: a scalar in a vector<1x..> register
            scalar = em.extract(em.shape_cast(part, VectorType(elt, [1])), [0], elt)
            r = self.reduce_scalars_through_memory(kind, scalar, lay, list(kept) + list(thread_dims), counts,
                                                   slot_digits, elt, em)
            return em.broadcast(r, part.type)
        buf = self.entry.workgroup_alloc(counts + kept_shape, elt)
        # one writer per slot: the smallest tid among threads holding the same partial
        guard = self.writer(lay, thread_dims=list(kept) + list(thread_dims), subgroup_dims=range(lay.rank))
        target = em.if_then(guard) if guard is not None else em
        slot = list(slot_digits)
        nk = len(kept)
        if kept_lay is not None:
            perm = list(range(len(counts), len(counts) + nk))
            self.write_groups(part, buf, slot + [self.c(0)] * nk, perm, kept_lay, [True] * nk, target)
        else:
            target.add(_memref_store(part, buf, slot))
        em.barrier()
        result = None
        for combo in product(*[range(n) for n in counts]):
            idx = [self.c(i) for i in combo]
            if kept_lay is not None:
                perm = list(range(len(counts), len(counts) + nk))
                pad = em.value(arith.ConstantOp(_zero_attr(elt)))
                v = self.read_groups(buf, idx + [self.c(0)] * nk, perm, kept_lay,
                                     VectorType(elt, kept_shape), pad, [True] * nk, em)
            else:
                v = em.value(_memref_load(buf, idx))
            result = v if result is None else em.combine(kind, result, v)
        if self.in_loop(em):
            em.barrier()
        return result


_FIELDS = ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile", "subgroup_strides",
           "thread_strides")


def _only_zero_d(op: Operation) -> bool:
    """Whether the op's vector operands and results are all 0-d (and it has some)."""
    types = [v.type for v in list(op.operands) + list(op.results)]
    vectors = [t for t in types if isinstance(t, VectorType)]
    return bool(vectors) and all(len(t.get_shape()) == 0 for t in vectors)


def _element_bytes(elt) -> int:
    from simtify.sim.types import byte_width

    return byte_width(elt)


def _consecutive(run) -> bool:
    return all(b == a + 1 for a, b in pairwise(run))


def _gather(flat: SSAValue, run, elt, em: Emitter) -> SSAValue:
    """vector<len(run)> of the registers `run` of a flat register vector."""
    from simtify.ir import vector as vector_ir

    vt = VectorType(elt, [len(run)])
    if _consecutive(run) and flat.type == vt:
        return flat
    if _consecutive(run):
        return em.value(vector_ir.ExtractStridedSliceOp(flat, [run[0]], [len(run)], [1], vt))
    scalars = [em.extract(flat, [r], elt) for r in run]
    return em.value(vector_ir.FromElementsOp.build(operands=[scalars], result_types=[vt]))


def _scatter(piece: SSAValue, acc: SSAValue, run, elt, em: Emitter) -> SSAValue:
    """`acc` with registers `run` replaced by the elements of `piece`."""
    from simtify.ir import vector as vector_ir

    if _consecutive(run) and piece.type == acc.type:
        return piece
    if _consecutive(run):
        return em.insert_strided(piece, acc, [run[0]])
    for j, r in enumerate(run):
        acc = em.value(vector_ir.InsertOp(em.extract(piece, [j], elt), acc, [r]))
    return acc


def _insert(value: SSAValue, dest: SSAValue, position) -> Operation:
    from simtify.ir import vector as vector_ir

    return vector_ir.InsertOp(value, dest, list(position))


def _reorder(v: SSAValue, order, vt: VectorType, em: Emitter) -> SSAValue:
    """`v` flattened, element i of the result taken from element ``order[i]``, shaped `vt`:
    a shape_cast when `order` is the identity, a transpose of a regrouping when one
    expresses it, else extracts and from_elements."""
    from itertools import permutations

    from simtify.ir import vector as vector_ir

    elt = v.type.element_type
    n = prod(v.type.get_shape())
    if list(order) == list(range(n)):
        return em.shape_cast(v, vt)
    shape = [d for d in v.type.get_shape() if d > 1]
    idx = np.arange(n).reshape(shape)
    for perm in permutations(range(len(shape))):
        if list(np.transpose(idx, perm).reshape(-1)) == list(order):
            t = em.transpose(em.shape_cast(v, VectorType(elt, shape)), list(perm))
            return em.shape_cast(t, vt)
    flat = em.shape_cast(v, VectorType(elt, [n]))
    scalars = [em.extract(flat, [i], elt) for i in order]
    out = em.value(vector_ir.FromElementsOp.build(operands=[scalars], result_types=[VectorType(elt, [n])]))
    return em.shape_cast(out, vt)


def _memref_store(value, buf, idx):
    from xdsl.dialects import memref

    return memref.StoreOp.get(value, buf, list(idx))


def _memref_load(buf, idx):
    from xdsl.dialects import memref

    return memref.LoadOp.get(buf, list(idx))


def _zero_attr(elt):
    return scalar_attr(0, elt)


def distribute_function(func: Operation, analysis: LayoutAnalysis, subgroup_size: int, threads: int,
                        target: str | None = None) -> None:
    NestedDistribution(func, analysis, subgroup_size, threads, target).run()
