"""The ``amdgpu`` op this project uses: ``gather_to_lds``, AMD's global-to-LDS DMA.

``amdgpu.gather_to_lds [async] %src[%i, %j], %dst[%k, %l] : vector<2xf16>,
memref<..>, memref<.., #gpu.address_space<workgroup>>`` (upstream MLIR's syntax, which
the project follows over the seed's proposed ``... to %dst[..]``): every lane reads one
`transfer type` from its own ``src[indices]``; the subgroup writes what its lanes read
contiguously, in lane order, from ``dst[indices]`` (only lane 0's destination indices
matter). Like ``global_load_lds`` itself, a lane moves 1, 2, 4, 12 or 16 bytes.
"""

from __future__ import annotations

from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import IndexType, MemRefType, StridedLayoutAttr, UnitAttr, VectorType
from xdsl.ir import Attribute, Data, Dialect
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from simtify.ir.attribute_syntax import memory_space_name, print_sorted_attr_dict, split_properties

# Bits one lane may move with global_load_lds (1, 2, 4, 12 or 16 bytes).
TRANSFER_BITS = (8, 16, 32, 96, 128)


def transfer_bits(type_: Attribute) -> int | None:
    """Bits of a scalar or vector transfer type, or None if it has no fixed width."""
    if isinstance(type_, VectorType):
        element = transfer_bits(type_.element_type)
        return None if element is None else element * prod(type_.get_shape())
    width = getattr(type_, "bitwidth", None)
    return width if isinstance(width, int) and not isinstance(type_, IndexType) else None


ADDRESS_SPACES = ("fat_raw_buffer", "buffer_rsrc", "fat_structured_buffer")


@irdl_attr_definition
class AddressSpaceAttr(Data[str]):
    """``#amdgpu.address_space<fat_raw_buffer>``: AMD-specific memory spaces (a buffer
    resource with its offset, as `gather_to_lds` may read from)."""

    name = "amdgpu.address_space"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> str:
        with parser.in_angle_brackets():
            pos = parser.pos
            space = parser.parse_identifier()
            if space not in ADDRESS_SPACES:
                parser.raise_error(
                    f"unknown amdgpu address space '{space}' (expected {', '.join(ADDRESS_SPACES)})", pos
                )
        return space

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


@irdl_op_definition
class GatherToLDSOp(IRDLOperation):
    """A subgroup's gather from global memory (or a fat raw buffer) into LDS."""

    name = "amdgpu.gather_to_lds"

    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    transfer_type = prop_def(Attribute, prop_name="transferType")
    is_async = opt_prop_def(UnitAttr, prop_name="async")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    PROPERTY_NAMES: ClassVar[tuple[str, ...]] = ("async",)

    @classmethod
    def parse(cls, parser: Parser) -> GatherToLDSOp:
        is_async = parser.parse_optional_keyword("async") is not None
        src = parser.parse_unresolved_operand()
        src_idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_punctuation(",")
        dst = parser.parse_unresolved_operand()
        dst_idx = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        props, attrs = split_properties(parser.parse_optional_attr_dict(), cls.PROPERTY_NAMES)
        parser.parse_punctuation(":")
        transfer = parser.parse_type()
        parser.parse_punctuation(",")
        src_type = parser.parse_type()
        parser.parse_punctuation(",")
        dst_type = parser.parse_type()
        index = IndexType()
        properties: dict[str, Attribute] = {"transferType": transfer}
        if is_async or "async" in props:
            properties["async"] = UnitAttr()
        return cls(
            operands=[
                parser.resolve_operand(src, src_type),
                [parser.resolve_operand(o, index) for o in src_idx],
                parser.resolve_operand(dst, dst_type),
                [parser.resolve_operand(o, index) for o in dst_idx],
            ],
            properties=properties,
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        if self.is_async is not None:
            printer.print_string(" async")
        printer.print_string(" ")
        printer.print_ssa_value(self.src)
        printer.print_string("[")
        printer.print_list(self.src_indices, printer.print_ssa_value)
        printer.print_string("], ")
        printer.print_ssa_value(self.dst)
        printer.print_string("[")
        printer.print_list(self.dst_indices, printer.print_ssa_value)
        printer.print_string("]")
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.transfer_type)
        printer.print_string(", ")
        printer.print_attribute(self.src.type)
        printer.print_string(", ")
        printer.print_attribute(self.dst.type)

    def verify_(self) -> None:
        src, dst = self.src.type, self.dst.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if len(self.src_indices) != src.get_num_dims():
            raise VerifyException(f"expected {src.get_num_dims()} source indices, got {len(self.src_indices)}")
        if len(self.dst_indices) != dst.get_num_dims():
            raise VerifyException(f"expected {dst.get_num_dims()} destination indices, got {len(self.dst_indices)}")
        layout = dst.layout
        if isinstance(layout, StridedLayoutAttr) and layout.strides.data:
            last = layout.strides.data[-1]
            if getattr(last, "data", None) != 1:
                raise VerifyException("the destination's innermost dim must be contiguous (stride 1)")
        if src.element_type != dst.element_type:
            raise VerifyException(
                f"source and destination element types differ: {src.element_type} vs {dst.element_type}"
            )
        bits = transfer_bits(self.transfer_type)
        if bits not in TRANSFER_BITS:
            raise VerifyException(
                f"a lane transfers {bits} bits with {self.transfer_type}; global_load_lds moves 8, 16, 32, 96 or 128"
            )
        if memory_space_name(src.memory_space) not in (None, "global", "fat_raw_buffer"):
            raise VerifyException(f"the source must be in global memory or a fat raw buffer, not {src.memory_space}")
        if memory_space_name(dst.memory_space) != "workgroup":
            raise VerifyException("the destination must be in workgroup memory (#gpu.address_space<workgroup>)")


