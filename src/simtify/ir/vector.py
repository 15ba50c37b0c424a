"""The upstream ``vector`` dialect, in the syntax MLIR prints today.

xDSL 0.74 has only part of it (no ``contract``, ``multi_reduction``, ``transpose``,
``shape_cast``, strided slices, ``step``, ``gather``, ``constant_mask``,
``interleave``...), its ``load``/``store`` cannot read today's ``alignment =`` /
``nontemporal =`` keywords, and its transfer ops drop discardable attributes when they
read them. So the dialect is declared here in full. xDSL's ``shuffle``,
``maskedload``/``maskedstore``, ``print`` and the ``#vector.kind`` attribute are reused
as they are, and so are its transfer-op checks (mask type inference, permutation maps).

Every op checks what MLIR's verifier checks about shapes and types, and says what is
wrong in terms of the op's own syntax (e.g. ``offset 3 + size 2 exceed dim 0 of
vector<4x8xf32> (size 4)``), because these are the errors a user of simtify sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import ClassVar

from xdsl.dialects import vector as xdsl_vector
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import DYNAMIC_INDEX, I1, I64, AffineMapAttr, AnyFloat, ArrayAttr, BoolAttr, DenseArrayBase
from xdsl.dialects.builtin import DictionaryAttr, IndexType, IntegerAttr, IntegerType, MemRefType, StringAttr
from xdsl.dialects.builtin import TensorType, VectorType, i1, i64
from xdsl.dialects.utils import DynamicIndexList, EnumAttribute, get_dynamic_index_list, split_dynamic_index_list
from xdsl.dialects.utils import verify_dynamic_index_list
from xdsl.ir import Attribute, Block, Dialect, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap
from xdsl.irdl import AnyAttr, AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, VarConstraint
from xdsl.irdl import irdl_attr_definition, irdl_op_definition, operand_def, opt_operand_def, opt_result_def
from xdsl.irdl import opt_prop_def, prop_def, region_def, result_def, traits_def, var_operand_def, var_result_def
from xdsl.irdl.declarative_assembly_format import AttributeVariable, CustomDirective, ParsingState, PrintingState
from xdsl.irdl.declarative_assembly_format import irdl_custom_directive
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, MemoryReadEffect, MemoryWriteEffect, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from simtify.ir import gpu
from simtify.ir.assembly import AngleBracketEnum, DerivingType, IntList, OptionalIntList, YieldTerminator, i64_array, i64_dense, map_attr
from simtify.ir.assembly import int_values, mlir_op, parse_operands, split_properties
from simtify.ir.verify_once import once_per_signature

CombiningKind = xdsl_vector.CombiningKindFlag
CombiningKindAttr = xdsl_vector.CombiningKindAttr
ShuffleOp = xdsl_vector.ShuffleOp
MaskedLoadOp = xdsl_vector.MaskedLoadOp
MaskedStoreOp = xdsl_vector.MaskedStoreOp
PrintOp = xdsl_vector.PrintOp

# Kinds that combine floats, and kinds that combine integers (MLIR's isSupportedCombiningKind):
# those of the gpu reductions.
FLOAT_KINDS, INTEGER_KINDS = gpu.FLOAT_REDUCTIONS, gpu.INTEGER_REDUCTIONS


# --------------------------------------------------------------------------- helpers


def shape_of(type_: Attribute) -> tuple[int, ...]:
    """The shape of a vector type; () for a scalar."""
    return type_.get_shape() if isinstance(type_, VectorType) else ()


def element_type_of(type_: Attribute) -> Attribute:
    """The element type of a vector, memref or tensor type; a scalar type is its own
    element type."""
    return type_.element_type if isinstance(type_, VectorType | MemRefType | TensorType) else type_


def bitwidth_of(type_: Attribute) -> int | None:
    """Bits of a scalar type; index counts as 64 bits as in MLIR's data layout default."""
    if isinstance(type_, IndexType):
        return 64
    if isinstance(type_, IntegerType):
        return type_.width.data
    if isinstance(type_, AnyFloat):
        return type_.bitwidth
    return None


def check_kind(kind: CombiningKindAttr, element: Attribute, what: str) -> None:
    """A combining kind must make sense for the element type it combines."""
    name = kind.data.value
    if isinstance(element, AnyFloat):
        if name not in FLOAT_KINDS:
            raise VerifyException(f"kind <{name}> cannot combine floats ({what} has element type {element}); use one of {', '.join(sorted(FLOAT_KINDS))}")
    elif isinstance(element, IntegerType | IndexType):
        if name not in INTEGER_KINDS:
            raise VerifyException(f"kind <{name}> cannot combine integers ({what} has element type {element}); use one of {', '.join(sorted(INTEGER_KINDS))}")
    else:
        raise VerifyException(f"kind <{name}> cannot combine elements of type {element}")


def check_same_element(a: Attribute, b: Attribute, a_name: str, b_name: str) -> None:
    """Two values (vectors, memrefs, tensors or scalars) must hold the same element type."""
    if element_type_of(a) != element_type_of(b):
        raise VerifyException(f"{a_name} element type {element_type_of(a)} does not match {b_name} element type {element_type_of(b)}")


# ------------------------------------------------------------------------ attributes


IteratorType = StrEnum("IteratorType", "PARALLEL REDUCTION", module=__name__)


@irdl_attr_definition
class IteratorTypeAttr(AngleBracketEnum, EnumAttribute[IteratorType]):
    """``#vector.iterator_type<parallel>``: whether a contraction dim is kept or summed."""

    name = "vector.iterator_type"


# -------------------------------------------------------------------- memory access


def _check_access(base: Attribute, indices: Sequence[SSAValue], vector: Attribute) -> None:
    """vector.load / vector.store: one index per memref dim; element types agree (a
    memref of vectors must hold exactly the accessed vector type)."""
    assert isinstance(base, MemRefType | TensorType)
    if len(indices) != base.get_num_dims():
        raise VerifyException(f"needs {base.get_num_dims()} indices for {base}, got {len(indices)}")
    if isinstance(base.element_type, VectorType):
        if base.element_type != vector:
            raise VerifyException(f"memref of {base.element_type} must be accessed as exactly that vector type, not {vector}")
    elif base.element_type != element_type_of(vector):
        raise VerifyException(f"memref element type {base.element_type} does not match vector element type {element_type_of(vector)}")


class _Access(IRDLOperation):
    """What vector.load and vector.store share: a memref indexed at every dim, and
    today's ``alignment =`` / ``nontemporal =`` keywords."""

    base = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    nontemporal = prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(False))
    alignment = opt_prop_def(IntegerAttr[I64])
    SORTED_ATTR_DICT: ClassVar[bool] = False


