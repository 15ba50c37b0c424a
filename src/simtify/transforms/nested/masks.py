"""Rewrites of ``vector.mask``: the masked op distributed with the mask's registers. A
transfer takes them as its mask (what IREE's pipeline does before distribution); a
reduction or contraction replaces masked-off elements by the kind's neutral value
(IREE's distribution of masked reductions). One rewrite per maskable op
(`MASKED_REWRITES`)."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, VectorType
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.layout import NestedLayout
from simtify.sim.affine_eval import result_dims
from simtify.transforms.emit import Emitter, kind_of
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.conversions import convert
from simtify.transforms.nested.memory import read_groups, write_groups
from simtify.transforms.nested.reductions import (
    contraction_layout,
    distribute_multi_reduction,
    distribute_reduction,
    iterator_kinds,
    reduce_across,
)
from simtify.transforms.nested.registers import distributed_type, neutral_constant
from simtify.transforms.propagate_layouts import is_vector, mask_layout, mma_of


def distribute_mask(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The masked op by its `MASKED_REWRITES` entry; the mask op's results are what
    its region yields, in the results' layouts.

        %r = vector.mask %m { vector.transfer_read %src[%c0], %pad : memref<64xf32>, vector<64xf32> }
               : vector<64xi1> -> vector<64xf32>
      becomes
        %0 = vector.extract %m[0, 0] : vector<4xi1> from vector<1x1x4xi1>
        %1 = vector.transfer_read %src[%i], %pad, %0 {in_bounds = [false]} : memref<64xf32>, vector<4xf32>
        %r = vector.insert_strided_slice %1, %pad_splat offsets = [0, 0, 0], strides = [1] : ...
    """
    inner = op.masked_op
    yielded = op.mask_region.block.last_op.operands
    if inner is not None:
        rewrite = MASKED_REWRITES.get(inner.name)
        if rewrite is None:
            raise SimtifyError(f"nested distribution does not support '{inner.name}' under vector.mask")
        rewrite(ctx, op, inner, em)
    for y, res in zip(yielded, op.results):
        v = ctx.distributed(y)
        if is_vector(res):
            v = convert(ctx, v, ctx.layout_of(y), ctx.layout_of(res), res.type, em)
        ctx.value_map[res] = v


def mask_in(ctx: DistributionContext, op: Operation, need: NestedLayout, em: Emitter) -> SSAValue:
    """The vector.mask's mask as registers of layout `need`."""
    return convert(ctx, ctx.distributed(op.mask), ctx.layout_of(op.mask), need, op.mask.type, em)


def masked_read(ctx: DistributionContext, op: Operation, inner: Operation, em: Emitter) -> None:
    """A transfer_read with the mask's registers as its mask, per register group; a
    passthru value is selected where the mask is off.

        %r = vector.mask %m, %pt { vector.transfer_read ... } : vector<64xi1> -> vector<64xf32>
      becomes
        %v = ...the masked reads of `distribute_mask`...
        %r = arith.select %m, %v, %pt : vector<1x1x4xi1>, vector<1x1x4xf32>
    """
    from simtify.ir import arith as arith_ir

    lay = ctx.layout_of(inner.results[0])
    need = mask_layout(inner, lay)
    mask = mask_in(ctx, op, need, em)
    perm = result_dims(inner.permutation_map.data)
    in_bounds = [bool(x.value.data) for x in inner.in_bounds.data]
    value = read_groups(ctx, ctx.distributed(inner.source), [ctx.distributed(i) for i in inner.indices], perm, lay,
                        inner.results[0].type, ctx.distributed(inner.padding), in_bounds, em, mask, need)
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
        passthru = convert(ctx, ctx.distributed(op.passthru), ctx.layout_of(op.passthru), lay, op.passthru.type, em)
        value = em.value(arith_ir.SelectOp(in_vector_order, value, passthru))
    ctx.value_map[inner.results[0]] = value


def masked_write(ctx: DistributionContext, op: Operation, inner: Operation, em: Emitter) -> None:
    """A transfer_write with the mask's registers as its mask, by one owner per element.

        vector.mask %m { vector.transfer_write %v, %dst[%c0] : vector<64xf32>, memref<64xf32> } : vector<64xi1>
      becomes
        %0 = vector.extract %v[0, 0] : vector<4xf32> from vector<1x1x4xf32>
        %1 = vector.extract %m[0, 0] : vector<4xi1> from vector<1x1x4xi1>
        vector.transfer_write %0, %dst[%i], %1 {in_bounds = [false]} : vector<4xf32>, memref<64xf32>
    """
    lay = ctx.layout_of(inner.vector)
    need = mask_layout(inner, lay)
    mask = mask_in(ctx, op, need, em)
    perm = result_dims(inner.permutation_map.data)
    in_bounds = [bool(x.value.data) for x in inner.in_bounds.data]
    target = ctx.guarded(em, ctx.writer(lay))
    write_groups(ctx, ctx.distributed(inner.vector), ctx.distributed(inner.source),
                 [ctx.distributed(i) for i in inner.indices], perm, lay, in_bounds, target, mask, need)


