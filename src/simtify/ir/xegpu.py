"""The ``xegpu`` dialect: Intel Xe block loads, stores and DPAS, with workgroup layouts.

Layouts are `simtify.layout.XeGPULayout` / `XeGPUSlice` wrapped as attributes:
``#xegpu.layout<sg_layout = [..], sg_data = [..], inst_data = [..], lane_layout = [..],
lane_data = [..], order = [..]>`` (any subset, printed in that order) and
``#xegpu.slice<#xegpu.layout<...>, dims = [..]>``. Where an op carries a layout, the
verifier asks the layout whether it distributes the value's shape evenly (dim by dim,
as the seed defines it; see `simtify.layout.xegpu`).

The ops follow today's upstream syntax (MLIR, 2026): descriptors carry no offsets,
the offsets go on the access ops, and layouts are inherent attributes::

    %t = xegpu.create_nd_tdesc %src : memref<128x128xf16> -> !xegpu.tensor_desc<64x32xf16>
    %v = xegpu.load_nd %t[%i, 0] <{layout = #a}> : !xegpu.tensor_desc<64x32xf16> -> vector<64x32xf16>
    xegpu.store_nd %v, %t[%i, %j] <{layout = #c}> : vector<..>, !xegpu.tensor_desc<..>
    xegpu.prefetch_nd %t[%i, %j] <{l1_hint = #xegpu.cache_hint<cached>}> : !xegpu.tensor_desc<..>
    %t2 = xegpu.update_nd_offset %t, [0, %k] : !xegpu.tensor_desc<..>   // older IR
    %d = xegpu.dpas %a, %b, %c {layout_a = #a, layout_b = #b, layout_cd = #c} : ta, tb, tc -> td
    %w = xegpu.convert_layout %v <{input_layout = #a, target_layout = #b}> : vector<..>

Gathers and scatters take a memref (or an address) and an offsets vector directly, as
upstream does since the scattered tensor_desc went away; shared local memory matrices
go through a ``!xegpu.mem_desc``::

    %v = xegpu.load %src[%offsets], %mask <{chunk_size = 8, layout = #l}> : memref<256xf16>,
           vector<16xindex>, vector<16xi1> -> vector<16x8xf16>
    xegpu.store %v, %dst[%offsets], %mask <{chunk_size = 8}> : vector<16x8xf16>, memref<256xf16>, ...
    xegpu.prefetch %src[%offsets] <{l1_hint = #xegpu.cache_hint<cached>}> : memref<256xf16>, vector<16xindex>
    %m = xegpu.create_mem_desc %slm : memref<32768xi8, 3> -> !xegpu.mem_desc<64x128xf32>
    %w = xegpu.load_matrix %m[0, %j] <{layout = #l}> : !xegpu.mem_desc<64x128xf32>, index -> vector<32x32xf32>
    xegpu.store_matrix %w, %m[0, 0] : vector<32x32xf32>, !xegpu.mem_desc<64x128xf32>

Load, store, prefetch and convert_layout print their properties as ``<{...}>``, dpas as
``{...}``, as mlir-opt does; both spellings are read. Older IR with offsets on
`create_nd_tdesc` (``%src[%i, %j]``) is read and printed back unchanged.
"""

from __future__ import annotations

from math import prod
from typing import ClassVar, Sequence

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Data, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    BaseAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    VariadicOperandVariable,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from simtify.errors import SimtifyError
from simtify.ir.assembly import (
    DYNAMIC,
    EnumKeyword,
    IndexList,
    KeyedLayoutAttr,
    KeywordAttr,
    OptionalIndexList,
    check_layout,
    check_mixed_indices,
    enum_attr,
    i64_dense,
    keyword_enum,
    layout_parse_error,
    memory_space_name,
    mlir_op,
    parse_int_list,
    parse_keyed_int_lists,
    parse_mixed_indices,
    parse_properties_and_attributes,
    print_mixed_indices,
    print_sorted_attr_dict,
    shape_text,
)
from simtify.ir.vector import shape_of
from simtify.layout.syntax import AttributeText
from simtify.layout.xegpu import LAYOUT_NAME, SLICE_NAME, XeGPULayout, XeGPUSlice, check_block

# --- attributes ----------------------------------------------------------------------


@irdl_attr_definition
class LayoutAttr(KeyedLayoutAttr):
    """``#xegpu.layout<...>``; the fields are checked by `XeGPULayout` (equal ranks,
    positive sizes, ``order`` a permutation, data fields only with their layout)."""

    name = "xegpu.layout"
    LAYOUT = XeGPULayout
    WHAT = "xegpu.layout"


@irdl_attr_definition
class SliceAttr(Data[XeGPUSlice]):
    """``#xegpu.slice<#parent, dims = [..]>``: the parent (a layout, a slice, or an alias
    of either) with `dims` removed."""

    name = "xegpu.slice"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> XeGPUSlice:
        start = parser.pos
        parser.parse_punctuation("<")
        parent = parser.parse_attribute()
        if not isinstance(parent, LayoutAttr | SliceAttr):
            parser.raise_error(f"a slice's parent must be an #xegpu.layout or #xegpu.slice, not {parent}", start)
        parser.parse_punctuation(",")
        parser.parse_keyword("dims")
        parser.parse_punctuation("=")
        dims = parse_int_list(parser)
        parser.parse_punctuation(">")
        try:
            return XeGPUSlice(parent.data, dims)
        except SimtifyError as e:
            layout_parse_error(parser, e, start, parser.pos, "xegpu.slice")

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(str(self.data)[len(SLICE_NAME) :])

    @property
    def layout(self) -> XeGPUSlice:
        return self.data


class _LegacyLayoutAttr(Data[XeGPULayout]):
    """An older spelling of ``#xegpu.layout`` (the workgroup-layout proposal's
    ``#xegpu.sg_map`` / ``#xegpu.wg_map``: ``wi_layout``, ``wi_data``, ``sg_order``): read
    into today's `LayoutAttr`, so it prints as ``#xegpu.layout<...>``."""

    RENAMED: ClassVar[dict[str, str]] = {"wi_layout": "lane_layout", "wi_data": "lane_data", "sg_order": "order"}

    def __new__(cls, data: XeGPULayout) -> LayoutAttr:  # type: ignore[misc]
        return LayoutAttr(data)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> XeGPULayout:
        pairs, start, end = parse_keyed_int_lists(parser)
        renamed = tuple((cls.RENAMED.get(key, key), value) for key, value in pairs)
        try:
            return XeGPULayout.from_attribute(AttributeText(LAYOUT_NAME, renamed), "")
        except SimtifyError as e:
            layout_parse_error(parser, e, start, end, cls.name)

    def print_parameter(self, printer: Printer) -> None:  # never reached: parsing gives a LayoutAttr
        raise NotImplementedError


@irdl_attr_definition
class SgMapAttr(_LegacyLayoutAttr):
    name = "xegpu.sg_map"