@mlir_op
class LoadOp(_Access):
    """``%v = vector.load %base[%i, %j] : memref<..>, vector<..>``: a contiguous read of
    the innermost dims of the memref at the given indices."""

    name = "vector.load"
    traits = traits_def(MemoryReadEffect())
    result = result_def(VectorType)
    assembly_format = (
        "$base `[` $indices `]` (`alignment` `=` $alignment^)? (`nontemporal` `=` $nontemporal^)? attr-dict `:` "
        "type($base) `,` type($result)"
    )

    def __init__(self, base: SSAValue | Operation, indices: Sequence[SSAValue | Operation], result_type: VectorType):
        super().__init__(operands=[base, indices], result_types=[result_type])

    def verify_(self) -> None:
        _check_access(self.base.type, self.indices, self.result.type)


@mlir_op
class StoreOp(_Access):
    """``vector.store %v, %base[%i, %j] : memref<..>, vector<..>``."""

    name = "vector.store"
    traits = traits_def(MemoryWriteEffect())
    value_to_store = operand_def(VectorType)
    assembly_format = (
        "$value_to_store `,` $base `[` $indices `]` (`alignment` `=` $alignment^)? (`nontemporal` `=` "
        "$nontemporal^)? attr-dict `:` type($base) `,` type($value_to_store)"
    )

    def __init__(self, value: SSAValue | Operation, base: SSAValue | Operation, indices: Sequence[SSAValue | Operation]):
        super().__init__(operands=[value, base, indices])

    def verify_(self) -> None:
        _check_access(self.base.type, self.indices, self.value_to_store.type)


@irdl_op_definition
class GatherOp(IRDLOperation):
    """``vector.gather %base[%c0][%idx], %mask, %pass_thru : memref<?xf32>,
    vector<16xindex>, vector<16xi1>, vector<16xf32> into vector<16xf32>``: element i
    is read at offsets + idx[i] along the innermost dim where mask[i], else taken from
    pass_thru."""

    name = "vector.gather"
    traits = traits_def(MemoryReadEffect())
    base = operand_def(MemRefType | TensorType)
    offsets = var_operand_def(IndexType)
    indices = operand_def(VectorType)
    mask = operand_def(VectorType)
    pass_thru = operand_def(VectorType)
    result = result_def(VectorType)
    alignment = opt_prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())

    assembly_format = (
        "$base `[` $offsets `]` `[` $indices `]` `,` $mask `,` $pass_thru attr-dict `:` "
        "type($base) `,` type($indices) `,` type($mask) `,` type($pass_thru) `into` type($result)"
    )

    def verify_(self) -> None:
        base = self.base.type
        assert isinstance(base, MemRefType | TensorType)
        if len(self.offsets) != base.get_num_dims():
            raise VerifyException(f"needs {base.get_num_dims()} offsets for {base}, got {len(self.offsets)}")
        result = self.result.type
        for name, value in (("indices", self.indices), ("mask", self.mask), ("pass_thru", self.pass_thru)):
            if shape_of(value.type) != shape_of(result):
                raise VerifyException(f"{name} {value.type} must have the shape of the result {result}")
        if not isinstance(element_type_of(self.indices.type), IntegerType | IndexType):
            raise VerifyException(f"indices must be a vector of integers or index, got {self.indices.type}")
        if element_type_of(self.mask.type) != i1:
            raise VerifyException(f"mask must be a vector of i1, got {self.mask.type}")
        check_same_element(base, result, "base", "result")
        if self.pass_thru.type != result:
            raise VerifyException(f"pass_thru {self.pass_thru.type} must have the result type {result}")


_Transfer = xdsl_vector.VectorTransferOperation


def _parse_indexed(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    """``%source[%i, %j]``."""
    source = parser.parse_unresolved_operand()
    return source, parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_unresolved_operand)


def _parse_transfer_tail(parser: Parser):
    """The part both transfer ops share after the indices: ``(, %mask)? attr-dict :
    type, type``. Returns (mask, mask start, mask end, attr-dict, first type, second
    type, position of the types)."""
    mask = mask_start = mask_end = None
    if parser.parse_optional_punctuation(","):
        mask_start = parser.pos
        mask = parser.parse_unresolved_operand()
        mask_end = parser.pos
    attributes = parser.parse_optional_attr_dict()
    types_position = parser.pos
    parser.parse_punctuation(":")
    first = parser.parse_type()
    parser.parse_punctuation(",")
    second = parser.parse_type()
    return mask, mask_start, mask_end, attributes, first, second, types_position


def _transfer_properties(parser: Parser, op_type, attributes, shaped, vector, mask, mask_start, mask_end, position):
    """Default permutation map and in_bounds, the inferred mask type, and the split of
    the attr-dict into properties and discardable attributes."""
    if not isinstance(shaped, MemRefType | TensorType):
        parser.raise_error(f"expected a memref or tensor type, got {shaped}", at_position=position)
    if not isinstance(vector, VectorType):
        parser.raise_error(f"expected a vector type, got {vector}", at_position=position)
    given_map = (attributes or {}).get("permutation_map")
    if given_map is not None and not isinstance(given_map, AffineMapAttr):
        parser.raise_error(f"permutation_map must be an affine map, not {given_map}", at_position=position)
    mask_value, permutation_map, in_bounds = _Transfer.resolve_attrs(
        parser, attributes, shaped, vector, mask_start, mask_end, mask, position
    )
    properties, others = split_properties(op_type, attributes)
    properties |= {"permutation_map": map_attr(permutation_map.data), "in_bounds": in_bounds}
    return mask_value, properties, others


def _print_transfer(printer: Printer, op: IRDLOperation, vector: Sequence[SSAValue], after: Sequence[SSAValue],
                    types: Sequence[Attribute]) -> None:
    """``(%v, )? %source[%i, %j](, %x)* {attrs} : T, U``. Upstream elides the
    minor-identity permutation map and an all-false in_bounds."""
    printer.print_string(" ")
    printer.print_list([*vector, op.source], printer.print_operand)
    printer.print_string("[")
    printer.print_list(op.indices, printer.print_operand)
    printer.print_string("]")
    for value in (*after, *([op.mask] if op.mask is not None else [])):
        printer.print_string(", ")
        printer.print_operand(value)
    names = {"operandSegmentSizes"}
    if op.permutation_map.data.is_minor_identity():
        names.add("permutation_map")
    if not any(op.in_bounds):
        names.add("in_bounds")
    printer.print_op_attributes(op.attributes | op.properties, reserved_attr_names=names)
    printer.print_string(" : ")
    printer.print_list(types, printer.print_attribute)


def _verify_transfer(op: IRDLOperation, shaped: Attribute, vector: Attribute) -> None:
    assert isinstance(shaped, MemRefType | TensorType) and isinstance(vector, VectorType)
    if len(op.indices) != shaped.get_num_dims():
        raise VerifyException(f"needs {shaped.get_num_dims()} indices for {shaped}, got {len(op.indices)}")
    mask_type = op.mask.type if op.mask is not None else None
    inferred = _Transfer.infer_transfer_op_mask_type(vector, op.permutation_map.data) if mask_type else None
    _Transfer.verify_op(op, shaped, vector, mask_type, inferred, op.permutation_map.data, op.in_bounds)
    _Transfer.verify_permutation_map(op, op.permutation_map.data)


