"""What a thread holds of a vector: its registers ``vector<B.. x O.. x E..>`` (batch,
outer and element digits per dim), and the small register moves the rewrites share
(picking runs of registers, regrouping them, neutral values)."""

from __future__ import annotations

from itertools import pairwise, permutations, product
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType
from xdsl.ir import Operation, SSAValue

from simtify.layout import NestedLayout
from simtify.transforms.emit import Emitter, neutral_value, scalar_attr, vector_type

# NestedLayout's fields, in constructor order
LAYOUT_FIELDS = ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile", "subgroup_strides",
                 "thread_strides")


def distributed_type(t: VectorType, layout: NestedLayout) -> VectorType:
    """The type of one thread's registers of a `t` value with `layout`."""
    return vector_type(t.element_type, layout.distributed_shape)


def element_bytes(elt) -> int:
    from simtify.sim.types import byte_width

    return byte_width(elt)


def register_groups(lay: NestedLayout):
    """(b, o) per dim for every batch/outer register group, in register order."""
    r = lay.rank
    for bo in product(*[range(n) for n in lay.batch_tile + lay.outer_tile]):
        yield bo[:r], bo[r:]


def line_layout(lay: NestedLayout, dim: int) -> NestedLayout:
    """`lay` with dim `dim` held whole by every thread (its element tile): the threads
    and subgroups that split it now replicate."""
    fields = {f: list(getattr(lay, f)) for f in LAYOUT_FIELDS}
    for f in LAYOUT_FIELDS:
        fields[f][dim] = 0 if f.endswith("strides") else 1
    fields["element_tile"][dim] = lay.undistributed_shape[dim]
    return NestedLayout(**{f: tuple(v) for f, v in fields.items()})


def neutral_constant(kind: str, t, em: Emitter) -> SSAValue:
    """The neutral value of `kind` as a constant of type `t` (a vector or a scalar)."""
    elt = t.element_type if isinstance(t, VectorType) else t
    value = neutral_value(kind, elt)
    if isinstance(t, VectorType):
        return em.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value] * prod(t.get_shape())), t))
    return em.value(arith.ConstantOp(scalar_attr(value, elt)))


def zero_constant(elt, em: Emitter) -> SSAValue:
    return em.value(arith.ConstantOp(scalar_attr(0, elt)))


def _consecutive(run) -> bool:
    return all(b == a + 1 for a, b in pairwise(run))


def gather_run(flat: SSAValue, run, elt, em: Emitter) -> SSAValue:
    """vector<len(run)> of the registers `run` of a flat register vector."""
    from simtify.ir import vector as vector_ir

    vt = VectorType(elt, [len(run)])
    if _consecutive(run) and flat.type == vt:
        return flat
    if _consecutive(run):
        return em.value(vector_ir.ExtractStridedSliceOp(flat, [run[0]], [len(run)], [1], vt))
    scalars = [em.extract(flat, [r], elt) for r in run]
    return em.value(vector_ir.FromElementsOp.build(operands=[scalars], result_types=[vt]))


def scatter_run(piece: SSAValue, acc: SSAValue, run, elt, em: Emitter) -> SSAValue:
    """`acc` with registers `run` replaced by the elements of `piece`."""
    from simtify.ir import vector as vector_ir

    if _consecutive(run) and piece.type == acc.type:
        return piece
    if _consecutive(run):
        return em.insert_strided(piece, acc, [run[0]])
    for j, r in enumerate(run):
        acc = em.value(vector_ir.InsertOp(em.extract(piece, [j], elt), acc, [r]))
    return acc


def reorder(v: SSAValue, order, vt: VectorType, em: Emitter) -> SSAValue:
    """`v` flattened, element i of the result taken from element ``order[i]``, shaped `vt`:
    a shape_cast when `order` is the identity, a transpose of a regrouping when one
    expresses it, else extracts and from_elements."""
    from simtify.ir import vector as vector_ir

    elt = v.type.element_type
    n = prod(v.type.get_shape())
    if list(order) == list(range(n)):
        return em.shape_cast(v, vt)
    import numpy as np

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


def memref_store(value, buf, idx) -> Operation:
    from xdsl.dialects import memref

    return memref.StoreOp.get(value, buf, list(idx))


def memref_load(buf, idx) -> Operation:
    from xdsl.dialects import memref

    return memref.LoadOp.get(buf, list(idx))