@irdl_attr_definition
class WgMapAttr(_LegacyLayoutAttr):
    name = "xegpu.wg_map"


@irdl_attr_definition
class RangeAttr(Data[tuple[int, int]]):
    """``#xegpu.range<[0, 32]>``: the subgroup ids ``[start, end)`` a region runs on
    (``sg_id_range`` on an ``scf.if``, for workgroup-level IR that gives subgroups
    different work)."""

    name = "xegpu.range"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[int, int]:
        start = parser.pos
        with parser.in_angle_brackets():
            bounds = parse_int_list(parser)
        if len(bounds) != 2 or not 0 <= bounds[0] < bounds[1]:
            parser.raise_error(f"#xegpu.range takes [start, end) with 0 <= start < end, not {bounds}", start)
        return (bounds[0], bounds[1])

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<[{self.data[0]}, {self.data[1]}]>")

CACHE_HINTS = ("cached", "uncached", "streaming", "read_invalidate", "write_back", "write_through")


@irdl_attr_definition
class CacheHintAttr(KeywordAttr):
    """``#xegpu.cache_hint<cached>``: the cache policy of one cache level."""

    name = "xegpu.cache_hint"
    KEYWORDS = CACHE_HINTS
    WHAT = "cache hint"


MEMORY_SPACES = ("global", "slm")


@irdl_attr_definition
class BlockTensorDescAttr(Data[tuple[str, int, bool]]):
    """``#xegpu.block_tdesc_attr<memory_space = slm, array_length = 2 : i64,
    boundary_check = false>``: (memory space, blocks per load, bounds checked); the
    defaults (global, 1, true) are not printed."""

    name = "xegpu.block_tdesc_attr"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[str, int, bool]:
        values: dict[str, object] = {"memory_space": "global", "array_length": 1, "boundary_check": True}
        seen: set[str] = set()

        def entry() -> None:
            pos = parser.pos
            key = parser.parse_identifier()
            if key not in values or key in seen:
                parser.raise_error(f"unexpected or repeated block_tdesc_attr field '{key}'", pos)
            seen.add(key)
            parser.parse_punctuation("=")
            if key == "memory_space":
                space = parser.parse_identifier()
                if space not in MEMORY_SPACES:
                    parser.raise_error(f"memory_space must be global or slm, not {space}", pos)
                values[key] = space
            elif key == "array_length":
                values[key] = parser.parse_integer(allow_boolean=False)
                if parser.parse_optional_punctuation(":") is not None:
                    parser.parse_type()
            else:
                values[key] = parser.parse_boolean()

        if parser.parse_optional_punctuation("<") is not None:
            if parser.parse_optional_punctuation(">") is None:
                while True:
                    entry()
                    if parser.parse_optional_punctuation(">") is not None:
                        break
                    parser.parse_punctuation(",")
        return (str(values["memory_space"]), int(values["array_length"]), bool(values["boundary_check"]))  # type: ignore[arg-type]

    def print_parameter(self, printer: Printer) -> None:
        space, length, checked = self.data
        fields = []
        if space != "global":
            fields.append(f"memory_space = {space}")
        if length != 1:
            fields.append(f"array_length = {length} : i64")
        if not checked:
            fields.append("boundary_check = false")
        printer.print_string("<" + ", ".join(fields) + ">")

    @property
    def array_length(self) -> int:
        return self.data[1]


class _DescType(ParametrizedAttribute, TypeAttribute):
    """What tensor_desc and mem_desc share: a static positive shape and an element type,
    then attributes that are absent (`NoneAttr`) or written after them:
    ``<64x32xf16(, #attr)*>``. A descriptor reads its own (`parse_extras`)."""

    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        shape, element_type = parser.parse_ranked_shape()
        extras = cls.parse_extras(parser, tuple(shape))
        parser.parse_punctuation(">")
        return (ArrayAttr([IntAttr(d) for d in shape]), element_type, *extras)

    @classmethod
    def parse_extras(cls, parser: AttrParser, shape: tuple[int, ...]) -> tuple[Attribute, ...]:
        raise NotImplementedError

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + shape_text(self.get_shape()) + "x")
        printer.print_attribute(self.element_type)
        for extra in self.parameters[2:]:
            if not isinstance(extra, NoneAttr):
                printer.print_string(", ")
                printer.print_attribute(extra)
        printer.print_string(">")

    def verify(self) -> None:
        if any(d <= 0 for d in self.get_shape()):
            raise VerifyException(f"a {self.name.split('.')[1]} has a static positive shape, not "
                                  f"{shape_text(self.get_shape())}")


@irdl_attr_definition
class TensorDescType(_DescType):
    """``!xegpu.tensor_desc<64x32xf16, #xegpu.block_tdesc_attr<..>, #xegpu.layout<..>>``:
    a block of memory a load/store/prefetch reads; the layout, where given, must
    distribute the block's shape."""

    name = "xegpu.tensor_desc"

    encoding: Attribute
    layout: Attribute

    def __init__(
        self,
        shape: Sequence[int],
        element_type: Attribute,
        encoding: Attribute | None = None,
        layout: Attribute | None = None,
    ):
        super().__init__(
            ArrayAttr([IntAttr(d) for d in shape]), element_type, encoding or NoneAttr(), layout or NoneAttr()
        )

    @property
    def block_attr(self) -> BlockTensorDescAttr | None:
        return self.encoding if isinstance(self.encoding, BlockTensorDescAttr) else None

    @property
    def array_length(self) -> int:
        return self.block_attr.array_length if self.block_attr else 1

    @property
    def memory_space(self) -> str:
        """``global`` or ``slm`` (shared local memory), as the block attribute says."""
        return self.block_attr.data[0] if self.block_attr else "global"

    @property
    def distribute_layout(self) -> LayoutAttr | SliceAttr | None:
        return self.layout if isinstance(self.layout, LayoutAttr | SliceAttr) else None

    @classmethod
    def parse_extras(cls, parser: AttrParser, shape: tuple[int, ...]) -> tuple[Attribute, ...]:
        encoding: Attribute = NoneAttr()
        layout: Attribute = NoneAttr()
        while parser.parse_optional_punctuation(",") is not None:
            pos = parser.pos
            attr = parser.parse_attribute()
            if (
                isinstance(attr, BlockTensorDescAttr)
                and isinstance(encoding, NoneAttr)
                and isinstance(layout, NoneAttr)
            ):
                encoding = attr
            elif isinstance(attr, LayoutAttr | SliceAttr) and isinstance(layout, NoneAttr):
                try:
                    check_block(attr.data, shape)
                except SimtifyError as e:
                    parser.raise_error(
                        f"the layout does not fit the {shape_text(shape)} descriptor: {e.what}", pos, parser.pos
                    )
                layout = attr
            else:
                parser.raise_error(f"unexpected tensor_desc parameter {attr}", pos)
        return (encoding, layout)

    def verify(self) -> None:
        if not self.get_shape():
            raise VerifyException("expected 1D or 2D tensor: a tensor_desc has at least one dim")
        super().verify()
        if self.rank == 2 and self.memory_space == "slm":
            raise VerifyException("SLM is not supported for 2D block tensor: Xe's 2D block accesses read and write "
                                  "global memory (use xegpu.create_mem_desc with load_matrix / store_matrix)")