class _TransferOp(IRDLOperation):
    """What the transfer ops share after their own operands: an optional mask, the
    permutation map and in_bounds."""

    mask = opt_operand_def(VectorType)
    permutation_map = prop_def(AffineMapAttr)
    in_bounds = prop_def(ArrayAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class TransferReadOp(_TransferOp):
    """``vector.transfer_read %m[%i, %j], %pad (, %mask)? {in_bounds = [..],
    permutation_map = ..} : memref<..>, vector<..>``: read a vector whose dims map to
    source dims by the permutation map (0 = broadcast); out-of-bounds or masked-off
    elements take the padding value."""

    name = "vector.transfer_read"
    traits = traits_def(MemoryReadEffect())
    source = operand_def(TensorType | MemRefType)
    indices = var_operand_def(IndexType)
    padding = operand_def()
    result = result_def(VectorType)

    @classmethod
    def parse(cls, parser: Parser) -> TransferReadOp:
        source, indices = _parse_indexed(parser)
        parser.parse_punctuation(",")
        padding = parser.parse_unresolved_operand()
        mask, start, end, attributes, shaped, vector, position = _parse_transfer_tail(parser)
        mask_value, properties, others = _transfer_properties(parser, cls, attributes, shaped, vector, mask, start, end, position)
        element = shaped.element_type
        return cls.build(
            operands=[
                parser.resolve_operand(source, shaped),
                [parser.resolve_operand(i, IndexType()) for i in indices],
                parser.resolve_operand(padding, element),
                [] if mask_value is None else [mask_value],
            ],
            result_types=[vector],
            properties=properties,
            attributes=others,
        )

    def print(self, printer: Printer) -> None:
        _print_transfer(printer, self, [], [self.padding], [self.source.type, self.result.type])

    @once_per_signature
    def verify_(self) -> None:
        _verify_transfer(self, self.source.type, self.result.type)
        element = self.source.type.element_type
        if not isinstance(element, VectorType) and self.padding.type != element:
            raise VerifyException(f"padding type {self.padding.type} must be the source element type {element}")


@irdl_op_definition
class TransferWriteOp(_TransferOp):
    """``vector.transfer_write %v, %m[%i, %j] (, %mask)? {..} : vector<..>, memref<..>``
    (on a tensor it returns the updated tensor)."""

    name = "vector.transfer_write"
    traits = traits_def(MemoryWriteEffect())
    vector = operand_def(VectorType)
    source = operand_def(TensorType | MemRefType)
    indices = var_operand_def(IndexType)
    result = opt_result_def(TensorType)

    @classmethod
    def parse(cls, parser: Parser) -> TransferWriteOp:
        vector_operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        source, indices = _parse_indexed(parser)
        mask, start, end, attributes, vector, shaped, position = _parse_transfer_tail(parser)
        mask_value, properties, others = _transfer_properties(parser, cls, attributes, shaped, vector, mask, start, end, position)
        return cls.build(
            operands=[
                parser.resolve_operand(vector_operand, vector),
                parser.resolve_operand(source, shaped),
                [parser.resolve_operand(i, IndexType()) for i in indices],
                [] if mask_value is None else [mask_value],
            ],
            result_types=[[shaped] if isinstance(shaped, TensorType) else []],
            properties=properties,
            attributes=others,
        )

    def print(self, printer: Printer) -> None:
        _print_transfer(printer, self, [self.vector], [], [self.vector.type, self.source.type])

    @once_per_signature
    def verify_(self) -> None:
        _verify_transfer(self, self.source.type, self.vector.type)
        if any(isinstance(e, AffineConstantExpr) for e in self.permutation_map.data.results):
            raise VerifyException("a transfer_write cannot broadcast: its permutation map must not contain 0 results")


# ---------------------------------------------------------------- shape and elements


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """``vector.broadcast %s : f32 to vector<4x8xf32>``: replicate a scalar or a
    vector along new leading dims and along unit dims. (``vector.splat`` is gone
    upstream; this is how a splat is written today.)"""

    name = "vector.broadcast"
    source = operand_def()
    vector = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `to` type($vector)"

    def __init__(self, source: SSAValue | Operation, result_type: VectorType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        source, result = self.source.type, self.vector.type
        check_same_element(source, result, "source", "result")
        source_shape, result_shape = shape_of(source), shape_of(result)
        if len(source_shape) > len(result_shape):
            raise VerifyException(f"cannot broadcast {source} to the lower-rank {result}")
        offset = len(result_shape) - len(source_shape)
        for dim, size in enumerate(source_shape):
            target = result_shape[offset + dim]
            if size not in (1, target):
                raise VerifyException(f"cannot broadcast {source} to {result}: source dim {dim} has size {size}, neither 1 nor {target}")


class _VectorCast(IRDLOperation):
    """``vector.<cast> %v : vector<..> to vector<..>``."""

    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue | Operation, result_type: VectorType):
        super().__init__(operands=[source], result_types=[result_type])


@irdl_op_definition
class ShapeCastOp(_VectorCast):
    """``vector.shape_cast %v : vector<4x8xf32> to vector<32xf32>``: same elements in
    the same row-major order, another shape."""

    name = "vector.shape_cast"

    def verify_(self) -> None:
        source, result = self.source.type, self.result.type
        check_same_element(source, result, "source", "result")
        if prod(shape_of(source)) != prod(shape_of(result)):
            raise VerifyException(f"cannot reshape {source} ({prod(shape_of(source))} elements) to {result} ({prod(shape_of(result))} elements)")


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """``vector.transpose %v, [1, 0] : vector<4x8xf32> to vector<8x4xf32>``: result
    dim i is source dim permutation[i]."""

    name = "vector.transpose"
    vector = operand_def(VectorType)
    permutation = prop_def(DenseArrayBase.constr(i64))
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$vector `,` $permutation attr-dict `:` type($vector) `to` type($result)"

    def __init__(self, vector: SSAValue | Operation, permutation: Sequence[int], result_type: VectorType):
        super().__init__(operands=[vector], result_types=[result_type], properties={"permutation": i64_dense(permutation)})

    def verify_(self) -> None:
        source, result = self.vector.type, self.result.type
        permutation = int_values(self.permutation)
        rank = len(shape_of(source))
        if sorted(permutation) != list(range(rank)):
            raise VerifyException(f"permutation {list(permutation)} is not a permutation of the {rank} dims of {source}")
        check_same_element(source, result, "source", "result")
        expected = tuple(shape_of(source)[p] for p in permutation)
        if shape_of(result) != expected:
            raise VerifyException(f"transposing {source} by {list(permutation)} gives shape {list(expected)}, but the result is {result}")


class _Positioned(IRDLOperation):
    """What vector.extract and vector.insert share: a static or dynamic position."""

    dynamic_position = var_operand_def(IndexType)
    static_position = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(Pure())
    custom_directives = (DynamicIndexList,)

    def mixed_position(self) -> list[SSAValue | int]:
        return get_dynamic_index_list(self.static_position.get_values(), self.dynamic_position, DYNAMIC_INDEX)


@irdl_op_definition
class ExtractOp(_Positioned):
    """``vector.extract %v[1, %i] : f32 from vector<4x8xf32>``: the sub-vector (or
    element) at a static or dynamic position of the leading dims."""

    name = "vector.extract"
    vector = operand_def(VectorType)
    result = result_def()
    assembly_format = (
        "$vector `` custom<DynamicIndexList>($dynamic_position, $static_position) "
        "attr-dict `:` type($result) `from` type($vector)"
    )

    def __init__(self, vector: SSAValue | Operation, position: Sequence[SSAValue | int], result_type: Attribute):
        static, dynamic = split_dynamic_index_list(position, DYNAMIC_INDEX)
        super().__init__(operands=[vector, dynamic], result_types=[result_type], properties={"static_position": i64_dense(static)})

    @once_per_signature
    def verify_(self) -> None:
        _check_position(self.static_position, self.dynamic_position, self.vector.type, self.result.type, "result")


@irdl_op_definition
class InsertOp(_Positioned):
    """``vector.insert %s, %v [1, %i] : f32 into vector<4x8xf32>``."""

    name = "vector.insert"
    T: ClassVar = VarConstraint("T", VectorType.constr())
    value_to_store = operand_def()
    dest = operand_def(T)
    result = result_def(T)
    assembly_format = (
        "$value_to_store `,` $dest custom<DynamicIndexList>($dynamic_position, $static_position) "
        "attr-dict `:` type($value_to_store) `into` type($dest)"
    )

    def __init__(self, value: SSAValue | Operation, dest: SSAValue | Operation, position: Sequence[SSAValue | int]):
        static, dynamic = split_dynamic_index_list(position, DYNAMIC_INDEX)
        dest = SSAValue.get(dest)
        super().__init__(operands=[value, dest, dynamic], result_types=[dest.type], properties={"static_position": i64_dense(static)})

    @once_per_signature
    def verify_(self) -> None:
        _check_position(self.static_position, self.dynamic_position, self.dest.type, self.value_to_store.type, "inserted value")


def _check_position(static: DenseArrayBase, dynamic: Sequence[SSAValue], vector: Attribute, part: Attribute, part_name: str) -> None:
    """extract/insert: at most one position per dim, in range (or -1, poison), and the
    part is the element (or a 0-D vector) at full depth, the trailing vector otherwise."""
    positions = static.get_values()
    verify_dynamic_index_list(positions, dynamic, DYNAMIC_INDEX)
    shape = shape_of(vector)
    if len(positions) > len(shape):
        raise VerifyException(f"{len(positions)} positions given for the {len(shape)}-D {vector}")
    for dim, position in enumerate(positions):
        if position != DYNAMIC_INDEX and not -1 <= position < shape[dim]:
            raise VerifyException(f"position {position} is out of bounds for dim {dim} of {vector} (size {shape[dim]})")
    element = element_type_of(vector)
    trailing = shape[len(positions):]
    if trailing:
        expected: tuple[Attribute, ...] = (VectorType(element, trailing),)
    else:
        expected = (element, VectorType(element, []))
    if isinstance(part, VectorType):
        matches = isinstance(expected[-1], VectorType) and part.element_type == element and part.get_shape() == shape_of(expected[-1])
    else:
        matches = part == expected[0]
    if not matches:
        raise VerifyException(f"{part_name} type {part} does not match the {'element' if not trailing else 'sub-vector'} type {expected[0]} of {vector} at {len(positions)} positions")


class _StridedSlice(IRDLOperation):
    """What the strided-slice ops share: bare integer lists (no braces: today's syntax,
    printed); older IR's ``{offsets = [..], strides = [..]}`` is read too."""

    offsets = prop_def(ArrayAttr[IntegerAttr])
    strides = prop_def(ArrayAttr[IntegerAttr])
    traits = traits_def(Pure())
    SORTED_ATTR_DICT: ClassVar[bool] = False
    irdl_options = (ParsePropInAttrDict(),)
    custom_directives = (IntList, OptionalIntList)


@mlir_op
class ExtractStridedSliceOp(_StridedSlice):
    """``vector.extract_strided_slice %v offsets = [0, 4], sizes = [2, 4], strides =
    [1, 1] : vector<4x8xf32> to vector<2x4xf32>``."""

    name = "vector.extract_strided_slice"
    source = operand_def(VectorType)
    sizes = prop_def(ArrayAttr[IntegerAttr])
    result = result_def(VectorType)
    assembly_format = (
        "$source (`offsets` `=` custom<OptionalIntList>($offsets)^ `,` `sizes` `=` custom<IntList>($sizes) `,` "
        "`strides` `=` custom<IntList>($strides))? attr-dict `:` type($source) `to` type($result)"
    )

    def __init__(self, source: SSAValue | Operation, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int], result_type: VectorType):
        super().__init__(
            operands=[source],
            result_types=[result_type],
            properties={"offsets": i64_array(offsets), "sizes": i64_array(sizes), "strides": i64_array(strides)},
        )

    def verify_(self) -> None:
        source, result = self.source.type, self.result.type
        shape = shape_of(source)
        offsets, sizes, strides = int_values(self.offsets), int_values(self.sizes), int_values(self.strides)
        if not len(offsets) == len(sizes) == len(strides):
            raise VerifyException(f"offsets, sizes and strides must have one entry per sliced dim, got {len(offsets)}, {len(sizes)} and {len(strides)}")
        if len(offsets) > len(shape):
            raise VerifyException(f"{len(offsets)} sliced dims exceed the rank of {source}")
        _check_slice(offsets, sizes, strides, shape, source)
        check_same_element(source, result, "source", "result")
        expected = tuple(sizes) + shape[len(sizes):]
        if shape_of(result) != expected:
            raise VerifyException(f"slice of sizes {list(sizes)} from {source} has shape {list(expected)}, but the result is {result}")


