"""The ``iree_tensor_ext`` ops IREE 3.12 prints around a dispatch function's body:
``%x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%w..)`` in the
workgroup count region of ``iree_codegen.dispatch_config``."""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, var_operand_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from simtify.ir.attribute_syntax import print_sorted_attr_dict


@irdl_op_definition
class DispatchWorkgroupCountFromSliceOp(IRDLOperation):
    """``%x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%w..)``."""

    name = "iree_tensor_ext.dispatch.workgroup_count_from_slice"

    operands_ = var_operand_def(IndexType)
    results_ = var_result_def(IndexType)

    @classmethod
    def parse(cls, parser: Parser) -> DispatchWorkgroupCountFromSliceOp:
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        index = IndexType()
        return cls(operands=[[parser.resolve_operand(o, index) for o in operands]],
                   result_types=[[index] * 3], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.operands_, printer.print_ssa_value)
        printer.print_string(")")
        print_sorted_attr_dict(printer, self.attributes)


IREETensorExt = Dialect("iree_tensor_ext", [DispatchWorkgroupCountFromSliceOp], [])

DIALECTS: list[Dialect] = [IREETensorExt]

__all__ = ["DIALECTS", "DispatchWorkgroupCountFromSliceOp", "IREETensorExt"]