# --- helpers -------------------------------------------------------------------------


def _layout_of(attr: Attribute | None, role: str) -> XeGPULayout | XeGPUSlice | None:
    if attr is None:
        return None
    if not isinstance(attr, LayoutAttr | SliceAttr):
        raise VerifyException(f"{role} must be an #xegpu.layout or #xegpu.slice, not {attr}")
    return attr.data


def _check_fits(attr: Attribute | None, role: str, shape: Sequence[int], what: str) -> None:
    layout = _layout_of(attr, role)
    if layout is not None:
        check_layout(f"{role} does not fit {what} {shape_text(shape)}", lambda: layout.check_shape(tuple(shape)))


def _tdesc(value: SSAValue) -> TensorDescType:
    assert isinstance(value.type, TensorDescType)
    return value.type


def _offsets_count(op: IRDLOperation, dynamic: Sequence[SSAValue]) -> int:
    static = op.properties.get("const_offsets")
    assert static is None or isinstance(static, DenseArrayBase)
    return check_mixed_indices("offsets", dynamic, static)


def _check_offsets(op: IRDLOperation, dynamic: Sequence[SSAValue], tdesc: TensorDescType) -> None:
    n = _offsets_count(op, dynamic)
    if n and n != tdesc.rank:
        raise VerifyException(f"{n} offsets for a tensor_desc of rank {tdesc.rank}")


HINT_NAMES = ("l1_hint", "l2_hint", "l3_hint")


def _check_hints(op: IRDLOperation, allowed: Sequence[str]) -> None:
    for name in HINT_NAMES:
        hint = op.properties.get(name)
        if hint is None:
            continue
        if not isinstance(hint, CacheHintAttr):
            raise VerifyException(f"{name} must be an #xegpu.cache_hint, not {hint}")
        if hint.data not in allowed:
            raise VerifyException(f"invalid {name}: {hint} (this op takes {', '.join(allowed)})")


READ_HINTS = ("cached", "uncached", "streaming", "read_invalidate")
WRITE_HINTS = ("cached", "uncached", "write_back", "write_through")


@irdl_custom_directive
class ShapeAndStrides(CustomDirective):
    """``, shape : [%h, %w], strides : [%w, 1]`` of a descriptor over a raw address (or a
    memref of dynamic sizes); the older ``, [..], [..]`` is read too."""

    shape: VariadicOperandVariable
    const_shape: AttributeVariable
    strides: VariadicOperandVariable
    const_strides: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        present = parser.parse_optional_punctuation(",") is not None
        for keyword, dynamic, static in (("shape", self.shape, self.const_shape),
                                         ("strides", self.strides, self.const_strides)):
            if not present:
                dynamic.set(state, ())
                continue
            if keyword == "strides":
                parser.parse_punctuation(",")
            if parser.parse_optional_keyword(keyword) is not None:
                parser.parse_punctuation(":")
            values, constants = parse_mixed_indices(parser)
            dynamic.set(state, values)
            static.set(state, i64_dense(constants))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        shape, strides = self.const_shape.get(op), self.const_strides.get(op)
        if shape is None or strides is None:
            return
        printer.print_string(", shape : ")
        print_mixed_indices(printer, getattr(op, self.shape.name), shape.get_values())
        printer.print_string(", strides : ")
        print_mixed_indices(printer, getattr(op, self.strides.name), strides.get_values())


class _XeGPUOp(IRDLOperation):
    """An op printed by its `assembly_format` (see `mlir_op`), with the index-list
    directives and a descriptor's ``shape : [..], strides : [..]``."""

    irdl_options = (ParsePropInAttrDict(),)
    custom_directives = (IndexList, OptionalIndexList, ShapeAndStrides)


class _MemoryAccessOp(_XeGPUOp):
    """What the loads, stores and prefetches share: cache hints and the layout."""

    l1_hint = opt_prop_def(CacheHintAttr)
    l2_hint = opt_prop_def(CacheHintAttr)
    l3_hint = opt_prop_def(CacheHintAttr)
    layout = opt_prop_def(Attribute)


class _NdAccessOp(_MemoryAccessOp):
    """What load_nd, store_nd and prefetch_nd share: the descriptor with its offsets
    (``%t[%i, 0]``, one per descriptor dim; a stored value comes before them) and the
    cache hints of a read or a write; `verify_block` checks what the op moves."""

    tensor_desc = operand_def(TensorDescType)
    offsets = var_operand_def(IndexType)
    const_offsets = opt_prop_def(DenseArrayBase)

    # The descriptor and its offsets as every block access writes them, before its types.
    ACCESS: ClassVar[str] = "$tensor_desc custom<OptionalIndexList>($offsets, $const_offsets) attr-dict `:`"
    HINTS: ClassVar[tuple[str, ...]] = ()
    ELEMENTS_DIFFER: ClassVar[str] = ""  # the error where the vector's elements are not the descriptor's

    def verify_(self) -> None:
        # a 3-D block without a layout is read (upstream's propagate-layout-subgroup.mlir at
        # 02d27fd loads one; its older invalid.mlir refused it: 'Expects a 1D or 2D TensorDesc')
        tdesc = _tdesc(self.tensor_desc)
        _check_offsets(self, self.offsets, tdesc)
        _check_hints(self, self.HINTS)
        vector = getattr(self, "value", None)
        if vector is not None and vector.type.element_type != tdesc.element_type:
            raise VerifyException(self.ELEMENTS_DIFFER.format(vector=vector.type.element_type, desc=tdesc.element_type))
        self.verify_block(tdesc)

    def verify_block(self, tdesc: TensorDescType) -> None:
        raise NotImplementedError


def _check_block_value(op: _NdAccessOp, have: tuple[int, ...], want: tuple[int, ...], *, packed: bool,
                       mismatch: str, role: str) -> None:
    """A block access's vector: the block's shape (which its layout must fit) or a
    fragment of it; `mismatch` otherwise."""
    if have == want:
        _check_fits(op.layout, "layout", have, role)
    elif not _is_fragment_of(have, want, packed=packed):
        raise VerifyException(mismatch)


