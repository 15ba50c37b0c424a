"""Rewrites of reductions and contractions, in four steps: per thread (its batch, outer
and element registers of the reduced dims); across lanes with ``gpu.subgroup_reduce``
over clusters, or through workgroup memory where the lanes of a cluster are not a
power-of-two strided set inside one subgroup; across subgroups through workgroup
memory, reading back every subgroup's partial one per lane with a second cluster
subgroup_reduce where that costs less, else all by every thread
(`cross_subgroup.cross_subgroup_plan`); then the accumulator, once."""

from __future__ import annotations

from itertools import product
from math import prod

from xdsl.dialects.builtin import VectorType, i1
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.layout import NestedLayout
from simtify.sim.affine_eval import result_dims
from simtify.transforms.emit import Emitter, kind_of
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.cross_subgroup import cross_subgroup_plan, lanes_then_subgroups, memory_thread_dims
from simtify.transforms.nested.matrix import mma_contract
from simtify.transforms.nested.memory import read_groups, write_groups
from simtify.transforms.nested.registers import (
    LAYOUT_FIELDS,
    distributed_type,
    element_bytes,
    memref_store,
    neutral_constant,
    zero_constant,
)
from simtify.transforms.nested.vectors import distribute_zero_d
from simtify.transforms.propagate_layouts import is_vector, mma_of


