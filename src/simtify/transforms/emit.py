"""Building ops at an insertion point, in the shapes passes need: index constants,
affine index math, transfers, vector reshuffles, workgroup buffers, guarded regions."""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.ir import affine as affine_ir
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.ir.assembly import map_attr

FLOAT_KIND_OPS = {
    "add": arith.AddfOp, "mul": arith.MulfOp, "maximumf": arith.MaximumfOp, "minimumf": arith.MinimumfOp,
    "maxnumf": arith.MaxnumfOp, "minnumf": arith.MinnumfOp,
}
INT_KIND_OPS = {
    "add": arith.AddiOp, "mul": arith.MuliOp, "maxsi": arith.MaxSIOp, "minsi": arith.MinSIOp,
    "maxui": arith.MaxUIOp, "minui": arith.MinUIOp, "and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp,
}


@lru_cache(maxsize=4096)
def vector_type(element_type, shape: tuple[int, ...]) -> VectorType:
    """``vector<shape x element_type>``, built once: types are immutable values, and a
    pass names the same few thousands of times (xDSL builds and verifies each anew)."""
    return VectorType(element_type, list(shape))


@lru_cache(maxsize=256)
def bool_array(values: tuple[bool, ...]) -> ArrayAttr:
    """``[true, false]`` as an array of i1 attributes (an `in_bounds`), built once."""
    return ArrayAttr([BoolAttr.from_bool(b) for b in values])


INDEX = IndexType()