@mlir_op
class CreateNdDescOp(_XeGPUOp):
    """A descriptor over a memref (or a raw address with its shape and strides).

    ``%t = xegpu.create_nd_tdesc %src : memref<..> -> !xegpu.tensor_desc<..>`` or
    ``%t = xegpu.create_nd_tdesc %ptr, shape : [%h, %w], strides : [%w, 1] : ui64 ->
    ...``; older IR's ``%src[%i, %j]`` offsets are kept as written."""

    name = "xegpu.create_nd_tdesc"

    source = operand_def(MemRefType | IntegerType)
    offsets = var_operand_def(IndexType)
    shape = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    const_offsets = opt_prop_def(DenseArrayBase)
    const_shape = opt_prop_def(DenseArrayBase)
    const_strides = opt_prop_def(DenseArrayBase)
    tensor_desc = result_def(TensorDescType)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(Pure())
    assembly_format = (
        "$source custom<OptionalIndexList>($offsets, $const_offsets) custom<ShapeAndStrides>($shape, $const_shape, "
        "$strides, $const_strides) attr-dict `:` type($source) `->` type($tensor_desc)"
    )

    def verify_(self) -> None:
        tdesc = _tdesc(self.tensor_desc)
        n_offsets = check_mixed_indices("offsets", self.offsets, self.const_offsets)
        n_shape = check_mixed_indices("shape", self.shape, self.const_shape)
        n_strides = check_mixed_indices("strides", self.strides, self.const_strides)
        if n_shape != n_strides:
            raise VerifyException(f"shape has {n_shape} entries but strides has {n_strides}")
        source = self.source.type
        if isinstance(source, MemRefType):
            rank = source.get_num_dims()
            if source.element_type != tdesc.element_type:
                raise VerifyException(f"the memref holds {source.element_type} but the descriptor {tdesc.element_type}")
            if DYNAMIC in source.get_shape() and not n_shape:
                raise VerifyException("a memref with dynamic sizes needs shape : [..], strides : [..]")
        else:
            if not n_shape:
                raise VerifyException("a descriptor over a raw address needs shape : [..], strides : [..]")
            rank = n_shape
        if n_shape and n_shape != rank:
            raise VerifyException(f"shape has {n_shape} entries for a source of rank {rank}")
        if n_offsets and n_offsets != rank:
            raise VerifyException(f"{n_offsets} offsets for a source of rank {rank}")
        if tdesc.rank > rank:
            raise VerifyException(f"a rank-{tdesc.rank} descriptor cannot view a rank-{rank} source")
        space = "slm" if isinstance(source, MemRefType) and memory_space_name(source.memory_space) == "workgroup" \
            else "global"
        if space != tdesc.memory_space:
            names = {"slm": "shared local memory (memory space 3)", "global": "global memory"}
            raise VerifyException(f"Memory space mismatch: the source is in {names[space]}, the descriptor in "
                                  f"{names[tdesc.memory_space]} (#xegpu.block_tdesc_attr<memory_space = slm> "
                                  "marks a descriptor of shared local memory)")
        _check_fits(tdesc.distribute_layout, "the descriptor's layout", tdesc.get_shape(), "the block")


def _expected_load_shapes(tdesc: TensorDescType, transpose: Sequence[int] | None) -> tuple[int, ...]:
    shape = tdesc.get_shape()
    if transpose is not None:
        shape = tuple(shape[p] for p in transpose)
    if tdesc.array_length > 1:
        shape = (tdesc.array_length,) + shape
    return shape


def _rows_stacked(stacked: tuple[int, ...]) -> tuple[int, ...]:
    """An ``array_length`` load's blocks (`stacked`: ``A x R x ..``) one under another:
    ``A·R x ..``, the same elements in the same order."""
    return (stacked[0] * stacked[1],) + stacked[2:]


@mlir_op
class LoadNdOp(_NdAccessOp):
    """``%v = xegpu.load_nd %t[%i, %j] <{layout = #l, l1_hint = ..}> : !xegpu.tensor_desc<..>
    -> vector<..>``: a block read. At workgroup and subgroup level the vector has the
    block's shape (transposed by ``transpose``, ``array_length`` blocks stacked in
    front, or VNNI-``packed``); at lane level it is a lane's fragment."""

    name = "xegpu.load_nd"
    traits = traits_def(MemoryReadEffect())

    packed = opt_prop_def(UnitAttr)
    transpose = opt_prop_def(DenseArrayBase)
    value = result_def(VectorType)

    assembly_format = f"{_NdAccessOp.ACCESS} type($tensor_desc) `->` type($value)"

    HINTS: ClassVar[tuple[str, ...]] = READ_HINTS
    ELEMENTS_DIFFER: ClassVar[str] = "load_nd reads {desc} but produces {vector}"

    def verify_block(self, tdesc: TensorDescType) -> None:
        transpose = self.transpose.get_values() if self.transpose is not None else None
        if transpose is not None and sorted(transpose) != list(range(tdesc.rank)):
            raise VerifyException(f"transpose {list(transpose)} is not a permutation of {tdesc.rank} dims")
        if self.packed is not None and transpose is not None:
            raise VerifyException("packed (VNNI) and transpose cannot be combined")
        want = _expected_load_shapes(tdesc, transpose)
        have = tuple(self.value.type.get_shape())  # type: ignore[union-attr]
        stacked = ""
        if tdesc.array_length > 1 and self.packed is None:
            stacked = f" (or its blocks one under another, vector<{shape_text(_rows_stacked(want))}>)"
            if have == _rows_stacked(want):
                want = have  # the blocks one under another (upstream's 2-D form)
            elif have == want and getattr(_layout_of(self.layout, "layout"), "rank", None) == len(want) - 1:
                # a layout of the block's rank: each block of the array laid out alike
                _check_fits(self.layout, "layout", want[1:], "each block of the loaded vector")
                return
        _check_block_value(self, have, want, packed=self.packed is not None, role="the loaded vector",
                           mismatch=f"Result shape {list(have)} is not consistent with tensor descriptor: load_nd of "
                                    f"a {shape_text(tdesc.get_shape())} block gives vector<{shape_text(want)}>"
                                    f"{stacked}, not vector<{shape_text(have)}>")


def _is_fragment_of(have: Sequence[int], want: Sequence[int], *, packed: bool) -> bool:
    """A vector that is the whole block repacked (VNNI) or one lane's share of it, 1-D as
    upstream's lane-level IR holds it (an even share: the lanes split the block alike)."""
    total, part = prod(want), prod(have)
    if packed and part == total:
        return True
    return len(have) == 1 and part > 0 and total % part == 0 and part < total


@mlir_op
class StoreNdOp(_NdAccessOp):
    """``xegpu.store_nd %v, %t[%i, %j] <{layout = #l}> : vector<..>, !xegpu.tensor_desc<..>``."""

    name = "xegpu.store_nd"
    traits = traits_def(MemoryWriteEffect())

    value = operand_def(VectorType)

    assembly_format = f"$value `,` {_NdAccessOp.ACCESS} type($value) `,` type($tensor_desc)"

    HINTS: ClassVar[tuple[str, ...]] = WRITE_HINTS
    ELEMENTS_DIFFER: ClassVar[str] = "store_nd writes {vector} into a {desc} descriptor"

    def verify_block(self, tdesc: TensorDescType) -> None:
        have, want = tuple(self.value.type.get_shape()), tdesc.get_shape()  # type: ignore[union-attr]
        _check_block_value(self, have, want, packed=False, role="the stored vector",
                           mismatch=f"Value shape {list(have)} is not consistent with tensor descriptor: store_nd "
                                    f"of vector<{shape_text(have)}> into a {shape_text(want)} block")


