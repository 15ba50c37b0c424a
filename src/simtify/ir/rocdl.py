"""The two ``rocdl`` ops AMD lowerings of subgroup reductions leave in IR that is still
above LLVM: ``rocdl.readlane %v, %lane : (f32, i32) -> f32`` (``v_readlane_b32``: every
lane gets %v of lane %lane) and ``rocdl.readfirstlane %v : f32`` (of the first active
lane). Upstream's syntax; the other ROCDL intrinsics are out of scope (semantics in
`simtify.sim.ops.rocdl`)."""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType, IntegerType, i32
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.attribute_syntax import print_sorted_attr_dict
from simtify.ir.effects import Collective


@irdl_op_definition
class ReadlaneOp(IRDLOperation):
    """``%r = rocdl.readlane %v, %lane : (f32, i32) -> f32``."""

    name = "rocdl.readlane"
    traits = traits_def(Pure(), Collective())
    src = operand_def()
    lane = operand_def(IntegerType)
    res = result_def()

    def __init__(self, src: SSAValue | Operation, lane: SSAValue | Operation):
        src = SSAValue.get(src)
        super().__init__(operands=[src, lane], result_types=[src.type])

    @classmethod
    def parse(cls, parser: Parser) -> ReadlaneOp:
        src = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        lane = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_type()
        if not isinstance(ftype, FunctionType) or len(ftype.inputs) != 2 or len(ftype.outputs) != 1:
            parser.raise_error("expected a function type (value type, i32) -> value type", pos)
        vt, lt = ftype.inputs.data
        return cls.build(operands=[parser.resolve_operand(src, vt), parser.resolve_operand(lane, lt)],
                         result_types=[ftype.outputs.data[0]], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.src)
        printer.print_string(", ")
        printer.print_ssa_value(self.lane)
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : (")
        printer.print_attribute(self.src.type)
        printer.print_string(", ")
        printer.print_attribute(self.lane.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.res.type)

    def verify_(self) -> None:
        if self.res.type != self.src.type:
            raise VerifyException(f"the result type {self.res.type} must be the value's {self.src.type}")
        if self.lane.type != i32:
            raise VerifyException(f"the lane is an i32, got {self.lane.type}")


@irdl_op_definition
class ReadfirstlaneOp(IRDLOperation):
    """``%r = rocdl.readfirstlane %v : f32``."""

    name = "rocdl.readfirstlane"
    traits = traits_def(Pure(), Collective())
    src = operand_def()
    res = result_def()

    def __init__(self, src: SSAValue | Operation):
        src = SSAValue.get(src)
        super().__init__(operands=[src], result_types=[src.type])

    @classmethod
    def parse(cls, parser: Parser) -> ReadfirstlaneOp:
        src = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(src, type_)], result_types=[type_], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.src)
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.res.type)


ROCDL = Dialect("rocdl", [ReadfirstlaneOp, ReadlaneOp], [])

DIALECTS: list[Dialect] = [ROCDL]

__all__ = ["DIALECTS", "ROCDL", "ReadfirstlaneOp", "ReadlaneOp"]