@mlir_op
class InsertStridedSliceOp(_StridedSlice):
    """``vector.insert_strided_slice %s, %v offsets = [0, 4], strides = [1, 1] :
    vector<2x4xf32> into vector<4x8xf32>``."""

    name = "vector.insert_strided_slice"
    T: ClassVar = VarConstraint("T", VectorType.constr())
    value_to_store = operand_def(VectorType)
    dest = operand_def(T)
    result = result_def(T)
    assembly_format = (
        "$value_to_store `,` $dest (`offsets` `=` custom<OptionalIntList>($offsets)^ `,` `strides` `=` "
        "custom<IntList>($strides))? attr-dict `:` type($value_to_store) `into` type($dest)"
    )

    def __init__(self, value: SSAValue | Operation, dest: SSAValue | Operation, offsets: Sequence[int], strides: Sequence[int]):
        dest = SSAValue.get(dest)
        super().__init__(
            operands=[value, dest],
            result_types=[dest.type],
            properties={"offsets": i64_array(offsets), "strides": i64_array(strides)},
        )

    def verify_(self) -> None:
        value, dest = self.value_to_store.type, self.dest.type
        value_shape, dest_shape = shape_of(value), shape_of(dest)
        offsets, strides = int_values(self.offsets), int_values(self.strides)
        if len(offsets) != len(dest_shape):
            raise VerifyException(f"needs one offset per dim of {dest}, got {len(offsets)}")
        if len(strides) != len(value_shape):
            raise VerifyException(f"needs one stride per dim of {value}, got {len(strides)}")
        if len(value_shape) > len(dest_shape):
            raise VerifyException(f"cannot insert {value} into the lower-rank {dest}")
        check_same_element(value, dest, "inserted value", "destination")
        lead = len(dest_shape) - len(value_shape)
        for dim, offset in enumerate(offsets):
            size = 1 if dim < lead else value_shape[dim - lead]
            if offset < 0 or offset + size > dest_shape[dim]:
                raise VerifyException(f"offset {offset} + size {size} exceed dim {dim} of {dest} (size {dest_shape[dim]})")
        if any(stride != 1 for stride in strides):
            raise VerifyException(f"strides must be 1, got {list(strides)}")


