"""The ``iree_gpu`` dialect: lowering configs, promotion markers and DMA copies.

``#iree_gpu.lowering_config<{...}>`` is a dictionary, as in IREE. The entries this
project reads get their meaning here: the tile levels ``workgroup``, ``thread``,
``partial_reduction``, ``serial``, ``reduction``, ``subgroup`` and ``lane`` are integer
lists (0 meaning "not tiled at this level"); ``lane_basis`` and ``subgroup_basis`` are
`simtify.layout.Basis` values ``[[counts], [mapping]]``; ``expand_dims`` is an
`ExpandDimsAttr`. Any other entry (``mma_kind``, ``promote_operands``, ...) is kept
as written. Like every MLIR dictionary the entries print sorted by name, which is how
IREE prints them too (the order written is not kept by IREE either).

``#iree_gpu.expand_dims`` and ``iree_gpu.global_load_dma`` are from the seeds; IREE
removed both (expand_dims in 2026-03, global_load_dma in 2025-12), so they keep the
seeds' syntax and iree-opt 3.12 does not parse them. ``iree_gpu.coalesced_gather_dma``
and ``iree_gpu.async_dma`` are what IREE 3.12 has instead, read and printed in its
syntax.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from xdsl.dialects.builtin import (
    I32,
    AffineMapAttr,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    TensorType,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Data, Dialect, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    CustomDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from simtify.errors import SimtifyError
from simtify.ir.assembly import (
    DYNAMIC,
    KeywordAttr,
    ParameterlessAttr,
    YieldTerminator,
    format_dynamic_ints,
    format_int_tree,
    int_tree_of,
    memory_space_name,
    mlir_op,
    parse_int_list,
    parse_int_tree,
    print_attribute_value,
    print_indexed,
    print_sorted_attr_dict,
    shape_text,
)
from simtify.ir.effects import SimtOnly
from simtify.layout.basis import Basis
from simtify.layout.syntax import format_ints

if TYPE_CHECKING:  # imported where used: the dialect is read by files that never configure a reduction
    from simtify.layout.reduction_config import ExpandDims, ReductionConfig

# --- small attributes ----------------------------------------------------------------


@irdl_attr_definition
class DerivedThreadConfigAttr(ParameterlessAttr):
    """``#iree_gpu.derived_thread_config``: distribute this op (often a copy) over threads
    with tile sizes derived after earlier tiling; also the value of a to_layout's
    ``shared_memory_conversion`` in IREE 3.12."""

    name = "iree_gpu.derived_thread_config"


@irdl_attr_definition
class UseGlobalLoadDMAAttr(ParameterlessAttr):
    """``#iree_gpu.use_global_load_dma``: lower this copy to direct global-to-LDS loads."""

    name = "iree_gpu.use_global_load_dma"


PIPELINES = (
    "Default",
    "BaseLowering",
    "Distribute",
    "Vectorize",
    "VectorDistribute",
    "WinogradVectorize",
    "TileAndFuse",
)


@irdl_attr_definition
class PipelineAttr(KeywordAttr):
    """``#iree_gpu.pipeline<VectorDistribute>``: an LLVMGPU lowering pipeline (the
    ``pipeline`` of a translation_info in IREE 3.12)."""

    name = "iree_gpu.pipeline"
    KEYWORDS = PIPELINES
    WHAT = "LLVMGPU pipeline"


def _parse_keyed_bool(parser: AttrParser, key: str) -> bool:
    """``key = true`` (or false)."""
    parser.parse_keyword(key)
    parser.parse_punctuation("=")
    return parser.parse_boolean()


@irdl_attr_definition
class MMALayoutAttr(Data[tuple[str, bool]]):
    """``#iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>`` (optionally ``, col_major = true``):
    the MMA intrinsic a layout was derived from; kept by name."""

    name = "iree_gpu.mma_layout"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[str, bool]:
        with parser.in_angle_brackets():
            intrinsic = parser.parse_identifier()
            col_major = parser.parse_optional_punctuation(",") is not None and _parse_keyed_bool(parser, "col_major")
        return (intrinsic, col_major)

    def print_parameter(self, printer: Printer) -> None:
        intrinsic, col_major = self.data
        printer.print_string(f"<{intrinsic}{', col_major = true' if col_major else ''}>")


