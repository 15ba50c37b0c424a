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
"""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat, IntegerType
from xdsl.ir import Operation

from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.transforms.warp_region import (
    Boundary,
    WarpConfig,
    after,
    distributed_type,
    i32_const,
)


def _kind(op: Operation) -> str:
    k = op.kind.data
    return k.value if hasattr(k, "value") else str(k)


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
    kind = _kind(op)
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