def _check_slice(offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int], shape: Sequence[int], source: Attribute) -> None:
    for dim, (offset, size, stride) in enumerate(zip(offsets, sizes, strides)):
        if offset < 0 or size < 1 or offset + size > shape[dim]:
            raise VerifyException(f"offset {offset} + size {size} exceed dim {dim} of {source} (size {shape[dim]})")
        if stride != 1:
            raise VerifyException(f"strides must be 1, got {list(strides)}")


@irdl_op_definition
class BitCastOp(_VectorCast):
    """``vector.bitcast %v : vector<4x8xf32> to vector<4x16xf16>``: reinterpret the
    bits of the innermost dim; the other dims stay."""

    name = "vector.bitcast"

    def verify_(self) -> None:
        source, result = self.source.type, self.result.type
        source_shape, result_shape = shape_of(source), shape_of(result)
        if len(source_shape) != len(result_shape):
            raise VerifyException(f"bitcast keeps the rank: {source} and {result} differ")
        if source_shape[:-1] != result_shape[:-1]:
            raise VerifyException(f"bitcast may only change the innermost dim: {source} and {result} differ in outer dims")
        source_bits, result_bits = bitwidth_of(source.element_type), bitwidth_of(result.element_type)
        if source_bits is None or result_bits is None:
            raise VerifyException(f"bitcast needs integer, index or float elements, got {source} to {result}")
        inner = (source_shape[-1] if source_shape else 1) * source_bits
        inner_result = (result_shape[-1] if result_shape else 1) * result_bits
        if inner != inner_result:
            raise VerifyException(f"innermost dim of {source} holds {inner} bits, of {result} {inner_result} bits")


