"""Warp reduction: a ``vector.reduction`` in the region becomes a reduction of each
lane's part and a butterfly of ``gpu.shuffle xor`` across the warp (the seed's warp
reduce). After step k (offset 2^k) every lane holds the combination of its aligned
group of 2^(k+1) lanes, so after log2(N) steps every lane of the warp holds the total,
a uniform value that later ops (a ``memref.store``) use outside the region:

    %r = warp -> (f32) { %v = ..  %s = vector.reduction <add>, %v : vector<64xf32> into f32
                         gpu.yield %s : f32 }
  becomes
    %p = warp -> (vector<2xf32>) { %v = ..  gpu.yield %v : vector<64xf32> }
    %a = vector.reduction <add>, %p : vector<2xf32> into f32
    %b, %ok = gpu.shuffle xor %a, %c1, %c32 : f32     %a1 = arith.addf %a, %b : f32
    ... offsets 2, 4, 8, 16

An accumulator is combined once, after the butterfly.

``vector.multi_reduction`` follows upstream's two cases (its XeGPU distribution; the
generic VectorDistribute.cpp has none): when the result is split over the lanes, the
reduced dims are not, so each lane reduces its own rows after the region
(`sink_multi_reduction`); when the result is uniform and a reduced dim can be split,
the op is rewritten in the region into one ``vector.reduction`` per kept element
(rank 2, one reduced dim; any rank when every dim is reduced, through a shape_cast),
which `sink_reduction` then distributes (`split_multi_reduction`). Anything else stays
on lane 0.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import AnyFloat, IntegerType, VectorType
from xdsl.ir import Operation

from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.ir.assembly import int_values
from simtify.transforms.emit import Emitter, kind_of
from simtify.transforms.warp_region import (
    Boundary,
    WarpConfig,
    after,
    distributed_type,
    i32_const,
    ratios,
    shape,
)


def sink_reduction(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.reduction <add>, %v : vector<64xf32>`` yielded as f32 becomes a reduction
    of each lane's ``vector<2xf32>`` and 5 xor shuffles (32 lanes); the vector must
    split evenly over the warp."""
    if op.name != "vector.reduction":
        return False
    vt = op.vector.type
    n = cfg.warp_size
    elt = vt.element_type
    if vt.get_num_dims() != 1 or vt.get_shape()[0] % n or warp.results[i].type != op.results[0].type:
        return False
    if not isinstance(elt, (IntegerType, AnyFloat)) or (n & (n - 1)):
        return False
    kind = kind_of(op)
    b = Boundary(warp)
    b.need(op.vector, distributed_type(vt, (n,)))
    if op.acc is not None:
        b.need(op.acc)
    new, vals = b.cross()
    em = after(new)
    part = vals[0]
    if part.type.get_shape()[0] == 1:
        x = em.extract(part, [0], elt)
    else:
        x = em.value(vector_ir.ReductionOp(kind, part))
    width = i32_const(em, cfg.subgroup_size)
    step = 1
    while step < n:
        other = em.add(gpu_ir.ShuffleOp("xor", x, i32_const(em, step), width)).results[0]
        x = em.combine(kind, x, other)
        step *= 2
    if op.acc is not None:
        x = em.combine(kind, x, vals[1])
    new.results[i].replace_all_uses_with(x)
    return True


def sink_multi_reduction(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.multi_reduction <add>, %v, %acc [1] : vector<64x8xf32> to vector<64xf32>``
    yielded as ``vector<2xf32>``: the kept dims are split as the result is, the
    reduced dims are not, so %v crosses as ``vector<2x8xf32>``, %acc as the result, and
    each lane reduces its rows after the region (no lane talks to another)."""
    if op.name != "vector.multi_reduction":
        return False
    inner_t, res_t = op.dest.type, warp.results[i].type
    if inner_t == res_t:
        return False  # uniform: split_multi_reduction's case
    dims = int_values(op.reduction_dims)
    src_shape = shape(op.source.type)
    kept = [d for d in range(len(src_shape)) if d not in dims]
    src_ks = [1] * len(src_shape)
    for d, k in zip(kept, ratios(inner_t, res_t)):
        src_ks[d] = k
    b = Boundary(warp)
    b.need(op.source, distributed_type(op.source.type, src_ks))
    b.need(op.acc, res_t)
    new, (s, a) = b.cross()
    made = after(new).add(vector_ir.MultiReductionOp(kind_of(op), s, a, dims))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def _reducible(t, n: int) -> bool:
    """Whether `sink_reduction` can split a ``vector.reduction`` of a 1-D `t` over `n` lanes."""
    return shape(t)[0] % n == 0 and isinstance(t.element_type, (IntegerType, AnyFloat)) and not n & (n - 1)


# `split_multi_reduction` unrolls one reduction per kept row; later patterns cost grows
# with the square of the ops in a region (255 rows: ~50 s), so past this many rows the
# reduction stays on lane 0 instead (correct, serial).
MAX_SPLIT_ROWS = 64


def split_multi_reduction(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """A uniform ``vector.multi_reduction`` whose reduced dim splits over the warp
    becomes, in the region, reductions that `sink_reduction` distributes:

        %r = vector.multi_reduction <add>, %v, %acc [1] : vector<2x64xf32> to vector<2xf32>
      becomes
        %v0 = vector.extract %v[0] : vector<64xf32> from vector<2x64xf32>
        %a0 = vector.extract %acc[0] : f32 from vector<2xf32>
        %s0 = vector.reduction <add>, %v0, %a0 : vector<64xf32> into f32
        %r0 = vector.insert %s0, %acc [0] : f32 into vector<2xf32>    (and row 1 into %r0)

    Reducing dim 0 transposes first (the columns become rows); reducing every dim
    shape_casts to 1-D and makes one reduction."""
    if op.name != "vector.multi_reduction" or warp.results[i].type != op.dest.type:
        return False
    dims = sorted(int_values(op.reduction_dims))
    src_t = op.source.type
    src_shape = shape(src_t)
    n = cfg.warp_size
    kind = kind_of(op)
    block = warp.warp_region.blocks.first
    em = Emitter(block, before=op)
    if len(dims) == len(src_shape):
        flat_t = VectorType(src_t.element_type, [prod(src_shape)])
        if not _reducible(flat_t, n):
            return False
        flat = em.shape_cast(op.source, flat_t) if len(src_shape) != 1 else op.source
        made = em.value(vector_ir.ReductionOp(kind, flat, op.acc))
    elif len(src_shape) == 2 and len(dims) == 1:
        if src_shape[1 - dims[0]] > MAX_SPLIT_ROWS:
            return False  # one reduction per row would be thousands of ops: it stays on lane 0
        rows_src = op.source if dims == [1] else em.transpose(op.source, [1, 0])
        rows, length = shape(rows_src.type)
        row_t = VectorType(src_t.element_type, [length])
        if not _reducible(row_t, n):
            return False
        made = op.acc
        for r in range(rows):
            row = em.extract(rows_src, [r], row_t)
            part = em.value(vector_ir.ReductionOp(kind, row, em.extract(op.acc, [r], src_t.element_type)))
            made = em.value(vector_ir.InsertOp(part, made, [r]))
    else:
        return False
    op.results[0].replace_all_uses_with(made)
    op.detach()
    op.erase()
    return True


MULTI_REDUCTION_SINKS = [sink_multi_reduction, split_multi_reduction]
