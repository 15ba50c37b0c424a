"""The ``hal`` interface ops and attributes of an IREE dispatch function, in IREE 3.12's
syntax: how a dispatch reaches its buffers and its place in the grid.

    %0 = hal.interface.binding.subspan layout(<bindings = [#hal.pipeline.binding<storage_buffer,
           "ReadOnly|Indirect">, ..], flags = Indirect>) binding(0) alignment(64) offset(%c0)
           flags("ReadOnly|Indirect") : memref<512x4096xf32, #hal.descriptor_type<storage_buffer>>
    %id = hal.interface.workgroup.id[0] : index
    %n = hal.interface.workgroup.count[0] : index

A dispatch function takes no arguments: binding N of the pipeline layout is a buffer the
host binds, viewed from ``offset`` (bytes) as the subspan's memref type. The simulator
binds them by name ``binding0``, ``binding1``, ... (`simtify.sim.dispatch`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, StringAttr
from xdsl.ir import Data, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import BitEnumText, KeywordAttr, bit_enum_text, mlir_op, parse_bit_enum_text


@irdl_attr_definition
class DescriptorTypeAttr(KeywordAttr):
    """``#hal.descriptor_type<storage_buffer>``: the memory space of a bound buffer."""

    name = "hal.descriptor_type"


@irdl_attr_definition
class PipelineBindingAttr(Data[tuple[str, str | None]]):
    """``#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">``: one binding of a
    pipeline layout (descriptor type, optional flags)."""

    name = "hal.pipeline.binding"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[str, str | None]:
        with parser.in_angle_brackets():
            kind = parser.parse_identifier()
            flags = parse_bit_enum_text(parser) if parser.parse_optional_punctuation(",") else None
        return (kind, flags)

    def print_parameter(self, printer: Printer) -> None:
        kind, flags = self.data
        printer.print_string(f"<{kind}" + (f", {bit_enum_text(flags)}" if flags is not None else "") + ">")


@irdl_attr_definition
class PipelineLayoutAttr(Data[tuple[int | None, tuple[PipelineBindingAttr, ...], str | None]]):
    """``#hal.pipeline.layout<constants = N, bindings = [..], flags = ..>``: the buffers
    (and push constants) a dispatch is given."""

    name = "hal.pipeline.layout"

    @classmethod
    def parse_parameter(cls, parser: AttrParser):
        constants = None
        bindings: tuple[PipelineBindingAttr, ...] = ()
        flags = None
        with parser.in_angle_brackets():
            while True:
                pos = parser.pos
                key = parser.parse_identifier()
                parser.parse_punctuation("=")
                if key == "constants":
                    constants = parser.parse_integer(allow_boolean=False)
                elif key == "bindings":
                    items = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_attribute)
                    if not all(isinstance(b, PipelineBindingAttr) for b in items):
                        parser.raise_error("bindings must be #hal.pipeline.binding<..> attributes", pos)
                    bindings = tuple(items)
                elif key == "flags":
                    flags = parse_bit_enum_text(parser)
                else:
                    parser.raise_error(f"unknown pipeline layout key '{key}' (constants, bindings, flags)", pos)
                if parser.parse_optional_punctuation(",") is None:
                    break
        return constants, bindings, flags

    def print_parameter(self, printer: Printer) -> None:
        constants, bindings, flags = self.data
        printer.print_string("<" + (f"constants = {constants}, " if constants is not None else "") + "bindings = [")
        printer.print_list(bindings, printer.print_attribute)
        printer.print_string("]" + (f", flags = {bit_enum_text(flags)}" if flags is not None else "") + ">")


@irdl_attr_definition
class DeviceType(ParametrizedAttribute, TypeAttribute):
    """``!hal.device`` (the argument of a workgroup count region)."""

    name = "hal.device"


@mlir_op
class InterfaceBindingSubspanOp(IRDLOperation):
    """A memref view of binding ``binding`` of ``layout`` from byte ``offset``."""

    name = "hal.interface.binding.subspan"

    byte_offset = opt_operand_def(IndexType)
    dynamic_dims = var_operand_def(IndexType)
    result = result_def(MemRefType)
    layout = prop_def(PipelineLayoutAttr)
    binding = prop_def(IntegerAttr[IndexType])
    alignment = opt_prop_def(IntegerAttr[IndexType])
    descriptor_flags = opt_prop_def(StringAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())
    custom_directives = (BitEnumText,)
    assembly_format = (
        "`layout` `(` $layout `)` `binding` `(` $binding `)` (`alignment` `(` $alignment^ `)`)? "
        "(`offset` `(` $byte_offset^ `)`)? (`flags` `(` custom<BitEnumText>($descriptor_flags)^ `)`)? "
        "attr-dict `:` type($result) (`{` $dynamic_dims^ `}`)?"
    )

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, MemRefType)
        dynamic = sum(1 for d in t.get_shape() if d < 0)
        if dynamic != len(self.dynamic_dims):
            raise VerifyException(f"the result type has {dynamic} dynamic dim(s) but {len(self.dynamic_dims)} "
                                  "size(s) are given")
        n = len(self.layout.data[1])
        if not 0 <= self.binding.value.data < n:
            raise VerifyException(f"binding {self.binding.value.data} is not in the layout's {n} binding(s)")


class _WorkgroupQuery(IRDLOperation):
    """``hal.interface.workgroup.<id|count|size>[D] (upper_bound N)? : index``."""

    dimension = prop_def(IntegerAttr[IndexType])
    upper_bound = opt_prop_def(IntegerAttr[IndexType])
    result = result_def(IndexType)
    traits = traits_def(Pure())

    assembly_format = "`[` $dimension `]` (`upper_bound` $upper_bound^)? attr-dict `:` type($result)"

    def verify_(self) -> None:
        if not 0 <= self.dimension.value.data <= 2:
            raise VerifyException(f"dimension {self.dimension.value.data} must be 0, 1 or 2")


@mlir_op
class InterfaceWorkgroupIDOp(_WorkgroupQuery):
    name = "hal.interface.workgroup.id"


@mlir_op
class InterfaceWorkgroupCountOp(_WorkgroupQuery):
    name = "hal.interface.workgroup.count"


@mlir_op
class InterfaceWorkgroupSizeOp(_WorkgroupQuery):
    name = "hal.interface.workgroup.size"


OPS = [InterfaceBindingSubspanOp, InterfaceWorkgroupIDOp, InterfaceWorkgroupCountOp, InterfaceWorkgroupSizeOp]
ATTRIBUTES = [DescriptorTypeAttr, PipelineBindingAttr, PipelineLayoutAttr, DeviceType]
