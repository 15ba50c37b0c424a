"""The upstream ``arith`` dialect: xDSL's ops, with the comparisons, ``select`` and
the casts made elementwise as in MLIR.

In xDSL 0.74 ``arith.cmpi``/``cmpf`` on ``vector<4xi32>`` parse with a scalar ``i1``
result (MLIR: ``vector<4xi1>``), ``arith.select`` cannot take a vector condition
(``arith.select %c, %a, %b : vector<4xi1>, vector<4xf32>``), every cast except
``bitcast`` rejects vectors (``arith.index_cast %s : vector<32xindex> to vector<32xi32>``,
``arith.sitofp``, ``extf``...), and ``index_castui`` is missing. Distributed IR is full
of exactly these (an iota from ``vector.step``, masks from comparisons), so those ops
are declared here, ``remf`` (which xDSL lacks) is added, and the rest of xDSL's ``arith`` is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

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
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect, Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import DerivingType, mlir_op, parse_operands, split_properties


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


@irdl_custom_directive
class Predicate(CustomDirective):
    """A comparison predicate spelled as its keyword (``slt``), held as its index in the
    op's ``PREDICATES``."""

    predicate: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        predicates = state.op_type.PREDICATES  # type: ignore[attr-defined]
        position = parser.pos
        word = parser.parse_identifier()
        if word not in predicates:
            parser.raise_error(f"unknown predicate '{word}', expected one of {', '.join(predicates)}", at_position=position)
        self.predicate.set(state, IntegerAttr(predicates.index(word), i64))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(op.PREDICATES[self.predicate.get(op).value.data])  # type: ignore[attr-defined,union-attr]


class _Comparison(IRDLOperation):
    """``arith.cmpX pred, %a, %b : T``; the result is i1, or i1 elements shaped as T."""

    PREDICATES: ClassVar[list[str]]
    T: ClassVar = VarConstraint("T", AnyAttr())
    predicate = prop_def(IntegerAttr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def()
    traits = traits_def(Pure())
    SORTED_ATTR_DICT: ClassVar[bool] = False
    custom_directives = (Predicate, DerivingType)
    assembly_format = (
        "custom<Predicate>($predicate) `,` $lhs `,` $rhs attr-dict `:` custom<DerivingType>(type($lhs), type($result))"
    )

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, predicate: str | int):
        lhs = SSAValue.get(lhs)
        code = predicate if isinstance(predicate, int) else self.PREDICATES.index(predicate)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[with_element(lhs.type, i1)],
            properties={"predicate": IntegerAttr(code, i64)},
        )

    @staticmethod
    def derived_types(compared: Attribute) -> tuple[Attribute]:
        return (with_element(compared, i1),)

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


@mlir_op
class CmpiOp(_Comparison):
    """``arith.cmpi slt, %a, %b : vector<4xi32>`` -> ``vector<4xi1>``."""

    name = "arith.cmpi"
    PREDICATES: ClassVar = list(CMPI_COMPARISON_OPERATIONS)

    def check_elements(self, element: Attribute) -> None:
        if not _is_integer_or_index(element):
            raise VerifyException(f"compares integers or indices, got {self.lhs.type}")


