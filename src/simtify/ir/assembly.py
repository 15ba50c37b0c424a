"""Pieces of custom assembly shared by the dialects declared here.

MLIR's custom syntax has a few recurring shapes that xDSL's declarative format cannot
spell exactly: integer lists printed bare (``offsets = [0, 4]``, not ``[0 : i64, 4 :
i64]``), enum attributes printed as ``#dialect.name<value>`` (xDSL's default is the
older ``#dialect<name value>``), and keyword-introduced optional properties
(``upper_bound 64``). The helpers below keep every dialect file spelling them the same
way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

__all__ = [
    "AngleBracketEnum",
    "i64_array",
    "i64_dense",
    "int_values",
    "parse_int_list",
    "parse_keyword_int_list",
    "print_int_list",
    "split_properties",
]


class AngleBracketEnum:
    """Mixin for an `EnumAttribute` printed ``#dialect.name<value>`` as MLIR does today
    (``#gpu.dim<x>``, ``#vector.kind<add>``). Put it before ``EnumAttribute[...]``."""

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)  # type: ignore[attr-defined]

    @classmethod
    def parse_parameter(cls, parser: AttrParser):
        with parser.in_angle_brackets():
            return parse_enum_keyword(parser, cls.enum_type, cls.name)  # type: ignore[attr-defined]


def parse_enum_keyword(parser: AttrParser, enum_type, what: str):
    """One value of `enum_type` spelled as a bare keyword, with an error naming the
    accepted values."""
    position = parser.pos
    word = parser.parse_optional_identifier()
    values = [member.value for member in enum_type]
    if word not in values:
        parser.raise_error(f"expected one of {', '.join(values)} for {what}", at_position=position)
    return enum_type(word)


def i64_array(values: Iterable[int]) -> ArrayAttr[IntegerAttr]:
    """``[0, 4]`` as MLIR's I64ArrayAttr: an array of i64 integer attributes."""
    return ArrayAttr(IntegerAttr(v, i64) for v in values)


def i64_dense(values: Iterable[int]) -> DenseArrayBase:
    """``array<i64: 0, 4>`` as MLIR's DenseI64ArrayAttr."""
    return DenseArrayBase.from_list(i64, list(values))


def int_values(attr: Attribute) -> tuple[int, ...]:
    """The integers of an I64ArrayAttr or a DenseI64ArrayAttr."""
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    if isinstance(attr, ArrayAttr):
        values: list[int] = []
        for item in attr.data:
            if not isinstance(item, IntegerAttr) or not isinstance(item.type, IntegerType):
                raise VerifyException(f"expected an array of integers, got {attr}")
            values.append(item.value.data)
        return tuple(values)
    raise VerifyException(f"expected an array of integers, got {attr}")


def parse_int_list(parser: Parser) -> list[int]:
    """``[1, 2, 3]`` (possibly empty) of signed integers."""
    return parser.parse_comma_separated_list(
        Parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )


def parse_keyword_int_list(parser: Parser, keyword: str) -> list[int]:
    """``keyword = [1, 2, 3]``."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parse_int_list(parser)


def print_int_list(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def split_properties(op_type: type[IRDLOperation], attributes: dict[str, Attribute]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """Split a parsed attr-dict into (properties, attributes): an entry naming one of
    the op's properties is that property, as MLIR's generic form would have it."""
    property_names = set(op_type.get_irdl_definition().properties)
    properties = {k: v for k, v in attributes.items() if k in property_names}
    others = {k: v for k, v in attributes.items() if k not in property_names}
    return properties, others
