"""The upstream ``memref`` dialect: xDSL's ops, with custom syntax for the casts and
the copy, which xDSL 0.74 can only read and print in generic form.

Workgroup memory is a memref in ``#gpu.address_space<workgroup>`` (the attribute is
declared in `simtify.ir.gpu`); IREE prints ``memref.cast`` and
``memref.memory_space_cast`` when it moves buffers between address spaces and static
shapes, so they must read and print as ``memref.cast %m : memref<16x16xf32> to
memref<?x?xf32>``.
"""

from __future__ import annotations

from xdsl.dialects import memref as xdsl_memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, UnrankedMemRefType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, base, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

_AnyMemRef = base(MemRefType) | base(UnrankedMemRefType)


def _why_not_same_data(a: Attribute, b: Attribute) -> str | None:
    """Why memrefs `a` and `b` cannot view the same elements, or None: their element
    types must be one, and ranked shapes agree where both are static (an unranked memref
    matches any)."""
    if a.element_type != b.element_type:  # type: ignore[attr-defined]
        return "element types differ"
    if not isinstance(a, MemRefType) or not isinstance(b, MemRefType):
        return None
    if a.get_num_dims() != b.get_num_dims() or not all(
            x == y or DYNAMIC_INDEX in (x, y) for x, y in zip(a.get_shape(), b.get_shape())):
        return "shapes are incompatible"
    return None


class _Cast(IRDLOperation):
    """``memref.<cast> %m : memref<..> to memref<..>``: the same buffer, seen otherwise."""

    traits = traits_def(NoMemoryEffect())
    source = operand_def(_AnyMemRef)
    dest = result_def(_AnyMemRef)
    assembly_format = "$source attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[source], result_types=[result_type])


@irdl_op_definition
class CastOp(_Cast):
    """``memref.cast %m : memref<16x16xf32> to memref<?x?xf32>``: the same buffer seen
    with more or fewer static sizes."""

    name = "memref.cast"

    def verify_(self) -> None:
        if why := _why_not_same_data(self.source.type, self.dest.type):
            raise VerifyException(f"cannot cast {self.source.type} to {self.dest.type}: {why}")


@irdl_op_definition
class MemorySpaceCastOp(_Cast):
    """``memref.memory_space_cast %m : memref<4xf32, #gpu.address_space<workgroup>> to
    memref<4xf32>``: the same buffer in another address space."""

    name = "memref.memory_space_cast"

    def verify_(self) -> None:
        if _why_not_same_data(self.source.type, self.dest.type):
            raise VerifyException(f"{self.source.type} and {self.dest.type} may differ only in their memory space")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """``memref.copy %a, %b : memref<4xf32> to memref<4xf32>``."""

    name = "memref.copy"
    source = operand_def(_AnyMemRef)
    target = operand_def(_AnyMemRef)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `,` $target attr-dict `:` type($source) `to` type($target)"

    def __init__(self, source: SSAValue | Operation, target: SSAValue | Operation):
        super().__init__(operands=[source, target])

    def verify_(self) -> None:
        if why := _why_not_same_data(self.source.type, self.target.type):
            raise VerifyException(f"cannot copy {self.source.type} to {self.target.type}: {why}")


@irdl_op_definition
class ExtractAlignedPointerAsIndexOp(IRDLOperation):
    """``%p = memref.extract_aligned_pointer_as_index %m : memref<..> -> index``: the address
    of the memref's buffer (xDSL's op has no textual syntax)."""

    name = "memref.extract_aligned_pointer_as_index"

    source = operand_def(_AnyMemRef)
    aligned_pointer = result_def(IndexType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "$source attr-dict `:` type($source) `->` type(results)"


_REPLACED = {CastOp.name, MemorySpaceCastOp.name, CopyOp.name, ExtractAlignedPointerAsIndexOp.name}

MemRef = Dialect(
    "memref",
    [*(op for op in xdsl_memref.MemRef.operations if op.name not in _REPLACED), CastOp, MemorySpaceCastOp, CopyOp,
     ExtractAlignedPointerAsIndexOp],
    list(xdsl_memref.MemRef.attributes),
)
