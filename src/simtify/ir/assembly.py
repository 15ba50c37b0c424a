"""Pieces of custom assembly shared by the dialects declared here.

MLIR's custom syntax has a few recurring shapes that xDSL's declarative format cannot
spell exactly: integer lists printed bare (``offsets = [0, 4]``, not ``[0 : i64, 4 :
i64]``), enum attributes printed as ``#dialect.name<value>`` (xDSL's default is the
older ``#dialect<name value>``), and keyword-introduced optional properties
(``upper_bound 64``). The helpers below keep every dialect file spelling them the same
way.

Ops declared with `mlir_op` use xDSL's declarative ``assembly_format`` with MLIR's
dictionaries (`MLIRAttrDict`: sorted by name, integer lists bare, the properties the
format places nowhere else in a ``<{...}>`` before it) and, for mixed static/dynamic
index lists (``%t[%i, 0]``), the `IndexList` / `OptionalIndexList` directives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, TypeVar

from xdsl.dialects.builtin import DYNAMIC_INDEX, AffineMapAttr, ArrayAttr, DenseArrayBase, IntegerAttr, IntegerType, StringAttr, i64
from xdsl.dialects.utils import DynamicIndexList, EnumAttribute
from xdsl.dialects.utils import parse_dynamic_index_list_without_types, print_dynamic_index_list
from xdsl.ir import Attribute, Data, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def, var_operand_def
from xdsl.irdl import irdl_attr_definition
from xdsl.irdl.declarative_assembly_format import (
    AttrDictDirective,
    AttributeVariable,
    CustomDirective,
    FormatProgram,
    ParsingState,
    PrintingState,
    TypeDirective,
    VariadicOperandVariable,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from simtify.errors import SimtifyError
from simtify.ir import attribute_syntax as syntax
from simtify.ir.lazy_formats import build as build_format
from simtify.layout.syntax import AttributeText

__all__ = [
    "AngleBracketEnum",
    "BitEnumText",
    "CheckedAttribute",
    "EnumKeyword",
    "IndexList",
    "IntList",
    "KeyedLayoutAttr",
    "KeywordAttr",
    "MLIRAttrDict",
    "OptionalIndexList",
    "OptionalIntList",
    "ParenIndexList",
    "YieldTerminator",
    "bit_enum_text",
    "enum_attr",
    "i64_array",
    "i64_dense",
    "int_values",
    "keyword_enum",
    "map_attr",
    "mlir_op",
    "parse_bit_enum_text",
    "parse_int_list",
    "print_indexed",
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
    """``[0, 4]`` as MLIR's I64ArrayAttr: an array of i64 integer attributes, one object
    per distinct list (a pass gives thousands of ops the same offsets; verifying an op
    hashes each attribute object it has not met)."""
    return _i64_array(tuple(int(v) for v in values))


@lru_cache(maxsize=4096)
def _i64_array(values: tuple[int, ...]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr(_i64(v) for v in values)


@lru_cache(maxsize=1024)
def _i64(value: int) -> IntegerAttr:
    """One i64 attribute, built once (xDSL builds and verifies each anew)."""
    return IntegerAttr(value, i64)


@lru_cache(maxsize=4096)
def map_attr(affine_map: AffineMap) -> AffineMapAttr:
    """`affine_map` as an attribute, one object per distinct map (a transfer's
    permutation map is the same on thousands of ops; verifying an op hashes each
    attribute object it has not met)."""
    return AffineMapAttr(affine_map)


def i64_dense(values: Iterable[int]) -> DenseArrayBase:
    """``array<i64: 0, 4>`` as MLIR's DenseI64ArrayAttr, one object per distinct list
    (as `i64_array`)."""
    return _i64_dense(tuple(int(v) for v in values))


@lru_cache(maxsize=4096)
def _i64_dense(values: tuple[int, ...]) -> DenseArrayBase:
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


def print_int_list(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def split_properties(op_type: type[IRDLOperation], attributes: dict[str, Attribute]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """Split a parsed attr-dict into (properties, attributes): an entry naming one of
    the op's properties is that property, as MLIR's generic form would have it."""
    property_names = set(op_type.get_irdl_definition().properties)
    properties = {k: v for k, v in attributes.items() if k in property_names}
    others = {k: v for k, v in attributes.items() if k not in property_names}
    return properties, others


# --- declarative formats with MLIR's dictionaries and index lists ------------------------


@dataclass(frozen=True)
class MLIRAttrDict(AttrDictDirective):
    """``attr-dict`` as MLIR prints it: sorted by name, integer lists bare. The op's
    properties that the format places nowhere else print as ``<{...}>`` before it, or
    inside it where `merged` (``xegpu.dpas``); either spelling is read, and any property
    found in the attr-dict is taken as one, as MLIR's generic form has them. Without
    `sort`, the attributes print in xDSL's order and spelling (the upstream dialects here
    have always printed them so)."""

    merged: bool = False
    sort: bool = True

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if self.with_keyword and parser.parse_optional_keyword("attributes") is None:
            return
        names = list(state.op_type.get_irdl_definition().properties)  # older IR has them in the attr-dict
        properties, attributes = syntax.parse_properties_and_attributes(parser, names)
        state.properties |= properties
        state.attributes |= attributes

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        properties = {k: v for k, v in op.properties.items() if k in self.expected_properties}
        if self.with_keyword and (properties or op.attributes):
            printer.print_string(" attributes")
        if not self.sort:
            printer.print_op_attributes(properties | dict(op.attributes))
        elif self.merged:
            syntax.print_sorted_attr_dict(printer, properties | dict(op.attributes))
        else:
            syntax.print_sorted_attr_dict(printer, properties, braces="<{}>")
            syntax.print_sorted_attr_dict(printer, op.attributes)
        if properties or op.attributes:
            state.last_was_punctuation = False
            state.should_emit_space = True


OpT = TypeVar("OpT", bound=IRDLOperation)


def mlir_op(cls: type[OpT]) -> type[OpT]:
    """`irdl_op_definition` for an op whose ``assembly_format`` prints its dictionaries as
    MLIR does (`MLIRAttrDict`; ``PROPERTIES_IN_ATTR_DICT = True`` merges the properties
    into the attr-dict, ``SORTED_ATTR_DICT = False`` keeps xDSL's order). An op with
    properties its format does not place needs the ``ParsePropInAttrDict`` option."""
    cls = irdl_op_definition(cls)
    merged = bool(getattr(cls, "PROPERTIES_IN_ATTR_DICT", False))
    sort = bool(getattr(cls, "SORTED_ATTR_DICT", True))
    built: list[FormatProgram] = []

    def program() -> FormatProgram:
        if not built:
            stmts = build_format(FormatProgram.from_str(cls.assembly_format, cls.get_irdl_definition())).stmts
            built.append(FormatProgram(tuple(
                MLIRAttrDict(s.with_keyword, s.reserved_attr_names, s.expected_properties, merged, sort)
                if isinstance(s, AttrDictDirective) else s for s in stmts)))
        return built[0]

    cls.parse = classmethod(lambda c, parser: program().parse(parser, c))  # type: ignore[method-assign]
    cls.print = lambda op, printer: program().print(printer, op)  # type: ignore[method-assign]
    cls.format_program = staticmethod(program)  # type: ignore[attr-defined]
    return cls


@irdl_custom_directive
class IndexList(CustomDirective):
    """``[%i, 4, %j]``: MLIR's DynamicIndexList, SSA values in `dynamic` and a static list
    holding `DYNAMIC` where they go. Printed straight after a value (``%t[%i, 0]``), after
    a space otherwise (``, [%i, 0]``)."""

    dynamic: VariadicOperandVariable
    static: AttributeVariable

    OPTIONAL: ClassVar[bool] = False

    def parse(self, parser: Parser, state: ParsingState) -> None:
        found = syntax.parse_optional_mixed_indices(parser)
        if found is None and not self.OPTIONAL:
            parser.raise_error("expected a list of indices [..]")
        dynamic, static = found if found is not None else ([], None)
        self.dynamic.set(state, dynamic)
        if static is not None:
            self.static.set(state, syntax.i64_array(static))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        static = self.static.get(op)
        if static is None:
            return
        if state.last_was_punctuation:
            state.print_whitespace(printer)
        syntax.print_mixed_indices(printer, getattr(op, self.dynamic.name), static.get_values())  # type: ignore[union-attr]
        state.last_was_punctuation = False
        state.should_emit_space = True


class OptionalIndexList(IndexList):
    """An `IndexList` that may be absent (its static list is then unset)."""

    OPTIONAL: ClassVar[bool] = True


@irdl_custom_directive
class EnumKeyword(CustomDirective):
    """An enum property spelled as a bare keyword (``gpu.thread_id x``, ``gpu.shuffle xor``);
    the attribute's ``KEYWORD_OF`` names the values in errors."""

    attribute: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        (attr_type,) = state.op_type.get_irdl_definition().properties[self.attribute.name].constr.get_bases()
        what = getattr(attr_type, "KEYWORD_OF", attr_type.name)
        self.attribute.set(state, attr_type(parse_enum_keyword(parser, attr_type.enum_type, what)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(self.attribute.get(op).data.value)  # type: ignore[union-attr]


@irdl_custom_directive
class IntList(CustomDirective):
    """An I64ArrayAttr property printed bare: ``offsets = [0, 4]``."""

    values: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.values.set(state, i64_array(parse_int_list(parser)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        print_int_list(printer, int_values(self.values.get(op)))  # type: ignore[arg-type]


class YieldTerminator(IRDLOperation):
    """A region's terminator handing out values: ``<dialect>.yield %a, %b : f32, i1``
    (bare when it hands out none); pure."""

    values = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict ($values^ `:` type($values))?"


class OptionalIntList(IntList):
    """An `IntList` that may be absent, as the anchor of an optional group
    (``(`mmaShape` `=` custom<OptionalIntList>($mmaShape)^)?``): present when set."""

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.values.get(op) is not None


def enum_attr(name: str, enum_type: type[StrEnum], doc: str, class_name: str = "", keyword_of: str = "") -> type:
    """``#name<value>`` over `enum_type` (an `AngleBracketEnum`), declared in one line, as
    such attributes differ only in name, enum and doc. The class is `class_name`, or the
    enum's name + ``Attr``; `keyword_of` names the values in `EnumKeyword`'s errors."""

    class Attr(AngleBracketEnum, EnumAttribute[enum_type]):  # type: ignore[valid-type]
        __doc__ = doc

    Attr.name = name  # type: ignore[attr-defined]
    Attr.__name__ = Attr.__qualname__ = class_name or f"{enum_type.__name__}Attr"
    Attr.__module__ = enum_type.__module__
    if keyword_of:
        Attr.KEYWORD_OF = keyword_of  # type: ignore[attr-defined]
    return irdl_attr_definition(Attr)


def keyword_enum(name: str, keywords: str, module: str) -> type[StrEnum]:
    """The `StrEnum` `name` (defined in `module`) of MLIR's space-separated `keywords`,
    each member named by its keyword in upper case: ``"add mul"`` gives ``ADD = "add"``,
    ``MUL = "mul"``."""
    return StrEnum(name, [(k.upper(), k) for k in keywords.split()], module=module)  # type: ignore[return-value]


# --- parenthesised index lists, types derived from a printed type ------------------------


def parse_paren_index_list(parser: Parser) -> tuple[list[UnresolvedOperand], DenseArrayBase]:
    """``(16, %n)`` -> (unresolved values, DenseI64ArrayAttr with DYNAMIC_INDEX holes)."""
    dynamic, static = parse_dynamic_index_list_without_types(parser, DYNAMIC_INDEX, delimiter=Parser.Delimiter.PAREN)
    return dynamic, i64_dense(static)


def print_paren_index_list(printer: Printer, dynamic: Sequence[SSAValue], static: DenseArrayBase) -> None:
    print_dynamic_index_list(printer, DYNAMIC_INDEX, dynamic, static.get_values(), delimiter=Parser.Delimiter.PAREN)


@irdl_custom_directive
class ParenIndexList(DynamicIndexList):
    """``(16, %n)``: a DynamicIndexList in parentheses."""

    dynamic_position: VariadicOperandVariable
    static_position: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        dynamic, static = parse_paren_index_list(parser)
        self.dynamic_position.set(state, dynamic)
        self.static_position.set(state, static)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        print_paren_index_list(printer, self.dynamic_position.get(op), self.static_position.get(op))  # type: ignore[arg-type]


@irdl_custom_directive
class DerivingType(CustomDirective):
    """One printed type that gives the types of a second, unprinted directive through
    the op's ``derived_types`` (``arith.cmpi``'s i1 result from the compared type,
    ``vector.to_elements``'s results from the vector type)."""

    printed: TypeDirective
    derived: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        printed = parser.parse_type()
        self.printed.set(state, (printed,))
        self.derived.set(state, state.op_type.derived_types(printed))  # type: ignore[attr-defined]

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        self.printed.print(printer, state, op)


def parse_operands(parser: Parser, count: int) -> list[UnresolvedOperand]:
    """``%a, %b, %c``: exactly `count` comma-separated operands."""
    operands = [parser.parse_unresolved_operand()]
    for _ in range(count - 1):
        parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
    return operands


@irdl_custom_directive
class CheckedAttribute(CustomDirective):
    """An attribute printed in full (``#iree_vector_ext.nested_layout<..>``) that must be
    of its property's kind: anything else is refused where it is read, naming the kind."""

    attribute: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        (kind,) = state.op_type.get_irdl_definition().properties[self.attribute.name].constr.get_bases()
        position = parser.pos
        attr = parser.parse_attribute()
        if not isinstance(attr, kind):
            parser.raise_error(f"expected a #{kind.name}, found {attr}", position)
        self.attribute.set(state, attr)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_attribute(self.attribute.get(op))  # type: ignore[arg-type]


class KeyedLayoutAttr(Data[Any]):
    """A layout attribute ``#dialect.name<key = [..], ..>`` holding a `simtify.layout`
    value: read by `LAYOUT.from_attribute` (whose checks are the verifier, refusals
    reported over the text as an invalid `WHAT`), printed by the value's ``str``."""

    LAYOUT: ClassVar[Any]
    WHAT: ClassVar[str]

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Any:
        pairs, start, end = syntax.parse_keyed_int_lists(parser)
        try:
            return cls.LAYOUT.from_attribute(AttributeText(f"#{cls.name}", tuple(pairs)), "")
        except SimtifyError as e:
            syntax.layout_parse_error(parser, e, start, end, cls.WHAT)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(str(self.data)[len(self.name) + 1 :])

    @property
    def layout(self) -> Any:
        return self.data


class KeywordAttr(Data[str]):
    """``#dialect.name<word>``: one word, from `KEYWORDS` where given (an unknown one is
    refused naming the `WHAT` and the accepted words)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ()
    WHAT: ClassVar[str]

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> str:
        with parser.in_angle_brackets():
            position = parser.pos
            word = parser.parse_identifier()
            if cls.KEYWORDS and word not in cls.KEYWORDS:
                parser.raise_error(f"unknown {cls.WHAT} '{word}' (expected one of {', '.join(cls.KEYWORDS)})",
                                   position)
        return word

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


def print_indexed(printer: Printer, value: SSAValue, indices: Sequence[SSAValue]) -> None:
    """`` %v[%i, %j]``, as the hand-written accesses print a value and its indices."""
    printer.print_string(" ")
    printer.print_ssa_value(value)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")


_BARE_WORD = re.compile(r"^[A-Za-z_][\w$.]*$")


def parse_bit_enum_text(parser: AttrParser) -> str:
    """A bit-enum value as MLIR prints it: ``Indirect`` or ``"ReadOnly|Indirect"``."""
    text = parser.parse_optional_str_literal()
    return text if text is not None else parser.parse_identifier()


def bit_enum_text(flags: str) -> str:
    """A bit-enum value as MLIR prints it: bare where it is one word, quoted otherwise."""
    return flags if _BARE_WORD.match(flags) else f'"{flags}"'


@irdl_custom_directive
class BitEnumText(CustomDirective):
    """A bit-enum property held as its text (a `StringAttr`), spelled as MLIR spells the
    enum: ``flags(Indirect)``, ``flags("ReadOnly|Indirect")``; it may anchor an optional
    group."""

    flags: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.flags.set(state, StringAttr(parse_bit_enum_text(parser)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(bit_enum_text(self.flags.get(op).data))  # type: ignore[union-attr]

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.flags.is_present(op)