@irdl_attr_definition
class MMASemanticsAttr(Data[tuple[bool, bool]]):
    """``#iree_gpu.mma_semantics<distributed = false, opaque = true>`` on an
    ``iree_codegen.inner_tiled``: whether its inner tiles are a subgroup's whole matrices
    (false) or each lane's fragment (true), and whether only their element count must
    match the intrinsic's (opaque) or also their shape. IREE 3.12 requires both keys."""

    name = "iree_gpu.mma_semantics"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[bool, bool]:
        with parser.in_angle_brackets():
            distributed = _parse_keyed_bool(parser, "distributed")
            if parser.parse_optional_punctuation(",") is None:
                parser.raise_error("expected ', opaque = true|false' (IREE 3.12 requires both keys)")
            opaque = _parse_keyed_bool(parser, "opaque")
        return (distributed, opaque)

    def print_parameter(self, printer: Printer) -> None:
        distributed, opaque = self.data
        printer.print_string(f"<distributed = {str(distributed).lower()}, opaque = {str(opaque).lower()}>")

    @property
    def distributed(self) -> bool:
        return self.data[0]

    @property
    def opaque(self) -> bool:
        return self.data[1]


@irdl_attr_definition
class ExpandDimsAttr(Data[tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]]):
    """``#iree_gpu.expand_dims<[[0], [1], [2, 3]], output_shape = [?, ?, ?, 8]>`` (seed):
    split iteration dims as tensor.expand_shape does; group i lists the expanded dims of
    original dim i, and at most one size per group is ``?`` (inferred)."""

    name = "iree_gpu.expand_dims"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
        start = parser.pos
        with parser.in_angle_brackets():
            groups = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_int_list(parser))
            parser.parse_punctuation(",")
            parser.parse_keyword("output_shape")
            parser.parse_punctuation("=")
            shape = parse_int_list(parser, allow_dynamic=True)
        try:
            return cls.check(tuple(groups), shape)
        except SimtifyError as e:
            parser.raise_error(f"invalid expand_dims: {e.what}", start, parser.pos)

    @staticmethod
    def check(groups: tuple[tuple[int, ...], ...], shape: tuple[int, ...]):
        from simtify.layout.reduction_config import ExpandDims

        ExpandDims(groups, shape)  # raises SimtifyError saying what is wrong
        return (groups, shape)

    def print_parameter(self, printer: Printer) -> None:
        groups, shape = self.data
        printer.print_string(
            "<[" + ", ".join(format_ints(g) for g in groups) + f"], output_shape = {format_dynamic_ints(shape)}>"
        )

    @property
    def reassociation(self) -> tuple[tuple[int, ...], ...]:
        return self.data[0]

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.data[1]

    @property
    def value(self) -> ExpandDims:
        """The expansion as a `simtify.layout.reduction_config.ExpandDims` (``?`` is None)."""
        from simtify.layout.reduction_config import ExpandDims

        return ExpandDims(*self.data)

    def expand(self, sizes: Sequence[int]) -> tuple[int, ...] | None:
        """The expanded sizes of an iteration space of `sizes`, or None where the
        expansion is not statically valid (IREE then ignores it): a wrong rank, or a
        size the static factors of its group do not divide."""
        return self.value.expand(sizes)


# --- lowering_config -----------------------------------------------------------------

TILE_LEVELS = ("workgroup", "thread", "partial_reduction", "serial", "reduction", "subgroup", "lane")
BASES = ("lane_basis", "subgroup_basis")


def _freeze(tree: Any) -> Any:
    return tuple(_freeze(t) for t in tree) if isinstance(tree, list) else tree


