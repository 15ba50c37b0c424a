"""Rewrites of memory accesses: a transfer becomes one access per batch/outer register
group, of the thread's element tile, at the thread's coordinates; a write of a value
several threads hold is done by one of them."""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.layout import NestedLayout
from simtify.sim.affine_eval import result_dims
from simtify.transforms.emit import Emitter, vector_type
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.registers import distributed_type, register_groups
from simtify.transforms.propagate_layouts import is_vector, mask_layout


def index_for(ctx: DistributionContext, base: SSAValue, lay: NestedLayout, k: int, b, o, em: Emitter) -> SSAValue:
    """base + this thread's coordinate of register group (b, o) in layout dim k."""
    off = (b[k] * lay.outer_tile[k] + o[k]) * lay.thread_tile[k] * lay.element_tile[k]
    tb = ctx.thread_base(lay, k)
    operands = [base] + ([tb] if tb is not None else [])
    return em.apply(_offset_expr(off, tb is not None), operands)


@lru_cache(maxsize=1024)
def _offset_expr(off: int, with_thread: bool) -> AffineExpr:
    """``d0 + off`` (``+ d1``, the thread's base, `with_thread`), built once per offset."""
    expr = AffineDimExpr(0) + off
    return expr + AffineDimExpr(1) if with_thread else expr


def _permutation_map(n_indices: int, perm) -> AffineMap:
    return AffineMap(n_indices, 0, tuple(AffineDimExpr(d) if d is not None else AffineConstantExpr(0) for d in perm))


def _group_indices(ctx: DistributionContext, bases, perm, lay: NestedLayout, b, o, em: Emitter) -> list[SSAValue]:
    idx = list(bases)
    for k, d in enumerate(perm):
        if d is not None:
            idx[d] = index_for(ctx, bases[d], lay, k, b, o, em)
    return idx


def read_groups(ctx: DistributionContext, source, bases, perm, lay: NestedLayout, vt: VectorType, padding, in_bounds,
                em: Emitter, mask=None, mask_lay=None) -> SSAValue:
    """This thread's registers of `lay` read from `source` at `bases` (vector dim k
    reads memory dim ``perm[k]``), one transfer_read per register group."""
    r = lay.rank
    ebox = vector_type(vt.element_type, lay.element_tile)
    perm_map = _permutation_map(len(bases), perm)
    acc = em.broadcast(padding, distributed_type(vt, lay))
    for b, o in register_groups(lay):
        idx = _group_indices(ctx, bases, perm, lay, b, o, em)
        m = mask_group(mask, mask_lay, perm, b, o, em) if mask is not None else None
        piece = em.transfer_read(source, idx, padding, ebox, perm_map, in_bounds, m)
        acc = em.insert_strided(piece, acc, list(b) + list(o) + [0] * r)
    return acc


def mask_group(mask, mask_lay, perm, b, o, em):
    """The element tile of register group (b, o) of the mask registers (in memory-dim order)."""
    order = [k for _, k in sorted((d, k) for k, d in enumerate(perm) if d is not None)]
    pos = [b[k] for k in order] + [o[k] for k in order]
    return em.extract(mask, pos, VectorType(mask.type.element_type, list(mask_lay.element_tile)))


def write_groups(ctx: DistributionContext, value, dest, bases, perm, lay: NestedLayout, in_bounds, em: Emitter,
                 mask=None, mask_lay=None) -> None:
    """Write this thread's registers `value` of `lay` to `dest` at `bases`, one
    transfer_write per register group (the caller guards replicated values)."""
    r = lay.rank
    ebox = vector_type(value.type.element_type, lay.element_tile)
    perm_map = _permutation_map(len(bases), perm)
    for b, o in register_groups(lay):
        idx = _group_indices(ctx, bases, perm, lay, b, o, em)
        piece = em.extract(value, list(b) + list(o), ebox) if r else value
        m = mask_group(mask, mask_lay, perm, b, o, em) if mask is not None else None
        em.transfer_write(piece, dest, idx, perm_map, in_bounds, m)