def distribute_multi_reduction(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Each thread reduces its registers of the reduced dims, then `reduce_across`
    combines the threads' partials, then the accumulator.

        %r = vector.multi_reduction <add>, %x, %acc [1] : vector<4x64xf32> to vector<4xf32>
      becomes (16 lanes of stride 1 along dim 1)
        %0 = vector.multi_reduction <add>, %x, %zero [1, 3, 5] : vector<1x1x1x1x1x4xf32> to vector<1x1x1xf32>
        %1 = vector.shape_cast %0 : vector<1x1x1xf32> to vector<1xf32>
        %2 = gpu.subgroup_reduce add %1 cluster(size = 16) : (vector<1xf32>) -> vector<1xf32>
        %3 = vector.shape_cast %2 : vector<1xf32> to vector<1x1x1xf32>
        %r = arith.addf %3, %acc : vector<1x1x1xf32>
    """
    kind = kind_of(op)
    src = op.source
    lay = ctx.layout_of(src)
    red = sorted(op.reduction_dims.get_values())
    r = lay.rank
    kept = [d for d in range(r) if d not in red]
    elt = src.type.element_type
    # 1. per thread: batch, outer and element digits of the reduced dims
    axes = [d for d in red] + [r + d for d in red] + [2 * r + d for d in red]
    if not is_vector(op.results[0]):
        part_t = elt
    else:
        part_t = distributed_type(op.results[0].type, lay.project(red) if kept else None)
    neutral = neutral_constant(kind, part_t, em)
    part = em.multi_reduction(kind, ctx.distributed(src), neutral, axes)
    part = reduce_across(ctx, kind, part, lay, red, em)
    # 4. the accumulator, once
    ctx.value_map[op.results[0]] = em.combine(kind, part, ctx.distributed(op.acc))


def distribute_reduction(ctx: DistributionContext, op: Operation, em: Emitter, source: SSAValue | None = None) -> None:
    """A 1-D vector to a scalar: a multi_reduction of its only dim (`source`, when
    given, replaces the vector's registers: the masked form).

        %s = vector.reduction <add>, %v : vector<64xf32> into f32
      becomes (64 lanes)
        %0 = vector.multi_reduction <add>, %v, %zero [0, 1, 2] : vector<1x1x1xf32> to f32
        %s = gpu.subgroup_reduce add %0 : (f32) -> f32
    """
    kind = kind_of(op)
    src = op.vector
    if not is_vector(src):
        distribute_zero_d(ctx, op, em)
        return
    lay = ctx.layout_of(src)
    elt = src.type.element_type
    part = em.multi_reduction(kind, ctx.distributed(src) if source is None else source,
                              neutral_constant(kind, elt, em), [0, 1, 2])
    part = reduce_across(ctx, kind, part, lay, [0], em)
    ctx.value_map[op.results[0]] = em.combine(kind, part, ctx.distributed(op.acc)) if op.acc is not None else part


def contraction_layout(ctx: DistributionContext, op: Operation, maps) -> NestedLayout:
    """The layout of a contraction's iteration space, per iteration dim as the operand
    that reads it (lhs first) holds it."""
    n = len(op.iterator_types.data)
    per_dim = {}
    for v, m in ((op.lhs, maps[0]), (op.rhs, maps[1])):
        lay = ctx.layout_of(v)
        for k, d in enumerate(m):
            per_dim.setdefault(d, tuple(getattr(lay, f)[k] for f in LAYOUT_FIELDS))
    return NestedLayout(**{f: tuple(per_dim[d][i] for d in range(n)) for i, f in enumerate(LAYOUT_FIELDS)})


def iterator_kinds(op: Operation) -> list[str]:
    return [it.data.value if hasattr(it.data, "value") else str(it.data) for it in op.iterator_types.data]


def distribute_contract(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Per thread a contract over its batch/outer/element registers, then the
    cross-lane and cross-subgroup steps of a reduction over the contracted dims (or,
    on an intrinsic's layouts, `mma_contract`).

        %c = vector.contract {indexing_maps = [#mk, #kn, #mn], iterator_types = [parallel, parallel, reduction],
               kind = #vector.kind<add>} %a, %b, %acc : vector<16x32xf32>, vector<32x16xf32> into vector<16x16xf32>
      becomes
        %0 = vector.contract {indexing_maps = [(d0..d8) -> (d0, d2, d3, d5, d6, d8), ..], ..} %a, %b, %zero
               : vector<1x1x1x1x4x8xf32>, vector<1x1x1x1x8x4xf32> into vector<1x1x1x1x4x4xf32>
        ...the cross-lane / cross-subgroup steps over the K threads...
        %c = arith.addf %1, %acc : vector<1x1x1x1x4x4xf32>
    """
    from simtify.ir import vector as vector_ir

    kind = kind_of(op)
    mma = mma_of(op)
    if mma is not None:
        if kind != "add":
            raise SimtifyError(f"a matrix intrinsic accumulates with add, not <{kind}>")
        mma_contract(ctx, op, *mma, em)
        return
    maps = [result_dims(m.data) for m in op.indexing_maps.data]
    iters = iterator_kinds(op)
    n = len(iters)
    it = contraction_layout(ctx, op, maps)
    red = [d for d in range(n) if iters[d] == "reduction"]
    acc_dims = maps[2]
    res = op.results[0]

    def local_map(dims):
        exprs = [AffineDimExpr(g * n + d) for g in range(3) for d in dims]
        return AffineMap(3 * n, 0, tuple(exprs))

    local_maps = [local_map(m) for m in maps]
    local_iters = [iters[d] for g in range(3) for d in range(n)]
    part_t = distributed_type(res.type, ctx.layout_of(res)) if is_vector(res) else res.type
    zero = neutral_constant(kind, part_t, em)
    part = em.value(vector_ir.ContractionOp(ctx.distributed(op.lhs), ctx.distributed(op.rhs), zero, local_maps,
                                            local_iters, kind))
    # reorder the iteration layout as [acc dims.., reduced dims..] so that its
    # projection is the accumulator's layout
    order = list(acc_dims) + red
    part = reduce_across(ctx, kind, part, it.apply(order), list(range(len(acc_dims), len(order))), em)
    ctx.value_map[res] = em.combine(kind, part, ctx.distributed(op.acc))


def reduce_across(ctx: DistributionContext, kind: str, part: SSAValue, lay: NestedLayout, red: list[int],
                  em: Emitter) -> SSAValue:
    """Steps 2 and 3 of a reduction: `part` holds each thread's partial over the
    reduced dims `red` of `lay` (distributed as ``lay.project(red)``); combine the
    partials across lanes (cluster subgroup_reduce, or memory when the lanes are
    not a power-of-two strided set inside one subgroup) and across subgroups."""
    sg = ctx.subgroup_size
    kept = [d for d in range(lay.rank) if d not in red]
    mem_thread_dims = memory_thread_dims(lay, red, sg)
    for d in red:
        if lay.thread_tile[d] > 1 and d not in mem_thread_dims:
            part = cluster_reduce(ctx, kind, part, lay.thread_tile[d], lay.thread_strides[d], em)
        elif lanes_then_subgroups(lay, d, sg):
            # a power-of-two thread dim wider than the subgroup: its lanes first, then
            # one partial per subgroup it spans (the dim's digit above the lanes)
            tile, stride = lay.thread_tile[d], lay.thread_strides[d]
            part = cluster_reduce(ctx, kind, part, sg // stride, stride, em)
            lay = NestedLayout(**{f: tuple((tile * stride // sg if f == "thread_tile" else sg)
                                           if k == d and f in ("thread_tile", "thread_strides") else x
                                           for k, x in enumerate(getattr(lay, f))) for f in LAYOUT_FIELDS})
    mem_thread_dims = memory_thread_dims(lay, red, sg)
    mem_sub_dims = [d for d in red if lay.subgroup_tile[d] > 1]
    if mem_thread_dims or mem_sub_dims:
        part = reduce_through_memory(ctx, kind, part, lay, red, kept, mem_thread_dims, mem_sub_dims, em)
    return part


def cluster_reduce(ctx: DistributionContext, kind: str, part: SSAValue, size: int, stride: int,
                   em: Emitter) -> SSAValue:
    """``gpu.subgroup_reduce`` over clusters of `size` lanes `stride` apart (the whole
    subgroup: no cluster), of a scalar or of flattened registers."""
    t = part.type
    cluster = size if size < ctx.subgroup_size or stride > 1 else None
    if not isinstance(t, VectorType):
        return em.subgroup_reduce(kind, part, cluster, stride)
    n = prod(t.get_shape())
    flat = em.shape_cast(part, VectorType(t.element_type, [n]))
    red = em.subgroup_reduce(kind, flat, cluster, stride)
    return em.shape_cast(red, t)


def reduce_scalars_through_memory(ctx: DistributionContext, kind, part, lay, writer_dims, counts, slot_digits, elt,
                                  em):
    """Scalar partials: each slot's writer stores its partial at the slot's linear
    index; after the barrier every thread reads all partials with one vector load
    (the same words for every lane: a broadcast, no bank conflict) and reduces them."""
    from simtify.ir import vector as vector_ir

    n = prod(counts)
    buf = ctx.prelude.workgroup_alloc([n], elt)
    target = ctx.guarded(em, ctx.writer(lay, thread_dims=list(writer_dims), subgroup_dims=range(lay.rank)))
    slot = target.linearize(slot_digits, counts) if len(counts) > 1 else slot_digits[0]
    target.add(memref_store(part, buf, [slot]))
    em.barrier()
    allv = em.value(vector_ir.LoadOp(buf, [ctx.constant(0)], VectorType(elt, [n])))
    result = em.value(vector_ir.ReductionOp(kind, allv))
    if ctx.in_loop(em):
        em.barrier()
    return result


def reduce_through_memory(ctx: DistributionContext, kind, part, lay, red, kept, thread_dims, sub_dims,
                          em) -> SSAValue:
    """Every (thread digit, subgroup digit) of the named reduced dims writes its
    partial; after a barrier each thread combines all of them, in the same order. The
    buffer is this reduction's own, so no barrier is needed before the writes; inside
    a loop one after the reads keeps the next iteration's writes behind them."""
    counts = [lay.thread_tile[d] for d in thread_dims] + [lay.subgroup_tile[d] for d in sub_dims]
    s, t = ctx.tid_digits(lay)
    slot_digits = [t[d] for d in thread_dims] + [s[d] for d in sub_dims]
    kept_shape = [lay.undistributed_shape[d] for d in kept]
    elt = part.type.element_type if isinstance(part.type, VectorType) else part.type
    kept_lay = lay.project(red) if kept else None
    plan = cross_subgroup_plan(lay, red, ctx.subgroup_size, ctx.threads, element_bytes(elt), ctx.target,
                               force=ctx.cross_subgroup_plan)
    if plan is not None:
        return reduce_partials_over_lanes(ctx, kind, part, lay, kept, thread_dims, counts, slot_digits, elt,
                                          kept_lay, plan, em)
    if kept_lay is None:
        return reduce_scalars_through_memory(ctx, kind, part, lay, thread_dims, counts, slot_digits, elt, em)
    if prod(kept_shape) == 1:  # one kept element: a scalar in a vector<1x..> register
        scalar = em.extract(em.shape_cast(part, VectorType(elt, [1])), [0], elt)
        r = reduce_scalars_through_memory(ctx, kind, scalar, lay, list(kept) + list(thread_dims), counts,
                                          slot_digits, elt, em)
        return em.broadcast(r, part.type)
    buf = ctx.prelude.workgroup_alloc(counts + kept_shape, elt)
    # one writer per slot: the smallest tid among threads holding the same partial
    target = ctx.guarded(em, ctx.writer(lay, thread_dims=list(kept) + list(thread_dims),
                                        subgroup_dims=range(lay.rank)))
    nk = len(kept)
    kept_dims_of_buffer = list(range(len(counts), len(counts) + nk))
    write_groups(ctx, part, buf, list(slot_digits) + [ctx.constant(0)] * nk, kept_dims_of_buffer, kept_lay,
                 [True] * nk, target)
    em.barrier()
    result = None
    for combo in product(*[range(n) for n in counts]):
        idx = [ctx.constant(i) for i in combo]
        pad = zero_constant(elt, em)
        v = read_groups(ctx, buf, idx + [ctx.constant(0)] * nk, kept_dims_of_buffer, kept_lay,
                        VectorType(elt, kept_shape), pad, [True] * nk, em)
        result = v if result is None else em.combine(kind, result, v)
    if ctx.in_loop(em):
        em.barrier()
    return result


def reduce_partials_over_lanes(ctx: DistributionContext, kind, part, lay, kept, thread_dims, counts, slot_digits,
                               elt, kept_lay, plan, em) -> SSAValue:
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
    buf = ctx.prelude.workgroup_alloc([n] + padded, elt)
    target = ctx.guarded(em, ctx.writer(lay, thread_dims=list(kept) + list(thread_dims),
                                        subgroup_dims=range(lay.rank)))
    slot = target.linearize(slot_digits, counts) if len(counts) > 1 else slot_digits[0]
    dims = list(range(1, nk + 1))
    if kept_lay is None:
        target.add(memref_store(part, buf, [slot]))
    else:
        write_groups(ctx, part, buf, [slot] + [ctx.constant(0)] * nk, dims, kept_lay, [True] * nk, target)
    em.barrier()
    key = ("partial lane", size, stride, n)
    if key not in ctx.prelude_cache:
        lane = ctx.prelude.apply((AffineDimExpr(0) // stride) % size, [ctx.tid])
        valid = ctx.prelude.cmpi("ult", lane, ctx.constant(n)) if n < size else None
        ctx.prelude_cache[key] = (lane, valid)
    lane, valid = ctx.prelude_cache[key]
    neutral = neutral_constant(kind, elt, em)
    if kept_lay is None:
        mask = ctx.prelude.broadcast(valid, VectorType(i1, [1])) if valid is not None else None
        one = em.transfer_read(buf, [lane], neutral, VectorType(elt, [1]), AffineMap(1, 0, (AffineDimExpr(0),)),
                               [True], mask)
        mine = em.extract(one, [0], elt)
    else:
        mask = (ctx.prelude.broadcast(valid, VectorType(i1, list(kept_lay.distributed_shape)))
                if valid is not None else None)
        mine = read_groups(ctx, buf, [lane] + [ctx.constant(0)] * nk, dims, kept_lay, VectorType(elt, kept_shape),
                           neutral, [True] * nk, em, mask, kept_lay if mask is not None else None)
    if ctx.in_loop(em):
        em.barrier()
    return cluster_reduce(ctx, kind, mine, size, stride, em)


REWRITES = {
    "vector.multi_reduction": distribute_multi_reduction,
    "vector.reduction": distribute_reduction,
    "vector.contract": distribute_contract,
}