@mlir_op
class PrefetchNdOp(_NdAccessOp):
    """``xegpu.prefetch_nd %t[%i, %j] <{l1_hint = #xegpu.cache_hint<cached>}> : !xegpu.tensor_desc<..>``."""

    name = "xegpu.prefetch_nd"

    assembly_format = f"{_NdAccessOp.ACCESS} type($tensor_desc)"

    HINTS: ClassVar[tuple[str, ...]] = READ_HINTS

    def verify_block(self, tdesc: TensorDescType) -> None:
        _check_fits(self.layout, "layout", tdesc.get_shape(), "the prefetched block")


@mlir_op
class UpdateNdOffsetOp(_XeGPUOp):
    """``%t2 = xegpu.update_nd_offset %t, [0, %c32] : !xegpu.tensor_desc<..>``: the same
    descriptor moved by the offsets (elements, one per descriptor dim). Older IR: upstream
    removed it (llvm-project #193330) in favour of offsets on the accesses; it is read,
    simulated and distributed (into offsets on the accesses) all the same."""

    name = "xegpu.update_nd_offset"

    T: ClassVar = VarConstraint("T", BaseAttr(TensorDescType))
    tensor_desc = operand_def(T)
    offsets = var_operand_def(IndexType)
    const_offsets = opt_prop_def(DenseArrayBase)
    result = result_def(T)

    assembly_format = "$tensor_desc `,` custom<IndexList>($offsets, $const_offsets) attr-dict `:` type($tensor_desc)"

    def verify_(self) -> None:
        tdesc = _tdesc(self.tensor_desc)
        n = _offsets_count(self, self.offsets)
        if n != tdesc.rank:
            raise VerifyException(f"{n} offsets for a tensor_desc of rank {tdesc.rank}: one per dim")


class _MatrixMultiplyOp(_XeGPUOp):
    """What dpas and dpas_mx share: A, B, the optional accumulator (of the result's type),
    the result and the layouts of A, B and C/D."""

    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    acc = opt_operand_def(VectorType)
    result = result_def(VectorType)
    layout_a = opt_prop_def(Attribute)
    layout_b = opt_prop_def(Attribute)
    layout_cd = opt_prop_def(Attribute)

    traits = traits_def(Pure())

    def verify_accumulator(self) -> None:
        if self.acc is not None and self.acc.type != self.result.type:
            raise VerifyException(f"the accumulator {self.acc.type} and the result {self.result.type} differ")


@mlir_op
class DpasOp(_MatrixMultiplyOp):
    """``%d = xegpu.dpas %a, %b, %c {layout_a = #a, layout_b = #b, layout_cd = #c} :
    vector<MxK>, vector<KxN>, vector<MxN> -> vector<MxN>`` (the accumulator is
    optional; B may be VNNI-packed ``K/v x N x v``; lane-level IR uses 1-D fragments)."""

    name = "xegpu.dpas"

    PROPERTIES_IN_ATTR_DICT: ClassVar[bool] = True
    assembly_format = (
        "$lhs `,` $rhs (`,` $acc^)? attr-dict `:` type($lhs) `,` type($rhs) (`,` type($acc)^)? `->` type($result)"
    )

    def verify_(self) -> None:
        a = tuple(self.lhs.type.get_shape())  # type: ignore[union-attr]
        b = tuple(self.rhs.type.get_shape())  # type: ignore[union-attr]
        d = tuple(self.result.type.get_shape())  # type: ignore[union-attr]
        self.verify_accumulator()
        if len(a) == 1 and len(d) == 1:
            # lane-level fragments: their sizes depend on the lane layout; B's packs 32-bit words
            bits = prod(b) * _bits(self.rhs.type.element_type)  # type: ignore[union-attr]
            if bits % 32:
                raise VerifyException(f"Expecting B operand to be a multiple of 32 bits: {self.rhs.type} holds {bits}")
            return
        if len(a) != 2 or len(d) != 2 or len(b) not in (2, 3):
            raise VerifyException(
                f"dpas takes A MxK, B KxN (or packed K/v x N x v) and gives MxN; got ranks {len(a)}, {len(b)}, {len(d)}"
            )
        k_b = b[0] * b[2] if len(b) == 3 else b[0]
        if a[1] != k_b:
            raise VerifyException(f"K differs: A is {shape_text(a)} but B is {shape_text(b)}")
        if (a[0], b[1]) != d:
            raise VerifyException(f"A {shape_text(a)} times B {shape_text(b)} is {a[0]}x{b[1]}, not {shape_text(d)}")
        _check_fits(self.layout_a, "layout_a", a, "A")
        if len(b) == 2:
            _check_fits(self.layout_b, "layout_b", b, "B")
        _check_fits(self.layout_cd, "layout_cd", d, "the result")


@mlir_op
class ConvertLayoutOp(_XeGPUOp):
    """``%w = xegpu.convert_layout %v <{input_layout = #a, target_layout = #b}> : vector<..>``:
    the same value, redistributed from one layout to another. Without ``input_layout`` it
    only anchors: the value is held in ``target_layout`` (upstream's lane-level tests
    anchor values so)."""

    name = "xegpu.convert_layout"

    T: ClassVar = VarConstraint("T", AnyAttr())
    source = operand_def(T)
    result = result_def(T)
    input_layout = opt_prop_def(Attribute)
    target_layout = opt_prop_def(Attribute)

    traits = traits_def(Pure())

    assembly_format = "$source attr-dict `:` type($source)"

    def verify_(self) -> None:
        if self.source.type != self.result.type:
            raise VerifyException(f"convert_layout changes the type from {self.source.type} to {self.result.type}")
        if self.target_layout is None:
            raise VerifyException("convert_layout needs a target_layout")
        shape = shape_of(self.source.type)
        if self.input_layout is not None:
            _check_fits(self.input_layout, "input_layout", shape, "the vector")
        _check_fits(self.target_layout, "target_layout", shape, "the vector")

# --- gathers and scatters ------------------------------------------------------------


def _chunk_of(op: IRDLOperation) -> int:
    chunk = op.properties.get("chunk_size")
    if chunk is None:
        return 1
    if not isinstance(chunk, IntegerAttr):
        raise VerifyException(f"chunk_size must be an integer, not {chunk}")
    if chunk.value.data < 1:
        raise VerifyException(f"chunk_size must be positive, not {chunk.value.data}")
    return chunk.value.data

def gather_value_shape(offsets: Sequence[int], chunk: int) -> tuple[int, ...]:
    """The shape of the value a gather of `offsets` reads: one row of `chunk` elements
    per offset (no chunk dim when the chunk is 1)."""
    return tuple(offsets) + ((chunk,) if chunk > 1 else ())

