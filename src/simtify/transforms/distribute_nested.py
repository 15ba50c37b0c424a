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
every subgroup's partial, one per lane with a second cluster subgroup_reduce where that
costs less, else all by every thread; then the accumulator). Writes of replicated values are done
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
    AnyFloat,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
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
        check_unroll_budget(self.func, self.analysis, self.target)
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
            if op.name in ("scf.yield", "scf.condition", "func.return", "gpu.return", "gpu.yield",
                           "scf.forall.in_parallel"):
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
        as with scalars; a write of one is done by thread 0 alone; a 0-d layout anchor
        (rank-0 nested layout) changes nothing."""
        if op.name == "iree_vector_ext.to_layout":
            self.vmap[op.results[0]] = self.m(op.operands[0])
            return
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
        # a splat (NaN splats too: IREE's neutral value of maxnumf / minnumf is a NaN, and
        # NaN != NaN would make it look like a table)
        if vals is not None and (len(set(vals)) == 1 or all(v != v for v in vals)):
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

    def op_vector_extract(self, op: Operation, em: Emitter) -> None:
        """The source holds the indexed dims whole on every thread, as its leading batch
        tiles (propagation converts it so): extract at the same positions there."""
        from simtify.ir import vector as vector_ir

        lay = self.L(op.vector)
        pos = [p if isinstance(p, int) else self.m(p) for p in op.mixed_position()]
        res = op.results[0]
        if not is_vector(res):
            self.vmap[res] = em.value(vector_ir.ExtractOp(self.m(op.vector), pos + [0] * (2 * lay.rank), res.type))
            return
        part = VectorType(res.type.element_type, list(lay.distributed_shape[len(pos):]))
        part_v = em.value(vector_ir.ExtractOp(self.m(op.vector), pos, part))
        self.vmap[res] = em.shape_cast(part_v, dist_type(res.type, self.L(res)))

    def op_vector_insert(self, op: Operation, em: Emitter) -> None:
        """The dest holds the indexed dims whole on every thread, as its leading batch
        tiles: insert the value's registers at the same positions there."""
        from simtify.ir import vector as vector_ir

        lay = self.L(op.dest)
        pos = [p if isinstance(p, int) else self.m(p) for p in op.mixed_position()]
        val = op.value_to_store
        if is_vector(val):
            part = VectorType(val.type.element_type, list(lay.distributed_shape[len(pos):]))
            new = vector_ir.InsertOp(em.shape_cast(self.m(val), part), self.m(op.dest), pos)
        else:
            new = vector_ir.InsertOp(self.m(val), self.m(op.dest), pos + [0] * (2 * lay.rank))
        self.vmap[op.results[0]] = em.value(new)

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

    def op_scf_forall(self, op: Operation, em: Emitter) -> None:
        """A workgroup ``scf.forall`` (mapped to ``#iree_codegen.workgroup_mapping``, as
        IREE's dispatches print it before vector distribution) is kept, with its bounds
        and mapping; its body is distributed like the function's. Each iteration is one
        workgroup's tile, so the body is not a loop for the threads of a workgroup."""
        from simtify.ir.scf import ForallOp, InParallelOp
        from simtify.sim.dispatch import forall_workgroup_dims

        if op.outputs or op.loop_results:
            raise SimtifyError("nested distribution needs a bufferized scf.forall (no shared_outs)")
        if forall_workgroup_dims(op) is None:
            raise SimtifyError("nested distribution keeps only scf.forall loops mapped to workgroups "
                               "(#iree_codegen.workgroup_mapping); distribute other foralls first")
        old_body = op.body.block
        body = Block(arg_types=[a.type for a in old_body.args])
        for old, new in zip(old_body.args, body.args):
            new.name_hint = old.name_hint
            self.vmap[old] = new
        self.distribute_block(old_body, Emitter(body))
        body.add_op(InParallelOp())
        new = ForallOp.build(
            operands=[[self.m(v) for v in op.dynamicLowerBound], [self.m(v) for v in op.dynamicUpperBound],
                      [self.m(v) for v in op.dynamicStep], []],
            result_types=[[]],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
            regions=[Region(body)],
        )
        em.add(new)

    def op_scf_while(self, op: Operation, em: Emitter) -> None:
        """Both regions distributed; the before region's arguments take the inits'
        layouts, the after region's arguments and the results the forwarded values'."""
        old_before, old_after = (r.blocks.first for r in op.regions)
        inits = [self.m(v) for v in op.operands]
        blocks = []
        self.loop_depth += 1
        try:
            for old in (old_before, old_after):
                new = Block(arg_types=[dist_type(a.type, self.L(a)) if is_vector(a) else a.type for a in old.args])
                for a, b in zip(old.args, new.args):
                    b.name_hint = a.name_hint
                    self.vmap[a] = b
                results = self.distribute_block(old, Emitter(new))
                terminator = scf.ConditionOp(*results) if old is old_before else scf.YieldOp(*results)
                new.add_op(terminator)
                blocks.append(new)
        finally:
            self.loop_depth -= 1
        types = [dist_type(r.type, self.L(r)) if is_vector(r) else r.type for r in op.results]
        new = scf.WhileOp(inits, types, Region(blocks[0]), Region(blocks[1]))
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
            if op.mask is not None:  # read through its own map, like an index vector
                dims = result_dims(maps[-1])
                mask = [em.extract(self.m(op.mask), [b[d] for d in dims] + [o[d] for d in dims],
                                   VectorType(op.mask.type.element_type, list(lay.apply(dims).element_tile)))]
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
        from simtify.layout.conversion_plan import plan_conversion

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
            if op.name in ("scf.for", "scf.while") or (op.name == "scf.forall" and not _workgroup_forall(op)):
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
        from simtify.layout.conversion_plan import plan_conversion

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
        mem_thread_dims = memory_thread_dims(lay, red, self.sg)
        for d in red:
            if lay.thread_tile[d] > 1 and d not in mem_thread_dims:
                part = self.cluster_reduce(kind, part, lay.thread_tile[d], lay.thread_strides[d], em)
            elif lanes_then_subgroups(lay, d, self.sg):
                # a power-of-two thread dim wider than the subgroup: its lanes first, then
                # one partial per subgroup it spans (the dim's digit above the lanes)
                T, st = lay.thread_tile[d], lay.thread_strides[d]
                part = self.cluster_reduce(kind, part, self.sg // st, st, em)
                lay = NestedLayout(**{f: tuple((T * st // self.sg if f == "thread_tile" else self.sg)
                                               if k == d and f in ("thread_tile", "thread_strides") else x
                                               for k, x in enumerate(getattr(lay, f))) for f in _FIELDS})
        mem_thread_dims = memory_thread_dims(lay, red, self.sg)
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
                    d = intrinsic_op(intr, fa, fb, d, em)
                back = self.from_fragment(d, intr, "c", VectorType(elt_c, list(lc.distributed_shape[2:])), em)
                result = em.value(_insert(back, result, [i, j]))
        order = [canon["c"].index(d) for d in maps[2]]
        full = order + [2 + i for i in order] + [4 + i for i in order]
        self.vmap[op.results[0]] = em.transpose(result, full)

    def to_fragment(self, regs: SSAValue, intr, role: str, em: Emitter) -> SSAValue:
        """A tile's registers ``[O.., E..]`` in the intrinsic op's operand shape and order."""
        return fragment_of(regs, intr, role, em)

    def from_fragment(self, frag: SSAValue, intr, role: str, vt: VectorType, em: Emitter) -> SSAValue:
        return registers_of(frag, intr, role, vt, em)

    def op_iree_codegen_inner_tiled(self, op: Operation, em: Emitter) -> None:
        """IREE's distributed form: every lane's fragments of every outer tile go
        through one distributed ``inner_tiled`` (the outer dims stay batch dims).

            %d = iree_codegen.inner_tiled ins(%a, %b) outs(%c) {.., semantics = <distributed = false, ..>}
                   : vector<2x3x16x16xf16>, vector<3x4x16x16xf16> into vector<2x4x16x16xf32>
          becomes (registers [B.., O.., E..] shape_cast to [B_outer.., O·E per inner dim])
            %d = iree_codegen.inner_tiled ins(..) outs(..) {.., semantics = <distributed = true, opaque = true>}
                   : vector<2x3x1x4xf16>, vector<3x4x4x1xf16> into vector<2x4x4x1xf32>
        Permuted inner tiles are transposed to the intrinsic's order first (and back)."""
        from simtify.ir.iree_codegen import InnerTiledOp
        from simtify.ir.iree_gpu import MMASemanticsAttr

        if op.distributed:
            raise SimtifyError("this inner_tiled is already distributed")
        try:
            intr = op.intrinsic()
        except SimtifyError as e:
            raise e.at(_where(op))
        if self.sg != intr.subgroup_size:
            raise SimtifyError(f"{intr.name} runs on subgroups of {intr.subgroup_size} lanes, not {self.sg}")
        frags, shapes = [], []
        for i, v in enumerate(op.operands):
            lay = self.L(v)
            r = len(op.maps[i].results)
            perm = op.layout_permutation(i, intr, lay) or (0, 1)
            inv = [perm.index(j) for j in range(2)]
            n = r + 2
            full = [g * n + d for g in range(3) for d in list(range(r)) + [r + j for j in inv]]
            regs = em.transpose(self.m(v), full)
            canon = intr.layout(("a", "b", "c")[i])
            inner = [canon.outer_tile[d] * canon.element_tile[d] for d in range(2)]
            shape = list(lay.batch_tile[:r]) + inner
            shapes.append(shape)
            frags.append(em.shape_cast(regs, VectorType(v.type.element_type, shape)))
        new = em.value(InnerTiledOp(frags[:2], frags[2:], op.maps, op.iterators, op.kind,
                                    MMASemanticsAttr((True, True))))
        res = op.results[0]
        lay = self.L(res)
        r = len(op.maps[2].results)
        perm = op.layout_permutation(2, intr, self.L(op.operands[2])) or (0, 1)
        n = r + 2
        canon_lay = lay.permute(list(range(r)) + [r + perm.index(j) for j in range(2)])
        back = em.shape_cast(new, VectorType(res.type.element_type, list(canon_lay.distributed_shape)))
        full = [g * n + d for g in range(3) for d in list(range(r)) + [r + p for p in perm]]
        self.vmap[res] = em.transpose(back, full)

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
        plan = self.partial_per_lane_plan(lay, red, _element_bytes(elt))
        if plan is not None:
            return self.reduce_partials_over_lanes(kind, part, lay, kept, thread_dims, counts, slot_digits, elt,
                                                   kept_lay, plan, em)
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

    # "lanes" or "broadcast" forces the cross-subgroup read-back plan (tests, benchmarks); None: the cheaper
    cross_subgroup_plan: str | None = None

    def partial_per_lane_plan(self, lay: NestedLayout, red: list[int], elem_bytes: int):
        """`cross_subgroup_plan` (the module function) for this launch."""
        return cross_subgroup_plan(lay, red, self.sg, self.threads, elem_bytes, self.target,
                                   force=self.cross_subgroup_plan)

    def reduce_partials_over_lanes(self, kind, part, lay, kept, thread_dims, counts, slot_digits, elt, kept_lay,
                                   plan, em) -> SSAValue:
        """The per-lane plan: one writer per partial stores it at its slot (the linear
        (thread, subgroup) digit of the reduced dims) of a ``[n, kept..]`` buffer (last
        dim padded by `pad`); after a barrier lane ``(tid // stride) % size`` of each
        cluster reads the slot of that number, or the neutral value past the last slot
        (a masked read), and a cluster subgroup_reduce combines them. Every lane of a
        cluster ends with the result, so every thread holds its kept elements; every
        slot is read, once per subgroup."""
        n = prod(counts)
        size, stride, pad = plan
        nk = len(kept)
        kept_shape = list(kept_lay.undistributed_shape) if kept_lay is not None else []
        padded = kept_shape[:-1] + [kept_shape[-1] + pad] if kept_shape else []
        buf = self.entry.workgroup_alloc([n] + padded, elt)
        guard = self.writer(lay, thread_dims=list(kept) + list(thread_dims), subgroup_dims=range(lay.rank))
        target = em.if_then(guard) if guard is not None else em
        slot = target.linearize(slot_digits, counts) if len(counts) > 1 else slot_digits[0]
        dims = list(range(1, nk + 1))
        if kept_lay is None:
            target.add(_memref_store(part, buf, [slot]))
        else:
            self.write_groups(part, buf, [slot] + [self.c(0)] * nk, dims, kept_lay, [True] * nk, target)
        em.barrier()
        key = ("partial lane", size, stride, n)
        if key not in self.digit_cache:
            lane = self.entry.apply((AffineDimExpr(0) // stride) % size, [self.tid])
            valid = self.entry.cmpi("ult", lane, self.c(n)) if n < size else None
            self.digit_cache[key] = (lane, valid)
        lane, valid = self.digit_cache[key]
        neutral = self.neutral(kind, elt, em)
        if kept_lay is None:
            mask = self.entry.broadcast(valid, VectorType(i1, [1])) if valid is not None else None
            one = em.transfer_read(buf, [lane], neutral, VectorType(elt, [1]), AffineMap(1, 0, (AffineDimExpr(0),)),
                                   [True], mask)
            mine = em.extract(one, [0], elt)
        else:
            mask = (self.entry.broadcast(valid, VectorType(i1, list(kept_lay.distributed_shape)))
                    if valid is not None else None)
            mine = self.read_groups(buf, [lane] + [self.c(0)] * nk, dims, kept_lay, VectorType(elt, kept_shape),
                                    neutral, [True] * nk, em, mask, kept_lay if mask is not None else None)
        if self.in_loop(em):
            em.barrier()
        return self.cluster_reduce(kind, mine, size, stride, em)

    # --- vector.mask and vector.scan ----------------------------------------------

    def op_vector_mask(self, op: Operation, em: Emitter) -> None:
        """The masked op distributed with the mask's registers: a transfer takes them as
        its mask (what IREE's pipeline does before distribution); a reduction or
        contraction replaces masked-off elements by the kind's neutral value (IREE's
        distribution of masked reductions)."""
        inner = op.masked_op
        yielded = op.mask_region.block.last_op.operands
        if inner is not None:
            handler = {"vector.transfer_read": self.masked_read, "vector.transfer_write": self.masked_write,
                       "vector.multi_reduction": self.masked_multi_reduction,
                       "vector.reduction": self.masked_reduction,
                       "vector.contract": self.masked_contract}.get(inner.name)
            if handler is None:
                raise SimtifyError(f"nested distribution does not support '{inner.name}' under vector.mask")
            handler(op, inner, em)
        for y, res in zip(yielded, op.results):
            v = self.m(y)
            if is_vector(res):
                v = self.convert(v, self.L(y), self.L(res), res.type, em)
            self.vmap[res] = v

    def mask_in(self, op: Operation, need: NestedLayout, em: Emitter) -> SSAValue:
        """The vector.mask's mask as registers of layout `need`."""
        return self.convert(self.m(op.mask), self.L(op.mask), need, op.mask.type, em)

    def masked_read(self, op: Operation, inner: Operation, em: Emitter) -> None:
        from simtify.ir import arith as arith_ir

        lay = self.L(inner.results[0])
        need = mask_layout(inner, lay)
        mask = self.mask_in(op, need, em)
        perm = result_dims(inner.permutation_map.data)
        in_bounds = [bool(x.value.data) for x in inner.in_bounds.data]
        value = self.read_groups(self.m(inner.source), [self.m(i) for i in inner.indices], perm, lay,
                                 inner.results[0].type, self.m(inner.padding), in_bounds, em, mask, need)
        if op.passthru is not None:
            if any(d is None for d in perm):
                raise SimtifyError("vector.mask with a passthru value around a broadcasting transfer_read is not "
                                   "distributed")
            # mask dim j is the vector dim order[j]: transpose the registers to vector order
            r = lay.rank
            order = [k for _, k in sorted((d, k) for k, d in enumerate(perm))]
            p = [order.index(k) for k in range(r)]
            in_vector_order = em.transpose(mask, p + [r + x for x in p] + [2 * r + x for x in p]) \
                if p != list(range(r)) else mask
            passthru = self.convert(self.m(op.passthru), self.L(op.passthru), lay, op.passthru.type, em)
            value = em.value(arith_ir.SelectOp(in_vector_order, value, passthru))
        self.vmap[inner.results[0]] = value

    def masked_write(self, op: Operation, inner: Operation, em: Emitter) -> None:
        lay = self.L(inner.vector)
        need = mask_layout(inner, lay)
        mask = self.mask_in(op, need, em)
        perm = result_dims(inner.permutation_map.data)
        in_bounds = [bool(x.value.data) for x in inner.in_bounds.data]
        guard = self.writer(lay)
        target = em.if_then(guard) if guard is not None else em
        self.write_groups(self.m(inner.vector), self.m(inner.source), [self.m(i) for i in inner.indices], perm, lay,
                          in_bounds, target, mask, need)

    def masked_multi_reduction(self, op: Operation, inner: Operation, em: Emitter) -> None:
        from simtify.ir import arith as arith_ir

        src = inner.source
        lay = self.L(src)
        mask = self.mask_in(op, lay, em)
        neutral = self.neutral(_kind(inner), dist_type(src.type, lay), em)
        selected = em.value(arith_ir.SelectOp(mask, self.m(src), neutral))
        saved = self.vmap[src]
        self.vmap[src] = selected
        try:
            self.op_vector_multi_reduction(inner, em)
        finally:
            self.vmap[src] = saved

    def masked_reduction(self, op: Operation, inner: Operation, em: Emitter) -> None:
        from simtify.ir import arith as arith_ir

        src = inner.vector
        lay = self.L(src)
        mask = self.mask_in(op, lay, em)
        neutral = self.neutral(_kind(inner), dist_type(src.type, lay), em)
        self.op_vector_reduction(inner, em, em.value(arith_ir.SelectOp(mask, self.m(src), neutral)))

    def op_vector_reduction(self, op: Operation, em: Emitter, source: SSAValue | None = None) -> None:
        """A 1-D vector to a scalar: a multi_reduction of its only dim."""
        kind = _kind(op)
        src = op.vector
        if not is_vector(src):
            self.zero_d(op, em)
            return
        lay = self.L(src)
        elt = src.type.element_type
        part = em.multi_reduction(kind, self.m(src) if source is None else source, self.neutral(kind, elt, em),
                                  [0, 1, 2])
        part = self.reduce_across(kind, part, lay, [0], elt, em)
        self.vmap[op.results[0]] = em.combine(kind, part, self.m(op.acc)) if op.acc is not None else part

    def masked_contract(self, op: Operation, inner: Operation, em: Emitter) -> None:
        """Per thread, the products over the iteration space (both operands broadcast to
        it), masked-off points set to the kind's neutral value, reduced over the thread's
        reduction registers; then the cross-lane and cross-subgroup steps and the
        accumulator, as for an unmasked contraction."""
        from simtify.ir import arith as arith_ir
        from simtify.transforms.propagate_layouts import mma_of

        if mma_of(inner) is not None:
            raise SimtifyError("a masked contraction on a matrix intrinsic is not distributed; mask its operands")
        kind = _kind(inner)
        maps = [result_dims(m.data) for m in inner.indexing_maps.data]
        iters = [it.data.value if hasattr(it.data, "value") else str(it.data) for it in inner.iterator_types.data]
        n = len(iters)
        per_dim = {}
        for v, m in ((inner.lhs, maps[0]), (inner.rhs, maps[1])):
            lay = self.L(v)
            for k, d in enumerate(m):
                per_dim.setdefault(d, tuple(getattr(lay, f)[k] for f in _FIELDS))
        it = NestedLayout(**{f: tuple(per_dim[d][i] for d in range(n)) for i, f in enumerate(_FIELDS)})
        res = inner.results[0]
        elt = res.type.element_type if isinstance(res.type, VectorType) else res.type
        it_type = VectorType(elt, [it.undistributed_shape[d] for d in range(n)])
        full_t = dist_type(it_type, it)
        is_float = isinstance(elt, AnyFloat)
        operands = []
        for v, m in ((inner.lhs, maps[0]), (inner.rhs, maps[1])):
            regs = self.m(v)
            r = len(m)
            order = sorted(range(r), key=lambda k: m[k])  # operand dims in iteration-dim order
            if order != list(range(r)):
                regs = em.transpose(regs, order + [r + x for x in order] + [2 * r + x for x in order])
            present = set(m)
            shape = [getattr(it, f)[d] if d in present else 1 for f in ("batch_tile", "outer_tile", "element_tile")
                     for d in range(n)]
            regs = em.shape_cast(regs, VectorType(v.type.element_type, shape))
            if v.type.element_type != elt:
                ext = arith.ExtFOp if is_float else arith.ExtSIOp
                regs = em.value(ext(regs, VectorType(elt, shape)))
            operands.append(em.broadcast(regs, full_t))
        product = em.value((arith.MulfOp if is_float else arith.MuliOp)(operands[0], operands[1]))
        mask = self.mask_in(op, it, em)
        product = em.value(arith_ir.SelectOp(mask, product, self.neutral(kind, full_t, em)))
        red = [d for d in range(n) if iters[d] == "reduction"]
        acc_dims = maps[2]
        kept = sorted(acc_dims)
        axes = [g * n + d for g in range(3) for d in red]
        if is_vector(res):
            kept_t = VectorType(elt, [x for f in ("batch_tile", "outer_tile", "element_tile")
                                      for x in (getattr(it, f)[d] for d in kept)])
            part = em.multi_reduction(kind, product, self.neutral(kind, kept_t, em), axes)
            q = len(kept)
            p = [kept.index(d) for d in acc_dims]
            if p != list(range(q)):
                part = em.transpose(part, p + [q + x for x in p] + [2 * q + x for x in p])
        else:
            part = em.multi_reduction(kind, product, self.neutral(kind, elt, em), axes)
        lay = it.apply(list(acc_dims) + red)
        part = self.reduce_across(kind, part, lay, list(range(len(acc_dims), n)), res.type, em)
        self.vmap[res] = em.combine(kind, part, self.m(inner.acc))

    def scan_in_subgroup(self, op: Operation, em: Emitter) -> None:
        """A scan whose dim stays inside one subgroup, as IREE distributes it: per batch/
        outer chunk of the dim (in order), each thread scans its element tile, the lanes
        scan their chunk totals (Hillis-Steele with gpu.shuffle up, then one shuffle for
        the exclusive shift and one for the cluster total), and a running carry joins the
        chunks; across subgroups, the blocks' totals go through workgroup memory
        (`scan_across_subgroups`); an exclusive scan adds the initial value at the end."""
        from simtify.ir import arith as arith_ir
        from simtify.ir import vector as vector_ir

        src = op.source
        lay = self.L(src)
        r = lay.rank
        dim = op.reduction_dim.value.data
        kind = _kind(op)
        inclusive = bool(op.inclusive.value.data)
        elt = src.type.element_type
        shape = list(lay.distributed_shape)
        B, O, T, E = lay.batch_tile[dim], lay.outer_tile[dim], lay.thread_tile[dim], lay.element_tile[dim]
        st = lay.thread_strides[dim]
        ax_b, ax_o, ax_e = dim, r + dim, 2 * r + dim
        piece_shape = list(shape)
        piece_shape[ax_b] = piece_shape[ax_o] = piece_shape[ax_e] = 1
        piece_t = VectorType(elt, piece_shape)
        k = prod(piece_shape)
        regs = self.m(src)
        t = self.digits(lay)[1][dim]
        neutral_piece = self.neutral(kind, piece_t, em)
        identity = self.neutral(kind, elt, em)
        sg_width = self.i32(self.sg)

        def shuffle(v: SSAValue, mode: str, offset: SSAValue) -> SSAValue:
            return em.add(gpu_ir.ShuffleOp(mode, v, offset, sg_width)).results[0]

        last_lane = None
        if T > 1:
            # this lane's cluster's last lane: lane + (T - 1 - t)·st
            e_lane = (AffineDimExpr(0) % self.sg) + (T - 1) * st - ((AffineDimExpr(0) // st) % T) * st
            last_lane = self.entry.value(arith_ir.IndexCastOp(self.entry.apply(e_lane, [self.tid]), i32))

        def lane_scan(total: SSAValue) -> tuple[SSAValue, SSAValue]:
            """(exclusive scan over the cluster's lanes, cluster total) of each element."""
            flat = em.shape_cast(total, VectorType(elt, [k]))
            excl, tot = [], []
            for j in range(k):
                v = em.extract(flat, [j], elt)
                step = 1
                while step < T:
                    y = shuffle(v, "up", self.i32(step * st))
                    v = em.value(arith_ir.SelectOp(em.cmpi("sge", t, self.c(step)), em.combine(kind, y, v), v))
                    step *= 2
                before = shuffle(v, "up", self.i32(st))
                excl.append(em.value(arith_ir.SelectOp(em.cmpi("sge", t, self.c(1)), before, identity)))
                tot.append(shuffle(v, "idx", last_lane))
            return pack(excl), pack(tot)

        def pack(xs: list[SSAValue]) -> SSAValue:
            return em.shape_cast(em.value(vector_ir.FromElementsOp.build(
                operands=[xs], result_types=[VectorType(elt, [k])])), piece_t)

        out = self.neutral(kind, VectorType(elt, shape), em)
        carry = neutral_piece
        for b in range(B):
            for o in range(O):
                local, run = [], None
                for e in range(E):
                    offsets = [0] * len(shape)
                    offsets[ax_b], offsets[ax_o], offsets[ax_e] = b, o, e
                    x = em.value(vector_ir.ExtractStridedSliceOp(regs, offsets, piece_shape, [1] * len(shape),
                                                                 piece_t))
                    if inclusive:
                        run = x if run is None else em.combine(kind, run, x)
                        local.append((offsets, run))
                    else:
                        local.append((offsets, neutral_piece if run is None else run))
                        run = x if run is None else em.combine(kind, run, x)
                excl, chunk_total = lane_scan(run) if T > 1 else (neutral_piece, run)
                increment = em.combine(kind, carry, excl)
                for offsets, y in local:
                    out = em.insert_strided(em.combine(kind, increment, y), out, offsets)
                carry = em.combine(kind, carry, chunk_total)
        last = None  # exclusive: the last position's result before the initial value
        if not inclusive:
            offsets = [0] * len(shape)
            offsets[ax_b], offsets[ax_o], offsets[ax_e] = B - 1, O - 1, E - 1
            last = em.value(vector_ir.ExtractStridedSliceOp(out, offsets, piece_shape, [1] * len(shape), piece_t))
            if T > 1:
                flat = em.shape_cast(last, VectorType(elt, [k]))
                last = pack([shuffle(em.extract(flat, [j], elt), "idx", last_lane) for j in range(k)])
        if lay.subgroup_tile[dim] > 1:
            prefix, carry, last = self.scan_across_subgroups(lay, dim, kind, carry, last, piece_t, em)
            out = em.combine(kind, em.broadcast(prefix, VectorType(elt, shape)), out)
        if not inclusive:
            iv = op.initial_value
            if r == 1:
                init = em.broadcast(self.m(iv), piece_t)
            else:
                init = em.shape_cast(self.convert(self.m(iv), self.L(iv), lay.project([dim]), iv.type, em), piece_t)
            out = em.combine(kind, em.broadcast(init, VectorType(elt, shape)), out)
            acc_piece = em.combine(kind, init, last)
        else:
            self.drop_if_unused(op.initial_value)
            acc_piece = carry  # the accumulated value: the last element of the result
        self.vmap[op.dest] = self.convert(out, lay, self.L(op.dest), src.type, em)
        self.scan_accumulated(op, acc_piece, lay, dim, em)

    def scan_across_subgroups(self, lay: NestedLayout, dim: int, kind: str, total: SSAValue, last, piece_t,
                              em: Emitter):
        """The subgroup step of a scan whose dim spans S subgroups (the outermost digit of
        the dim, so each subgroup holds one contiguous block): one writer per subgroup
        and kept element stores the block's total (and, exclusive, its last result);
        after a barrier every thread combines the totals of the blocks before its own.
        Returns (that prefix, the total of all blocks, the last position's exclusive
        result or None)."""
        from simtify.ir import arith as arith_ir

        r = lay.rank
        S = lay.subgroup_tile[dim]
        elt = piece_t.element_type
        s_digit = self.digits(lay)[0][dim]
        kept = [d for d in range(r) if d != dim]
        rows = [total] + ([last] if last is not None else [])
        guard = self.writer(lay, thread_dims=kept, subgroup_dims=range(r))
        target = em.if_then(guard) if guard is not None else em
        if r == 1:
            bufs = [self.entry.workgroup_alloc([S], elt) for _ in rows]
            for buf, v in zip(bufs, rows):
                scalar = target.extract(target.shape_cast(v, VectorType(elt, [1])), [0], elt)
                target.add(_memref_store(scalar, buf, [s_digit]))
        else:
            red = lay.project([dim])
            kept_shape = [lay.undistributed_shape[d] for d in kept]
            nk = len(kept)
            bufs = [self.entry.workgroup_alloc([S] + kept_shape, elt) for _ in rows]
            for buf, v in zip(bufs, rows):
                regs = target.shape_cast(v, dist_type(VectorType(elt, kept_shape), red))
                self.write_groups(regs, buf, [s_digit] + [self.c(0)] * nk, list(range(1, nk + 1)), red, [True] * nk,
                                  target)
        em.barrier()

        def read(buf, s: int) -> SSAValue:
            if r == 1:
                return em.broadcast(em.value(_memref_load(buf, [self.c(s)])), piece_t)
            pad = em.value(arith.ConstantOp(_zero_attr(elt)))
            v = self.read_groups(buf, [self.c(s)] + [self.c(0)] * nk, list(range(1, nk + 1)), red,
                                 VectorType(elt, kept_shape), pad, [True] * nk, em)
            return em.shape_cast(v, piece_t)

        totals = [read(bufs[0], s) for s in range(S)]
        prefix = self.neutral(kind, piece_t, em)
        everything = totals[0]
        for s in range(S):
            if s:
                everything = em.combine(kind, everything, totals[s])
            if s < S - 1:  # blocks before this thread's: s < s_digit
                before = em.cmpi("slt", self.c(s), s_digit)
                prefix = em.value(arith_ir.SelectOp(before, em.combine(kind, prefix, totals[s]), prefix))
        last_all = None
        if last is not None:
            last_all = read(bufs[1], S - 1)
            for s in reversed(range(S - 1)):
                last_all = em.combine(kind, totals[s], last_all)
        if self.in_loop(em):
            em.barrier()
        return prefix, everything, last_all

    def drop_if_unused(self, old: SSAValue) -> None:
        """Erase the distributed producers of `old` when its one user did not need it (an
        inclusive scan ignores its initial value): the reads and register moves that
        built it, as far as nothing else uses them (IREE's clean-up drops them too).
        Values the prelude caches (ids, tables) are kept: later ops may reuse them."""
        new = self.vmap.get(old)
        if new is None or len(list(old.uses)) != 1:
            return
        cached: set[SSAValue] = set()
        stack = [list(self.const_cache.values()), list(self.digit_cache.values()), list(self.writer_cache.values())]
        while stack:
            item = stack.pop()
            if isinstance(item, SSAValue):
                cached.add(item)
            elif isinstance(item, list | tuple):
                stack.extend(item)
        erasable = ("vector.transfer_read", "vector.load", "memref.load", "vector.insert_strided_slice",
                    "vector.broadcast", "vector.shape_cast", "vector.extract", "vector.transpose")
        work, erased_new = [new], False
        while work:
            v = work.pop()
            owner = v.owner
            if (v in cached or not isinstance(owner, Operation) or owner.name not in erasable or list(v.uses)
                    or len(owner.results) != 1 or owner.parent is None):
                continue
            operands = list(owner.operands)
            owner.detach()
            owner.erase()
            erased_new = erased_new or v is new
            work.extend(operands)
        if erased_new:
            del self.vmap[old]

    @staticmethod
    def line_layout(lay: NestedLayout, dim: int) -> NestedLayout:
        """`lay` with dim `dim` held whole by every thread (its element tile): the threads
        and subgroups that split it now replicate."""
        fields = {f: list(getattr(lay, f)) for f in _FIELDS}
        for f in _FIELDS:
            fields[f][dim] = 0 if f.endswith("strides") else 1
        fields["element_tile"][dim] = lay.undistributed_shape[dim]
        return NestedLayout(**{f: tuple(v) for f, v in fields.items()})

    def op_iree_vector_ext_arg_compare(self, op: Operation, em: Emitter) -> None:
        """As for a scan, every thread first gets whole lines along `dimension` (the way
        `convert` chooses); then per line, in order, the comparator is inlined on scalars
        and the running (value, index) is selected, as IREE's lowering to vector does.
        (IREE's distribution reduces across lanes with ballots or shuffles instead.)"""
        from simtify.ir import arith as arith_ir
        from simtify.ir import vector as vector_ir

        x = op.input_value
        lay = self.L(x)
        r = lay.rank
        dim = op.dimension.value.data
        T, st = lay.thread_tile[dim], lay.thread_strides[dim]
        if lay.subgroup_tile[dim] == 1 and (T == 1 or (_is_pow2(T) and _is_pow2(st) and self.sg % (T * st) == 0)):
            self.arg_compare_in_subgroup(op, em)
            return
        line = self.line_layout(lay, dim)
        elt = x.type.element_type
        ielt = op.init_index.type.element_type
        shape = list(line.distributed_shape)
        e = 2 * r + dim
        n = shape[e]
        total = prod(shape)
        flat_x = em.shape_cast(self.convert(self.m(x), lay, line, x.type, em), VectorType(elt, [total]))
        flat_i = None
        if op.input_index is not None:
            xi = op.input_index
            flat_i = em.shape_cast(self.convert(self.m(xi), self.L(xi), line, xi.type, em),
                                   VectorType(ielt, [total]))
        kept_shape = shape[:e] + shape[e + 1:]
        k = prod(kept_shape)

        def inits(v: SSAValue, t) -> list[SSAValue]:
            if r == 1:
                return [em.value(vector_ir.ExtractOp(self.m(v), [], t))]
            regs = self.convert(self.m(v), self.L(v), line.project([dim]), v.type, em)
            flat = em.shape_cast(regs, VectorType(t, [k]))
            return [em.extract(flat, [j], t) for j in range(k)]

        best, best_index = inits(op.init_value, elt), inits(op.init_index, ielt)
        block = op.region.block
        base = self.m(op.index_base) if op.index_base is not None else None
        position_cache: dict[int, SSAValue] = {}

        def position(i: int) -> SSAValue:
            if i not in position_cache:
                if base is not None:
                    v = em.apply(AffineDimExpr(0) + i, [base])
                    if not isinstance(ielt, IndexType):
                        v = em.value(arith_ir.IndexCastOp(v, ielt))
                else:
                    v = em.value(arith.ConstantOp(IntegerAttr(i, ielt)))
                position_cache[i] = v
            return position_cache[i]

        strides = [prod(shape[j + 1:]) for j in range(len(shape))]
        kept_axes = [j for j in range(len(shape)) if j != e]
        for j in range(k):
            digits = np.unravel_index(j, kept_shape) if kept_shape else ()
            start = sum(int(d) * strides[a] for d, a in zip(digits, kept_axes))
            for i in range(n):
                flat = start + i * strides[e]
                cand = em.extract(flat_x, [flat], elt)
                mapper = {block.args[0]: cand, block.args[1]: best[j]}
                for inner in block.ops:
                    if inner is block.last_op:
                        break
                    clone = em.add(inner.clone(value_mapper=mapper))
                    mapper.update(zip(inner.results, clone.results))
                take = mapper.get(block.last_op.operands[0], block.last_op.operands[0])
                cand_index = em.extract(flat_i, [flat], ielt) if flat_i is not None else position(i)
                best[j] = em.value(arith_ir.SelectOp(take, cand, best[j]))
                best_index[j] = em.value(arith_ir.SelectOp(take, cand_index, best_index[j]))
        for res, vals, t in ((op.result_value, best, elt), (op.result_index, best_index, ielt)):
            if r == 1:
                self.vmap[res] = em.broadcast(vals[0], res.type)
                continue
            red = line.project([dim])
            regs = em.value(vector_ir.FromElementsOp.build(operands=[vals], result_types=[VectorType(t, [k])]))
            regs = em.shape_cast(regs, dist_type(res.type, red))
            self.vmap[res] = self.convert(regs, red, self.L(res), res.type, em)

    def comparator(self, op: Operation, a: SSAValue, b: SSAValue, em: Emitter) -> SSAValue:
        """The arg_compare comparator's i1 for (a, b), its ops cloned here."""
        block = op.region.block
        mapper = {block.args[0]: a, block.args[1]: b}
        for inner in block.ops:
            if inner is block.last_op:
                break
            clone = em.add(inner.clone(value_mapper=mapper))
            mapper.update(zip(inner.results, clone.results))
        return mapper.get(block.last_op.operands[0], block.last_op.operands[0])

    def arg_compare_in_subgroup(self, op: Operation, em: Emitter) -> None:
        """The reduced dim within one subgroup: each thread reduces its own elements in
        order, then a butterfly over the lanes of the dim's cluster (gpu.shuffle xor of
        value, index and, with explicit indices, position), then the inits. Two partials
        combine as the in-order reduction would: the one the comparator prefers strictly
        (cmp(a, b) and not cmp(b, a)); on a tie the earlier position when neither is
        preferred (a strict comparator keeps the first), the later when both are (a
        non-strict one keeps the last). So every lane of a cluster agrees on the index,
        and it is the in-order one: simtify's tie rule (see `ArgCompareOp`; IREE's
        butterfly takes the partner's pair on a tie instead, and its op defines no rule)."""
        from simtify.ir import arith as arith_ir

        x = op.input_value
        lay = self.L(x)
        r = lay.rank
        dim = op.dimension.value.data
        elt = x.type.element_type
        ielt = op.init_index.type.element_type
        shape = list(lay.distributed_shape)
        total = prod(shape)
        flat_x = em.shape_cast(self.m(x), VectorType(elt, [total]))
        flat_i = None
        if op.input_index is not None:
            xi = op.input_index
            flat_i = em.shape_cast(self.convert(self.m(xi), self.L(xi), lay, xi.type, em), VectorType(ielt, [total]))
        # positions travel as i32 (shuffled); implicit indices are positions + base, so
        # they break ties themselves
        pos_t = IntegerType(32)
        explicit = flat_i is not None
        base = self.m(op.index_base) if op.index_base is not None else None
        tb = self.thread_base(lay, dim)

        def position(off: int) -> SSAValue:
            v = em.apply(AffineDimExpr(0) + off, [tb]) if tb is not None else self.c(off)
            return em.value(arith_ir.IndexCastOp(v, pos_t))

        def index_of(off: int, flat: int) -> SSAValue:
            if flat_i is not None:
                return em.extract(flat_i, [flat], ielt)
            v = em.apply(AffineDimExpr(0) + off, [tb]) if tb is not None else self.c(off)
            if base is not None:
                v = em.apply(AffineDimExpr(0) + AffineDimExpr(1), [v, base])
            return v if isinstance(ielt, IndexType) else em.value(arith_ir.IndexCastOp(v, ielt))

        def combine(mine, other):
            """(value, index(, position)) the in-order reduction keeps of two partials."""
            va, vb = mine[0], other[0]
            pa, pb = mine[-1], other[-1]  # implicit indices order like positions
            b_over_a = self.comparator(op, vb, va, em)
            a_over_b = self.comparator(op, va, vb, em)
            later = em.cmpi("sgt", pb, pa)
            earlier = em.cmpi("slt", pb, pa)
            tie = em.value(arith_ir.SelectOp(b_over_a, later, earlier))
            differ = em.value(arith.XOrIOp(b_over_a, a_over_b))
            take = em.value(arith_ir.SelectOp(differ, b_over_a, tie))
            return tuple(em.value(arith_ir.SelectOp(take, nb, na)) for na, nb in zip(mine, other))

        strides = [prod(shape[j + 1:]) for j in range(len(shape))]
        reduced_axes = [dim, r + dim, 2 * r + dim]
        kept_axes = [j for j in range(len(shape)) if j not in reduced_axes]
        kept_shape = [shape[j] for j in kept_axes]
        B, O, T, E = lay.batch_tile[dim], lay.outer_tile[dim], lay.thread_tile[dim], lay.element_tile[dim]
        st = lay.thread_strides[dim]
        partials = []
        for kept in product(*[range(n) for n in kept_shape]):
            start = sum(k * strides[j] for k, j in zip(kept, kept_axes))
            acc = None
            for b, o, e in product(range(B), range(O), range(E)):
                flat = start + b * strides[dim] + o * strides[r + dim] + e * strides[2 * r + dim]
                off = (b * O + o) * T * E + e
                cand = (em.extract(flat_x, [flat], elt), index_of(off, flat)) + ((position(off),) if explicit else ())
                if acc is None:
                    acc = cand
                    continue
                take = self.comparator(op, cand[0], acc[0], em)  # in order: as the sequential form
                acc = tuple(em.value(arith_ir.SelectOp(take, c, a)) for c, a in zip(cand, acc))
            partials.append(acc)
        if T > 1:
            shuffled = []
            for acc in partials:
                k = T // 2
                while k >= 1:
                    offset = self.i32(k * st)
                    other = []
                    for v in acc:
                        wide = v
                        if isinstance(v.type, IndexType):
                            wide = em.value(arith_ir.IndexCastOp(v, IntegerType(64)))
                        got = em.add(gpu_ir.ShuffleOp("xor", wide, offset, self.i32(self.sg))).results[0]
                        if isinstance(v.type, IndexType):
                            got = em.value(arith_ir.IndexCastOp(got, IndexType()))
                        other.append(got)
                    acc = combine(acc, tuple(other))
                    k //= 2
                shuffled.append(acc)
            partials = shuffled
        # the inits come first in order: a partial replaces them when the comparator says so
        k = len(partials)
        if r == 1:
            init_v = [em.value(vector_ir_extract(self.m(op.init_value), elt))]
            init_i = [em.value(vector_ir_extract(self.m(op.init_index), ielt))]
        else:
            red = lay.project([dim])
            iv = em.shape_cast(self.convert(self.m(op.init_value), self.L(op.init_value), red, op.init_value.type,
                                            em), VectorType(elt, [k]))
            ii = em.shape_cast(self.convert(self.m(op.init_index), self.L(op.init_index), red, op.init_index.type,
                                            em), VectorType(ielt, [k]))
            init_v = [em.extract(iv, [j], elt) for j in range(k)]
            init_i = [em.extract(ii, [j], ielt) for j in range(k)]
        values, indices = [], []
        for (v, i, *_), v0, i0 in zip(partials, init_v, init_i):
            take = self.comparator(op, v, v0, em)
            values.append(em.value(arith_ir.SelectOp(take, v, v0)))
            indices.append(em.value(arith_ir.SelectOp(take, i, i0)))
        self.finish_arg_compare(op, lay, dim, values, indices, em)

    def finish_arg_compare(self, op, lay, dim, values, indices, em) -> None:
        """Results from per-thread scalars in the register order of `lay.project([dim])`."""
        from simtify.ir import vector as vector_ir

        for res, vals in ((op.result_value, values), (op.result_index, indices)):
            t = res.type.element_type
            if lay.rank == 1:
                self.vmap[res] = em.broadcast(vals[0], res.type)
                continue
            red = lay.project([dim])
            regs = em.value(vector_ir.FromElementsOp.build(operands=[vals],
                                                           result_types=[VectorType(t, [len(vals)])]))
            regs = em.shape_cast(regs, dist_type(res.type, red))
            self.vmap[res] = self.convert(regs, red, self.L(res), res.type, em)

    def op_vector_scan(self, op: Operation, em: Emitter) -> None:
        """A scan: in lanes and across subgroups as IREE does (`scan_in_subgroup`) where
        the dim's lanes are a power-of-two strided set; otherwise (e.g. a thread tile of
        3) the source moves (the way `convert` chooses) to a layout where every thread
        holds whole lines, each thread scans its lines in registers, and the results move
        to the layouts their users need."""
        from simtify.ir import vector as vector_ir

        src = op.source
        lay = self.L(src)
        r = lay.rank
        dim = op.reduction_dim.value.data
        kind = _kind(op)
        inclusive = bool(op.inclusive.value.data)
        T, st = lay.thread_tile[dim], lay.thread_strides[dim]
        if T == 1 or (_is_pow2(T) and _is_pow2(st) and self.sg % (T * st) == 0):
            self.scan_in_subgroup(op, em)
            return
        line = self.line_layout(lay, dim)
        regs = self.convert(self.m(src), lay, line, src.type, em)
        elt = src.type.element_type
        shape = list(line.distributed_shape)
        e = 2 * r + dim
        n = shape[e]
        piece_shape = list(shape)
        piece_shape[e] = 1
        piece_t = VectorType(elt, piece_shape)
        init = None
        if not inclusive:
            iv = op.initial_value
            if r == 1:
                init = em.broadcast(self.m(iv), piece_t)
            else:
                init = em.shape_cast(self.convert(self.m(iv), self.L(iv), line.project([dim]), iv.type, em), piece_t)
        out = self.neutral(kind, VectorType(elt, shape), em)
        last_out = last_in = None
        for i in range(n):
            offsets = [0] * len(shape)
            offsets[e] = i
            x = em.value(vector_ir.ExtractStridedSliceOp(regs, offsets, piece_shape, [1] * len(shape), piece_t))
            if i == 0:
                y = x if inclusive else init
            else:
                y = em.combine(kind, last_out, x if inclusive else last_in)
            out = em.insert_strided(y, out, offsets)
            last_out, last_in = y, x
        self.vmap[op.dest] = self.convert(out, line, self.L(op.dest), src.type, em)
        if inclusive:
            self.drop_if_unused(op.initial_value)
        self.scan_accumulated(op, last_out, line, dim, em)

    def scan_accumulated(self, op: Operation, last: SSAValue, lay: NestedLayout, dim: int, em: Emitter) -> None:
        """A scan's accumulated value from `last`, each thread's registers of the scan's last
        element along `dim` (`lay` without `dim`), in the layout the analysis gave it."""
        acc = op.accumulated_value
        elt = acc.type.element_type if isinstance(acc.type, VectorType) else acc.type
        if lay.rank == 1:
            scalar = em.extract(em.shape_cast(last, VectorType(elt, [1])), [0], elt)
            self.vmap[acc] = em.broadcast(scalar, acc.type)
        else:
            red = lay.project([dim])
            regs_acc = em.shape_cast(last, dist_type(acc.type, red))
            self.vmap[acc] = self.convert(regs_acc, red, self.L(acc), acc.type, em)


_FIELDS = ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile", "subgroup_strides",
           "thread_strides")


def _workgroup_forall(op: Operation) -> bool:
    from simtify.sim.dispatch import forall_workgroup_dims

    return forall_workgroup_dims(op) is not None


def _only_zero_d(op: Operation) -> bool:
    """Whether the op's vector operands and results are all 0-d (and it has some)."""
    types = [v.type for v in list(op.operands) + list(op.results)]
    vectors = [t for t in types if isinstance(t, VectorType)]
    return bool(vectors) and all(len(t.get_shape()) == 0 for t in vectors)


def vector_ir_extract(v: SSAValue, elt) -> Operation:
    """The element of a 0-d vector."""
    from simtify.ir import vector as vector_ir

    return vector_ir.ExtractOp(v, [], elt)


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


def fragment_of(regs: SSAValue, intr, role: str, em: Emitter) -> SSAValue:
    """One intrinsic tile's registers (the layout's order, any shape) in the intrinsic
    op's operand shape and register order."""
    return _reorder(regs, intr.order(role), VectorType(regs.type.element_type, list(intr.shape(role))), em)


def registers_of(frag: SSAValue, intr, role: str, vt: VectorType, em: Emitter) -> SSAValue:
    """The inverse of `fragment_of`: an intrinsic operand back in the layout's order, shaped `vt`."""
    order = intr.order(role)
    inverse = [order.index(i) for i in range(len(order))]
    return _reorder(frag, tuple(inverse), vt, em)


def intrinsic_op(intr, a: SSAValue, b: SSAValue, c: SSAValue, em: Emitter) -> SSAValue:
    """``amdgpu.mfma`` or ``nvgpu.mma.sync`` on fragments in the instruction's shape and order."""
    from simtify.ir import amdgpu as amdgpu_ir
    from simtify.ir import nvgpu as nvgpu_ir

    if intr.op == "amdgpu.mfma":
        return em.value(amdgpu_ir.MFMAOp(a, b, c, (intr.m, intr.n, intr.k)))
    return em.value(nvgpu_ir.MmaSyncOp(a, b, c, (intr.m, intr.n, intr.k)))


def _memref_store(value, buf, idx):
    from xdsl.dialects import memref

    return memref.StoreOp.get(value, buf, list(idx))


def _memref_load(buf, idx):
    from xdsl.dialects import memref

    return memref.LoadOp.get(buf, list(idx))


def _zero_attr(elt):
    return scalar_attr(0, elt)


# --- the cross-subgroup step of reductions: which plan ----------------------------------


def lanes_then_subgroups(lay: NestedLayout, d: int, subgroup_size: int) -> bool:
    """Whether thread dim `d` spans several subgroups in a way lanes can reduce first: a
    power-of-two tile at a power-of-two stride below the subgroup size, wider than it."""
    T, st = lay.thread_tile[d], lay.thread_strides[d]
    return (T > 1 and _is_pow2(T) and _is_pow2(st) and _is_pow2(subgroup_size) and st < subgroup_size
            and T * st > subgroup_size)


def memory_thread_dims(lay: NestedLayout, red, subgroup_size: int) -> list[int]:
    """The reduced dims whose lanes are not a power-of-two strided set inside one
    subgroup: their partials go through workgroup memory with the subgroups' ones."""
    out = []
    for d in red:
        T, st = lay.thread_tile[d], lay.thread_strides[d]
        if T > 1 and not (_is_pow2(T) and _is_pow2(st) and subgroup_size % (T * st) == 0):
            out.append(d)
    return out


def cross_subgroup_plan(lay: NestedLayout, red, subgroup_size: int, threads: int, elem_bytes: int, target=None,
                        force: str | None = None):
    """How the partials of a reduction of `lay` over `red` come back from workgroup
    memory: (cluster size, stride, padding) to read them one per lane and combine them
    with a cluster ``gpu.subgroup_reduce`` (IREE's plan), or None to have every thread
    read all of them (the broadcast plan). `force` = "lanes" / "broadcast" overrides.

    Chosen by cost, on the host, from the counters the simulator would report for each
    plan's writes and reads: ``shared_bytes / (banks × bank width) + bank conflicts +
    shuffles`` cycles per workgroup (one workgroup-memory phase and one shuffle
    instruction per cycle: the throughput terms of the cost models in `tune` and
    bench/bench_suite.py). Per kept register and subgroup, the broadcast plan reads
    ``n × lanes`` words, the per-lane plan ``lanes`` words and log2(cluster) shuffles:
    measured, the per-lane plan wins from 2 partials on 64 lanes and from 4 on 32 lanes;
    2-3 partials on 32 lanes tie (the broadcast plan is kept: no shuffle latency), and
    a sub-word type (a shuffle moves a whole word) tips small cases to the broadcast
    plan. Rows per thread scale both plans alike, except for bank conflicts: the lanes
    of a cluster read one row of different slots, which share a bank when a slot is a
    multiple of 128 bytes (many rows per thread), so the per-lane buffer's last dim is
    padded where that is cheaper (counted too). A cluster needs ``2^k >= n`` lanes a
    power-of-two stride apart inside a subgroup that hold the same kept elements
    (reduced or replicated lane digits); without one the broadcast plan is the only
    one: never IREE's serial tail, which reads subgroup 0's partial only."""
    from simtify.target import get_target

    if force == "broadcast":
        return None
    target = get_target(target or ("gfx942" if subgroup_size == 64 else "sm_90")) if not hasattr(
        target, "shared_banks") else target
    kept = [d for d in range(lay.rank) if d not in red]
    kept_lay = lay.project(red) if kept else None
    thread_dims = memory_thread_dims(lay, red, subgroup_size)
    sub_dims = [d for d in red if lay.subgroup_tile[d] > 1]
    n = prod(lay.thread_tile[d] for d in thread_dims) * prod(lay.subgroup_tile[d] for d in sub_dims)
    if n < 2:
        return None
    clusters = _partial_clusters(kept_lay, n, subgroup_size, threads)
    if not clusters:
        return None
    writes = _partial_writers(lay, kept, thread_dims, sub_dims, subgroup_size, threads)
    launch = (subgroup_size, threads, target)
    e = kept_lay.element_tile[-1] if kept_lay is not None else 1
    pads = [0] if kept_lay is None else [0, 1] + [e << i for i in range(4) if e << i > 1]
    costs = {(c, p): _round_trip_cost(kept_lay, n, elem_bytes, writes, c, p, *launch) for c in clusters
             for p in pads}
    best = min(costs, key=lambda cp: (costs[cp], cp[1], cp[0][1]))
    if force != "lanes" and costs[best] >= _round_trip_cost(kept_lay, n, elem_bytes, writes, None, 0, *launch):
        return None
    (size, stride), pad = best
    return size, stride, pad


def _partial_clusters(kept_lay: NestedLayout | None, n: int, sg: int, threads: int) -> list[tuple[int, int]]:
    """Every (size, stride) cluster of power-of-two size >= n whose lanes all hold the
    same kept elements (decided on the launch's threads)."""
    size = 1 << (n - 1).bit_length()
    if not _is_pow2(sg) or size > sg or threads % sg:
        return []
    tids = np.arange(threads)
    key = np.zeros((threads, 1), dtype=np.int64) if kept_lay is None else kept_lay.thread_digits(tids, sg)[1]
    out = []
    stride = 1
    while stride * size <= sg:
        first = tids - ((tids // stride) % size) * stride
        if np.array_equal(key, key[first]):
            out.append((size, stride))
        stride *= 2
    return out


def _partial_writers(lay: NestedLayout, kept, thread_dims, sub_dims, sg: int, threads: int):
    """(writer tids, their slots): one thread per partial, the one `writer` picks."""
    tids = np.arange(threads)
    s_dig, t_dig = lay.thread_digits(tids, sg)
    digits = np.concatenate([t_dig[:, list(kept) + list(thread_dims)], s_dig], axis=1)
    first = np.sort(np.unique(digits, axis=0, return_index=True)[1])
    slot = np.zeros(threads, dtype=np.int64)
    for d in thread_dims:
        slot = slot * lay.thread_tile[d] + t_dig[:, d]
    for d in sub_dims:
        slot = slot * lay.subgroup_tile[d] + s_dig[:, d]
    return first, slot[first]


def _round_trip_cost(kept_lay: NestedLayout | None, n: int, b: int, writes, cluster, pad: int, sg: int,
                     threads: int, target) -> float:
    """Cycles per workgroup of the partials' round trip (see `cross_subgroup_plan`) with
    `cluster` (None: the broadcast plan) and the buffer's last dim padded by `pad`, from
    the counters the simulator gives its accesses: shared bytes, bank conflicts
    (`count_bank_conflicts`, per register group and subgroup) and shuffles."""
    from simtify.layout.memory_access import count_bank_conflicts

    T = threads
    tids = np.arange(T)
    if kept_lay is None:
        regs, slot_words = np.zeros((T, 1, 1), dtype=np.int64), 1
    else:
        shape = list(kept_lay.undistributed_shape)
        coords = np.unravel_index(kept_lay.ownership(sg, T).flat, shape)
        padded = shape[:-1] + [shape[-1] + pad]
        regs = np.ravel_multi_index(coords, padded).reshape(T, -1, prod(kept_lay.element_tile))
        slot_words = prod(padded)
    _, G, E = regs.shape
    if cluster is None:  # n reads per thread; the slot shifts every address alike
        slots, reads, shuffles = np.zeros(T, dtype=np.int64), n, 0
    else:
        size, stride = cluster
        slots, reads = (tids // stride) % size, 1
        shuffles = (T // sg) * (size.bit_length() - 1) * max(1, -(-G * E * b // 4))
    writers, writer_slots = writes
    total = 0.0
    for who, where, times in ((writers, writer_slots, 1), (tids[slots < n], slots[slots < n], reads)):
        total += times * who.size * G * E * b / target.shared_phase_bytes
        for g in range(G):
            addr = (where[:, None] * slot_words + regs[who, g, :]) * b
            total += times * count_bank_conflicts(
                np.repeat(who // sg, E), np.repeat(who % sg, E), np.tile(np.arange(E), who.size), addr.ravel(), E, b,
                target.shared_banks, target.bank_width_bytes, True)
    return total + shuffles


# Distribution unrolls every value into its batch x outer register groups, one op (or
# more) per group; past this many groups in one function the output is unreadable and
# the pass takes tens of seconds, so it stops before doing any work.
MAX_UNROLLED_GROUPS = 16384


def registers_of_value(vt: VectorType, lay: NestedLayout) -> int:
    """32-bit registers one thread needs to hold its part of `vt` under `lay`."""
    elt = vt.element_type
    bits = elt.bitwidth if hasattr(elt, "bitwidth") else 64
    return -(-prod(lay.distributed_shape) * max(1, bits) // 32)


def check_unroll_budget(func: Operation, analysis: LayoutAnalysis, target) -> None:
    """Refuse, before any rewriting, a function one of whose values needs more registers
    per thread than the target's per-lane register file holds (it cannot run), or whose
    values together unroll into more than `MAX_UNROLLED_GROUPS` register groups."""
    total = 0
    for op in func.walk():
        if op.name == "iree_vector_ext.arg_compare":
            check_arg_compare_lines(op, analysis, target)
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
        for v in values:
            lay = analysis.get(v) if is_vector(v) else None
            if lay is None or lay.rank == 0:
                continue
            regs = registers_of_value(v.type, lay)
            if regs > target.registers_per_lane:
                raise SimtifyError(
                    f"a {v.type} value distributed as {'x'.join(map(str, lay.distributed_shape))} elements per "
                    f"thread needs {regs} 32-bit registers per thread; {target.name} has {target.registers_per_lane} "
                    f"per lane (use fewer batch/element tiles or more threads)", _where(op))
            groups = prod(lay.batch_tile) * prod(lay.outer_tile)
            total += groups
            if total > MAX_UNROLLED_GROUPS:
                raise SimtifyError(
                    f"distribution would unroll more than {MAX_UNROLLED_GROUPS} register groups (batch x outer tiles "
                    f"summed over the function's vector values; this {v.type} value alone has {groups})", _where(op))


def check_arg_compare_lines(op: Operation, analysis: LayoutAnalysis, target) -> None:
    """An arg_compare whose dim is not reduced inside a subgroup gives every thread whole
    lines (of values, and of indices where they are given) and compares them one by one:
    refuse it, before any work, when such a line value needs more registers per thread
    than the target has, as for any value (a dim over 16 subgroups of 64 lanes × 4 f32 is
    4096 values per thread)."""
    lay = analysis.get(op.input_value)
    if lay is None:
        return
    dim = op.dimension.value.data
    T, st = lay.thread_tile[dim], lay.thread_strides[dim]
    sg = analysis.launch.subgroup_size
    if lay.subgroup_tile[dim] == 1 and (T == 1 or (_is_pow2(T) and _is_pow2(st) and sg % (T * st) == 0)):
        return
    line = NestedDistribution.line_layout(lay, dim)
    regs = registers_of_value(op.input_value.type, line)
    if op.input_index is not None:  # else the index is the position, computed per step
        regs = max(regs, registers_of_value(op.input_index.type, line))
    if regs > target.registers_per_lane:
        raise SimtifyError(
            f"arg_compare along dim {dim} ({lay.undistributed_shape[dim]} elements over {lay.subgroup_tile[dim]} "
            f"subgroups and {T} threads) would give every thread whole lines: {regs} 32-bit registers per thread; "
            f"{target.name} has {target.registers_per_lane} per lane (keep the dim inside "
            f"one subgroup, or reduce it in two steps)", _where(op))


def distribute_function(func: Operation, analysis: LayoutAnalysis, subgroup_size: int, threads: int,
                        target: str | None = None) -> None:
    NestedDistribution(func, analysis, subgroup_size, threads, target).run()
