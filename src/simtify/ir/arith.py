"""The upstream ``arith`` dialect: xDSL's ops, with the comparisons, ``select`` and
the casts made elementwise as in MLIR.

In xDSL 0.74 ``arith.cmpi``/``cmpf`` on ``vector<4xi32>`` parse with a scalar ``i1``
result (MLIR: ``vector<4xi1>``), ``arith.select`` cannot take a vector condition
(``arith.select %c, %a, %b : vector<4xi1>, vector<4xf32>``), every cast except
``bitcast`` rejects vectors (``arith.index_cast %s : vector<32xindex> to vector<32xi32>``,
``arith.sitofp``, ``extf``...), and ``index_castui`` is missing. Distributed IR is full
of exactly these (an iota from ``vector.step``, masks from comparisons), so those ops
are declared here and the rest of xDSL's ``arith`` is kept.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith as xdsl_arith
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS, FastMathFlagsAttr
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerAttr, IntegerType, TensorType, VectorType, i1, i64
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect, Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import split_properties


def element_and_shape(type_: Attribute) -> tuple[Attribute, tuple | None]:
    """(element type, shape key) of a scalar (key None), vector or tensor type."""
    if isinstance(type_, VectorType):
        return type_.element_type, ("vector", type_.get_shape(), type_.get_scalable_dims())
    if isinstance(type_, TensorType):
        return type_.element_type, ("tensor", type_.get_shape())
    return type_, None


def with_element(type_: Attribute, element: Attribute) -> Attribute:
    """`type_` with its elements replaced by `element` (a scalar becomes `element`)."""
    if isinstance(type_, VectorType):
        return VectorType(element, type_.get_shape(), type_.scalable_dims)
    if isinstance(type_, TensorType):
        return TensorType(element, type_.get_shape(), type_.encoding)
    return element


def _is_integer(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


def _is_integer_or_index(t: Attribute) -> bool:
    return isinstance(t, IntegerType | IndexType)


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


# ----------------------------------------------------------------------- comparisons


class _Comparison(IRDLOperation):
    """``arith.cmpX pred, %a, %b : T``; the result is i1, or i1 elements shaped as T."""

    PREDICATES: ClassVar[list[str]]
    T: ClassVar = VarConstraint("T", AnyAttr())
    predicate = prop_def(IntegerAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, predicate: str | int):
        lhs = SSAValue.get(lhs)
        code = predicate if isinstance(predicate, int) else self.PREDICATES.index(predicate)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[with_element(lhs.type, i1)],
            properties={"predicate": IntegerAttr(code, i64)},
        )

    @classmethod
    def parse(cls, parser: Parser):
        position = parser.pos
        word = parser.parse_identifier()
        if word not in cls.PREDICATES:
            parser.raise_error(f"unknown predicate '{word}', expected one of {', '.join(cls.PREDICATES)}", at_position=position)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        properties: dict[str, Attribute] = {"predicate": IntegerAttr(cls.PREDICATES.index(word), i64)}
        if "fastmath" in cls.get_irdl_definition().properties:
            properties["fastmath"] = FastMathFlagsAttr("none")
            if parser.parse_optional_keyword("fastmath") is not None:
                properties["fastmath"] = FastMathFlagsAttr(FastMathFlagsAttr.parse_parameter(parser))
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        operand_type = parser.parse_type()
        return cls.build(
            operands=[parser.resolve_operand(lhs, operand_type), parser.resolve_operand(rhs, operand_type)],
            result_types=[with_element(operand_type, i1)],
            properties=properties | extra,
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.PREDICATES[self.predicate.value.data]}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        fastmath = self.properties.get("fastmath")
        if isinstance(fastmath, FastMathFlagsAttr) and fastmath != FastMathFlagsAttr("none"):
            printer.print_string(" fastmath")
            fastmath.print_parameter(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    def check_elements(self, element: Attribute) -> None:
        raise NotImplementedError

    def verify_(self) -> None:
        if not 0 <= self.predicate.value.data < len(self.PREDICATES):
            raise VerifyException(f"predicate {self.predicate.value.data} is out of range")
        element, _ = element_and_shape(self.lhs.type)
        self.check_elements(element)
        expected = with_element(self.lhs.type, i1)
        if self.result.type != expected:
            raise VerifyException(f"comparing {self.lhs.type} gives {expected}, but the result is {self.result.type}")


@irdl_op_definition
class CmpiOp(_Comparison):
    """``arith.cmpi slt, %a, %b : vector<4xi32>`` -> ``vector<4xi1>``."""

    name = "arith.cmpi"
    PREDICATES: ClassVar = list(CMPI_COMPARISON_OPERATIONS)

    def check_elements(self, element: Attribute) -> None:
        if not _is_integer_or_index(element):
            raise VerifyException(f"compares integers or indices, got {self.lhs.type}")


@irdl_op_definition
class CmpfOp(_Comparison):
    """``arith.cmpf olt, %a, %b (fastmath<..>)? : vector<4xf32>`` -> ``vector<4xi1>``."""

    name = "arith.cmpf"
    PREDICATES: ClassVar = list(CMPF_COMPARISON_OPERATIONS)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))

    def check_elements(self, element: Attribute) -> None:
        if not _is_float(element):
            raise VerifyException(f"compares floats, got {self.lhs.type}")


@irdl_op_definition
class SelectOp(IRDLOperation):
    """``arith.select %c, %a, %b : T`` (one i1 picks the whole value) or
    ``arith.select %c, %a, %b : vector<4xi1>, vector<4xf32>`` (elementwise)."""

    name = "arith.select"
    T: ClassVar = VarConstraint("T", AnyAttr())
    condition = operand_def()
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())

    def __init__(self, condition: SSAValue | Operation, true_value: SSAValue | Operation, false_value: SSAValue | Operation):
        true_value = SSAValue.get(true_value)
        super().__init__(operands=[condition, true_value, false_value], result_types=[true_value.type])

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if len(types) not in (1, 2):
            parser.raise_error(f"expected the value type, or the condition type and the value type, got {len(types)} types")
        condition_type, value_type = (i1, types[0]) if len(types) == 1 else types
        return cls.build(
            operands=[parser.resolve_operand(o, t) for o, t in zip(operands, (condition_type, value_type, value_type), strict=True)],
            result_types=[value_type],
            properties=extra,
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.condition.type != i1:
            printer.print_attribute(self.condition.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        condition = self.condition.type
        if condition == i1:
            return
        expected = with_element(self.result.type, i1)
        if expected == i1:
            raise VerifyException(f"a {self.result.type} result needs an i1 condition, got {condition}")
        if condition != expected:
            raise VerifyException(f"condition must be i1 or {expected} for {self.result.type}, got {condition}")


# ----------------------------------------------------------------------------- casts


class _Cast(IRDLOperation):
    """``arith.<cast> %x : S to T``, elementwise: S and T are both scalars or have the
    same shape; subclasses say which element types go in and come out."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    SOURCE: ClassVar[str]
    TARGET: ClassVar[str]

    def __init__(self, input: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def accepts(self, source: Attribute, target: Attribute) -> bool:
        raise NotImplementedError

    def verify_(self) -> None:
        source, source_shape = element_and_shape(self.input.type)
        target, target_shape = element_and_shape(self.result.type)
        if source_shape != target_shape:
            raise VerifyException(f"cannot cast {self.input.type} to {self.result.type}: the shapes differ")
        if not self.accepts(source, target):
            raise VerifyException(f"casts {self.SOURCE} to {self.TARGET}, not {source} to {target}")


def _index_pair(s: Attribute, t: Attribute) -> bool:
    return isinstance(s, IndexType) != isinstance(t, IndexType) and _is_integer_or_index(s) and _is_integer_or_index(t)


@irdl_op_definition
class IndexCastOp(_Cast):
    """``arith.index_cast %x : vector<32xindex> to vector<32xi32>`` (sign-extends)."""

    name = "arith.index_cast"
    SOURCE: ClassVar = "index or integer"
    TARGET: ClassVar = "integer or index (one side index)"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _index_pair(s, t)


@irdl_op_definition
class IndexCastUIOp(_Cast):
    """``arith.index_castui %x : index to i32`` (zero-extends)."""

    name = "arith.index_castui"
    SOURCE: ClassVar = "index or integer"
    TARGET: ClassVar = "integer or index (one side index)"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _index_pair(s, t)


@irdl_op_definition
class SIToFPOp(_Cast):
    name = "arith.sitofp"
    SOURCE: ClassVar = "signed integers"
    TARGET: ClassVar = "floats"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_integer(s) and _is_float(t)


@irdl_op_definition
class UIToFPOp(_Cast):
    name = "arith.uitofp"
    SOURCE: ClassVar = "unsigned integers"
    TARGET: ClassVar = "floats"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_integer(s) and _is_float(t)


@irdl_op_definition
class FPToSIOp(_Cast):
    name = "arith.fptosi"
    SOURCE: ClassVar = "floats"
    TARGET: ClassVar = "signed integers"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_float(s) and _is_integer(t)


@irdl_op_definition
class FPToUIOp(_Cast):
    name = "arith.fptoui"
    SOURCE: ClassVar = "floats"
    TARGET: ClassVar = "unsigned integers"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_float(s) and _is_integer(t)


@irdl_op_definition
class ExtSIOp(_Cast):
    name = "arith.extsi"
    SOURCE: ClassVar = "integers"
    TARGET: ClassVar = "wider integers"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_integer(s) and _is_integer(t) and t.bitwidth > s.bitwidth


@irdl_op_definition
class ExtUIOp(_Cast):
    name = "arith.extui"
    SOURCE: ClassVar = "integers"
    TARGET: ClassVar = "wider integers"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_integer(s) and _is_integer(t) and t.bitwidth > s.bitwidth


@irdl_op_definition
class TruncIOp(_Cast):
    name = "arith.trunci"
    SOURCE: ClassVar = "integers"
    TARGET: ClassVar = "narrower integers"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_integer(s) and _is_integer(t) and t.bitwidth < s.bitwidth


@irdl_op_definition
class ExtFOp(_Cast):
    name = "arith.extf"
    SOURCE: ClassVar = "floats"
    TARGET: ClassVar = "wider floats"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_float(s) and _is_float(t) and t.bitwidth > s.bitwidth


@irdl_op_definition
class TruncFOp(_Cast):
    name = "arith.truncf"
    SOURCE: ClassVar = "floats"
    TARGET: ClassVar = "narrower floats"

    def accepts(self, s: Attribute, t: Attribute) -> bool:
        return _is_float(s) and _is_float(t) and t.bitwidth < s.bitwidth


@irdl_op_definition
class RemUIOp(xdsl_arith.SignlessIntegerBinaryOperation):
    """``arith.remui``, free of memory effects as upstream's is (xDSL declares none)."""

    name = "arith.remui"
    traits = traits_def(NoMemoryEffect())


_REPLACEMENTS = [
    RemUIOp, CmpiOp, CmpfOp, SelectOp, IndexCastOp, IndexCastUIOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp,
    ExtSIOp, ExtUIOp, TruncIOp, ExtFOp, TruncFOp,
]
_REPLACED = {op.name for op in _REPLACEMENTS}

Arith = Dialect(
    "arith",
    [*(op for op in xdsl_arith.Arith.operations if op.name not in _REPLACED), *_REPLACEMENTS],
    list(xdsl_arith.Arith.attributes),
    list(xdsl_arith.Arith._interfaces),
)
