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

Layout attributes (``#iree_vector_ext.nested_layout<...>``, ``#xegpu.layout<...>``) are
``<key = [ints], ...>`` bodies, read here with xDSL's parser (so errors point at the
column and aliases resolve) and handed to `simtify.layout`, which owns the meaning: an
attribute is valid exactly when the layout class accepts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, ClassVar, Mapping, TypeVar, Union

from xdsl.dialects.builtin import DYNAMIC_INDEX, AffineMapAttr, AnyFloat, ArrayAttr, DenseArrayBase, IntegerAttr, IntegerType
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, NoneAttr, StringAttr, UnitAttr, i64
from xdsl.dialects.utils import DynamicIndexList, EnumAttribute
from xdsl.dialects.utils import parse_dynamic_index_list_without_types, print_dynamic_index_list
from xdsl.ir import Attribute, Data, Operation, ParametrizedAttribute, SSAValue
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
from simtify.ir.lazy_formats import build as build_format
from simtify.layout.syntax import AttributeText, format_ints


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


def split_properties(op_type: type[IRDLOperation], attributes: dict[str, Attribute]) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """Split a parsed attr-dict into (properties, attributes): an entry naming one of
    the op's properties is that property, as MLIR's generic form would have it."""
    return split_named(attributes, op_type.get_irdl_definition().properties)


IntTree = Union[int, list["IntTree"]]

# How MLIR spells a dynamic size (`?`) in i64 arrays: ShapedType::kDynamic.
DYNAMIC = DYNAMIC_INDEX


# --- integer lists -------------------------------------------------------------------


def parse_int_tree(parser: AttrParser) -> IntTree:
    """An integer or a bracketed (possibly nested) list of integers: ``[[16, 4], [1, 0]]``."""
    if parser.parse_optional_punctuation("[") is None:
        return parser.parse_integer(allow_boolean=False)
    items: list[IntTree] = []
    if parser.parse_optional_punctuation("]") is not None:
        return items
    while True:
        items.append(parse_int_tree(parser))
        if parser.parse_optional_punctuation("]") is not None:
            return items
        parser.parse_punctuation(",")


def parse_int_list(parser: AttrParser, *, allow_dynamic: bool = False) -> tuple[int, ...]:
    """``[1, 2, ?]``: a flat list; ``?`` (only where allowed) becomes `DYNAMIC`."""

    def one() -> int:
        if allow_dynamic and parser.parse_optional_punctuation("?") is not None:
            return DYNAMIC
        return parser.parse_integer(allow_boolean=False)

    return tuple(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, one))


def format_dynamic_ints(values: Iterable[int]) -> str:
    """``[?, 8]``: like `format_ints`, with `DYNAMIC` written as ``?``."""
    return "[" + ", ".join("?" if v == DYNAMIC else str(int(v)) for v in values) + "]"


def parse_keyed_int_lists(parser: AttrParser) -> tuple[list[tuple[str, IntTree]], int, int]:
    """``<key = [..], key = [..]>``: the pairs in the order written and the span read.

    The values are integer trees; the layout class that receives them decides which keys
    exist, which are required and what the values mean."""
    start = parser.pos
    pairs: list[tuple[str, IntTree]] = []

    def entry() -> None:
        key = parser.parse_identifier(" (a layout parameter name)")
        parser.parse_punctuation("=")
        pairs.append((key, parse_int_tree(parser)))

    parser.parse_comma_separated_list(parser.Delimiter.ANGLE, entry)
    return pairs, start, parser.pos


def int_tree_of(attr: Attribute) -> IntTree | None:
    """The integers of ``[1, 2]`` / ``[[16, 4], [1, 0]]`` as xDSL parsed them (an ArrayAttr
    of i64 IntegerAttrs), or None if the attribute is anything else. MLIR prints such
    lists without ``: i64``; xDSL would print the type on each element."""
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        return attr.value.data
    if isinstance(attr, ArrayAttr):
        items = [int_tree_of(a) for a in attr.data]
        if all(i is not None for i in items):
            return items  # type: ignore[return-value]
    return None


def format_int_tree(tree: IntTree) -> str:
    if isinstance(tree, int):
        return str(tree)
    return "[" + ", ".join(format_int_tree(t) for t in tree) + "]"