@irdl_op_definition
class InterleaveOp(IRDLOperation):
    """``vector.interleave %a, %b : vector<4xf32> -> vector<8xf32>``: alternate the
    elements of two vectors along the innermost dim."""

    name = "vector.interleave"
    T: ClassVar = VarConstraint("T", VectorType.constr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def verify_(self) -> None:
        source, result = self.lhs.type, self.result.type
        shape = shape_of(source)
        expected = shape[:-1] + (shape[-1] * 2,) if shape else (2,)
        check_same_element(source, result, "operand", "result")
        if shape_of(result) != expected:
            raise VerifyException(f"interleaving two {source} gives shape {list(expected)}, but the result is {result}")


@irdl_op_definition
class DeinterleaveOp(IRDLOperation):
    """``%even, %odd = vector.deinterleave %v : vector<8xf32> -> vector<4xf32>``."""

    name = "vector.deinterleave"
    source = operand_def(VectorType)
    T: ClassVar = VarConstraint("T", VectorType.constr())
    res1 = result_def(T)
    res2 = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($res1)"

    def verify_(self) -> None:
        source, result = self.source.type, self.res1.type
        shape = shape_of(source)
        if not shape or shape[-1] % 2:
            raise VerifyException(f"deinterleave needs an even innermost dim, got {source}")
        check_same_element(source, result, "source", "result")
        expected = shape[:-1] + (shape[-1] // 2,)
        if shape_of(result) != expected:
            raise VerifyException(f"deinterleaving {source} gives shape {list(expected)}, but the results are {result}")


@irdl_op_definition
class FromElementsOp(IRDLOperation):
    """``vector.from_elements %a, %b : vector<2xf32>``: a vector from scalars, row-major."""

    name = "vector.from_elements"
    T: ClassVar = VarConstraint("T", AnyAttr())
    elements = var_operand_def(T)
    result = result_def(VectorType.constr(T))
    traits = traits_def(Pure())
    assembly_format = "$elements attr-dict `:` type($result)"

    def verify_(self) -> None:
        result = self.result.type
        count = prod(shape_of(result))
        if len(self.elements) != count:
            raise VerifyException(f"{result} needs {count} elements, got {len(self.elements)}")


@irdl_op_definition
class ToElementsOp(IRDLOperation):
    """``%a:4 = vector.to_elements %v : vector<4xf32>``: every element, row-major."""

    name = "vector.to_elements"
    source = operand_def(VectorType)
    elements = var_result_def()
    traits = traits_def(Pure())
    custom_directives = (DerivingType,)
    assembly_format = "$source attr-dict `:` custom<DerivingType>(type($source), type($elements))"

    @staticmethod
    def derived_types(source: Attribute) -> tuple[Attribute, ...]:
        return (element_type_of(source),) * (prod(shape_of(source)) if isinstance(source, VectorType) else 0)

    def verify_(self) -> None:
        source = self.source.type
        count = prod(shape_of(source))
        if len(self.elements) != count or any(r.type != source.element_type for r in self.elements):
            raise VerifyException(f"{source} unpacks to {count} values of type {source.element_type}")


@irdl_op_definition
class StepOp(IRDLOperation):
    """``vector.step : vector<8xindex>``: the vector [0, 1, ..., 7]."""

    name = "vector.step"
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: VectorType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        result = self.result.type
        if len(shape_of(result)) != 1 or not isinstance(result.element_type, IndexType):
            raise VerifyException(f"result must be a 1-D vector of index, got {result}")


# -------------------------------------------------------------------------- masks


class _MaskOf(IRDLOperation):
    """A mask true in a leading box of its ``vector<..xi1>`` result, whose bounds each op
    checks in `verify_bounds`."""

    result = result_def(VectorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        if self.result.type.element_type != i1:
            raise VerifyException(f"mask must be a vector of i1, got {self.result.type}")
        self.verify_bounds(self.result.type)

    def verify_bounds(self, result: VectorType) -> None:
        raise NotImplementedError


@irdl_op_definition
class CreateMaskOp(_MaskOf):
    """``vector.create_mask %a, %b : vector<4x8xi1>``: true where each coordinate is
    below the corresponding operand."""

    name = "vector.create_mask"
    operands_ = var_operand_def(IndexType)
    assembly_format = "$operands_ attr-dict `:` type($result)"

    def verify_bounds(self, result: VectorType) -> None:
        rank = len(shape_of(result))
        if len(self.operands_) != max(rank, 1):
            raise VerifyException(f"{result} needs {max(rank, 1)} bound operands, got {len(self.operands_)}")


@irdl_op_definition
class ConstantMaskOp(_MaskOf):
    """``vector.constant_mask [2, 3] : vector<4x8xi1>``: true in the leading 2x3 box."""

    name = "vector.constant_mask"
    mask_dim_sizes = prop_def(DenseArrayBase.constr(i64))
    assembly_format = "$mask_dim_sizes attr-dict `:` type($result)"

    def verify_bounds(self, result: VectorType) -> None:
        sizes = int_values(self.mask_dim_sizes)
        shape = shape_of(result)
        if not shape:
            if len(sizes) != 1 or sizes[0] not in (0, 1):
                raise VerifyException(f"a 0-D mask takes [0] or [1], got {list(sizes)}")
            return
        if len(sizes) != len(shape):
            raise VerifyException(f"{result} needs {len(shape)} mask sizes, got {len(sizes)}")
        for dim, (size, extent) in enumerate(zip(sizes, shape)):
            if not 0 <= size <= extent:
                raise VerifyException(f"mask size {size} of dim {dim} is outside [0, {extent}] for {result}")
        if 0 in sizes and any(sizes):
            raise VerifyException(f"mask sizes {list(sizes)} mix zeros and non-zeros; an empty mask is all zeros")


# ----------------------------------------------------------------------- arithmetic


@irdl_op_definition
class FMAOp(IRDLOperation):
    """``vector.fma %a, %b, %c : vector<8xf32>``: elementwise a*b+c."""

    name = "vector.fma"
    T: ClassVar = VarConstraint("T", VectorType.constr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    acc = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs `,` $acc attr-dict `:` type($lhs)"

    def verify_(self) -> None:
        if not isinstance(element_type_of(self.lhs.type), AnyFloat):
            raise VerifyException(f"fma needs float vectors, got {self.lhs.type}")


@irdl_op_definition
class ReductionOp(IRDLOperation):
    """``vector.reduction <add>, %v (, %acc)? : vector<16xf32> into f32``: combine all
    elements of a 0-D or 1-D vector (and the accumulator)."""

    name = "vector.reduction"
    T: ClassVar = VarConstraint("T", AnyAttr())
    vector = operand_def(VectorType.constr(T))
    acc = opt_operand_def(T)
    dest = result_def(T)
    kind = prop_def(CombiningKindAttr)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))
    traits = traits_def(Pure())
    assembly_format = (
        "$kind `,` $vector (`,` $acc^)? (`fastmath` `` $fastmath^)? attr-dict "
        "`:` type($vector) `into` type($dest)"
    )

    def __init__(self, kind: CombiningKind | str, vector: SSAValue | Operation, acc: SSAValue | Operation | None = None):
        vector = SSAValue.get(vector)
        super().__init__(
            operands=[vector, [] if acc is None else [acc]],
            result_types=[element_type_of(vector.type)],
            properties={"kind": CombiningKindAttr(CombiningKind(kind))},
        )

    def verify_(self) -> None:
        source = self.vector.type
        if len(shape_of(source)) > 1:
            raise VerifyException(f"can only reduce a 0-D or 1-D vector, got {source}; use vector.multi_reduction")
        if self.dest.type != source.element_type:
            raise VerifyException(f"result type {self.dest.type} must be the element type of {source}")
        if self.acc is not None and self.acc.type != self.dest.type:
            raise VerifyException(f"accumulator type {self.acc.type} must be the result type {self.dest.type}")
        check_kind(self.kind, source.element_type, "the vector")


@irdl_op_definition
class MultiReductionOp(IRDLOperation):
    """``vector.multi_reduction <add>, %v, %acc [1] : vector<4x8xf32> to vector<4xf32>``:
    combine along the listed dims, starting from the accumulator."""

    name = "vector.multi_reduction"
    T: ClassVar = VarConstraint("T", AnyAttr())
    source = operand_def(VectorType)
    acc = operand_def(T)
    dest = result_def(T)
    kind = prop_def(CombiningKindAttr)
    reduction_dims = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(Pure())
    assembly_format = "$kind `,` $source `,` $acc attr-dict $reduction_dims `:` type($source) `to` type($dest)"

    def __init__(self, kind: CombiningKind | str, source: SSAValue | Operation, acc: SSAValue | Operation, reduction_dims: Sequence[int]):
        acc = SSAValue.get(acc)
        super().__init__(
            operands=[source, acc],
            result_types=[acc.type],
            properties={"kind": CombiningKindAttr(CombiningKind(kind)), "reduction_dims": i64_dense(reduction_dims)},
        )

    def verify_(self) -> None:
        source, result = self.source.type, self.dest.type
        shape = shape_of(source)
        dims = int_values(self.reduction_dims)
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
            raise VerifyException(f"reduction dims {list(dims)} must be distinct dims of the {len(shape)}-D {source}")
        kept = tuple(size for dim, size in enumerate(shape) if dim not in dims)
        expected: Attribute = VectorType(source.element_type, kept) if kept else source.element_type
        if result != expected:
            raise VerifyException(f"reducing dims {list(dims)} of {source} gives {expected}, but the result is {result}")
        check_kind(self.kind, source.element_type, "the source")


@irdl_op_definition
class ContractionOp(IRDLOperation):
    """``vector.contract {indexing_maps = [...], iterator_types = ["parallel", ...],
    kind = #vector.kind<add>} %lhs, %rhs, %acc : vector<4x2xf16>, vector<2x8xf16> into
    vector<4x8xf32>``: a generalised matmul over the iteration space the maps index."""

    name = "vector.contract"
    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    acc = operand_def()
    result = result_def()
    indexing_maps = prop_def(ArrayAttr[AffineMapAttr])
    iterator_types = prop_def(ArrayAttr[IteratorTypeAttr])
    kind = prop_def(CombiningKindAttr, default_value=CombiningKindAttr(CombiningKind.ADD))
    traits = traits_def(Pure())

    TRAIT_NAMES: ClassVar = ("indexing_maps", "iterator_types", "kind")

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        acc: SSAValue | Operation,
        indexing_maps: Sequence[AffineMap],
        iterator_types: Sequence[IteratorType | str],
        kind: CombiningKind | str = CombiningKind.ADD,
    ):
        acc = SSAValue.get(acc)
        super().__init__(
            operands=[lhs, rhs, acc],
            result_types=[acc.type],
            properties={
                "indexing_maps": ArrayAttr(AffineMapAttr(m) for m in indexing_maps),
                "iterator_types": ArrayAttr(IteratorTypeAttr(IteratorType(t)) for t in iterator_types),
                "kind": CombiningKindAttr(CombiningKind(kind)),
            },
        )

    @classmethod
    def parse(cls, parser: Parser) -> ContractionOp:
        trait_position = parser.pos
        trait = parser.parse_attribute()
        if not isinstance(trait, DictionaryAttr):
            parser.raise_error("expected the contraction trait {indexing_maps = ..., iterator_types = ...}", at_position=trait_position)
        properties: dict[str, Attribute] = {}
        attributes: dict[str, Attribute] = {}
        for key, value in trait.data.items():
            if key == "iterator_types":
                value = _parse_iterator_types(parser, value, trait_position)
            (properties if key in cls.TRAIT_NAMES else attributes)[key] = value
        operands = parse_operands(parser, 3)
        more_properties, more_attributes = split_properties(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if len(types) != 2:
            parser.raise_error(f"expected the lhs and rhs types, got {len(types)} types")
        parser.parse_keyword("into")
        acc_type = parser.parse_type()
        return cls.build(
            operands=[parser.resolve_operand(o, t) for o, t in zip(operands, (*types, acc_type))],
            result_types=[acc_type],
            properties=properties | more_properties,
            attributes=attributes | more_attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" {indexing_maps = ")
        printer.print_attribute(self.indexing_maps)
        printer.print_string(", iterator_types = [")
        printer.print_list(self.iterator_types.data, lambda t: printer.print_string(f'"{t.data.value}"'))
        printer.print_string("], kind = ")
        printer.print_attribute(self.kind)
        printer.print_string("} ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)
        printer.print_string(", ")
        printer.print_attribute(self.rhs.type)
        printer.print_string(" into ")
        printer.print_attribute(self.acc.type)

    def iteration_sizes(self) -> list[int]:
        """The extent of every iteration dim, read off the operands' shapes."""
        sizes = [0] * len(self.iterator_types)
        for value, attr in zip(self.operands, self.indexing_maps.data):
            for expr, size in zip(attr.data.results, shape_of(value.type)):
                if isinstance(expr, AffineDimExpr):
                    sizes[expr.position] = size
        return sizes

    def verify_(self) -> None:
        maps = [m.data for m in self.indexing_maps.data]
        iterators = [t.data for t in self.iterator_types.data]
        names = ("lhs", "rhs", "acc")
        if len(maps) != 3:
            raise VerifyException(f"needs 3 indexing maps (lhs, rhs, acc), got {len(maps)}")
        sizes: dict[int, tuple[int, str]] = {}
        for name, value, map_ in zip(names, self.operands, maps):
            if map_.num_dims != len(iterators) or map_.num_symbols:
                raise VerifyException(f"{name} map {map_} must have one dim per iterator ({len(iterators)}) and no symbols")
            shape = shape_of(value.type)
            if len(map_.results) != len(shape):
                raise VerifyException(f"{name} map {map_} has {len(map_.results)} results for the {len(shape)}-D {value.type}")
            for dim, (expr, size) in enumerate(zip(map_.results, shape)):
                if not isinstance(expr, AffineDimExpr):
                    raise VerifyException(f"{name} map {map_} must be a projected permutation")
                if expr.position in sizes and sizes[expr.position][0] != size:
                    first_size, first_name = sizes[expr.position]
                    raise VerifyException(f"iteration dim d{expr.position} has size {first_size} in {first_name} but {size} in {name} (dim {dim} of {value.type})")
                sizes.setdefault(expr.position, (size, f"{name} {value.type}"))
        used_by_acc = {e.position for e in maps[2].results if isinstance(e, AffineDimExpr)}
        used_by_lhs = {e.position for e in maps[0].results if isinstance(e, AffineDimExpr)}
        used_by_rhs = {e.position for e in maps[1].results if isinstance(e, AffineDimExpr)}
        for dim, iterator in enumerate(iterators):
            if iterator == IteratorType.REDUCTION:
                if dim in used_by_acc:
                    raise VerifyException(f"reduction dim d{dim} must not index the accumulator")
                if dim not in used_by_lhs or dim not in used_by_rhs:
                    raise VerifyException(f"reduction dim d{dim} must index both lhs and rhs")
            elif dim not in used_by_acc:
                raise VerifyException(f"parallel dim d{dim} must index the accumulator")
        if self.result.type != self.acc.type:
            raise VerifyException(f"result type {self.result.type} must be the accumulator type {self.acc.type}")
        check_kind(self.kind, element_type_of(self.acc.type), "the accumulator")


def _parse_iterator_types(parser: Parser, value: Attribute, position) -> ArrayAttr[IteratorTypeAttr]:
    """The trait spells iterator types as strings (``"parallel"``); the property holds
    ``#vector.iterator_type<...>`` attributes. Both spellings are accepted."""
    if not isinstance(value, ArrayAttr):
        parser.raise_error("iterator_types must be an array", at_position=position)
    items: list[IteratorTypeAttr] = []
    for item in value.data:
        if isinstance(item, IteratorTypeAttr):
            items.append(item)
        elif isinstance(item, StringAttr) and item.data in ("parallel", "reduction"):
            items.append(IteratorTypeAttr(IteratorType(item.data)))
        else:
            parser.raise_error(f'iterator type must be "parallel" or "reduction", got {item}', at_position=position)
    return ArrayAttr(items)


# ------------------------------------------------------------------------ masking, scan


@irdl_op_definition
class YieldOp(YieldTerminator):
    """``vector.yield %v : vector<4xf32>``: the values a ``vector.mask`` region hands out
    (left implicit in the printed form)."""

    name = "vector.yield"


def mask_type_for(op: Operation) -> VectorType | None:
    """The mask type `op` takes inside a ``vector.mask``: the transfer mask type for a
    transfer (source-dim order, no broadcast dims), the source shape for a reduction, the
    iteration space for a contraction, the source shape for a scan; None when `op` cannot
    be masked."""
    if isinstance(op, TransferReadOp | TransferWriteOp):
        vector = op.results[0].type if isinstance(op, TransferReadOp) else op.vector.type
        return _Transfer.infer_transfer_op_mask_type(vector, op.permutation_map.data)
    if isinstance(op, MultiReductionOp):
        return VectorType(i1, shape_of(op.source.type))
    if isinstance(op, ReductionOp):
        return VectorType(i1, shape_of(op.vector.type))
    if isinstance(op, ContractionOp):
        return VectorType(i1, op.iteration_sizes())
    return None


@irdl_op_definition
class MaskOp(IRDLOperation):
    """``%r = vector.mask %m (, %passthru)? { vector.transfer_read ... } : vector<16x32xi1>
    -> vector<16x32xf32>``: run the one op of the region with mask %m. Masked-off
    elements of a transfer are not read (padding, or passthru when given) or written;
    of a reduction or contraction they do not contribute. Only transfer_read takes a
    passthru (as upstream)."""

    name = "vector.mask"
    mask = operand_def(VectorType)
    passthru = opt_operand_def(VectorType)
    results_ = var_result_def()
    mask_region = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())

    @property
    def masked_op(self) -> Operation | None:
        first = self.mask_region.block.first_op
        return None if first is None or isinstance(first, YieldOp) else first

    @classmethod
    def parse(cls, parser: Parser) -> MaskOp:
        mask = parser.parse_unresolved_operand()
        passthru = parser.parse_unresolved_operand() if parser.parse_optional_punctuation(",") else None
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        block = region.block
        if block.last_op is None or not block.last_op.has_trait(IsTerminator):
            inner = block.first_op
            block.add_op(YieldOp(list(inner.results) if inner is not None else []))
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        mask_type = parser.parse_type()
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation("->") is not None:
            parenthesized = parser.parse_optional_punctuation("(") is not None
            result_types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
            if parenthesized:
                parser.parse_punctuation(")")
        if passthru is not None and not result_types:
            parser.raise_error("a vector.mask with a passthru value must have a result")
        operands = [parser.resolve_operand(mask, mask_type),
                    [] if passthru is None else [parser.resolve_operand(passthru, result_types[0])]]
        return cls.build(operands=operands, result_types=[result_types], properties=extra, attributes=attributes,
                         regions=[region])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.mask)
        if self.passthru is not None:
            printer.print_string(", ")
            printer.print_operand(self.passthru)
        printer.print_string(" { ")
        inner = self.masked_op
        if inner is not None:
            # the op alone, without its results: upstream prints the region this way
            if type(inner).print is Operation.print:
                printer.print_string(f'"{inner.name}"')
                printer.print_op_with_default_format(inner)
            else:
                printer.print_string(inner.name)
                inner.print(printer)
        printer.print_string(" }")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.mask.type)
        if self.results_:
            many = len(self.results_) > 1
            printer.print_string(" -> (" if many else " -> ")
            printer.print_list(self.results_.types, printer.print_attribute)
            printer.print_string(")" if many else "")

    def verify_(self) -> None:
        block = self.mask_region.block
        ops = list(block.ops)
        if not ops or not isinstance(ops[-1], YieldOp):
            raise VerifyException("the region must end with vector.yield")
        if len(ops) > 2:
            raise VerifyException(f"masks one op, but its region holds {len(ops) - 1}")
        if element_type_of(self.mask.type) != i1:
            raise VerifyException(f"the mask must be a vector of i1, got {self.mask.type}")
        yielded = ops[-1].operands
        if [v.type for v in yielded] != [r.type for r in self.results_]:
            raise VerifyException(f"the region yields {[str(v.type) for v in yielded]} for results "
                                  f"{[str(r.type) for r in self.results_]}")
        inner = self.masked_op
        if inner is None:
            return
        want = mask_type_for(inner)
        if want is None:
            raise VerifyException(f"'{inner.name}' cannot be masked")
        if self.mask.type != want:
            raise VerifyException(f"expects a '{want}' mask for '{inner.name}', got '{self.mask.type}'")
        if getattr(inner, "mask", None) is not None:
            raise VerifyException(f"'{inner.name}' already has a mask operand; it cannot also be in vector.mask")
        if self.passthru is not None:
            if not isinstance(inner, TransferReadOp):
                raise VerifyException(f"no passthru value is expected when masking '{inner.name}'")
            if self.passthru.type != self.results_.types[0]:
                raise VerifyException(f"passthru {self.passthru.type} must have the result type "
                                      f"{self.results_.types[0]}")


