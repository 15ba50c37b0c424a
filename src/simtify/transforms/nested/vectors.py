"""Rewrites of the ops that stay within each thread's registers: elementwise ops,
constants, transposes, reshapes, broadcasts, extracts and inserts, ``vector.step`` and
masks built from bounds."""

from __future__ import annotations

from itertools import product
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.layout import NestedLayout
from simtify.transforms.emit import Emitter
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.registers import distributed_type
from simtify.transforms.propagate_layouts import is_vector


def distribute_zero_d(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """An op on 0-d vectors only: every thread holds the whole (one-element) value,
    as with scalars; a write of one is done by thread 0 alone; a 0-d layout anchor
    (rank-0 nested layout) changes nothing.

        vector.transfer_write %v, %m[] : vector<f32>, memref<f32>
      becomes
        %0 = arith.cmpi eq, %tid, %c0 : index
        scf.if %0 {
          vector.transfer_write %v, %m[] : vector<f32>, memref<f32>
        }
    """
    if op.name == "iree_vector_ext.to_layout":
        ctx.value_map[op.results[0]] = ctx.distributed(op.operands[0])
        return
    target = em
    if op.name in ("vector.transfer_write", "vector.store", "memref.store"):
        target = em.if_then(em.cmpi("eq", ctx.tid, ctx.constant(0)))
    clone = op.clone(value_mapper=dict(ctx.value_map))
    target.add(clone)
    for old, new in zip(op.results, clone.results):
        ctx.value_map[old] = new


def distribute_elementwise(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The same op on each thread's registers (operands and result share one layout).

        %c = arith.addf %a, %b : vector<64x64xf32>
      becomes
        %c = arith.addf %a, %b : vector<2x1x1x1x4x4xf32>
    """
    lay = ctx.layout_of(op.results[0])
    operands = [ctx.distributed(o) for o in op.operands]
    types = [distributed_type(r.type, lay) if is_vector(r) else r.type for r in op.results]
    new = type(op).create(operands=operands, result_types=types, properties=dict(op.properties),
                          attributes=dict(op.attributes))
    em.add(new)
    for old, v in zip(op.results, new.results):
        ctx.value_map[old] = v


def distribute_constant(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """A splat becomes a splat of the registers' shape; any other constant is kept
    whole and each thread extracts its elements (`gather_registers`).

        %z = arith.constant dense<0.000000e+00> : vector<4x64xf32>
      becomes
        %z = arith.constant dense<0.000000e+00> : vector<1x1x1x1x1x4xf32>
    """
    r = op.results[0]
    if not is_vector(r):
        ctx.value_map[r] = em.add(op.clone()).results[0]
        return
    lay = ctx.layout_of(r)
    attr = op.properties.get("value")
    attr = attr if attr is not None else op.attributes["value"]
    dt = distributed_type(r.type, lay)
    vals = attr.get_values() if isinstance(attr, DenseIntOrFPElementsAttr) else None
    # a splat (NaN splats too: IREE's neutral value of maxnumf / minnumf is a NaN, and
    # NaN != NaN would make it look like a table)
    if vals is not None and (len(set(vals)) == 1 or all(v != v for v in vals)):
        new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(dt, [vals[0]] * prod(dt.get_shape())), dt)
        ctx.value_map[r] = em.value(new)
        return
    whole = em.add(op.clone()).results[0]
    ctx.value_map[r] = gather_registers(ctx, whole, lay, em)


def gather_registers(ctx: DistributionContext, whole: SSAValue, lay: NestedLayout, em: Emitter) -> SSAValue:
    """This thread's registers of a vector every thread holds whole."""
    from simtify.ir import vector as vector_ir

    elt = whole.type.element_type
    scalars = []
    for regs in product(*[range(n) for n in lay.distributed_shape]):
        pos = []
        for d in range(lay.rank):
            b, o, e = regs[d], regs[lay.rank + d], regs[2 * lay.rank + d]
            k = (b * lay.outer_tile[d] + o) * lay.thread_tile[d] * lay.element_tile[d] + e
            base = ctx.thread_base(lay, d)
            pos.append(em.apply(AffineDimExpr(0) + k, [base]) if base is not None else ctx.constant(k))
        scalars.append(em.value(vector_ir.ExtractOp(whole, pos, elt)))
    flat = em.value(vector_ir.FromElementsOp.build(operands=[scalars], result_types=[
        VectorType(elt, [len(scalars)])]))
    return em.shape_cast(flat, distributed_type(whole.type, lay))


def distribute_transpose(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The same permutation of the batch, outer and element digits (the result's layout
    is the source's, permuted).

        %t = vector.transpose %v, [1, 0] : vector<64x32xf32> to vector<32x64xf32>
      becomes
        %t = vector.transpose %v, [1, 0, 3, 2, 5, 4] : vector<2x1x1x1x4x2xf32> to vector<1x2x1x1x2x4xf32>
    """
    perm = list(op.permutation.get_values())
    r = len(perm)
    full = perm + [r + p for p in perm] + [2 * r + p for p in perm]
    ctx.value_map[op.results[0]] = em.transpose(ctx.distributed(op.operands[0]), full)


def distribute_shape_cast(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Propagation gives the result a layout that keeps every thread's registers in the
    same order, so the registers are only regrouped.

        %s = vector.shape_cast %v : vector<4x64xf32> to vector<256xf32>
      becomes
        %s = vector.shape_cast %v : vector<1x1x1x1x1x4xf32> to vector<1x1x4xf32>
    """
    ctx.value_map[op.results[0]] = em.shape_cast(ctx.distributed(op.operands[0]), distributed_type(
        op.results[0].type, ctx.layout_of(op.results[0])))


def distribute_broadcast(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """A scalar, or the source's registers with unit digits for the new leading dims,
    broadcast to the result's registers.

        %b = vector.broadcast %r : vector<64xf32> to vector<4x64xf32>
      becomes
        %0 = vector.shape_cast %r : vector<1x1x4xf32> to vector<1x1x1x1x1x4xf32>
        %b = vector.broadcast %0 : vector<1x1x1x1x1x4xf32> to vector<1x1x1x1x1x4xf32>
    """
    lay = ctx.layout_of(op.results[0])
    dt = distributed_type(op.results[0].type, lay)
    src = op.source
    if not is_vector(src):
        ctx.value_map[op.results[0]] = em.broadcast(ctx.distributed(src), dt)
        return
    lead = lay.rank - len(src.type.get_shape())
    sl = ctx.layout_of(src)
    shape = []
    for group in (sl.batch_tile, sl.outer_tile, sl.element_tile):
        shape += [1] * lead + list(group)
    v = em.shape_cast(ctx.distributed(src), VectorType(dt.element_type, shape))
    ctx.value_map[op.results[0]] = em.broadcast(v, dt)


def distribute_extract(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The source holds the indexed dims whole on every thread, as its leading batch
    tiles (propagation converts it so): extract at the same positions there.

        %row = vector.extract %v[1] : vector<64xf32> from vector<2x64xf32>
      becomes
        %0 = vector.extract %v[1] : vector<1x1x1x1x4xf32> from vector<2x1x1x1x1x4xf32>
        %row = vector.shape_cast %0 : vector<1x1x1x1x4xf32> to vector<1x1x4xf32>
    """
    from simtify.ir import vector as vector_ir

    lay = ctx.layout_of(op.vector)
    pos = [p if isinstance(p, int) else ctx.distributed(p) for p in op.mixed_position()]
    res = op.results[0]
    if not is_vector(res):
        ctx.value_map[res] = em.value(vector_ir.ExtractOp(ctx.distributed(op.vector), pos + [0] * (2 * lay.rank),
                                                          res.type))
        return
    part = VectorType(res.type.element_type, list(lay.distributed_shape[len(pos):]))
    part_v = em.value(vector_ir.ExtractOp(ctx.distributed(op.vector), pos, part))
    ctx.value_map[res] = em.shape_cast(part_v, distributed_type(res.type, ctx.layout_of(res)))


def distribute_insert(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The dest holds the indexed dims whole on every thread, as its leading batch
    tiles: insert the value's registers at the same positions there.

        %w = vector.insert %row, %v[1] : vector<64xf32> into vector<2x64xf32>
      becomes
        %0 = vector.shape_cast %row : vector<1x1x4xf32> to vector<1x1x1x1x4xf32>
        %w = vector.insert %0, %v[1] : vector<1x1x1x1x4xf32> into vector<2x1x1x1x1x4xf32>
    """
    from simtify.ir import vector as vector_ir

    lay = ctx.layout_of(op.dest)
    pos = [p if isinstance(p, int) else ctx.distributed(p) for p in op.mixed_position()]
    val = op.value_to_store
    if is_vector(val):
        part = VectorType(val.type.element_type, list(lay.distributed_shape[len(pos):]))
        new = vector_ir.InsertOp(em.shape_cast(ctx.distributed(val), part), ctx.distributed(op.dest), pos)
    else:
        new = vector_ir.InsertOp(ctx.distributed(val), ctx.distributed(op.dest), pos + [0] * (2 * lay.rank))
    ctx.value_map[op.results[0]] = em.value(new)


def distribute_step(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Each register's own coordinate: the thread's base plus a constant per register.

        %s = vector.step : vector<64xindex>
      becomes
        %0 = arith.constant dense<[0, 1, 2, 3]> : vector<1x1x4xindex>
        %1 = vector.broadcast %base : index to vector<1x1x4xindex>
        %s = arith.addi %1, %0 : vector<1x1x4xindex>
    """
    ctx.value_map[op.results[0]] = coordinates(ctx, ctx.layout_of(op.results[0]), 0, em)


def coordinates(ctx: DistributionContext, lay: NestedLayout, d: int, em: Emitter) -> SSAValue:
    """A vector<index> of the distributed shape holding each register's coordinate in dim d."""
    shape = lay.distributed_shape
    offsets = []
    for regs in product(*[range(n) for n in shape]):
        b, o, e = regs[d], regs[lay.rank + d], regs[2 * lay.rank + d]
        offsets.append((b * lay.outer_tile[d] + o) * lay.thread_tile[d] * lay.element_tile[d] + e)
    vt = VectorType(IndexType(), list(shape))
    cst = em.dense(vt, offsets)
    base = ctx.thread_base(lay, d)
    if base is None:
        return cst
    return em.value(arith.AddiOp(em.broadcast(base, vt), cst))


def distribute_create_mask(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Each register compares its coordinates with the bounds (`mask_within`).

        %m = vector.create_mask %n : vector<64xi1>
      becomes
        %0 = arith.constant dense<[0, 1, 2, 3]> : vector<1x1x4xindex>
        %1 = vector.broadcast %base : index to vector<1x1x4xindex>
        %2 = arith.addi %1, %0 : vector<1x1x4xindex>
        %3 = vector.broadcast %n : index to vector<1x1x4xindex>
        %m = arith.cmpi slt, %2, %3 : vector<1x1x4xindex>
    """
    ctx.value_map[op.results[0]] = mask_within(ctx, ctx.layout_of(op.results[0]),
                                               [ctx.distributed(o) for o in op.operands], em)


def distribute_constant_mask(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """As `distribute_create_mask`, with constant bounds.

        %m = vector.constant_mask [40] : vector<64xi1>
      becomes
        %m = arith.cmpi slt, %coords, %c40_splat : vector<1x1x4xindex>
    """
    sizes = list(op.mask_dim_sizes.get_values())
    ctx.value_map[op.results[0]] = mask_within(ctx, ctx.layout_of(op.results[0]),
                                               [ctx.constant(s) for s in sizes], em)


def mask_within(ctx: DistributionContext, lay: NestedLayout, bounds, em: Emitter) -> SSAValue:
    """i1 registers of `lay`: whether each register's coordinates are below `bounds`."""
    vt = VectorType(IndexType(), list(lay.distributed_shape))
    result = None
    for d, bound in enumerate(bounds):
        coords = coordinates(ctx, lay, d, em)
        inside = em.cmpi("slt", coords, em.broadcast(bound, vt))
        result = inside if result is None else em.andi(result, inside)
    return result


REWRITES = {
    "arith.constant": distribute_constant,
    "vector.transpose": distribute_transpose,
    "vector.shape_cast": distribute_shape_cast,
    "vector.broadcast": distribute_broadcast,
    "vector.extract": distribute_extract,
    "vector.insert": distribute_insert,
    "vector.step": distribute_step,
    "vector.create_mask": distribute_create_mask,
    "vector.constant_mask": distribute_constant_mask,
}
