"""Expand ``gpu.subgroup_reduce`` into a butterfly of ``gpu.shuffle xor``.

A reduction over a cluster of n lanes at stride s takes log2(n) steps; step k
exchanges with the lane ``s·2^k`` away and combines, so after the last step every
lane of the cluster holds the whole cluster's result (what IREE's
``iree-codegen-expand-gpu-ops`` does before lowering to hardware shuffles):

    %r = gpu.subgroup_reduce add %x cluster(size = 4, stride = 16) : (f32) -> f32
  becomes
    %a, %va = gpu.shuffle xor %x, %c16, %c64 : f32     %x1 = arith.addf %x, %a : f32
    %b, %vb = gpu.shuffle xor %x1, %c32, %c64 : f32    %r = arith.addf %x1, %b : f32

Vector values are shuffled element by element.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, VectorType, i32
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from xdsl.dialects import arith as arith_ir
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.transforms.emit import Emitter
from simtify.ir import location_of


def expand(op: Operation, subgroup_size: int) -> None:
    size = op.cluster_size.value.data if op.cluster_size is not None else subgroup_size
    stride = op.cluster_stride.value.data if op.cluster_stride is not None else 1
    if size & (size - 1) or stride & (stride - 1):
        raise SimtifyError(f"a cluster of {size} lanes at stride {stride} is not a power-of-two butterfly")
    kind = op.op.data.value if hasattr(op.op.data, "value") else str(op.op.data)
    em = Emitter(op.parent_block(), before=op)
    width = em.value(arith_ir.ConstantOp(IntegerAttr(subgroup_size, i32)))
    value = op.operands[0]

    def butterfly(x: SSAValue) -> SSAValue:
        step = stride
        while step < stride * size:
            offset = em.value(arith_ir.ConstantOp(IntegerAttr(step, i32)))
            other = em.add(gpu_ir.ShuffleOp("xor", x, offset, width)).results[0]
            x = em.combine(kind, x, other)
            step *= 2
        return x

    if isinstance(value.type, VectorType):
        shape = value.type.get_shape()
        elt = value.type.element_type
        n = 1
        for d in shape:
            n *= d
        flat = em.shape_cast(value, VectorType(elt, [n]))
        parts = [butterfly(em.extract(flat, [i], elt)) for i in range(n)]
        out = em.value(vector_ir.FromElementsOp.build(operands=[parts], result_types=[VectorType(elt, [n])]))
        result = em.shape_cast(out, value.type)
    else:
        result = butterfly(value)
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()


def expand_all(func: Operation, subgroup_size: int) -> None:
    for op in [o for o in func.walk() if o.name == "gpu.subgroup_reduce"]:
        try:
            expand(op, subgroup_size)
        except SimtifyError as e:
            raise e.at(location_of(op))