@irdl_op_definition
class MFMAOp(IRDLOperation):
    """``%d = amdgpu.mfma 16x16x16 %a * %b + %c : vector<4xf16>, vector<4xf16>, vector<4xf32>``:
    a subgroup's matrix multiply-accumulate D[M,N] = A[M,K]·B[K,N] + C (CDNA's MFMA);
    each lane passes its fragments (see `simtify.target.mma` for whose elements they
    are). Only the default modifiers (blocks 1, no cbsz/abid/blgp broadcast) are modelled."""

    name = "amdgpu.mfma"

    sourceA = operand_def(Attribute)
    sourceB = operand_def(Attribute)
    destC = operand_def(Attribute)
    destD = result_def(Attribute)
    m = prop_def(Attribute)
    n = prop_def(Attribute)
    k = prop_def(Attribute)

    PROPERTY_NAMES: ClassVar[tuple[str, ...]] = ("m", "n", "k")

    def __init__(self, a, b, c, shape: tuple[int, int, int]):
        from xdsl.dialects.builtin import IntegerAttr, i32
        from xdsl.ir import SSAValue

        m, n, k = shape
        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type],
                         properties={"m": IntegerAttr(m, i32), "n": IntegerAttr(n, i32), "k": IntegerAttr(k, i32)})

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(getattr(self, d).value.data) for d in ("m", "n", "k"))

    @classmethod
    def parse(cls, parser: Parser) -> MFMAOp:
        from xdsl.dialects.builtin import IntegerAttr, i32

        pos = parser.pos
        # "16x16x16" lexes as the integer 16 and the identifier "x16x16"
        dims = f"{parser.parse_integer(allow_negative=False)}{parser.parse_identifier()}"
        try:
            m, n, k = (int(x) for x in dims.split("x"))
        except ValueError:
            parser.raise_error(f"expected MxNxK dimensions, found '{dims}'", pos)
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation("*")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation("+")
        c = parser.parse_unresolved_operand()
        _, attrs = split_properties(parser.parse_optional_attr_dict(), cls.PROPERTY_NAMES)
        if parser.parse_optional_keyword("blgp") is not None:
            parser.parse_punctuation("=")
            if parser.parse_identifier() != "none":
                parser.raise_error("only blgp = none is modelled")
        parser.parse_punctuation(":")
        ta = parser.parse_type()
        parser.parse_punctuation(",")
        tb = parser.parse_type()
        parser.parse_punctuation(",")
        tc = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(a, ta), parser.resolve_operand(b, tb),
                                   parser.resolve_operand(c, tc)], result_types=[tc],
                         properties={"m": IntegerAttr(m, i32), "n": IntegerAttr(n, i32), "k": IntegerAttr(k, i32)},
                         attributes=attrs)

    def print(self, printer: Printer) -> None:
        m, n, k = self.shape
        printer.print_string(f" {m}x{n}x{k} ")
        printer.print_ssa_value(self.sourceA)
        printer.print_string(" * ")
        printer.print_ssa_value(self.sourceB)
        printer.print_string(" + ")
        printer.print_ssa_value(self.destC)
        print_sorted_attr_dict(printer, dict(self.attributes))
        printer.print_string(" : ")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)

    def verify_(self) -> None:
        m, n, k = self.shape
        if self.destD.type != self.destC.type:
            raise VerifyException(f"the result type {self.destD.type} must be C's type {self.destC.type}")
        for name, v, elems in (("A", self.sourceA, m * k), ("B", self.sourceB, k * n), ("C", self.destC, m * n)):
            t = v.type
            per_lane = prod(t.get_shape()) if isinstance(t, VectorType) else 1
            if per_lane * 64 != elems:
                raise VerifyException(f"{name} holds {per_lane} elements per lane; a {m}x{n}x{k} MFMA "
                                      f"needs {elems // 64} per lane of 64")


AMDGPU = Dialect("amdgpu", [GatherToLDSOp, MFMAOp], [AddressSpaceAttr])

DIALECTS: list[Dialect] = [AMDGPU]

__all__ = ["AMDGPU", "AddressSpaceAttr", "DIALECTS", "GatherToLDSOp", "MFMAOp", "TRANSFER_BITS", "transfer_bits"]