def layout_parse_error(parser: AttrParser, error: SimtifyError, start: int, end: int, attr: str):
    """Report a layout the layout class refused as a parse error over its text."""
    parser.raise_error(f"invalid {attr}: {error.what}", start, max(end, start + 1))


class ParameterlessAttr(ParametrizedAttribute):
    """Base of attributes with no parameters, written without ``<>``
    (``#iree_gpu.derived_thread_config``)."""

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return ()

    def print_parameters(self, printer: Printer) -> None:
        pass


# --- attribute dictionaries ----------------------------------------------------------


def print_sorted_attr_dict(printer: Printer, attrs: Mapping[str, Attribute], *, braces: str = "{}") -> None:
    """Print `` {a = .., b}`` sorted by name, as MLIR prints an op's attributes (its
    dictionaries are sorted); nothing when empty. ``braces="<{}>"`` prints a property
    dictionary as XeGPU's load/store ops do."""
    if not attrs:
        return
    half = len(braces) // 2
    printer.print_string(" " + braces[:half])

    def entry(item: tuple[str, Attribute]) -> None:
        name, value = item
        printer.print_identifier_or_string_literal(name)
        if not isinstance(value, UnitAttr):
            printer.print_string(" = ")
            print_attribute_value(printer, value)

    printer.print_list(sorted(attrs.items()), entry)
    printer.print_string(braces[half:])


def print_attribute_value(printer: Printer, value: Attribute) -> None:
    """An attribute as MLIR prints it inside a dictionary: integer lists without
    element types, everything else as xDSL prints it."""
    tree = int_tree_of(value) if isinstance(value, ArrayAttr) else None
    if tree is not None:
        printer.print_string(format_int_tree(tree))
    else:
        printer.print_attribute(value)


def split_named(
    attrs: dict[str, Attribute], names: Iterable[str]
) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """Split a parsed dictionary into (inherent properties named `names`, the rest).
    MLIR accepts an op's inherent attributes in its attribute dictionary, so do we."""
    wanted = set(names)
    props = {k: v for k, v in attrs.items() if k in wanted}
    rest = {k: v for k, v in attrs.items() if k not in wanted}
    return props, rest


def parse_properties_and_attributes(
    parser: Parser, names: Iterable[str]
) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """An optional ``<{...}>`` then an optional ``{...}``; inherent names from either go
    to the properties (a name given in both is an error)."""
    names = tuple(names)
    pos = parser.pos
    from_props = parser.parse_optional_properties_dict()
    unknown = [k for k in from_props if k not in names]
    if unknown:
        parser.raise_error(f"unknown property '{unknown[0]}' (expected one of {', '.join(names)})", pos)
    props_in_dict, attrs = split_named(parser.parse_optional_attr_dict(), names)
    twice = set(from_props) & set(props_in_dict)
    if twice:
        parser.raise_error(f"'{sorted(twice)[0]}' is given twice", pos)
    return from_props | props_in_dict, attrs


# --- mixed static/dynamic index lists ------------------------------------------------


def parse_optional_mixed_indices(parser: Parser) -> tuple[list[UnresolvedOperand], tuple[int, ...]] | None:
    """``[%i, 4, %j]`` if the next token is ``[``: the SSA indices and a static list that
    holds `DYNAMIC` where an SSA value goes, as MLIR's DynamicIndexList does."""
    if parser.parse_optional_punctuation("[") is None:
        return None
    dynamic: list[UnresolvedOperand] = []
    static: list[int] = []
    if parser.parse_optional_punctuation("]") is not None:
        return dynamic, ()
    while True:
        operand = parser.parse_optional_unresolved_operand()
        if operand is not None:
            dynamic.append(operand)
            static.append(DYNAMIC)
        else:
            static.append(parser.parse_integer(allow_boolean=False, context_msg=" or SSA index"))
        if parser.parse_optional_punctuation("]") is not None:
            return dynamic, tuple(static)
        parser.parse_punctuation(",")


def parse_mixed_indices(parser: Parser) -> tuple[list[UnresolvedOperand], tuple[int, ...]]:
    """Like `parse_optional_mixed_indices`, but the list is required."""
    return parser.expect(lambda: parse_optional_mixed_indices(parser), "expected a list of indices [..]")