def masked_multi_reduction(ctx: DistributionContext, op: Operation, inner: Operation, em: Emitter) -> None:
    """Masked-off registers replaced by the neutral value, then the unmasked reduction.

        %r = vector.mask %m { vector.multi_reduction <add>, %x, %acc [1] : vector<4x64xf32> to vector<4xf32> } ...
      becomes
        %0 = arith.select %m, %x, %zero : vector<1x1x1x1x1x4xi1>, vector<1x1x1x1x1x4xf32>
        %r = ...`distribute_multi_reduction` of %0...
    """
    src = inner.source
    selected = _neutral_where_masked(ctx, op, inner, src, em)
    saved = ctx.value_map[src]
    ctx.value_map[src] = selected
    try:
        distribute_multi_reduction(ctx, inner, em)
    finally:
        ctx.value_map[src] = saved


def masked_reduction(ctx: DistributionContext, op: Operation, inner: Operation, em: Emitter) -> None:
    """As `masked_multi_reduction`, for a ``vector.reduction``.

        %s = vector.mask %m { vector.reduction <add>, %v : vector<64xf32> into f32 } : vector<64xi1> -> f32
      becomes
        %0 = arith.select %m, %v, %zero : vector<1x1x4xi1>, vector<1x1x4xf32>
        %s = ...`distribute_reduction` of %0...
    """
    distribute_reduction(ctx, inner, em, _neutral_where_masked(ctx, op, inner, inner.vector, em))


def _neutral_where_masked(ctx: DistributionContext, op: Operation, inner: Operation, src: SSAValue,
                          em: Emitter) -> SSAValue:
    """The registers of the reduction `inner`'s source `src`, with the kind's neutral
    value where the vector.mask `op` is off."""
    from simtify.ir import arith as arith_ir

    lay = ctx.layout_of(src)
    mask = mask_in(ctx, op, lay, em)
    neutral = neutral_constant(kind_of(inner), distributed_type(src.type, lay), em)
    return em.value(arith_ir.SelectOp(mask, ctx.distributed(src), neutral))


def masked_contract(ctx: DistributionContext, op: Operation, inner: Operation, em: Emitter) -> None:
    """Per thread, the products over the iteration space (both operands broadcast to
    it), masked-off points set to the kind's neutral value, reduced over the thread's
    reduction registers; then the cross-lane and cross-subgroup steps and the
    accumulator, as for an unmasked contraction.

        %c = vector.mask %m { vector.contract {..} %a, %b, %acc : .. into vector<16x16xf32> } : vector<16x16x32xi1> ..
      becomes
        %p = arith.mulf %a_bcast, %b_bcast : vector<1x1x1x1x1x1x4x4x8xf32>
        %q = arith.select %m, %p, %zero : vector<1x1x1x1x1x1x4x4x8xi1>, vector<1x1x1x1x1x1x4x4x8xf32>
        %0 = vector.multi_reduction <add>, %q, %zero2 [2, 5, 8] : vector<1x1x1x1x1x1x4x4x8xf32> to ..
        %c = ...the cross-lane / cross-subgroup steps, then arith.addf with %acc...
    """
    from simtify.ir import arith as arith_ir

    if mma_of(inner) is not None:
        raise SimtifyError("a masked contraction on a matrix intrinsic is not distributed; mask its operands")
    kind = kind_of(inner)
    maps = [result_dims(m.data) for m in inner.indexing_maps.data]
    iters = iterator_kinds(inner)
    n = len(iters)
    it = contraction_layout(ctx, inner, maps)
    res = inner.results[0]
    elt = res.type.element_type if isinstance(res.type, VectorType) else res.type
    it_type = VectorType(elt, [it.undistributed_shape[d] for d in range(n)])
    full_t = distributed_type(it_type, it)
    is_float = isinstance(elt, AnyFloat)
    operands = []
    for v, m in ((inner.lhs, maps[0]), (inner.rhs, maps[1])):
        regs = ctx.distributed(v)
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
    mask = mask_in(ctx, op, it, em)
    product = em.value(arith_ir.SelectOp(mask, product, neutral_constant(kind, full_t, em)))
    red = [d for d in range(n) if iters[d] == "reduction"]
    acc_dims = maps[2]
    kept = sorted(acc_dims)
    axes = [g * n + d for g in range(3) for d in red]
    if is_vector(res):
        kept_t = VectorType(elt, [x for f in ("batch_tile", "outer_tile", "element_tile")
                                  for x in (getattr(it, f)[d] for d in kept)])
        part = em.multi_reduction(kind, product, neutral_constant(kind, kept_t, em), axes)
        q = len(kept)
        p = [kept.index(d) for d in acc_dims]
        if p != list(range(q)):
            part = em.transpose(part, p + [q + x for x in p] + [2 * q + x for x in p])
    else:
        part = em.multi_reduction(kind, product, neutral_constant(kind, elt, em), axes)
    lay = it.apply(list(acc_dims) + red)
    part = reduce_across(ctx, kind, part, lay, list(range(len(acc_dims), n)), em)
    ctx.value_map[res] = em.combine(kind, part, ctx.distributed(inner.acc))


MASKED_REWRITES = {
    "vector.transfer_read": masked_read,
    "vector.transfer_write": masked_write,
    "vector.multi_reduction": masked_multi_reduction,
    "vector.reduction": masked_reduction,
    "vector.contract": masked_contract,
}

REWRITES = {
    "vector.mask": distribute_mask,
}
