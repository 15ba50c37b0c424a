"""Reading MLIR text: xDSL's parser, corrected where it disagrees with MLIR, and
remembering where every operation came from.

What is added to `xdsl.parser.Parser`:

- **Hex floats in dense elements.** MLIR reads a hexadecimal literal in a float
  ``dense<...>`` as the bit pattern of the element: IREE prints −inf as
  ``dense<0xFF800000> : vector<2xf32>``. xDSL 0.74 reads it as the *integer* 4286578688
  converted to float, which silently turns a max-reduction's identity into a large
  positive number. Scalars (``arith.constant 0xFF800000 : f32``) are already right;
  a scalar pattern wider than its type is an error at the literal.
- **Speed of dense literals.** xDSL rebuilds a type constraint for every
  ``dense<...>`` it reads (about 3 ms each, the hot spot of parsing IREE output); the
  same check is made here with plain ``isinstance``.
- **Speed of booleans.** ``true`` / ``false`` are two shared attributes, not one built
  and verified per use.
- **Speed of repeated lines.** A distributed function repeats a few dozen op lines
  thousands of times with other SSA names. An op on one line of its own is remembered
  with how it was built from the line's names; a line equal to it up to those names,
  whose operands have the same types, builds the same op from its own values without
  being read (three quarters of parsing a 25,000-op function).
- **Attributes of dialects simtify does not model** (``#spirv.entry_point_abi<>``,
  ``#xevm.target<chip = "pvc">``) are kept as opaque text and printed back: a
  discardable attribute never stops a parse. An unknown attribute of a dialect simtify
  does model is still an error, and so is an unknown operation.
- **Removed upstream.** Ops and attributes upstream has deleted (XeGPU's scattered
  descriptors) are refused with what replaced them, not as unknown; an unknown op a user
  meets often (`NOT_READ_YET`: IREE's push constants) is refused with why.
- **Semi-affine maps.** A product or quotient of two non-constant expressions
  (``d0 * (d1 ceildiv 8)``, which IREE prints for tiles of dynamic sizes) is kept as
  written; xDSL 0.74 raises an internal error on it.
- **Attributes of a known kind written whole.** Where an op's syntax names an attribute of
  one kind (``hal.interface.binding.subspan layout(<bindings = ..>)``), MLIR also reads it
  whole or by an alias (``layout(#pipeline_layout)``, as IREE's lit tests write it and as
  its dumps print it before bufferization); xDSL's formats read only the bare form.
- **Operation positions.** xDSL operations carry no source location, yet a verifier
  error must say ``FILE:LINE:COL``. The parser records the offset at which each
  operation starts (its first result name, as MLIR reports it), and the offset of the
  operation being parsed when something unexpected goes wrong inside a custom parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ComplexType,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    VectorType,
)
from xdsl.dialects.builtin import UnregisteredAttr
from xdsl.ir import Operation, OpResult
from xdsl.irdl import irdl_attr_definition
from xdsl.printer import Printer
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineMap, AffineSet
from xdsl.irdl.declarative_assembly_format import UniqueBaseAttributeVariable
from xdsl.parser import AttrParser, Parser
from xdsl.parser.affine_parser import AffineParser
from xdsl.utils.mlir_lexer import MLIRTokenKind

# What MLIR's lexer skips before a token (whitespace and comments, no backtracking); an SSA
# name (`%12`, `%arg0`), its name captured.
_SKIPPED = re.compile(r"(?>(?:\s+|//[^\n]*\n?)*)")
_SSA_NAME = re.compile(r"%([0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)", re.ASCII)

_BOOLEANS = {False: IntegerAttr(0, IntegerType(1)), True: IntegerAttr(1, IntegerType(1))}


@irdl_attr_definition(init=False)
class ForeignAttr(UnregisteredAttr):
    """An attribute of a dialect simtify does not model, kept as its text: the name and
    what follows it (``<>`` included, as written), printed back unchanged."""

    name = "builtin.foreign"

    def print_builtin(self, printer: Printer) -> None:
        printer.print_string(f"#{self.attr_name.data}{self.value.data}")


# Ops and attributes upstream MLIR removed: what to write instead.
REMOVED_UPSTREAM = {
    "xegpu.create_tdesc": "gathers and scatters take the memref and the offsets directly "
                          "(xegpu.load %src[%offsets], %mask)",
    "xegpu.update_offset": "gathers and scatters take their offsets directly (xegpu.load %src[%offsets], %mask)",
    "xegpu.scatter_tdesc_attr": "gathers and scatters take the memref and the offsets directly, with chunk_size "
                                "on the op",
}


# What may follow an op read from a remembered line: the end, a `}`, a block label, the
# next op's results or its dialect-qualified name; anything else may continue the op.
_NEXT_OP = re.compile(_SKIPPED.pattern + r"(?:\Z|[}^]|%[^\s,=]+(?:\s*,\s*%[^\s,=]+)*\s*=(?!=)|[a-zA-Z_][a-zA-Z0-9_$]*\.)")


@dataclass(frozen=True)
class _OpShape:
    """An op read from one line, as any line equal to it up to SSA names builds it again:
    its first `results` distinct names are bound to its results (`sizes` values each), the
    others are its operands' names; `operands` says, for each operand, which of those
    names (counted after the results) and which of its values (``%x#1``)."""

    results: int
    sizes: tuple[int, ...]
    operands: tuple[tuple[int, int], ...]
    op_type: type[Operation]
    result_types: tuple
    properties: dict
    attributes: dict
    location: object


def _line_shape(line: str) -> tuple[tuple, list[str]] | None:
    """(the line's text around its SSA names with the pattern of which are the same, its
    distinct names in order of appearance); None for a line with a string or a comment
    (where ``%`` may not be a name)."""
    if '"' in line or "//" in line:
        return None
    parts = _SSA_NAME.split(line)
    names: dict[str, int] = {}
    pattern = tuple(names.setdefault(name, len(names)) for name in parts[1::2])
    return (tuple(parts[0::2]), pattern), list(names)


# Ops simtify does not read yet, with what a user hits them with: an unknown op, said why.
NOT_READ_YET = {
    "hal.interface.constant.load": "push constants (an IREE dispatch's dynamic sizes and other runtime "
                                   "scalars) are not supported yet; compile with static shapes",
}


def removed_upstream(name: str, kind: str) -> str:
    return f"{kind} '{name}' was removed upstream: {REMOVED_UPSTREAM[name]}"


# What follows ``dense<`` when the literal is not one plain value: a list, a hex
# string, nothing, a complex number.
_NOT_A_SPLAT = frozenset({MLIRTokenKind.L_SQUARE, MLIRTokenKind.STRING_LIT, MLIRTokenKind.GREATER,
                          MLIRTokenKind.L_PAREN})

# A minus before a hexadecimal literal: MLIR refuses it for a float (a bit pattern has no sign).
_NEGATIVE_HEX = re.compile(r"-\s*0[xX]")

# The largest dense literal read (elements, splats included).
MAX_DENSE_ELEMENTS = 1 << 26


@dataclass
class _BitPatternElement(AttrParser._TensorLiteralElement):
    """A hexadecimal literal inside ``dense<...>``: for a float element type it is the
    IEEE bit pattern of the value, as MLIR's tensor-literal parser reads it."""

    def to_type(self, parser: AttrParser, type: AnyFloat | IntegerType | IndexType | ComplexType):
        if isinstance(type, AnyFloat) and isinstance(self.value, int):
            width_bytes = type.compile_time_size
            if self.value >= 1 << (8 * width_bytes):
                parser.raise_error(
                    f"hexadecimal float literal {self.span.text} does not fit {type}",
                    at_position=self.span,
                )
            return type.unpack(self.value.to_bytes(width_bytes, "little"), 1)[0]
        return super().to_type(parser, type)


_SEMI_AFFINE_KINDS = {"*": AffineBinaryOpKind.Mul, "ceildiv": AffineBinaryOpKind.CeilDiv,
                      "floordiv": AffineBinaryOpKind.FloorDiv, "mod": AffineBinaryOpKind.Mod}


class _SemiAffineParser(AffineParser):
    """xDSL's affine parser, but a product, division or remainder of two non-constant
    expressions (a semi-affine map, as MLIR reads it) is kept as it is written: IREE
    prints `d0 * (d1 ceildiv 8)` for the trip count of a tile of dynamic sizes."""

    def _create_binop_expr(self, lhs, rhs, binop):
        try:
            return super()._create_binop_expr(lhs, rhs, binop)
        except NotImplementedError:
            return AffineBinaryOpExpr(_SEMI_AFFINE_KINDS[binop.text], lhs, rhs)


_parse_bare_attribute = UniqueBaseAttributeVariable.parse_attr


def _parse_attribute_of_known_kind(self: UniqueBaseAttributeVariable, parser: AttrParser):
    """An attribute an op's format knows the kind of: bare (``<..>``), or whole or an
    alias (``#..``), as MLIR's ``parseCustomAttributeWithFallback`` reads it."""
    if parser._current_token.kind != MLIRTokenKind.HASH_IDENT:
        return _parse_bare_attribute(self, parser)
    start = parser.pos
    attr = parser.parse_attribute()
    if not isinstance(attr, self.unique_base):
        parser.raise_error(f"expected a #{self.unique_base.name} attribute, got {attr}", start, parser.pos)
    return attr


UniqueBaseAttributeVariable.parse_attr = _parse_attribute_of_known_kind  # type: ignore[method-assign]


class MLIRParser(Parser):
    """xDSL's parser with MLIR's reading of hex floats, and op source offsets.

    After parsing, `op_offsets` maps each parsed operation to the character offset
    where it starts; `open_op_offsets` is the stack of operations being parsed (its
    top names the operation at fault when a custom parser fails unexpectedly)."""

    def __init__(self, ctx: Context, text: str, name: str = "<input>") -> None:
        super().__init__(ctx, text, name)
        self.op_offsets: dict[Operation, int] = {}
        self.open_op_offsets: list[int] = []
        # line shape -> (how many of its names are results, operand types -> _OpShape)
        self._op_shapes: dict[tuple, tuple[int, dict[tuple, _OpShape]]] = {}

    def try_parse_builtin_boolean_attr(self):
        """As xDSL, but ``true`` and ``false`` are two shared attributes, not one built
        (and verified) per use: ``in_bounds = [true, true]`` is on every transfer."""
        value = self.parse_optional_boolean()
        return None if value is None else _BOOLEANS[value]

    def _parse_dialect_type_or_attribute_body(self, attr_name, is_type, is_opaque, starting_opaque_pos):
        """As xDSL, but an attribute of a dialect simtify does not register is kept as
        text (`UnregisteredAttr`), and a removed one says so."""
        if attr_name in REMOVED_UPSTREAM:
            self.raise_error(removed_upstream(attr_name, "#" if not is_type else "!"))
        dialect = attr_name.split(".", 1)[0]
        if not is_type and "." in attr_name and dialect not in set(self.ctx.registered_dialect_names):
            if self._current_token.kind != MLIRTokenKind.LESS:
                return ForeignAttr(attr_name, False, is_opaque, "")
            return ForeignAttr(attr_name, False, is_opaque, f"<{self._parse_dialect_symbol_body()}>")
        return super()._parse_dialect_type_or_attribute_body(attr_name, is_type, is_opaque, starting_opaque_pos)

    def parse_affine_map(self) -> AffineMap:
        return _SemiAffineParser(self._parser_state).parse_affine_map()

    def parse_affine_set(self) -> AffineSet:
        return _SemiAffineParser(self._parser_state).parse_affine_set()

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """As xDSL, but input with no operation (empty, or only comments) is an empty
        module, as MLIR reads it."""
        if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])
        return super().parse_module(allow_implicit_module)

    def parse_operation(self) -> Operation:
        start = self.pos
        self.open_op_offsets.append(start)
        text = self.lexer.input.content
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        shape = _line_shape(text[start:end])
        key = shape and (shape[0], tuple(self._parser_state.dialect_stack))
        op = self._parse_remembered_operation(key, shape[1], end) if key else None
        if op is None:
            op = super().parse_operation()
            if key and _SKIPPED.match(text, end).end() == self.pos:
                self._remember_operation(key, shape[1], op)
        self.open_op_offsets.pop()
        self.op_offsets[op] = start
        return op

    def _operand_types(self, names: list[str]) -> tuple | None:
        """The types of the values of `names`, None where one is not defined yet."""
        types = []
        for name in names:
            values = self.ssa_values.get(name)
            if values is None:
                return None
            types.append(values[0].type if len(values) == 1 else tuple(v.type for v in values))
        return tuple(types)

    def _parse_remembered_operation(self, key: tuple, names: list[str], end: int) -> Operation | None:
        """The op of a line that is, up to its SSA names, one read before (a distributed
        function repeats a few dozen lines thousands of times): built as that line built
        its op, with this line's values, without reading it again; None if not known. The
        same text with operands of the same types gives the same op, whatever the parser."""
        results, by_types = self._op_shapes.get(key, (0, None))
        if by_types is None or any(n in self.ssa_values or n in self.forward_ssa_references for n in names[:results]):
            return None
        shape = by_types.get(self._operand_types(names[results:]))
        if shape is None or not _NEXT_OP.match(self.lexer.input.content, end):
            return None
        values = [self.ssa_values[name] for name in names[shape.results:]]
        op = shape.op_type.create(operands=[values[n][i] for n, i in shape.operands], result_types=shape.result_types,
                                  properties=shape.properties, attributes=shape.attributes, location=shape.location)
        first = 0
        for name, size in zip(names, shape.sizes):
            self._register_ssa_definition(name, op.results[first:first + size], None)
            first += size
        self._resume_from(end)
        return op

    def _remember_operation(self, key: tuple, names: list[str], op: Operation) -> None:
        """Remember how `op`, read from one whole line whose distinct SSA names are
        `names`, was built from them, if it was built from them alone."""
        if op.regions or op.successors:
            return
        sizes = []
        for name in names:  # its results' names come first
            values = self.ssa_values.get(name, ())
            if not values or not isinstance(values[0], OpResult) or values[0].op is not op:
                break
            sizes.append(len(values))
        where = {id(v): (n, i) for n, name in enumerate(names[len(sizes):])
                 for i, v in enumerate(self.ssa_values.get(name, ()))}
        operands = tuple(where.get(id(v)) for v in op.operands)
        types = self._operand_types(names[len(sizes):])
        if (sizes and sum(sizes) != len(op.results)) or None in operands or types is None:
            return
        self._op_shapes.setdefault(key, (len(sizes), {}))[1][types] = _OpShape(
            len(sizes), tuple(sizes), operands, type(op), tuple(op.result_types), dict(op.properties),
            dict(op.attributes), op.location)

    def _get_op_by_name(self, name: str) -> type[Operation]:
        """As xDSL, but an unknown op is reported at its name, as MLIR does."""
        op_type = self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)
        if op_type is None and name in REMOVED_UPSTREAM:
            found = self.lexer.input.content.rfind(name, 0, self.pos)
            self.raise_error(removed_upstream(name, "operation"), at_position=found if found >= 0 else None)
        if op_type is None:
            found = self.lexer.input.content.rfind(name, 0, self.pos)
            why = f" ({NOT_READ_YET[name]})" if name in NOT_READ_YET else ""
            self.raise_error(f"unknown operation '{name}'{why}", at_position=found if found >= 0 else None)
        return op_type

    def _parse_dense_literal_type(self):
        """The type after ``dense<...> :``: a static vector, tensor or memref of
        integers, indices, floats or complex numbers (as xDSL checks it, faster)."""
        start = self.pos
        type_ = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not isinstance(type_, VectorType | TensorType | MemRefType) or not isinstance(
            type_.element_type, IntegerType | IndexType | AnyFloat | ComplexType
        ):
            self.raise_error("Expected memref, vector or tensor type of integer, index, float, or complex type")
        if DYNAMIC_INDEX in type_.get_shape():
            self.raise_error("Dense literal attribute should have a static shape.")
        if prod(type_.get_shape()) > MAX_DENSE_ELEMENTS:
            # xDSL stores every element, even of a splat: refuse before exhausting memory.
            self.raise_error(f"a dense literal of {prod(type_.get_shape())} elements is more than simtify holds "
                             f"({MAX_DENSE_ELEMENTS})", start, self.pos)
        return type_

    def parse_dense_int_or_fp_elements_attr(self, type):
        """As xDSL, but a splat (``dense<0.0> : vector<32x256x64xf16>``) is converted and
        packed once and its bytes repeated: xDSL converts the value once per element
        (half a million masks' worth took 0.4 s). Anything else is xDSL's reading."""
        start = self.pos
        self.parse_punctuation("<", " in dense attribute")
        if self._current_token.kind in _NOT_A_SPLAT:
            self._resume_from(start)
            return super().parse_dense_int_or_fp_elements_attr(type)
        element = self._parse_tensor_literal_element()
        self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_literal_type()
        if isinstance(type.element_type, ComplexType):
            self._resume_from(start)  # xDSL's own error
            return super().parse_dense_int_or_fp_elements_attr(type)
        return DenseIntOrFPElementsAttr.from_list(type, [element.to_type(self, type.element_type)])

    def parse_optional_builtin_int_or_float_attr(self):
        """As xDSL, but a hexadecimal float literal wider than its type
        (``arith.constant 0xFF800000 : f16``) is an error at the literal, as MLIR's."""
        literal = self._current_token.span
        try:
            attr = super().parse_optional_builtin_int_or_float_attr()
        except OverflowError:  # the bit pattern does not fit the float's bytes
            type_text = self.lexer.input.content[literal.end:self.pos].strip().lstrip(":").strip()
            self.raise_error(f"hexadecimal float literal {literal.text} does not fit {type_text}",
                             at_position=literal)
        if isinstance(attr, FloatAttr) and _NEGATIVE_HEX.match(self.lexer.input.content, literal.start):
            self.raise_error("hexadecimal float literal should not have a leading minus", at_position=literal)
        return attr

    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:
        element = super()._parse_tensor_literal_element()
        text = element.span.text
        if isinstance(element.value, int) and not isinstance(element.value, bool) and text[:2] in ("0x", "0X"):
            return _BitPatternElement(element.is_negative, element.value, element.span)
        return element
