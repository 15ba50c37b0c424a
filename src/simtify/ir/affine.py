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
from typing import ClassVar

from xdsl.dialects import affine as xdsl_affine
from xdsl.dialects.builtin import DYNAMIC_INDEX, AffineMapAttr, DenseArrayBase, IndexType, UnitAttr, i64
from xdsl.dialects.utils import split_dynamic_index_list, verify_dynamic_index_list
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
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import ParenIndexList, i64_dense, mlir_op


def _check_basis(static: DenseArrayBase, dynamic: Sequence[SSAValue], minimum: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in static.get_values())
    verify_dynamic_index_list(values, dynamic, DYNAMIC_INDEX)
    for value in values:
        if value != DYNAMIC_INDEX and value < minimum:
            raise VerifyException(f"basis element {value} must be at least {minimum}")
    return values


class _IndexBasis(IRDLOperation):
    """What both ops share: no side effects, and a mixed static/dynamic basis written
    ``(16, %n)`` after the indices (or the linear index)."""

    traits = traits_def(Pure())
    SORTED_ATTR_DICT: ClassVar[bool] = False
    custom_directives = (ParenIndexList,)
    dynamic_basis = var_operand_def(IndexType)
    static_basis = prop_def(DenseArrayBase.constr(i64))


@mlir_op
class LinearizeIndexOp(_IndexBasis):
    """``%l = affine.linearize_index (disjoint)? [%a, %b] by (4, 16) : index`` is
    ``a * 16 + b``. ``disjoint`` promises every index is within its bound."""

    name = "affine.linearize_index"
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    multi_index = var_operand_def(IndexType)
    disjoint = opt_prop_def(UnitAttr)
    linear_index = result_def(IndexType)
    assembly_format = (
        "(`disjoint` $disjoint^)? ` ` `[` $multi_index `]` `by` custom<ParenIndexList>($dynamic_basis, $static_basis) "
        "attr-dict `:` type($linear_index)"
    )

    def __init__(self, multi_index: Sequence[SSAValue | Operation], basis: Sequence[SSAValue | int], disjoint: bool = False):
        static, dynamic = split_dynamic_index_list(basis, DYNAMIC_INDEX)
        properties: dict[str, Attribute] = {"static_basis": i64_dense(static)}
        if disjoint:
            properties["disjoint"] = UnitAttr()
        super().__init__(operands=[multi_index, dynamic], result_types=[IndexType()], properties=properties)

    def verify_(self) -> None:
        basis = _check_basis(self.static_basis, self.dynamic_basis, 0)
        if len(self.multi_index) not in (len(basis), len(basis) + 1):
            raise VerifyException(
                f"{len(self.multi_index)} indices need a basis of {len(self.multi_index)} (or {len(self.multi_index) - 1}) "
                f"elements, got {len(basis)}"
            )


@mlir_op
class DelinearizeIndexOp(_IndexBasis):
    """``%d:2 = affine.delinearize_index %l into (4, 16) : index, index`` is
    ``(l floordiv 16 mod 4, l mod 16)``; with one more result than the basis, the
    leading result is unbounded (``l floordiv 64``)."""

    name = "affine.delinearize_index"
    linear_index = operand_def(IndexType)
    multi_index = var_result_def(IndexType)
    assembly_format = (
        "$linear_index `into` custom<ParenIndexList>($dynamic_basis, $static_basis) attr-dict `:` type($multi_index)"
    )

    def __init__(self, linear_index: SSAValue | Operation, basis: Sequence[SSAValue | int], with_outer_bound: bool = True):
        static, dynamic = split_dynamic_index_list(basis, DYNAMIC_INDEX)
        count = len(static) if with_outer_bound else len(static) + 1
        super().__init__(
            operands=[linear_index, dynamic],
            result_types=[[IndexType()] * count],
            properties={"static_basis": i64_dense(static)},
        )

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
        # upstream hand-writes this syntax too; xDSL's parser builds its own class
        parsed = super().parse(parser)
        op = cls(list(parsed.arguments), parsed.map)
        parsed.erase()
        return op


Affine = Dialect(
    "affine",
    [*(op for op in xdsl_affine.Affine.operations if op is not xdsl_affine.MinOp), MinOp, LinearizeIndexOp,
     DelinearizeIndexOp],
    list(xdsl_affine.Affine.attributes),
)
