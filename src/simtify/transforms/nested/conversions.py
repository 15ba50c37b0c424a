"""Layout conversions of distributed values: free when the ownership maps agree, else
what `plan_conversion` chooses — a register permutation, lane shuffles, or a round trip
through workgroup memory (padded or swizzled so that neither side has bank conflicts,
with the widest vector accesses)."""

from __future__ import annotations

from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType, i1, i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr

from simtify.ir import gpu as gpu_ir
from simtify.layout import NestedLayout
from simtify.transforms.emit import Emitter
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.cross_subgroup import is_pow2
from simtify.transforms.nested.registers import (
    distributed_type,
    element_bytes,
    gather_run,
    scatter_run,
    zero_constant,
)

# `simtify.layout.conversion_plan` (ownership maps, on numpy) is imported where a
# conversion needs a plan: most anchors are free or a register permutation.


def distribute_to_layout(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The anchor converts its operand's registers to its layout (`convert`).

        %a = iree_vector_ext.to_layout %v to layout(#L2) : vector<64x64xf32>    // %v has #L1
      becomes, when #L1 and #L2 own the same elements in the same order,
        %a = vector.shape_cast %v : vector<1x1x4x1x1x4xf32> to vector<1x4x4xf32>
      else lane shuffles or a round trip through workgroup memory.
    """
    src = op.operands[0]
    ctx.value_map[op.results[0]] = convert(ctx, ctx.distributed(src), ctx.layout_of(src), op.nested_layout, src.type,
                                           em, force_memory=op.shared_memory_conversion is not None)


def convert(ctx: DistributionContext, value: SSAValue, src: NestedLayout, dst: NestedLayout, vtype: VectorType,
            em: Emitter, force_memory: bool = False) -> SSAValue:
    """Move `value` from layout `src` to `dst` the way `plan_conversion` chooses:
    nothing, a register permutation, lane shuffles, or workgroup memory."""
    if not force_memory and ctx.analysis.same(src, dst):
        # identical ownership maps: the same registers in the same order, maybe
        # grouped into a differently shaped [B.., O.., E..]
        return em.shape_cast(value, distributed_type(vtype, dst))
    if not force_memory and _batch_outer_only(src, dst):
        return _batch_outer_permute(value, src, dst, vtype, em)
    from simtify.layout.conversion_plan import plan_conversion

    plan = plan_conversion(src, dst, subgroup_size=ctx.subgroup_size, threads=ctx.threads, target=ctx.target,
                           element_bytes=element_bytes(vtype.element_type), force_memory=force_memory,
                           barriers=2 if ctx.in_loop(em) else 1)
    if plan.kind in ("registers", "shuffles"):
        return through_lanes(ctx, value, plan.lanes, dst, vtype, em)
    return through_memory(ctx, value, src, dst, vtype, em, plan.memory)


def _batch_outer_only(src: NestedLayout, dst: NestedLayout) -> bool:
    return (src.subgroup_tile == dst.subgroup_tile and src.thread_tile == dst.thread_tile
            and src.element_tile == dst.element_tile and src.subgroup_strides == dst.subgroup_strides
            and src.thread_strides == dst.thread_strides
            and all(a * b == c * d for a, b, c, d in zip(src.batch_tile, src.outer_tile, dst.batch_tile,
                                                          dst.outer_tile)))


def _batch_outer_permute(value, src, dst, vtype, em):
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


# --- conversions through lanes -----------------------------------------------------


def tid_table(ctx: DistributionContext, values, elt) -> SSAValue:
    """This thread's entry of a per-thread constant table (indexed by tid)."""
    from simtify.ir import vector as vector_ir

    key = ("table", str(elt), tuple(int(v) if elt != i1 else bool(v) for v in values))
    if key not in ctx.prelude_cache:
        table = ctx.prelude.dense(VectorType(elt, [ctx.threads]), list(key[2]))
        ctx.prelude_cache[key] = ctx.prelude.value(vector_ir.ExtractOp(table, [ctx.tid], elt))
    return ctx.prelude_cache[key]


def f2_lane(ctx: DistributionContext, const: int, columns) -> SSAValue:
    """The i32 lane ``const ^ XOR_j columns[j]·bit_j(lane)``, computed once per thread."""
    key = ("f2", const, tuple(columns))
    if key in ctx.prelude_cache:
        return ctx.prelude_cache[key]
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
        while k + 1 < len(columns) and columns[k + 1] == columns[j] << (k + 1 - j) and is_pow2(columns[j]):
            k += 1
        n = k - j + 1
        if is_pow2(columns[j]):
            e = ((AffineDimExpr(0) // (1 << j)) % (1 << n)) * columns[j]
        else:
            e = ((AffineDimExpr(0) // (1 << j)) % 2) * columns[j]
            k, n = j, 1
        terms.append(ctx.prelude.apply(e, [ctx.tid]))
        j = k + 1
    if const or not terms:
        terms.append(ctx.constant(const))
    lane = terms[0]
    for t in terms[1:]:
        lane = ctx.prelude.value(arith.XOrIOp(lane, t))
    out = ctx.prelude.value(arith_ir.IndexCastOp(lane, i32))
    ctx.prelude_cache[key] = out
    return out


def member_test(ctx: DistributionContext, rnd) -> SSAValue:
    """i1: whether this thread takes round `rnd` (lane bit-field tests, else a table)."""
    if not rnd.member_fields:
        return tid_table(ctx, rnd.members, i1)
    key = ("members", rnd.member_fields)
    if key in ctx.prelude_cache:
        return ctx.prelude_cache[key]
    cond = None
    for shift, n, v in rnd.member_fields:
        f = ctx.prelude.apply((AffineDimExpr(0) // (1 << shift)) % (1 << n), [ctx.tid])
        c = ctx.prelude.cmpi("eq", f, ctx.constant(v))
        cond = c if cond is None else ctx.prelude.andi(cond, c)
    ctx.prelude_cache[key] = cond
    return cond


def through_lanes(ctx: DistributionContext, value: SSAValue, plan, dst: NestedLayout, vtype: VectorType,
                  em: Emitter) -> SSAValue:
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
                offset = ctx.i32(rnd.value)
            elif rnd.mode == "f2":
                offset = f2_lane(ctx, rnd.value, rnd.columns)
            else:
                offset = tid_table(ctx, rnd.lanes, i32)
            v = em.add(gpu_ir.ShuffleOp("xor" if rnd.mode == "xor" else "idx", v, offset,
                                        ctx.i32(ctx.subgroup_size))).results[0]
        prev = regs[rnd.dst]
        if prev is None:
            regs[rnd.dst] = v
        else:
            regs[rnd.dst] = em.value(arith_ir.SelectOp(member_test(ctx, rnd), v, prev))
    out = em.value(vector_ir.FromElementsOp.build(operands=[regs], result_types=[
        VectorType(elt, [plan.dst_registers])]))
    return em.shape_cast(out, distributed_type(vtype, dst))


# --- conversions through workgroup memory --------------------------------------------


def buffer_address(ctx: DistributionContext, lay: NestedLayout, buf, offset, em: Emitter) -> SSAValue:
    """The buffer address of this thread's run starting at coordinate base + `offset`
    (see `conversion_plan.BufferLayout.address`)."""
    weights = buf.weights
    bases = [(d, ctx.thread_base(lay, d)) for d in range(lay.rank)]
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
        row = em.apply(row_expr, operands) if operands else ctx.constant(int(row_expr.value))
        fb = bases[fast][1]
        col = em.apply(AffineDimExpr(0) + offset[fast], [fb]) if fb is not None else ctx.constant(offset[fast])
        g = em.apply(((AffineDimExpr(0) // per_phase) % max_phase) * vec, [row])
        colx = em.value(arith.XOrIOp(col, g))
        return em.apply(AffineDimExpr(0) * buf.pitch + AffineDimExpr(1), [row, colx])
    const = sum(offset[d] * weights[d] for d in range(lay.rank))
    plain = plain_address(ctx, bases, weights, const, em)
    if not buf.xor_columns:
        return plain
    import numpy as np

    per_run = int(buf.xor_of(np.array([const]))[0])
    thread_xor = thread_swizzle(ctx, lay, buf, bases, weights)
    if thread_xor is None:
        return plain if per_run == 0 else em.value(arith.XOrIOp(plain, ctx.constant(per_run)))
    x = thread_xor if per_run == 0 else em.value(arith.XOrIOp(thread_xor, ctx.constant(per_run)))
    return em.value(arith.XOrIOp(plain, x))


def plain_address(ctx: DistributionContext, bases, weights, const: int, em: Emitter) -> SSAValue:
    """``const + Σ base_d · weight_d`` over the dims with a thread base."""
    expr: AffineExpr = AffineConstantExpr(const)
    operands = []
    for d, b in bases:
        if b is not None:
            expr = expr + AffineDimExpr(len(operands)) * weights[d]
            operands.append(b)
    return em.apply(expr, operands) if operands else ctx.constant(const)


def thread_swizzle(ctx: DistributionContext, lay: NestedLayout, buf, bases, weights) -> SSAValue | None:
    """The thread's part of the F2 swizzle: XOR over the high bits b of its base
    address of b's mask (None when 0 for every thread)."""
    key = ("swizzle", lay, buf)
    if key in ctx.prelude_cache:
        return ctx.prelude_cache[key]
    base = plain_address(ctx, bases, weights, 0, ctx.prelude)
    result = None
    for bit, mask in buf.xor_columns:
        term = ctx.prelude.apply(((AffineDimExpr(0) // (1 << bit)) % 2) * mask, [base])
        result = term if result is None else ctx.prelude.value(arith.XOrIOp(result, term))
    ctx.prelude_cache[key] = result
    return result


def through_memory(ctx: DistributionContext, value, src, dst, vtype, em, plan=None) -> SSAValue:
    """Write with the source layout (one owner per element), barrier, read with the
    target layout, each thread's runs as the widest vector accesses the plan allows,
    at the plan's padded or swizzled addresses; inside a loop a second barrier keeps
    the next iteration's writes behind these reads."""
    from simtify.ir import vector as vector_ir

    in_loop = ctx.in_loop(em)
    if plan is None:
        from simtify.layout.conversion_plan import plan_conversion

        plan = plan_conversion(src, dst, subgroup_size=ctx.subgroup_size, threads=ctx.threads, target=ctx.target,
                               element_bytes=element_bytes(vtype.element_type), force_memory=True,
                               barriers=2 if in_loop else 1).memory
    elt = vtype.element_type
    buf = ctx.prelude.workgroup_alloc([plan.buffer.elements], elt)
    flat = em.shape_cast(value, VectorType(elt, [prod(src.distributed_shape)]))
    target = ctx.guarded(em, ctx.writer(src))
    for run, offset in zip(plan.write.runs, plan.write.offsets):
        piece = gather_run(flat, run, elt, target)
        addr = buffer_address(ctx, src, plan.buffer, offset, target)
        target.add(vector_ir.StoreOp(piece, buf, [addr]))
    em.barrier()
    regs = prod(dst.distributed_shape)
    pad = zero_constant(elt, em)
    acc = em.broadcast(pad, VectorType(elt, [regs]))
    for run, offset in zip(plan.read.runs, plan.read.offsets):
        addr = buffer_address(ctx, dst, plan.buffer, offset, em)
        piece = em.value(vector_ir.LoadOp(buf, [addr], VectorType(elt, [len(run)])))
        acc = scatter_run(piece, acc, run, elt, em)
    if in_loop:
        em.barrier()
    return em.shape_cast(acc, distributed_type(vtype, dst))


REWRITES = {
    "iree_vector_ext.to_layout": distribute_to_layout,
}