@irdl_custom_directive
class ScanDim(CustomDirective):
    """``reduction_dim = 1, inclusive = true``, as simtify has always printed them; older
    IR has them in the attr-dict instead, and is read so too."""

    reduction_dim: AttributeVariable
    inclusive: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("reduction_dim") is None:
            return
        parser.parse_punctuation("=")
        self.reduction_dim.set(state, IntegerAttr(parser.parse_integer(allow_negative=False), i64))
        parser.parse_punctuation(",")
        parser.parse_keyword("inclusive")
        parser.parse_punctuation("=")
        self.inclusive.set(state, BoolAttr.from_bool(parser.parse_boolean()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        inclusive = "true" if self.inclusive.get(op).value.data else "false"  # type: ignore[union-attr]
        printer.print_string(f" reduction_dim = {self.reduction_dim.get(op).value.data}, inclusive = {inclusive}")  # type: ignore[union-attr]


@mlir_op
class ScanOp(IRDLOperation):
    """``%dest, %acc = vector.scan <add>, %src, %init reduction_dim = 0, inclusive = true :
    vector<16xf32>, vector<f32>``: prefix combination along one dim, starting from %init
    (one value per line); %acc is each line's last prefix (for an exclusive scan, the
    combination of everything but the last element, as upstream)."""

    name = "vector.scan"
    kind = prop_def(CombiningKindAttr)
    S: ClassVar = VarConstraint("S", VectorType.constr())  # the source, and the scanned result
    source = operand_def(S)
    dest = result_def(S)
    I: ClassVar = VarConstraint("I", VectorType.constr())  # the initial value, and each line's last prefix
    initial_value = operand_def(I)
    accumulated_value = result_def(I)
    reduction_dim = prop_def(IntegerAttr[I64])
    inclusive = prop_def(BoolAttr)
    traits = traits_def(Pure())
    SORTED_ATTR_DICT: ClassVar[bool] = False
    custom_directives = (ScanDim,)
    assembly_format = (
        "$kind `,` $source `,` $initial_value custom<ScanDim>($reduction_dim, $inclusive) attr-dict `:` "
        "type($source) `,` type($initial_value)"
    )

    def verify_(self) -> None:
        shape = shape_of(self.source.type)
        dim = self.reduction_dim.value.data
        if not 0 <= dim < len(shape):
            raise VerifyException(f"reduction_dim {dim} is not a dim of {self.source.type}")
        want = VectorType(self.source.type.element_type, [s for d, s in enumerate(shape) if d != dim])
        if self.initial_value.type != want:
            raise VerifyException(f"the initial value must be {want} (the source without dim {dim}), got "
                                  f"{self.initial_value.type}")
        if self.dest.type != self.source.type or self.accumulated_value.type != self.initial_value.type:
            raise VerifyException("results must have the source's and the initial value's types")
        check_kind(self.kind, self.source.type.element_type, "the source")


@irdl_op_definition
class WarpExecuteOnLane0Spelling(IRDLOperation):
    """``vector.warp_execute_on_lane_0``: the name the warp region had before it moved to
    the gpu dialect (and the RFC's spelling); read as today's ``gpu.warp_execute_on_lane_0``."""

    name = "vector.warp_execute_on_lane_0"

    @classmethod
    def parse(cls, parser: Parser) -> Operation:
        return gpu.WarpExecuteOnLane0Op.parse(parser)


Vector = Dialect(
    "vector",
    [
        WarpExecuteOnLane0Spelling,
        BitCastOp,
        BroadcastOp,
        ConstantMaskOp,
        ContractionOp,
        CreateMaskOp,
        DeinterleaveOp,
        ExtractOp,
        ExtractStridedSliceOp,
        FMAOp,
        FromElementsOp,
        GatherOp,
        InsertOp,
        InsertStridedSliceOp,
        InterleaveOp,
        LoadOp,
        MaskOp,
        MaskedLoadOp,
        MaskedStoreOp,
        MultiReductionOp,
        PrintOp,
        ReductionOp,
        ScanOp,
        ShapeCastOp,
        ShuffleOp,
        StepOp,
        StoreOp,
        ToElementsOp,
        TransferReadOp,
        TransferWriteOp,
        TransposeOp,
        YieldOp,
    ],
    [CombiningKindAttr, IteratorTypeAttr],
)