@irdl_attr_definition
class LoweringConfigAttr(Data[tuple[tuple[str, Any], ...]]):
    """``#iree_gpu.lowering_config<{workgroup = [4, 1, 0, 0], thread = [0, 0, 1, 8],
    partial_reduction = [0, 0, 64, 0], lane_basis = [[1, 1, 64, 1], [0, 1, 2, 3]],
    subgroup_basis = [[1, 1, 1, 1], [0, 1, 2, 3]], expand_dims = #iree_gpu.expand_dims<..>}>``.

    Held as (name, value) pairs sorted by name: tile levels as int tuples, bases as
    `Basis`, other integer lists as nested tuples, anything else as its attribute.
    All tile levels and basis mappings must cover the same number of iteration dims."""

    name = "iree_gpu.lowering_config"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[tuple[str, Any], ...]:
        start = parser.pos
        entries: dict[str, Any] = {}

        def entry() -> None:
            pos = parser.pos
            key = parser.parse_identifier_or_str_literal()
            if key in entries:
                parser.raise_error(f"'{key}' is given twice", pos)
            if parser.parse_optional_punctuation("=") is None:
                entries[key] = UnitAttr()
                return
            value_pos = parser.pos
            if key in TILE_LEVELS:
                entries[key] = parse_int_list(parser)
            elif key in BASES:
                tree = parse_int_tree(parser)
                if not (isinstance(tree, list) and len(tree) == 2 and all(isinstance(t, list) for t in tree)):
                    parser.raise_error(f"{key} is [[counts], [mapping]]", value_pos, parser.pos)
                try:
                    entries[key] = Basis(tuple(tree[0]), tuple(tree[1]))  # type: ignore[arg-type]
                except SimtifyError as e:
                    parser.raise_error(f"invalid {key}: {e.what}", value_pos, parser.pos)
            else:
                attr = parser.parse_attribute()
                if key == "expand_dims" and not isinstance(attr, ExpandDimsAttr):
                    parser.raise_error(f"expand_dims must be an #iree_gpu.expand_dims, not {attr}", value_pos)
                tree = int_tree_of(attr) if isinstance(attr, ArrayAttr) else None
                entries[key] = _freeze(tree) if tree is not None else attr

        with parser.in_angle_brackets():
            parser.parse_comma_separated_list(parser.Delimiter.BRACES, entry)
        try:
            return cls.check(entries)
        except SimtifyError as e:
            parser.raise_error(f"invalid lowering_config: {e.what}", start, parser.pos)

    @staticmethod
    def check(entries: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        """Sorted pairs, after checking that tile levels and bases agree on the rank."""
        ranks = {k: len(entries[k]) for k in TILE_LEVELS if k in entries}
        ranks.update({k: len(entries[k].mapping) for k in BASES if k in entries})
        if len(set(ranks.values())) > 1:
            desc = ", ".join(f"{k} {r}" for k, r in sorted(ranks.items()))
            raise SimtifyError(f"tile levels and basis mappings cover different numbers of dims ({desc})")
        expand = entries.get("expand_dims")
        if isinstance(expand, ExpandDimsAttr) and ranks and expand.value.expanded_rank not in ranks.values():
            raise SimtifyError(f"expand_dims expands to {expand.value.expanded_rank} dims but the tile levels "
                               f"cover {next(iter(ranks.values()))} (they are written for the expanded space)")
        return tuple(sorted(entries.items()))

    @classmethod
    def from_entries(cls, **entries: Any) -> LoweringConfigAttr:
        """Build a config from Python values (tuples for levels, `Basis` for bases)."""
        return cls(cls.check({k: tuple(v) if isinstance(v, list) else v for k, v in entries.items()}))

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<{")
        for k, (key, value) in enumerate(self.data):
            if k:
                printer.print_string(", ")
            printer.print_identifier_or_string_literal(key)
            if isinstance(value, UnitAttr):
                continue
            printer.print_string(" = ")
            if isinstance(value, Basis):
                printer.print_string(str(value))
            elif isinstance(value, Attribute):
                print_attribute_value(printer, value)
            else:
                printer.print_string(format_int_tree(value))
        printer.print_string("}>")

    def get(self, key: str) -> Any:
        return dict(self.data).get(key)

    def tile_sizes(self, level: str) -> tuple[int, ...] | None:
        """The sizes of a tile level (``workgroup``, ``thread``, ...), or None if absent."""
        if level not in TILE_LEVELS:
            raise KeyError(f"unknown tile level '{level}' (expected one of {', '.join(TILE_LEVELS)})")
        return self.get(level)

    @property
    def lane_basis(self) -> Basis | None:
        return self.get("lane_basis")

    @property
    def subgroup_basis(self) -> Basis | None:
        return self.get("subgroup_basis")

    @property
    def expand_dims(self) -> ExpandDimsAttr | None:
        return self.get("expand_dims")

    def reduction_config(self) -> ReductionConfig:
        """What a reduction reads from this config (`simtify.layout.reduction_config`);
        an error if it lacks a basis."""
        from simtify.layout.reduction_config import ReductionConfig

        entries = {k: v for k, v in self.data if k in TILE_LEVELS or k in BASES}
        if self.expand_dims is not None:
            entries["expand_dims"] = self.expand_dims.value
        return ReductionConfig.from_entries(entries)


# --- DMA ops ---------------------------------------------------------------------------


def _shape(type_: Attribute) -> tuple[int, ...]:
    assert isinstance(type_, MemRefType | TensorType | VectorType)
    return tuple(type_.get_shape())


def _check_tensor_form(result: SSAValue | None, dest: Attribute, what: str) -> None:
    """A DMA op's two forms: into a tensor it returns the updated `what` (of its type),
    into a memref nothing."""
    if isinstance(dest, TensorType) != (result is not None):
        raise VerifyException(f"the tensor form returns the updated {what}; the memref form returns nothing")
    if result is not None and result.type != dest:
        raise VerifyException(f"the result {result.type} must have the {what}'s type {dest}")


@irdl_op_definition
class GlobalLoadDMAOp(IRDLOperation):
    """Seed op: each lane of a subgroup copies 32 bits (as IREE lowered it; a
    ``transfer_type`` attribute such as ``{transfer_type = vector<4xf32>}`` names another
    width) from global memory at ``src[src_indices]`` to slot ``lane_id`` from
    ``dst[dst_indices]`` in workgroup memory: `amdgpu.gather_to_lds`'s meaning.

    ``iree_gpu.global_load_dma %src[%i, %j] -> %dst[%k, %l] : memref<..> -> memref<..>``
    (the form IREE had before removing it), or on tensors with a result:
    ``%r = iree_gpu.global_load_dma %src[..] -> %dst[..] : tensor<..>, tensor<..> ->
    tensor<..>``. The seed's index-free ``%src, %dst : T0, T1`` is read as empty index
    lists."""

    name = "iree_gpu.global_load_dma"

    source = operand_def(MemRefType | TensorType)
    source_indices = var_operand_def(IndexType)
    target = operand_def(MemRefType | TensorType)
    target_indices = var_operand_def(IndexType)
    result = opt_result_def(TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(SimtOnly())

    # Hand-written: it also reads the seed's ``%a, %b : T0, T1`` (separators and index
    # lists a format cannot make interchangeable or optional while always printing them).
    @classmethod
    def parse(cls, parser: Parser) -> GlobalLoadDMAOp:
        def indexed() -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
            value = parser.parse_unresolved_operand()
            return value, parser.parse_optional_comma_separated_list(Parser.Delimiter.SQUARE,
                                                                     parser.parse_unresolved_operand) or []

        def arrow_or_comma() -> None:
            if parser.parse_optional_punctuation("->") is None:
                parser.parse_punctuation(",", " or '->'")

        source, src_idx = indexed()
        arrow_or_comma()
        target, dst_idx = indexed()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        arrow_or_comma()
        target_type = parser.parse_type()
        result_types = [parser.parse_type()] if parser.parse_optional_punctuation("->") is not None else []
        index = IndexType()
        return cls(
            operands=[
                parser.resolve_operand(source, source_type),
                [parser.resolve_operand(o, index) for o in src_idx],
                parser.resolve_operand(target, target_type),
                [parser.resolve_operand(o, index) for o in dst_idx],
            ],
            result_types=[result_types],
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        print_indexed(printer, self.source, self.source_indices)
        printer.print_string(" ->")
        print_indexed(printer, self.target, self.target_indices)
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        types = [self.source.type, self.target.type] + ([self.result.type] if self.result is not None else [])
        printer.print_list(types[:-1], printer.print_attribute)  # memrefs: ``T0 -> T1``; tensors: ``T0, T1 -> T2``
        printer.print_string(" -> ")
        printer.print_attribute(types[-1])
    def verify_(self) -> None:
        src, dst = self.source.type, self.target.type
        if isinstance(src, TensorType) != isinstance(dst, TensorType):
            raise VerifyException("global_load_dma copies memref to memref or tensor to tensor")
        _check_tensor_form(self.result, dst, "target")
        for what, t, idx in (("source", src, self.source_indices), ("target", dst, self.target_indices)):
            shape = _shape(t)
            if DYNAMIC in shape:
                raise VerifyException(f"the {what} must have a static shape, not {shape_text(shape)}")
            if idx and len(idx) != len(shape):
                raise VerifyException(f"{len(idx)} {what} indices for a {what} of rank {len(shape)}")
        if src.get_element_type() != dst.get_element_type():  # type: ignore[union-attr]
            raise VerifyException(
                f"source and target element types differ: {src.get_element_type()} vs {dst.get_element_type()}"  # type: ignore[union-attr]
            )
        if isinstance(dst, MemRefType) and memory_space_name(dst.memory_space) != "workgroup":
            raise VerifyException("the target must be in workgroup memory (#gpu.address_space<workgroup>)")


@mlir_op
class CoalescedGatherDMAOp(IRDLOperation):
    """IREE 3.12: a subgroup gathers rows of `source` (optionally through `indices`) into
    `init`, lane `lane` writing its part of the coalesced chunk.

    ``iree_gpu.coalesced_gather_dma %src[%idx] into %init lane(%l) in_bounds [true,
    false] : memref<..>, vector<..xindex>, memref<..>, index`` (tensor operands add
    ``-> tensor<..>``)."""

    name = "iree_gpu.coalesced_gather_dma"
    traits = traits_def(SimtOnly())

    source = operand_def(MemRefType | TensorType)
    indices = var_operand_def()
    init = operand_def(MemRefType | TensorType)
    lane = operand_def(IndexType)
    in_bounds = opt_prop_def(ArrayAttr)
    result = opt_result_def(MemRefType | TensorType)

    assembly_format = (
        "$source (`[` $indices^ `]`)? `into` $init `lane` `(` $lane `)` (`in_bounds` $in_bounds^)? attr-dict "
        "`:` type(operands) (`->` type($result)^)?"
    )

    def verify_(self) -> None:
        init = self.init.type
        _check_tensor_form(self.result, init, "init")
        rank = len(_shape(init))
        if self.source.type.get_element_type() != init.get_element_type():  # type: ignore[union-attr]
            raise VerifyException("source and init element types differ")
        if len(self.indices) > rank:
            raise VerifyException(f"{len(self.indices)} index operands for an init of rank {rank}")
        for v in self.indices:
            t = v.type
            ok = isinstance(t, VectorType | TensorType | MemRefType) and len(_shape(t)) == 1
            if not ok:
                raise VerifyException(f"each index operand is a 1-D vector, tensor or memref of indices, not {t}")
        if self.in_bounds is not None and len(self.in_bounds.data) != rank:
            raise VerifyException(f"in_bounds has {len(self.in_bounds.data)} entries for an init of rank {rank}")


@irdl_custom_directive
class IndexTypes(CustomDirective):
    """`` [index, vector<64xindex>]`` after the source type: the source indices' types,
    written only where one of them is not ``index``."""

    types: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        count = len(state.operands[self.types.inner.index] or ())  # type: ignore[attr-defined]
        types = parser.parse_optional_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_type)
        if types is not None and len(types) != count:
            parser.raise_error(f"{count} source indices but {len(types)} index types")
        self.types.set(state, types if types is not None else [IndexType()] * count)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        types = self.types.get(op)
        if not all(isinstance(t, IndexType) for t in types):
            printer.print_string(" [")
            printer.print_list(types, printer.print_attribute)
            printer.print_string("]")


@mlir_op
class AsyncDMAOp(IRDLOperation):
    """IREE 3.12: an asynchronous copy of a `transfer_type` tile from `source` to `dest`
    without passing through registers; a vector source index gathers.

    ``iree_gpu.async_dma %src[%i, %j] to %dst[%c0], vector<64xf16> permutation_map
    affine_map<(d0, d1) -> (d1)> in_bounds [true] : memref<..>, memref<..>`` (index
    types other than ``index`` are listed after the source type: ``memref<..> [vector<
    64xindex>, index]``; tensors add ``-> tensor<..>``)."""

    name = "iree_gpu.async_dma"

    source = operand_def(MemRefType | TensorType)
    source_indices = var_operand_def()
    dest = operand_def(MemRefType | TensorType)
    dest_indices = var_operand_def(IndexType)
    transfer_type = prop_def(VectorType)
    permutation_map = opt_prop_def(AffineMapAttr)
    in_bounds = opt_prop_def(ArrayAttr)
    result = opt_result_def(MemRefType | TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (IndexTypes,)
    assembly_format = (
        "$source `[` $source_indices `]` `to` $dest `[` $dest_indices `]` `,` $transfer_type "
        "(`permutation_map` $permutation_map^)? (`in_bounds` $in_bounds^)? attr-dict `:` type($source) "
        "custom<IndexTypes>(type($source_indices)) `,` type($dest) (`->` type($result)^)?"
    )

    def verify_(self) -> None:
        src, dst = _shape(self.source.type), _shape(self.dest.type)
        if len(self.source_indices) != len(src):
            raise VerifyException(f"{len(self.source_indices)} source indices for a source of rank {len(src)}")
        if len(self.dest_indices) != len(dst):
            raise VerifyException(f"{len(self.dest_indices)} dest indices for a dest of rank {len(dst)}")
        transfer = self.transfer_type
        assert isinstance(transfer, VectorType)
        if transfer.element_type != self.source.type.get_element_type():  # type: ignore[union-attr]
            raise VerifyException(f"transfer_type {transfer} must hold the source's elements")
        if len(src) != len(dst) and self.permutation_map is None:
            raise VerifyException("source and dest ranks differ: a permutation_map is needed")
        if self.permutation_map is not None:
            m = self.permutation_map.data
            if m.num_dims != len(src) or len(m.results) != transfer.get_num_dims():
                raise VerifyException(
                    f"permutation_map {m} must map {len(src)} source dims to {transfer.get_num_dims()} transfer dims"
                )
        for v in self.source_indices:
            t = v.type
            if not (isinstance(t, IndexType) or (isinstance(t, VectorType) and isinstance(t.element_type, IndexType))):
                raise VerifyException(f"a source index is index or vector<..xindex>, not {t}")
        _check_tensor_form(self.result, self.dest.type, "dest")
        if self.in_bounds is not None and len(self.in_bounds.data) != transfer.get_num_dims():
            raise VerifyException(
                f"in_bounds has {len(self.in_bounds.data)} entries for a rank-{transfer.get_num_dims()} transfer"
            )


@irdl_op_definition
class YieldOp(YieldTerminator):
    """``iree_gpu.yield %v : f32``: the combined value of a subgroup_scan combiner."""

    name = "iree_gpu.yield"


@mlir_op
class SubgroupScanOp(IRDLOperation):
    """``%scan, %total = iree_gpu.subgroup_scan (inclusive)? (%x(, identity = %id : f32)?)
    (cluster(size = 4(, stride = 2)?))? { ^bb0(%a: f32, %b: f32): ... iree_gpu.yield %c :
    f32 } : f32`` (what IREE's scan distribution emits): lane p of each cluster (lanes
    base + q·stride, q < size) gets x_0 ∘ … ∘ x_p (inclusive) or id ∘ x_0 ∘ … ∘ x_(p-1)
    (exclusive); %total is x_0 ∘ … ∘ x_(size-1). No cluster: the whole subgroup."""

    name = "iree_gpu.subgroup_scan"
    T: ClassVar = VarConstraint("T", AnyAttr())
    value = operand_def(T)
    identity = opt_operand_def(T)
    inclusive = opt_prop_def(UnitAttr)
    cluster_size = opt_prop_def(IntegerAttr[I32])
    cluster_stride = opt_prop_def(IntegerAttr[I32], default_value=IntegerAttr(1, 32))
    result = result_def(T)
    total = result_def(T)
    combiner = region_def("single_block")

    SORTED_ATTR_DICT: ClassVar[bool] = False
    assembly_format = (
        "(`inclusive` $inclusive^)? ` ` `(` $value (`,` `identity` `=` $identity^ `:` type($identity))? `)` "
        "(`cluster` `(` `size` `=` $cluster_size^ (`,` `stride` `=` $cluster_stride^)? `)`)? $combiner attr-dict "
        "`:` type($value)"
    )

    def verify_(self) -> None:
        if self.inclusive is None and self.identity is None:
            raise VerifyException("an exclusive subgroup_scan needs an identity")
        t = self.value.type  # (identity and results have it too: constraint T)
        block = self.combiner.block
        if len(block.args) != 2 or any(a.type != t for a in block.args):
            raise VerifyException(f"the combiner takes two {t} arguments")
        if not isinstance(block.last_op, YieldOp) or len(block.last_op.values) != 1:
            raise VerifyException("the combiner must end with iree_gpu.yield of one value")


@irdl_attr_definition
class PipelineOptionsAttr(Data[tuple[tuple[str, str], ...]]):
    """``#iree_gpu.pipeline_options<key = value, ..>``: options of the LLVMGPU pipeline
    (booleans, integers, ``<Enum>`` values), kept as written."""

    name = "iree_gpu.pipeline_options"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[tuple[str, str], ...]:
        entries = []
        with parser.in_angle_brackets():
            if parser.parse_optional_punctuation(">") is not None:  # pragma: no cover - empty
                return ()
            while True:
                key = parser.parse_identifier()
                parser.parse_punctuation("=")
                pos = parser.pos
                if parser.parse_optional_punctuation("<") is not None:
                    value = "<" + parser.parse_identifier() + ">"
                    parser.parse_punctuation(">")
                elif (b := parser.parse_optional_boolean()) is not None:
                    value = "true" if b else "false"
                elif (n := parser.parse_optional_integer(allow_boolean=False)) is not None:
                    value = str(n)
                else:
                    parser.raise_error("expected a boolean, an integer or <Enum>", pos)
                entries.append((key, value))
                if parser.parse_optional_punctuation(",") is None:
                    break
        return tuple(entries)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<" + ", ".join(f"{k} = {v}" for k, v in self.data) + ">")


IREEGPU = Dialect(
    "iree_gpu",
    [GlobalLoadDMAOp, CoalescedGatherDMAOp, AsyncDMAOp, SubgroupScanOp, YieldOp],
    [
        LoweringConfigAttr,
        ExpandDimsAttr,
        DerivedThreadConfigAttr,
        UseGlobalLoadDMAAttr,
        PipelineAttr,
        MMALayoutAttr,
        MMASemanticsAttr,
        PipelineOptionsAttr,
    ],
)

DIALECTS: list[Dialect] = [IREEGPU]