def _check_scatter(op: IRDLOperation, hints: Sequence[str], memory: Attribute, value_type: Attribute | None) -> None:
    """The checks load, store and prefetch share: the cache hints, the source, the
    offsets and mask shapes, the chunk, the value shape and the layout."""
    _check_hints(op, hints)
    what = op.name
    if isinstance(memory, MemRefType):
        elt = memory.element_type
        if memory.get_num_dims() != 1 and prod(shape_of(op.offsets.type)) == 1:
            raise VerifyException(f"{what} of one lane reads a 1D memref (or an address), not {memory}")
    elif isinstance(memory, IntegerType):
        elt = None
    else:
        raise VerifyException(f"{what} reads a memref or a ui64/i64 address, not {memory}")
    offsets = shape_of(op.offsets.type)
    if isinstance(op.offsets.type, VectorType) and not isinstance(op.offsets.type.element_type, IndexType):
        raise VerifyException(f"{what} takes index offsets, not {op.offsets.type}")
    mask = getattr(op, "mask", None)
    if mask is not None and shape_of(mask.type) != offsets:
        raise VerifyException(
            f"the mask {mask.type} does not match the offsets {op.offsets.type}: one mask bit per offset")
    chunk = _chunk_of(op)
    if value_type is None:
        _check_fits(op.properties.get("layout"), "layout", offsets, "the offsets")
        return
    if elt is not None and getattr(value_type, "element_type", value_type) != elt:
        raise VerifyException(f"{what} moves {getattr(value_type, 'element_type', value_type)} but the memref "
                              f"holds {elt}")
    have, want = shape_of(value_type), gather_value_shape(offsets, chunk)
    if have == want:
        _check_fits(op.properties.get("layout"), "layout", have, "the value")
        return
    if prod(offsets) == 1 and (have == (chunk,) or (chunk == 1 and have == ())):
        return  # one lane's gather: its offset's chunk
    if chunk > 1 and have and have[:-1] == offsets and have[-1] != chunk:
        raise VerifyException(f"the value's last dim {have[-1]} is not the chunk_size {chunk}")
    raise VerifyException(
        f"{what} of {shape_text(offsets) or 'one'} offset(s) with chunk_size {chunk} moves vector<{shape_text(want)}x"
        f"{getattr(value_type, 'element_type', value_type)}>, not {value_type}")

class _ScatterOp(_MemoryAccessOp):
    """What gathers, scatters and prefetches share: the chunk of each offset."""

    chunk_size = opt_prop_def(IntegerAttr)

    @property
    def chunk(self) -> int:
        return _chunk_of(self)


@mlir_op
class LoadGatherOp(_ScatterOp):
    """``%v = xegpu.load %src[%offsets], %mask <{chunk_size = 8, layout = #l}> : memref<256xf16>,
    vector<16xindex>, vector<16xi1> -> vector<16x8xf16>``: per offset (elements of the
    flattened source), `chunk_size` contiguous elements where the mask is set. At lane
    level one offset (``vector<1xindex>``) gives the lane's ``vector<chunk>``."""

    name = "xegpu.load"
    traits = traits_def(MemoryReadEffect())

    source = operand_def(MemRefType | IntegerType)
    offsets = operand_def(VectorType | IndexType)
    mask = operand_def(VectorType | IntegerType)
    value = result_def()

    assembly_format = (
        "$source `[` $offsets `]` `,` $mask attr-dict `:` type($source) `,` type($offsets) `,` type($mask) `->` "
        "type($value)"
    )

    def verify_(self) -> None:
        _check_scatter(self, READ_HINTS, self.source.type, self.value.type)


@mlir_op
class StoreScatterOp(_ScatterOp):
    """``xegpu.store %v, %dst[%offsets], %mask <{chunk_size = 8}> : vector<16x8xf16>,
    memref<256xf16>, vector<16xindex>, vector<16xi1>``: the scatter of `load`'s rows."""

    name = "xegpu.store"
    traits = traits_def(MemoryWriteEffect())

    value = operand_def()
    dest = operand_def(MemRefType | IntegerType)
    offsets = operand_def(VectorType | IndexType)
    mask = operand_def(VectorType | IntegerType)

    assembly_format = (
        "$value `,` $dest `[` $offsets `]` `,` $mask attr-dict `:` type($value) `,` type($dest) `,` type($offsets) "
        "`,` type($mask)"
    )

    def verify_(self) -> None:
        _check_scatter(self, WRITE_HINTS, self.dest.type, self.value.type)


@mlir_op
class PrefetchOp(_ScatterOp):
    """``xegpu.prefetch %src[%offsets] <{l1_hint = #xegpu.cache_hint<cached>}> : ui64,
    vector<16xindex>``: a cache hint for the rows a gather would read."""

    name = "xegpu.prefetch"

    source = operand_def(MemRefType | IntegerType)
    offsets = operand_def(VectorType | IndexType)
    offset_align_byte = opt_prop_def(IntegerAttr)

    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `,` type($offsets)"

    def verify_(self) -> None:
        _check_scatter(self, READ_HINTS, self.source.type, None)


# --- shared local memory matrices --------------------------------------------------------

@irdl_attr_definition
class MemLayoutAttr(Data[tuple[tuple[str, tuple[int, ...]], ...]]):
    """``#xegpu.mem_layout<stride = [1, 32], block = [16, 16]>``: how a mem_desc's matrix
    lies in shared local memory — ``stride`` (row-major ``[C, 1]`` or column-major
    ``[1, R]``) and ``block`` (the matrix stored as blocks of that shape, one after the
    other, each contiguous; blocks and their elements in the stride's order). Printed
    sorted by key, as upstream prints it."""

    name = "xegpu.mem_layout"

    KEYS: ClassVar[tuple[str, ...]] = ("block", "stride")

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[tuple[str, tuple[int, ...]], ...]:
        pairs, start, end = parse_keyed_int_lists(parser)
        seen: dict[str, tuple[int, ...]] = {}
        for key, value in pairs:
            if key not in cls.KEYS or key in seen:
                parser.raise_error(f"unexpected or repeated mem_layout field '{key}' (expected block, stride)",
                                   start, end)
            if not isinstance(value, list) or not all(isinstance(v, int) and v > 0 for v in value):
                parser.raise_error(f"mem_layout {key} must be a list of positive integers", start, end)
            seen[key] = tuple(value)
        return tuple(sorted(seen.items()))

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<" + ", ".join(f"{k} = [{', '.join(map(str, v))}]" for k, v in self.data) + ">")

    def get(self, key: str) -> tuple[int, ...] | None:
        return dict(self.data).get(key)