def print_mixed_indices(printer: Printer, dynamic: Sequence[SSAValue], static: Sequence[int]) -> None:
    values = iter(dynamic)
    printer.print_string("[")
    for k, s in enumerate(static):
        if k:
            printer.print_string(", ")
        if s == DYNAMIC:
            printer.print_ssa_value(next(values))
        else:
            printer.print_string(str(s))
    printer.print_string("]")


def check_mixed_indices(name: str, dynamic: Sequence[SSAValue], static: DenseArrayBase | None) -> int:
    """Count of a mixed index list, after checking that its SSA values fill its holes."""
    if static is None:
        if dynamic:
            raise VerifyException(f"{name}: {len(dynamic)} SSA values but no static list")
        return 0
    holes = sum(1 for s in static.get_values() if s == DYNAMIC)
    if holes != len(dynamic):
        raise VerifyException(f"{name}: {holes} dynamic entries but {len(dynamic)} SSA values")
    return len(static.get_values())


# --- types and memory spaces ---------------------------------------------------------


def shape_text(shape: Sequence[int]) -> str:
    return "x".join("?" if d == DYNAMIC else str(d) for d in shape)


def memory_space_name(space: Attribute | None) -> str | None:
    """The name of a memref's memory space (``workgroup``, ``global``, ``fat_raw_buffer``),
    whichever dialect class holds it: upstream spells it ``#gpu.address_space<workgroup>``
    (or the integer 3), and the `gpu` dialect of this project or an unregistered
    attribute may carry it. None for the default (global) space."""
    if space is None or isinstance(space, NoneAttr):
        return None
    if isinstance(space, IntegerAttr):
        return {0: None, 1: "global", 3: "workgroup", 5: "private"}.get(space.value.data, str(space.value.data))
    text = str(space)
    if "<" in text and text.endswith(">"):
        return text[text.index("<") + 1 : -1].strip()
    return text


def check_layout(what: str, check: Callable[[], None]) -> None:
    """Run a layout's own check; its error becomes a verification error naming `what`."""
    try:
        check()
    except SimtifyError as e:
        raise VerifyException(f"{what}: {e.what}") from None


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
        properties, attributes = parse_properties_and_attributes(parser, names)
        state.properties |= properties
        state.attributes |= attributes

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        properties = {k: v for k, v in op.properties.items() if k in self.expected_properties}
        if self.with_keyword and (properties or op.attributes):
            printer.print_string(" attributes")
        if not self.sort:
            printer.print_op_attributes(properties | dict(op.attributes))
        elif self.merged:
            print_sorted_attr_dict(printer, properties | dict(op.attributes))
        else:
            print_sorted_attr_dict(printer, properties, braces="<{}>")
            print_sorted_attr_dict(printer, op.attributes)
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
        found = parse_optional_mixed_indices(parser)
        if found is None and not self.OPTIONAL:
            parser.raise_error("expected a list of indices [..]")
        dynamic, static = found if found is not None else ([], None)
        self.dynamic.set(state, dynamic)
        if static is not None:
            self.static.set(state, i64_dense(static))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        static = self.static.get(op)
        if static is None:
            return
        if state.last_was_punctuation:
            state.print_whitespace(printer)
        print_mixed_indices(printer, getattr(op, self.dynamic.name), static.get_values())  # type: ignore[union-attr]
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
        printer.print_string(format_ints(int_values(self.values.get(op))))  # type: ignore[arg-type]


class YieldTerminator(IRDLOperation):
    """A region's terminator handing out values: ``<dialect>.yield %a, %b : f32, i1``
    (bare when it hands out none); pure."""

    values = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[SSAValue | Operation] = ()):
        super().__init__(operands=[values])


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
        pairs, start, end = parse_keyed_int_lists(parser)
        try:
            return cls.LAYOUT.from_attribute(AttributeText(f"#{cls.name}", tuple(pairs)), "")
        except SimtifyError as e:
            layout_parse_error(parser, e, start, end, cls.WHAT)

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


def is_bitwise_splat(attribute: DenseIntOrFPElementsAttr) -> bool:
    """All elements are one value, bit for bit: a NaN splat too (``dense<0xFFC00000>``),
    which a comparison of values misses (NaN != NaN)."""
    element_type = attribute.get_element_type()
    if not isinstance(element_type, AnyFloat):
        return len(set(attribute.get_values())) <= 1
    data, size = attribute.data.data, element_type.compile_time_size
    return data[:size] * (len(data) // size) == data