def distribute_transfer_read(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """One read of the element tile per register group, at the thread's coordinates.

        %v = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x64xf32>, vector<4x64xf32>
      becomes
        %0 = vector.broadcast %pad : f32 to vector<1x1x1x1x1x4xf32>
        %1 = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%c0, %row)
        %2 = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%c0, %col)
        %3 = vector.transfer_read %src[%1, %2], %pad {in_bounds = [true, true]} : memref<4x64xf32>, vector<1x4xf32>
        %v = vector.insert_strided_slice %3, %0 offsets = [0, 0, 0, 0, 0, 0], strides = [1, 1] : ...
    """
    lay = ctx.layout_of(op.results[0])
    perm = result_dims(op.permutation_map.data)
    in_bounds = [bool(x.value.data) for x in op.in_bounds.data]
    mask = ctx.distributed(op.mask) if op.mask is not None else None
    ctx.value_map[op.results[0]] = read_groups(
        ctx, ctx.distributed(op.source), [ctx.distributed(i) for i in op.indices], perm, lay, op.results[0].type,
        ctx.distributed(op.padding), in_bounds, em, mask, mask_layout(op, lay) if mask is not None else None)


def distribute_transfer_write(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """One write of the element tile per register group, by one owner of each element.

        vector.transfer_write %r, %dst[%c0] {in_bounds = [true]} : vector<4xf32>, memref<4xf32>
      becomes
        scf.if %writer {
          %0 = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%c0, %row)
          %1 = vector.extract %r[0, 0] : vector<1xf32> from vector<1x1x1xf32>
          vector.transfer_write %1, %dst[%0] {in_bounds = [true]} : vector<1xf32>, memref<4xf32>
        }
    """
    lay = ctx.layout_of(op.vector)
    perm = result_dims(op.permutation_map.data)
    in_bounds = [bool(x.value.data) for x in op.in_bounds.data]
    target = ctx.guarded(em, ctx.writer(lay))
    mask = ctx.distributed(op.mask) if op.mask is not None else None
    write_groups(ctx, ctx.distributed(op.vector), ctx.distributed(op.source), [ctx.distributed(i) for i in op.indices],
                 perm, lay, in_bounds, target, mask, mask_layout(op, lay) if mask is not None else None)


def distribute_transfer_gather(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Per register group, a gather of the thread's element tile: offsets move by
    the group's coordinate on the dims the source map reads directly; index vectors
    and mask are cut to the same tile. A seed-form gather gives 3.12-form pieces.

        %g = iree_vector_ext.transfer_gather %m[%c0, %c0] [%idx : vector<64xindex>], %pad
               {indexing_maps = [..]} : memref<128x64xf32>, vector<64x64xf32>
      becomes, per register group (b, o)
        %i = vector.extract %idx[b, o] : vector<4xindex> from vector<1x1x4xindex>
        %p = iree_vector_ext.transfer_gather %m[%row, %col] [%i : vector<4xindex>], %pad
               {indexing_maps = [..]} : memref<128x64xf32>, vector<4x4xf32>
        %g = vector.insert_strided_slice %p, %acc offsets = [b.., o.., 0, 0] ...
    """
    from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr

    from simtify.ir.iree_vector_ext import TransferGatherOp

    lay = ctx.layout_of(op.results[0])
    r = lay.rank
    maps = op.gather_indexing_maps  # the seed form distributes as the 3.12 form it means
    indexing_maps = ArrayAttr([AffineMapAttr(m) for m in maps])
    vt = op.results[0].type
    ebox = vector_type(vt.element_type, lay.element_tile)
    offsets = [ctx.distributed(o) for o in op.offsets]
    direct: dict[int, int] = {}
    for j, e in enumerate(maps[0].results):
        if isinstance(e, AffineDimExpr):
            direct[j] = e.position
        elif e.used_dims() if hasattr(e, "used_dims") else False:
            raise SimtifyError("transfer_gather source maps must read a vector dim directly (d_k), "
                               "a symbol or a constant")
    acc = em.broadcast(ctx.distributed(op.padding), distributed_type(vt, lay))
    for b, o in register_groups(lay):
        offs = list(offsets)
        for j, k in direct.items():
            offs[j] = index_for(ctx, offsets[j], lay, k, b, o, em)
        vecs = []
        for vec, m in zip(op.index_vecs, maps[1:]):
            if not is_vector(vec):
                vecs.append(ctx.distributed(vec))
                continue
            dims = result_dims(m)
            sub = lay.apply(dims)
            vecs.append(em.extract(ctx.distributed(vec), [b[d] for d in dims] + [o[d] for d in dims],
                                   VectorType(vec.type.element_type, list(sub.element_tile))))
        mask = []
        if op.mask is not None:  # read through its own map, like an index vector
            dims = result_dims(maps[-1])
            mask = [em.extract(ctx.distributed(op.mask), [b[d] for d in dims] + [o[d] for d in dims],
                               VectorType(op.mask.type.element_type, list(lay.apply(dims).element_tile)))]
        piece = em.value(TransferGatherOp.build(
            operands=[ctx.distributed(op.base), offs, vecs, ctx.distributed(op.padding), mask], result_types=[ebox],
            properties={"indexing_maps": indexing_maps}))
        acc = em.insert_strided(piece, acc, list(b) + list(o) + [0] * r)
    ctx.value_map[op.results[0]] = acc


REWRITES = {
    "vector.transfer_read": distribute_transfer_read,
    "vector.transfer_write": distribute_transfer_write,
    "iree_vector_ext.transfer_gather": distribute_transfer_gather,
}