@irdl_attr_definition
class MemDescType(_DescType):
    """``!xegpu.mem_desc<64x128xf32, #xegpu.mem_layout<..>>``: a matrix in shared local
    memory, as `create_mem_desc` makes it over a workgroup buffer."""

    name = "xegpu.mem_desc"

    mem_layout: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute, mem_layout: Attribute | None = None):
        super().__init__(ArrayAttr([IntAttr(d) for d in shape]), element_type, mem_layout or NoneAttr())

    @property
    def block(self) -> tuple[int, ...] | None:
        return self.mem_layout.get("block") if isinstance(self.mem_layout, MemLayoutAttr) else None

    @property
    def stride(self) -> tuple[int, ...] | None:
        return self.mem_layout.get("stride") if isinstance(self.mem_layout, MemLayoutAttr) else None

    @classmethod
    def parse_extras(cls, parser: AttrParser, shape: tuple[int, ...]) -> tuple[Attribute, ...]:
        if parser.parse_optional_punctuation(",") is None:
            return (NoneAttr(),)
        pos = parser.pos
        mem_layout = parser.parse_attribute()
        if not isinstance(mem_layout, MemLayoutAttr):
            parser.raise_error(f"expected an #xegpu.mem_layout, not {mem_layout}", pos)
        return (mem_layout,)

    def verify(self) -> None:
        super().verify()
        shape = self.get_shape()
        for key, value in ((k, getattr(self, k)) for k in ("block", "stride")):
            if value is not None and len(value) != len(shape):
                raise VerifyException(f"mem_layout {key} {list(value)} does not have the rank of {shape_text(shape)}")
        if self.block is not None and any(n % b for n, b in zip(shape, self.block)):
            raise VerifyException(f"mem_layout block {list(self.block)} does not divide the matrix "
                                  f"{shape_text(shape)}")
        if self.stride is not None and len(shape) == 2 and sorted(self.stride) != sorted((shape[1], 1)) \
                and sorted(self.stride) != sorted((1, shape[0])):
            raise VerifyException(f"mem_layout stride {list(self.stride)} is neither row-major [{shape[1]}, 1] nor "
                                  f"column-major [1, {shape[0]}]")


@mlir_op
class CreateMemDescOp(_XeGPUOp):
    """``%m = xegpu.create_mem_desc %slm : memref<4096xi8, 3> -> !xegpu.mem_desc<32x32xf32>``:
    a matrix view of a shared local memory buffer (which must hold it)."""

    name = "xegpu.create_mem_desc"

    source = operand_def(MemRefType)
    mem_desc = result_def(MemDescType)

    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($mem_desc)"

    def verify_(self) -> None:
        src = self.source.type
        assert isinstance(src, MemRefType)
        if memory_space_name(src.memory_space) != "workgroup":
            raise VerifyException(f"a mem_desc views shared local memory (memory space 3), not {src}")
        if DYNAMIC in src.get_shape():
            raise VerifyException(f"a mem_desc views a buffer of static size, not {src}")
        md = self.mem_desc.type
        assert isinstance(md, MemDescType)
        have = prod(src.get_shape()) * _bytes(src.element_type)
        need = prod(md.get_shape()) * _bytes(md.element_type)
        if have < need:
            raise VerifyException(f"{src} holds {have} bytes, but {md} needs {need}")

def _bits(t: Attribute) -> int:
    return int(getattr(t, "bitwidth", None) or getattr(getattr(t, "width", None), "data", None) or 32)


