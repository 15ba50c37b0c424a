"""Reading and printing the pieces of syntax that IREE, XeGPU and AMDGPU attributes and
ops share, with xDSL's parser and printer.

Layout attributes (``#iree_vector_ext.nested_layout<...>``, ``#xegpu.layout<...>``) are
``<key = [ints], ...>`` bodies; lowering configs hold ``[[counts], [mapping]]`` bases;
MLIR prints an op's inherent and discardable attributes as one dictionary sorted by
name. These helpers read such text with xDSL's parser (so errors point at the column
and aliases resolve) and hand the values to `simtify.layout`, which owns the meaning:
an attribute is valid exactly when the layout class accepts it.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence, Union

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from simtify.errors import SimtifyError
from simtify.layout.syntax import format_ints

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


def split_properties(
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
    props_in_dict, attrs = split_properties(parser.parse_optional_attr_dict(), names)
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


def i64_array(values: Iterable[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(IntegerType(64), tuple(int(v) for v in values))


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


__all__ = [
    "DYNAMIC",
    "ParameterlessAttr",
    "check_layout",
    "check_mixed_indices",
    "format_dynamic_ints",
    "format_int_tree",
    "format_ints",
    "i64_array",
    "int_tree_of",
    "layout_parse_error",
    "memory_space_name",
    "parse_int_list",
    "parse_int_tree",
    "parse_keyed_int_lists",
    "parse_mixed_indices",
    "parse_optional_mixed_indices",
    "parse_properties_and_attributes",
    "print_attribute_value",
    "print_mixed_indices",
    "print_sorted_attr_dict",
    "shape_text",
    "split_properties",
]


def is_bitwise_splat(attribute: DenseIntOrFPElementsAttr) -> bool:
    """All elements are one value, bit for bit: a NaN splat too (``dense<0xFFC00000>``),
    which a comparison of values misses (NaN != NaN)."""
    element_type = attribute.get_element_type()
    if not isinstance(element_type, AnyFloat):
        return len(set(attribute.get_values())) <= 1
    data, size = attribute.data.data, element_type.compile_time_size
    return data[:size] * (len(data) // size) == data