class Emitter:
    """Appends ops to `block` (before `before` when given)."""

    def __init__(self, block: Block, before: Operation | None = None):
        self.block = block
        self.before = before

    def add(self, op: Operation) -> Operation:
        if self.before is not None:
            self.block.insert_op_before(op, self.before)
        else:
            self.block.add_op(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    # --- scalars ------------------------------------------------------------------

    def index(self, n: int) -> SSAValue:
        return self.value(arith.ConstantOp(IntegerAttr(n, IndexType())))

    def apply(self, exprs: AffineExpr, operands: Sequence[SSAValue]) -> SSAValue:
        from xdsl.dialects import affine

        return self.value(affine.ApplyOp.build(operands=[list(operands)], result_types=[INDEX],
                                               properties={"map": map_attr(AffineMap(len(operands), 0, (exprs,)))}))

    def delinearize(self, x: SSAValue, basis: Sequence[int]) -> list[SSAValue]:
        """Digits of `x` over `basis` with an unbounded outermost digit first."""
        op = self.add(affine_ir.DelinearizeIndexOp(x, list(basis), with_outer_bound=False))
        return list(op.results)

    def linearize(self, digits: Sequence[SSAValue], basis: Sequence[int]) -> SSAValue:
        return self.value(affine_ir.LinearizeIndexOp(list(digits), list(basis), disjoint=True))

    def cmpi(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        from simtify.ir import arith as arith_ir

        return self.value(arith_ir.CmpiOp(a, b, pred))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.SelectOp(cond, a, b))

    def andi(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(arith.AndIOp(a, b))

    def combine(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        elt = a.type.element_type if isinstance(a.type, VectorType) else a.type
        table = INT_KIND_OPS if isinstance(elt, (IntegerType, IndexType)) else FLOAT_KIND_OPS
        return self.value(table[kind](a, b))

    # --- vectors ------------------------------------------------------------------

    def splat(self, value_attr, vtype: VectorType) -> SSAValue:
        n = 1
        for d in vtype.get_shape():
            n *= d
        v = value_attr.value.data
        attr = DenseIntOrFPElementsAttr.from_list(vtype, [v] * n)
        return self.value(arith.ConstantOp(attr, vtype))

    def dense(self, vtype: VectorType, values: Sequence) -> SSAValue:
        return self.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vtype, list(values)), vtype))

    def broadcast(self, v: SSAValue, vtype: VectorType) -> SSAValue:
        return self.value(vector_ir.BroadcastOp(v, vtype))

    def shape_cast(self, v: SSAValue, vtype: VectorType) -> SSAValue:
        if v.type == vtype:
            return v
        return self.value(vector_ir.ShapeCastOp(v, vtype))

    def transpose(self, v: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return v
        shape = v.type.get_shape()
        rt = VectorType(v.type.element_type, [shape[p] for p in perm])
        return self.value(vector_ir.TransposeOp(v, list(perm), rt))

    def extract(self, v: SSAValue, position: Sequence[int], rtype) -> SSAValue:
        return self.value(vector_ir.ExtractOp(v, list(position), rtype))

    def insert_strided(self, value: SSAValue, dest: SSAValue, offsets: Sequence[int]) -> SSAValue:
        rank = len(value.type.get_shape()) if isinstance(value.type, VectorType) else 0
        return self.value(vector_ir.InsertStridedSliceOp(value, dest, list(offsets), [1] * rank))

    def multi_reduction(self, kind: str, v: SSAValue, acc: SSAValue, dims: Sequence[int]) -> SSAValue:
        return self.value(vector_ir.MultiReductionOp(kind, v, acc, list(dims)))

    def transfer_read(self, source, indices, padding, vtype, perm_map: AffineMap, in_bounds, mask=None) -> SSAValue:
        op = vector_ir.TransferReadOp.build(
            operands=[source, list(indices), padding, [] if mask is None else [mask]],
            result_types=[vtype],
            properties={"permutation_map": map_attr(perm_map),
                        "in_bounds": bool_array(tuple(bool(b) for b in in_bounds))},
        )
        return self.value(op)

    def transfer_write(self, value, dest, indices, perm_map: AffineMap, in_bounds, mask=None) -> None:
        op = vector_ir.TransferWriteOp.build(
            operands=[value, dest, list(indices), [] if mask is None else [mask]],
            result_types=[[]],
            properties={"permutation_map": map_attr(perm_map),
                        "in_bounds": bool_array(tuple(bool(b) for b in in_bounds))},
        )
        self.add(op)

    # --- gpu ----------------------------------------------------------------------

    def subgroup_reduce(self, kind: str, v: SSAValue, cluster_size: int | None, stride: int) -> SSAValue:
        return self.value(gpu_ir.SubgroupReduceOp(kind, v, cluster_size=cluster_size, cluster_stride=stride))

    def barrier(self) -> None:
        self.add(gpu_ir.BarrierOp())

    def workgroup_alloc(self, shape: Sequence[int], elt) -> SSAValue:
        space = gpu_ir.AddressSpaceAttr(gpu_ir.AddressSpace.WORKGROUP)
        return self.value(memref.AllocOp.get(elt, shape=list(shape), memory_space=space))

    def if_then(self, cond: SSAValue) -> "Emitter":
        """An ``scf.if %cond { }`` with no results; returns an emitter into its body."""
        body = Block()
        op = scf.IfOp(cond, [], Region(body))
        self.add(op)
        y = scf.YieldOp()
        body.add_op(y)
        return Emitter(body, before=y)


def if_regions(op: Operation, fill) -> list[Region | None]:
    """The regions of a rewritten ``scf.if`` `op`: per region of it, None where it has
    no block, else a new block that ``fill(old block, new block)`` fills and that
    yields what `fill` returns."""
    regions: list[Region | None] = []
    for region in op.regions:
        if not region.blocks:
            regions.append(None)
            continue
        block = Block()
        block.add_op(scf.YieldOp(*fill(region.blocks.first, block)))
        regions.append(Region(block))
    return regions


def replace_entry_block(func: Operation, old_entry: Block, new_entry: Block) -> None:
    """Put `new_entry`, a rewritten function body, in place of `old_entry`."""
    region = func.body
    region.detach_block(old_entry)
    region.add_block(new_entry)
    old_entry.erase(safe_erase=False)


def kind_of(op: Operation) -> str:
    """The combining kind (``add``, ``maximumf``, ...) of a reduction, scan or contraction."""
    k = op.kind.data
    return k.value if hasattr(k, "value") else str(k)


def neutral_value(kind: str, elt):
    """The value a reduction of `kind` starts from (x combined with it is x)."""
    from xdsl.dialects.builtin import IntegerType

    is_int = isinstance(elt, (IntegerType, IndexType))
    width = elt.width.data if isinstance(elt, IntegerType) else 64
    if kind == "add" or kind in ("or", "xor"):
        return 0 if is_int else 0.0
    if kind == "mul":
        return 1 if is_int else 1.0
    if kind == "and":
        return -1
    if kind in ("maximumf", "maxnumf"):
        return float("-inf")
    if kind in ("minimumf", "minnumf"):
        return float("inf")
    if kind == "maxsi":
        return -(1 << (width - 1))
    if kind == "minsi":
        return (1 << (width - 1)) - 1
    if kind == "maxui":
        return 0
    if kind == "minui":
        return -1
    raise SimtifyError(f"no neutral element for <{kind}>")


def scalar_attr(value, elt):
    """`value` as an integer or float attribute of type `elt`."""
    from xdsl.dialects.builtin import FloatAttr, IntegerType

    if isinstance(elt, (IntegerType, IndexType)):
        return IntegerAttr(int(value), elt)
    return FloatAttr(float(value), elt)