def _bytes(t: Attribute) -> int:
    return max(1, _bits(t) // 8)

def _check_matrix(op: IRDLOperation, data: Attribute, md: MemDescType) -> None:
    n = check_mixed_indices("offsets", op.offsets, op.const_offsets)
    if n != md.rank:
        raise VerifyException(f"{n} offsets for a rank-{md.rank} mem_desc")
    elt = data.element_type if isinstance(data, VectorType) else data
    if elt != md.element_type:
        raise VerifyException(f"the data is {elt} but the mem_desc holds {md.element_type}")
    if not isinstance(data, VectorType):
        if op.subgroup_block_io is not None:
            raise VerifyException("subgroup_block_io needs vector data")
        return
    shape = tuple(data.get_shape())
    if len(shape) > md.rank:
        raise VerifyException(f"vector<{shape_text(shape)}> has more dims than the mem_desc {shape_text(md.get_shape())}")
    if any(d > m for d, m in zip(reversed(shape), reversed(md.get_shape()))):
        raise VerifyException(f"vector<{shape_text(shape)}> exceeds the mem_desc {shape_text(md.get_shape())}")
    if len(shape) == md.rank:
        _check_fits(op.layout, "layout", shape, "the data")


class _MatrixOp(_XeGPUOp):
    """What load_matrix and store_matrix share: offsets, the layout and the block-io hint."""

    const_offsets = opt_prop_def(DenseArrayBase)
    layout = opt_prop_def(Attribute)
    subgroup_block_io = opt_prop_def(UnitAttr)


@mlir_op
class LoadMatrixOp(_MatrixOp):
    """``%v = xegpu.load_matrix %m[%i, 0] <{layout = #l}> : !xegpu.mem_desc<64x128xf32>, index
    -> vector<32x32xf32>``: the block of the matrix at the offsets (a lane's own block at
    lane level)."""

    name = "xegpu.load_matrix"
    traits = traits_def(MemoryReadEffect())

    mem_desc = operand_def(MemDescType)
    offsets = var_operand_def(IndexType)
    data = result_def()

    assembly_format = (
        "$mem_desc custom<IndexList>($offsets, $const_offsets) attr-dict `:` type($mem_desc) (`,` type($offsets)^)? "
        "`->` type($data)"
    )

    def verify_(self) -> None:
        _check_matrix(self, self.data.type, self.mem_desc.type)


@mlir_op
class StoreMatrixOp(_MatrixOp):
    """``xegpu.store_matrix %v, %m[%i, 0] <{layout = #l}> : vector<32x32xf32>,
    !xegpu.mem_desc<64x128xf32>, index``."""

    name = "xegpu.store_matrix"
    traits = traits_def(MemoryWriteEffect())

    data = operand_def()
    mem_desc = operand_def(MemDescType)
    offsets = var_operand_def(IndexType)

    assembly_format = (
        "$data `,` $mem_desc custom<IndexList>($offsets, $const_offsets) attr-dict `:` type($data) `,` "
        "type($mem_desc) (`,` type($offsets)^)?"
    )

    def verify_(self) -> None:
        _check_matrix(self, self.data.type, self.mem_desc.type)


# --- named barriers and fences -----------------------------------------------------------


@irdl_attr_definition
class NbarrierType(ParametrizedAttribute, TypeAttribute):
    """``!xegpu.nbarrier``: a named barrier, as `init_nbarrier` makes it."""

    name = "xegpu.nbarrier"


@mlir_op
class AllocNbarrierOp(_XeGPUOp):
    """``xegpu.alloc_nbarrier 8``: reserves the kernel's named barriers."""

    name = "xegpu.alloc_nbarrier"

    nbarrier_num = prop_def(IntegerAttr[I64])
    assembly_format = "$nbarrier_num attr-dict"


@mlir_op
class InitNbarrierOp(_XeGPUOp):
    """``%nb = xegpu.init_nbarrier %id, %threads : i8, i8 -> !xegpu.nbarrier``: named
    barrier `id` for `threads` participating threads."""

    name = "xegpu.init_nbarrier"

    nbarrier_id = operand_def(IntegerType)
    participant_thread_num = operand_def(IntegerType)
    result = result_def(NbarrierType)
    assembly_format = (
        "$nbarrier_id `,` $participant_thread_num attr-dict `:` type($nbarrier_id) `,` "
        "type($participant_thread_num) `->` type($result)"
    )


class _NbarrierUseOp(_XeGPUOp):
    """An op on one named barrier: ``xegpu.<op> %nb : !xegpu.nbarrier``."""

    nbarrier = operand_def(NbarrierType)
    assembly_format = "$nbarrier attr-dict `:` type($nbarrier)"


@mlir_op
class NbarrierArriveOp(_NbarrierUseOp):
    """``xegpu.nbarrier_arrive %nb : !xegpu.nbarrier``: this thread reached the barrier."""

    name = "xegpu.nbarrier_arrive"


@mlir_op
class NbarrierWaitOp(_NbarrierUseOp):
    """``xegpu.nbarrier_wait %nb : !xegpu.nbarrier``: waits until every participant arrived."""

    name = "xegpu.nbarrier_wait"


FenceMemoryKind = keyword_enum("FenceMemoryKind", "global slm", __name__)
FenceMemoryKindAttr = enum_attr("xegpu.memory_space", FenceMemoryKind,
                                "``#xegpu.memory_space<slm>``: global memory or shared local memory.",
                                keyword_of="memory kind")
FenceScope = keyword_enum("FenceScope", "workgroup gpu", __name__)
FenceScopeAttr = enum_attr("xegpu.fence_scope", FenceScope, "``#xegpu.fence_scope<gpu>``: who sees a fence.",
                           keyword_of="fence scope")


@mlir_op
class FenceOp(_XeGPUOp):
    """``xegpu.fence memory_kind = global, fence_scope = workgroup``: memory accesses before
    it are seen by the scope before those after it."""

    name = "xegpu.fence"

    memory_kind = prop_def(FenceMemoryKindAttr)
    fence_scope = prop_def(FenceScopeAttr)
    custom_directives = (EnumKeyword,)
    assembly_format = (
        "attr-dict `memory_kind` `=` custom<EnumKeyword>($memory_kind) `,` `fence_scope` `=` "
        "custom<EnumKeyword>($fence_scope)"
    )


# --- microscaled DPAS ----------------------------------------------------------------------


@irdl_op_definition
class DpasMxOp(_MatrixMultiplyOp):
    """``%d = xegpu.dpas_mx %a, %b, %c scale_a = %sa scale_b = %sb {layout_a = ..} :
    (vector<..>, vector<..>, vector<..>, vector<..xf8E8M0FNU>, vector<..xf8E8M0FNU>) ->
    vector<..>``: DPAS of microscaled (MX) operands, each block of K (K / the scales' K
    elements: 32 on the hardware) multiplied by its scale (`simtify.sim.ops.xegpu`)."""

    name = "xegpu.dpas_mx"

    scale_a = opt_operand_def(VectorType | AnyFloat)
    scale_b = opt_operand_def(VectorType | AnyFloat)
    layout_a_scale = opt_prop_def(Attribute)
    layout_b_scale = opt_prop_def(Attribute)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    LAYOUTS: ClassVar = ("layout_a", "layout_b", "layout_cd", "layout_a_scale", "layout_b_scale")

    # Hand-written: the types of the optional operands follow the operands present (a
    # format's optional groups would give the first scale's type to a missing
    # accumulator), in parentheses or bare, as dpas writes its types; upstream's bare
    # form may also write C/D's type third where there is no accumulator.
    @classmethod
    def parse(cls, parser: Parser) -> DpasMxOp:
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        acc = parser.parse_unresolved_operand() if parser.parse_optional_punctuation(",") is not None else None
        scales = []
        for key in ("scale_a", "scale_b"):
            if parser.parse_optional_keyword(key) is not None:
                parser.parse_punctuation("=")
                scales.append(parser.parse_unresolved_operand())
            else:
                scales.append(None)
        props, attrs = parse_properties_and_attributes(parser, cls.LAYOUTS)
        parser.parse_punctuation(":")
        pos = parser.pos
        paren = parser.parse_optional_punctuation("(") is not None
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        if paren:
            parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        result = parser.parse_type()
        given = [lhs, rhs, acc, *scales]
        present = [o for o in given if o is not None]
        if not paren and acc is None and len(types) == len(present) + 1:
            # upstream's bare form writes C/D's type third even without an accumulator
            if types[2] != result:
                parser.raise_error(f"the third type (C/D's) is {types[2]}, but the result is {result}", pos)
            del types[2]
        if len(types) != len(present):
            parser.raise_error(f"expected {len(present)} operand types (A, B"
                               f"{', C' if acc else ''}{', scale_a' if scales[0] else ''}"
                               f"{', scale_b' if scales[1] else ''}), got {len(types)}", pos)
        resolved = iter([parser.resolve_operand(o, t) for o, t in zip(present, types)])
        by_name = dict(zip(("lhs", "rhs", "acc", "scale_a", "scale_b"),
                           ([next(resolved)] if o is not None else [] for o in given)))
        operands = [by_name[name] for name, _ in cls.get_irdl_definition().operands]
        return cls.build(operands=operands, result_types=[result], properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        if self.acc is not None:
            printer.print_string(", ")
            printer.print_operand(self.acc)
        for key, value in (("scale_a", self.scale_a), ("scale_b", self.scale_b)):
            if value is not None:
                printer.print_string(f" {key} = ")
                printer.print_operand(value)
        print_sorted_attr_dict(printer, {k: v for k, v in self.properties.items() if k in self.LAYOUTS},
                               braces="<{}>")
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : (")
        given = (self.lhs, self.rhs, self.acc, self.scale_a, self.scale_b)
        printer.print_list([o.type for o in given if o is not None], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        self.verify_accumulator()


XeGPU = Dialect(
    "xegpu",
    [CreateNdDescOp, LoadNdOp, StoreNdOp, PrefetchNdOp, UpdateNdOffsetOp, DpasOp, ConvertLayoutOp, LoadGatherOp, StoreScatterOp,
     PrefetchOp, CreateMemDescOp, LoadMatrixOp, StoreMatrixOp, AllocNbarrierOp, InitNbarrierOp, NbarrierArriveOp,
     NbarrierWaitOp, FenceOp, DpasMxOp],
    [LayoutAttr, SliceAttr, SgMapAttr, WgMapAttr, RangeAttr, CacheHintAttr, BlockTensorDescAttr, TensorDescType,
     MemLayoutAttr, MemDescType, NbarrierType, FenceMemoryKindAttr, FenceScopeAttr],
)

DIALECTS: list[Dialect] = [XeGPU]
