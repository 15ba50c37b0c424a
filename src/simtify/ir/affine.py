"""The upstream ``affine`` dialect: xDSL's ops plus the index (de)linearisation ops.

IREE's distribution writes every thread-to-data mapping as
``affine.delinearize_index %tid into (8, 8)`` (split a linear id into digits, last
fastest) and ``affine.linearize_index disjoint [%a, %b] by (2, 8)`` (the inverse).
xDSL 0.74 lacks both; they are declared here and joined to xDSL's ``affine`` ops
(``apply``, ``for``, ``if``, ``load``...), which already read and print today's syntax.

Both ops take a mixed static/dynamic basis, ``(16, %n)``; the basis may leave out the
outermost bound (then the leading digit is unbounded), so a basis of n entries goes
with n or n + 1 indices.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine as xdsl_affine
from xdsl.dialects.builtin import DYNAMIC_INDEX, AffineMapAttr, DenseArrayBase, IndexType, UnitAttr, i64
from xdsl.dialects.utils import (
    get_dynamic_index_list,
    parse_dynamic_index_list_without_types,
    print_dynamic_index_list,
    split_dynamic_index_list,
    verify_dynamic_index_list,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import i64_dense, split_properties


def _parse_basis(parser: Parser) -> tuple[list[SSAValue], DenseArrayBase]:
    """``(16, %n)`` -> (dynamic values, static basis with DYNAMIC_INDEX holes)."""
    dynamic, static = parse_dynamic_index_list_without_types(parser, DYNAMIC_INDEX, delimiter=Parser.Delimiter.PAREN)
    return [parser.resolve_operand(v, IndexType()) for v in dynamic], i64_dense(static)


def _print_basis(printer: Printer, dynamic: Sequence[SSAValue], static: DenseArrayBase) -> None:
    print_dynamic_index_list(printer, DYNAMIC_INDEX, dynamic, static.get_values(), delimiter=Parser.Delimiter.PAREN)


def _check_basis(static: DenseArrayBase, dynamic: Sequence[SSAValue], minimum: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in static.get_values())
    verify_dynamic_index_list(values, dynamic, DYNAMIC_INDEX)
    for value in values:
        if value != DYNAMIC_INDEX and value < minimum:
            raise VerifyException(f"basis element {value} must be at least {minimum}")
    return values


@irdl_op_definition
class LinearizeIndexOp(IRDLOperation):
    """``%l = affine.linearize_index (disjoint)? [%a, %b] by (4, 16) : index`` is
    ``a * 16 + b``. ``disjoint`` promises every index is within its bound."""

    name = "affine.linearize_index"
    multi_index = var_operand_def(IndexType)
    dynamic_basis = var_operand_def(IndexType)
    static_basis = prop_def(DenseArrayBase.constr(i64))
    disjoint = opt_prop_def(UnitAttr)
    linear_index = result_def(IndexType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, multi_index: Sequence[SSAValue | Operation], basis: Sequence[SSAValue | int], disjoint: bool = False):
        static, dynamic = split_dynamic_index_list(basis, DYNAMIC_INDEX)
        properties: dict[str, Attribute] = {"static_basis": i64_dense(static)}
        if disjoint:
            properties["disjoint"] = UnitAttr()
        super().__init__(operands=[multi_index, dynamic], result_types=[IndexType()], properties=properties)

    def mixed_basis(self) -> list[SSAValue | int]:
        return get_dynamic_index_list(self.static_basis.get_values(), self.dynamic_basis, DYNAMIC_INDEX)

    @classmethod
    def parse(cls, parser: Parser) -> LinearizeIndexOp:
        properties: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("disjoint") is not None:
            properties["disjoint"] = UnitAttr()
        indices = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType()))
        parser.parse_keyword("by")
        dynamic, static = _parse_basis(parser)
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        return cls.build(
            operands=[indices, dynamic],
            result_types=[result_type],
            properties=properties | {"static_basis": static} | extra,
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        if self.disjoint is not None:
            printer.print_string(" disjoint")
        printer.print_string(" [")
        printer.print_list(self.multi_index, printer.print_operand)
        printer.print_string("] by ")
        _print_basis(printer, self.dynamic_basis, self.static_basis)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.linear_index.type)

    def verify_(self) -> None:
        basis = _check_basis(self.static_basis, self.dynamic_basis, 0)
        if len(self.multi_index) not in (len(basis), len(basis) + 1):
            raise VerifyException(
                f"{len(self.multi_index)} indices need a basis of {len(self.multi_index)} (or {len(self.multi_index) - 1}) "
                f"elements, got {len(basis)}"
            )


@irdl_op_definition
class DelinearizeIndexOp(IRDLOperation):
    """``%d:2 = affine.delinearize_index %l into (4, 16) : index, index`` is
    ``(l floordiv 16 mod 4, l mod 16)``; with one more result than the basis, the
    leading result is unbounded (``l floordiv 64``)."""

    name = "affine.delinearize_index"
    linear_index = operand_def(IndexType)
    dynamic_basis = var_operand_def(IndexType)
    static_basis = prop_def(DenseArrayBase.constr(i64))
    multi_index = var_result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, linear_index: SSAValue | Operation, basis: Sequence[SSAValue | int], with_outer_bound: bool = True):
        static, dynamic = split_dynamic_index_list(basis, DYNAMIC_INDEX)
        count = len(static) if with_outer_bound else len(static) + 1
        super().__init__(
            operands=[linear_index, dynamic],
            result_types=[[IndexType()] * count],
            properties={"static_basis": i64_dense(static)},
        )

    def mixed_basis(self) -> list[SSAValue | int]:
        return get_dynamic_index_list(self.static_basis.get_values(), self.dynamic_basis, DYNAMIC_INDEX)

    @classmethod
    def parse(cls, parser: Parser) -> DelinearizeIndexOp:
        linear_index = parser.parse_operand(IndexType())
        parser.parse_keyword("into")
        dynamic, static = _parse_basis(parser)
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        result_types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        return cls.build(
            operands=[linear_index, dynamic],
            result_types=[result_types],
            properties={"static_basis": static} | extra,
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.linear_index)
        printer.print_string(" into ")
        _print_basis(printer, self.dynamic_basis, self.static_basis)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list(self.multi_index.types, printer.print_attribute)

    def verify_(self) -> None:
        basis = _check_basis(self.static_basis, self.dynamic_basis, 1)
        if len(self.multi_index) not in (len(basis), len(basis) + 1):
            raise VerifyException(
                f"a basis of {len(basis)} elements gives {len(basis)} (or {len(basis) + 1}) indices, not {len(self.multi_index)}"
            )


@irdl_op_definition
class MinOp(xdsl_affine.MinOp):
    """xDSL's ``affine.min``, pure as upstream's is."""

    arguments = var_operand_def(IndexType())
    result = result_def(IndexType())
    map = prop_def(AffineMapAttr)
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser) -> MinOp:
        parsed = super().parse(parser)  # (xDSL's parser builds its own class)
        op = cls(list(parsed.arguments), parsed.map)
        parsed.erase()
        return op


Affine = Dialect(
    "affine",
    [*(op for op in xdsl_affine.Affine.operations if op is not xdsl_affine.MinOp), MinOp, LinearizeIndexOp,
     DelinearizeIndexOp],
    list(xdsl_affine.Affine.attributes),
)