@mlir_op
class CmpfOp(_Comparison):
    """``arith.cmpf olt, %a, %b (fastmath<..>)? : vector<4xf32>`` -> ``vector<4xi1>``."""

    name = "arith.cmpf"
    PREDICATES: ClassVar = list(CMPF_COMPARISON_OPERATIONS)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))
    assembly_format = (
        "custom<Predicate>($predicate) `,` $lhs `,` $rhs (`fastmath` `` $fastmath^)? attr-dict `:` "
        "custom<DerivingType>(type($lhs), type($result))"
    )

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
        operands = parse_operands(parser, 3)
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
    same shape; `accepts` says which element types go in and come out."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    SOURCE: ClassVar[str]
    TARGET: ClassVar[str]

    def __init__(self, input: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    @staticmethod
    def accepts(source: Attribute, target: Attribute) -> bool:
        raise NotImplementedError

    def verify_(self) -> None:
        source, source_shape = element_and_shape(self.input.type)
        target, target_shape = element_and_shape(self.result.type)
        if source_shape != target_shape:
            raise VerifyException(f"cannot cast {self.input.type} to {self.result.type}: the shapes differ")
        if not self.accepts(source, target):
            raise VerifyException(f"casts {self.SOURCE} to {self.TARGET}, not {source} to {target}")


def _cast(class_name: str, name: str, source: str, target: str, accepts: Callable[[Any, Any], bool]) -> type[_Cast]:
    """A `_Cast` op from `source` element types to `target` ones, as `accepts` decides."""
    body = {
        "name": name,
        "SOURCE": source,
        "TARGET": target,
        "accepts": staticmethod(accepts),
        "__doc__": f"``{name} %x : S to T``: {source} to {target}, elementwise.",
        "__module__": __name__,
        "__qualname__": class_name,
        # IRDL accepts upper-case class constants only when they are annotated ClassVar
        "__annotations__": {"SOURCE": ClassVar[str], "TARGET": ClassVar[str]},
    }
    return irdl_op_definition(type(class_name, (_Cast,), body))


def _index_pair(s: Attribute, t: Attribute) -> bool:
    return isinstance(s, IndexType) != isinstance(t, IndexType) and _is_integer_or_index(s) and _is_integer_or_index(t)


def _int_to_float(s: Attribute, t: Attribute) -> bool:
    return _is_integer(s) and _is_float(t)


def _float_to_int(s: Attribute, t: Attribute) -> bool:
    return _is_float(s) and _is_integer(t)


def _resized(is_kind: Callable[[Attribute], bool], wider: bool) -> Callable[[Any, Any], bool]:
    """Same kind of element on both sides, the target wider (or narrower)."""
    return lambda s, t: is_kind(s) and is_kind(t) and (t.bitwidth > s.bitwidth if wider else t.bitwidth < s.bitwidth)


# index_cast sign-extends (``arith.index_cast %x : vector<32xindex> to vector<32xi32>``),
# index_castui zero-extends.
_INDEX_OR_INTEGER, _ONE_SIDE_INDEX = "index or integer", "integer or index (one side index)"
IndexCastOp = _cast("IndexCastOp", "arith.index_cast", _INDEX_OR_INTEGER, _ONE_SIDE_INDEX, _index_pair)
IndexCastUIOp = _cast("IndexCastUIOp", "arith.index_castui", _INDEX_OR_INTEGER, _ONE_SIDE_INDEX, _index_pair)
SIToFPOp = _cast("SIToFPOp", "arith.sitofp", "signed integers", "floats", _int_to_float)
UIToFPOp = _cast("UIToFPOp", "arith.uitofp", "unsigned integers", "floats", _int_to_float)
FPToSIOp = _cast("FPToSIOp", "arith.fptosi", "floats", "signed integers", _float_to_int)
FPToUIOp = _cast("FPToUIOp", "arith.fptoui", "floats", "unsigned integers", _float_to_int)
ExtSIOp = _cast("ExtSIOp", "arith.extsi", "integers", "wider integers", _resized(_is_integer, wider=True))
ExtUIOp = _cast("ExtUIOp", "arith.extui", "integers", "wider integers", _resized(_is_integer, wider=True))
TruncIOp = _cast("TruncIOp", "arith.trunci", "integers", "narrower integers", _resized(_is_integer, wider=False))
ExtFOp = _cast("ExtFOp", "arith.extf", "floats", "wider floats", _resized(_is_float, wider=True))
TruncFOp = _cast("TruncFOp", "arith.truncf", "floats", "narrower floats", _resized(_is_float, wider=False))


@irdl_op_definition
class RemUIOp(xdsl_arith.SignlessIntegerBinaryOperation):
    """``arith.remui``, free of memory effects as upstream's is (xDSL declares none)."""

    name = "arith.remui"
    traits = traits_def(NoMemoryEffect())


@irdl_op_definition
class RemFOp(xdsl_arith.FloatingPointLikeBinaryOperation):
    """``arith.remf``: the float remainder, its sign the dividend's (C's fmod); xDSL lacks it."""

    name = "arith.remf"
    traits = traits_def(Pure())


_ADDED = [RemFOp]

_REPLACEMENTS = [
    RemUIOp, CmpiOp, CmpfOp, SelectOp, IndexCastOp, IndexCastUIOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp,
    ExtSIOp, ExtUIOp, TruncIOp, ExtFOp, TruncFOp,
]
_REPLACED = {op.name for op in _REPLACEMENTS}

Arith = Dialect(
    "arith",
    [*(op for op in xdsl_arith.Arith.operations if op.name not in _REPLACED), *_REPLACEMENTS, *_ADDED],
    list(xdsl_arith.Arith.attributes),
    list(xdsl_arith.Arith._interfaces),
)
