"""The ``iree_codegen`` attributes: how a function is compiled and how an op is tiled.

``#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute>
workgroup_size = [256, 1, 1] subgroup_size = 64, {config}>`` on a function gives the
threads of a workgroup and the lanes of a subgroup, which vector distribution needs
(and `iree-llvmgpu-vector-distribute` requires). Since IREE 3.12 the pipeline is an
attribute; the older bare names (``pipeline = LLVMGPUVectorDistribute``) are read and
printed in the 3.12 form. ``#iree_codegen.lowering_config<tile_sizes = [[..], ..]>``
is IREE's default (non-GPU-specific) config.

The dispatch-level ops: ``iree_codegen.workgroup_count_hint(512)`` (the grid the
function wants), ``iree_codegen.dispatch_config @f workgroup_size = [..] subgroup_size
= N {..}`` (the launch of ``@f`` once the translation_info is gone, with its workgroup
count region ending in ``iree_codegen.yield``), and ``#iree_codegen.workgroup_mapping<x>``
on the ``scf.forall`` over workgroups of the tiled stages.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ShapedType,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Data, Dialect, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.declarative_assembly_format import (
    CustomDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import (
    ParameterlessAttr,
    ParenIndexList,
    YieldTerminator,
    int_tree_of,
    mlir_op,
    parse_int_list,
    print_attribute_value,
)
from simtify.ir.iree_gpu import PIPELINES, MMALayoutAttr, MMASemanticsAttr, PipelineAttr
from simtify.layout.syntax import format_ints


@irdl_attr_definition
class NoPipelineAttr(ParameterlessAttr):
    """``#iree_codegen.no_pipeline``: leave the function as it is."""

    name = "iree_codegen.no_pipeline"


@irdl_attr_definition
class TransformDialectCodegenAttr(ParameterlessAttr):
    """``#iree_codegen.transform_dialect_codegen``: compile with the transform-dialect
    spec named by the translation_info's ``codegen_spec``."""

    name = "iree_codegen.transform_dialect_codegen"


class _QuotedStringAttr(Data[str]):
    """An attribute whose one parameter is a string literal: ``#name<"text">``."""

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> str:
        with parser.in_angle_brackets():
            return parser.parse_str_literal()

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.data)
        printer.print_string(">")


@irdl_attr_definition
class PassPipelineAttr(_QuotedStringAttr):
    """``#iree_codegen.pass_pipeline<"builtin.module(...)">``: a textual pass pipeline."""

    name = "iree_codegen.pass_pipeline"


@irdl_attr_definition
class DenormalFpMathAttr(_QuotedStringAttr):
    """``#iree_codegen.denormal_fp_math<"preserve-sign">`` (a translation_info's
    ``denormal_fp_math_f32``): how the backend treats f32 denormals; kept and printed
    back. The simulator computes with numpy's IEEE denormals whatever it says."""

    name = "iree_codegen.denormal_fp_math"


def _legacy_pipeline(name: str) -> Attribute | None:
    """The 3.12 attribute for a pre-3.12 bare pipeline name, if there is one."""
    if name == "None":
        return NoPipelineAttr()
    if name.startswith("LLVMGPU") and name[len("LLVMGPU") :] in PIPELINES:
        return PipelineAttr(name[len("LLVMGPU") :])
    return None


@irdl_attr_definition
class TranslationInfoAttr(Data[tuple[Attribute, Any, Any, Any, Any]]):
    """(pipeline, codegen_spec or None, workgroup_size or None, subgroup_size or None,
    configuration entries sorted by name or None), printed as IREE 3.12 does:
    ``<pipeline = P codegen_spec = @s workgroup_size = [..] subgroup_size = N, {..}>``."""

    name = "iree_codegen.translation_info"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[Attribute, Any, Any, Any, Any]:
        with parser.in_angle_brackets():
            parser.parse_keyword("pipeline")
            parser.parse_punctuation("=")
            pos = parser.pos
            legacy = parser.parse_optional_identifier()
            if legacy is not None:
                pipeline = _legacy_pipeline(legacy)
                if pipeline is None:
                    parser.raise_error(f"unknown pipeline '{legacy}' (IREE 3.12 writes #iree_gpu.pipeline<..>)", pos)
            else:
                pipeline = parser.parse_attribute()
            spec = workgroup = subgroup = config = None
            if parser.parse_optional_keyword("codegen_spec") is not None:
                parser.parse_punctuation("=")
                spec = parser.parse_attribute()
                if not isinstance(spec, SymbolRefAttr):
                    parser.raise_error(f"codegen_spec is a symbol (@name), not {spec}", pos)
            if parser.parse_optional_keyword("workgroup_size") is not None:
                parser.parse_punctuation("=")
                pos = parser.pos
                workgroup = parse_int_list(parser)
                if not 1 <= len(workgroup) <= 3 or any(w < 1 for w in workgroup):
                    parser.raise_error(
                        f"workgroup_size {format_ints(workgroup)} must be 1 to 3 positive sizes", pos, parser.pos
                    )
            if parser.parse_optional_keyword("subgroup_size") is not None:
                parser.parse_punctuation("=")
                pos = parser.pos
                subgroup = parser.parse_integer(allow_boolean=False)
                if subgroup < 1:
                    parser.raise_error(f"subgroup_size must be positive, not {subgroup}", pos)
            if parser.parse_optional_punctuation(",") is not None:
                config = tuple(sorted(parser.parse_optional_dictionary_attr_dict().items()))
        return (pipeline, spec, workgroup, subgroup, config)

    def print_parameter(self, printer: Printer) -> None:
        pipeline, spec, workgroup, subgroup, config = self.data
        printer.print_string("<pipeline = ")
        printer.print_attribute(pipeline)
        if spec is not None:
            printer.print_string(" codegen_spec = ")
            printer.print_attribute(spec)
        if workgroup is not None:
            printer.print_string(f" workgroup_size = {format_ints(workgroup)}")
        if subgroup is not None:
            printer.print_string(f" subgroup_size = {subgroup}")
        if config is not None:
            printer.print_string(", {")
            for k, (key, value) in enumerate(config):
                if k:
                    printer.print_string(", ")
                printer.print_identifier_or_string_literal(key)
                if not isinstance(value, UnitAttr):
                    printer.print_string(" = ")
                    print_attribute_value(printer, value)
            printer.print_string("}")
        printer.print_string(">")

    @property
    def pipeline(self) -> Attribute:
        return self.data[0]

    @property
    def workgroup_size(self) -> tuple[int, ...] | None:
        return self.data[2]

    @property
    def subgroup_size(self) -> int | None:
        return self.data[3]

    @property
    def configuration(self) -> dict[str, Attribute]:
        return dict(self.data[4] or ())

    @property
    def threads_per_workgroup(self) -> int | None:
        """The product of the workgroup size, if given."""
        return None if self.workgroup_size is None else prod(self.workgroup_size)


@irdl_attr_definition
class CodegenLoweringConfigAttr(Data[tuple[tuple[int, ...], ...]]):
    """``#iree_codegen.lowering_config<tile_sizes = [[128, 256], [1, 0]]>``: one list of
    tile sizes per tiling level (the interchange and scalable-flag forms are not read)."""

    name = "iree_codegen.lowering_config"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[tuple[int, ...], ...]:
        with parser.in_angle_brackets():
            parser.parse_keyword("tile_sizes")
            parser.parse_punctuation("=")
            pos = parser.pos
            levels = parser.parse_attribute()
            tree = int_tree_of(levels)
            if not isinstance(tree, list) or not all(isinstance(t, list) for t in tree):
                parser.raise_error("tile_sizes is a list of integer lists, one per tiling level", pos, parser.pos)
        return tuple(tuple(level) for level in tree)  # type: ignore[union-attr]

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<tile_sizes = [" + ", ".join(format_ints(level) for level in self.data) + "]>")

    @property
    def tile_sizes(self) -> tuple[tuple[int, ...], ...]:
        return self.data

    def verify(self) -> None:
        if any(s < 0 for level in self.data for s in level):
            raise VerifyException(f"tile sizes must not be negative: {list(map(list, self.data))}")


@irdl_custom_directive
class DestinationTypes(CustomDirective):
    """The types of an op's destinations (``outs``); its results are its tensor and
    vector destinations' (a memref destination is updated in place), as for linalg."""

    outputs: TypeDirective
    results: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        self.outputs.set(state, types)
        self.results.set(state, [t for t in types if not isinstance(t, MemRefType)])

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        self.outputs.print(printer, state, op)


ROLES = ("a", "b", "c")  # an MMA inner_tiled's operands: lhs (M×K), rhs (K×N), acc (M×N)


@mlir_op
class InnerTiledOp(IRDLOperation):
    """``%r = iree_codegen.inner_tiled ins(%a, %b) outs(%c) {indexing_maps = [..],
    iterator_types = [#linalg.iterator_type<parallel>, ..], kind =
    #iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>, semantics = #iree_gpu.mma_semantics<
    distributed = false, opaque = true>} : vector<2x3x16x16xf16>, vector<3x4x16x16xf16>
    into vector<2x4x16x16xf32>`` (IREE's MMA op since 3.x).

    Each operand is ``outer dims × inner tile``: the outer dims are those its indexing map
    names and are iterated like a ``vector.contract``'s; at every outer point the
    intrinsic `kind` updates the output's inner tile from the inputs'. Undistributed, an
    inner tile is the intrinsic's whole matrix (A M×K, B K×N, C M×N); distributed, it is
    one lane's fragment. ``permutations`` (one per operand) says the operand's inner
    tile is the canonical one permuted: ``S[i] == C[p[i]]``. With ``opaque = true`` only
    the element count must match the canonical tile (read row-major)."""

    name = "iree_codegen.inner_tiled"

    inputs = var_operand_def()
    outputs = var_operand_def()
    res = var_result_def()
    indexing_maps = prop_def(ArrayAttr[AffineMapAttr])
    iterator_types = prop_def(ArrayAttr)
    kind = prop_def(Attribute)
    semantics = prop_def(Attribute)
    permutations = opt_prop_def(ArrayAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(Pure())

    PROPERTIES_IN_ATTR_DICT: ClassVar[bool] = True
    custom_directives = (DestinationTypes,)
    assembly_format = (
        "`ins` `(` $inputs `)` `outs` `(` $outputs `)` attr-dict `:` type($inputs) `into` "
        "custom<DestinationTypes>(type($outputs), type($res))"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        indexing_maps: Sequence[AffineMap],
        iterator_types: Sequence[str],
        kind: Attribute,
        semantics: MMASemanticsAttr,
        permutations: Sequence[Sequence[int]] | None = None,
    ):
        from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr

        props: dict[str, Attribute] = {
            "indexing_maps": ArrayAttr(AffineMapAttr(m) for m in indexing_maps),
            "iterator_types": ArrayAttr(IteratorTypeAttr(IteratorType(t)) for t in iterator_types),
            "kind": kind,
            "semantics": semantics,
        }
        if permutations is not None:
            props["permutations"] = ArrayAttr(DenseArrayBase.from_list(i64, list(p)) for p in permutations)
        outs = [SSAValue.get(o) for o in outputs]
        super().__init__(operands=[list(inputs), outs],
                         result_types=[[o.type for o in outs if not isinstance(o.type, MemRefType)]],
                         properties=props)

    # --- what it computes ------------------------------------------------------------

    @property
    def maps(self) -> list[AffineMap]:
        return [m.data for m in self.indexing_maps.data]

    @property
    def iterators(self) -> list[str]:
        return [str(t.data.value if hasattr(t.data, "value") else t.data) for t in self.iterator_types.data]

    @property
    def distributed(self) -> bool:
        return isinstance(self.semantics, MMASemanticsAttr) and self.semantics.distributed

    @property
    def opaque(self) -> bool:
        return isinstance(self.semantics, MMASemanticsAttr) and self.semantics.opaque

    def permutation(self, index: int) -> tuple[int, ...] | None:
        """Operand `index`'s inner-tile permutation, None for the identity."""
        if self.permutations is None:
            return None
        perm = tuple(self.permutations.data[index].get_values())
        return None if perm == tuple(range(len(perm))) else perm

    def outer_shape(self, index: int) -> tuple[int, ...]:
        return tuple(self.operands[index].type.get_shape()[: len(self.maps[index].results)])

    def inner_shape(self, index: int) -> tuple[int, ...]:
        return tuple(self.operands[index].type.get_shape()[len(self.maps[index].results):])

    def iteration_sizes(self) -> list[int]:
        sizes = [1] * len(self.iterators)
        for i, m in enumerate(self.maps):
            for expr, size in zip(m.results, self.outer_shape(i)):
                sizes[expr.position] = size
        return sizes

    def intrinsic_name(self) -> str | None:
        return self.kind.data[0] if isinstance(self.kind, MMALayoutAttr) else None

    def intrinsic(self):
        """simtify's model of the intrinsic `kind` names; a `SimtifyError` naming the
        modelled ones when it has none."""
        from simtify.errors import SimtifyError
        from simtify.target.mma import INTRINSICS

        name = self.intrinsic_name()
        if name is None or name not in INTRINSICS:
            raise SimtifyError(f"inner_tiled kind {self.kind} is not modelled "
                               f"(modelled: {', '.join(INTRINSICS)})")
        return INTRINSICS[name]

    def layout_permutation(self, index: int, intr, layout) -> tuple[int, ...] | None:
        """Operand `index`'s inner-tile permutation as its nested `layout` says it: the
        given ``permutations``, else, for an undistributed opaque operand (``opaque =
        true``: only the element count is fixed) whose inner dims carry the intrinsic's
        layout transposed, ``(1, 0)``. IREE's VectorDistribute matmul feeds B as N×K tiles
        so, with no ``permutations``: each lane's registers are its MFMA fragment."""
        given = self.permutation(index)
        if given is not None or self.distributed or not self.opaque or layout is None or layout.rank < 2:
            return given
        inner = layout.project(list(range(layout.rank - 2)))
        canon = intr.layout(ROLES[index])
        if _same_tiles(inner, canon):
            return None
        if _same_tiles(inner, canon.permute((1, 0))):
            return (1, 0)
        return None

    def canonical_inner(self, index: int, intr) -> tuple[int, ...]:
        """The intrinsic's inner tile of operand `index` (unpermuted)."""
        if self.distributed:
            return tuple(intr.shape(ROLES[index]))
        return {"a": (intr.m, intr.k), "b": (intr.k, intr.n), "c": (intr.m, intr.n)}[ROLES[index]]

    def verify_(self) -> None:
        maps = self.maps
        n_ops = len(self.operands)
        if len(maps) != n_ops:
            raise VerifyException(f"needs one indexing map per operand ({n_ops}), got {len(maps)}")
        if len(self.results) != len([o for o in self.outputs if not isinstance(o.type, MemRefType)]) or any(
                r.type != o.type for r, o in zip(self.results, self.outputs)):
            raise VerifyException("its results must have its outputs' types")
        sizes: dict[int, int] = {}
        for i, (v, m) in enumerate(zip(self.operands, maps)):
            if m.num_dims != len(self.iterators) or m.num_symbols:
                raise VerifyException(f"map #{i} {m} must have one dim per iterator ({len(self.iterators)}) and no symbols")
            if not isinstance(v.type, ShapedType) or len(v.type.get_shape()) < len(m.results):
                raise VerifyException(f"operand #{i} {v.type} has fewer dims than its map {m} has results")
            for expr, size in zip(m.results, self.outer_shape(i)):
                if not isinstance(expr, AffineDimExpr):
                    raise VerifyException(f"map #{i} {m} must be a projected permutation")
                if sizes.setdefault(expr.position, size) != size:
                    raise VerifyException(f"outer dim d{expr.position} has sizes {sizes[expr.position]} and {size}")
        if self.permutations is not None and len(self.permutations.data) != n_ops:
            raise VerifyException(f"needs one permutation per operand ({n_ops}), got {len(self.permutations.data)}")
        from simtify.target.mma import INTRINSICS

        name = self.intrinsic_name()
        if name not in INTRINSICS:
            return  # kinds simtify does not model are checked where they are run
        intr = INTRINSICS[name]
        if (len(self.inputs), len(self.outputs)) != (2, 1):
            raise VerifyException(f"{name} takes 2 inputs and 1 output, not {len(self.inputs)} and {len(self.outputs)}")
        for i, want_elt in enumerate((intr.a_type, intr.b_type, intr.c_type)):
            canon = self.canonical_inner(i, intr)
            perm = self.permutation(i)
            if self.permutations is not None and len(self.permutations.data[i]) != len(canon):
                raise VerifyException(f"permutation #{i} must have {len(canon)} entries")
            want = tuple(canon[p] for p in perm) if perm else canon
            inner = self.inner_shape(i)
            elt = self.operands[i].type.element_type
            same = prod(inner) == prod(want) if self.opaque else \
                tuple(d for d in inner if d != 1) == tuple(d for d in want if d != 1)
            if str(elt) != want_elt or not same:
                raise VerifyException(f"operand #{i} inner tile {'x'.join(map(str, inner)) or 'scalar'}x{elt} "
                                      f"is incompatible with {name}'s {'x'.join(map(str, want))}x{want_elt}"
                                      f"{' (element count)' if self.opaque else ''}")


def _same_tiles(a, b) -> bool:
    """Whether two nested layouts agree in everything below the subgroup level."""
    return (a.batch_tile, a.outer_tile, a.thread_tile, a.element_tile, a.thread_strides) == (
        b.batch_tile, b.outer_tile, b.thread_tile, b.element_tile, b.thread_strides)


WORKGROUP_DIMS = ("x", "y", "z")


@irdl_attr_definition
class WorkgroupMappingAttr(Data[tuple[str, int]]):
    """``#iree_codegen.workgroup_mapping<x>`` (or ``<z:1>``, a further z dim): an
    ``scf.forall`` dim distributed over workgroups."""

    name = "iree_codegen.workgroup_mapping"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[str, int]:
        with parser.in_angle_brackets():
            pos = parser.pos
            text = parser.parse_identifier()
            dim, _, extra = text.partition(":")
            delta = 0
            if not extra and dim == "z" and parser.parse_optional_punctuation(":") is not None:
                delta = parser.parse_integer(allow_boolean=False)
            elif extra:
                delta = int(extra) if extra.isdigit() else -1
            if dim not in WORKGROUP_DIMS or delta < 0:
                parser.raise_error(f"expected x, y, z or z:N, got '{text}'", pos)
        return (dim, delta)

    def print_parameter(self, printer: Printer) -> None:
        dim, delta = self.data
        printer.print_string(f"<{dim}:{delta}>" if delta else f"<{dim}>")

    @property
    def mapping_id(self) -> int:
        """0, 1, 2 for x, y, z; 2 + N for z:N."""
        dim, delta = self.data
        return WORKGROUP_DIMS.index(dim) + delta


@mlir_op
class WorkgroupCountHintOp(IRDLOperation):
    """``iree_codegen.workgroup_count_hint(512)``: the workgroup count the function wants."""

    name = "iree_codegen.workgroup_count_hint"

    sizes = var_operand_def(IndexType)
    static_sizes = prop_def(DenseArrayBase)

    custom_directives = (ParenIndexList,)
    assembly_format = "`` custom<ParenIndexList>($sizes, $static_sizes) attr-dict"  # no space before the (

    def static_counts(self) -> tuple[int, ...] | None:
        values = tuple(int(v) for v in self.static_sizes.get_values())
        return None if any(v < 0 for v in values) else values


@irdl_op_definition
class CodegenYieldOp(YieldTerminator):
    """``iree_codegen.yield %x, %y, %z : index, index, index``."""

    name = "iree_codegen.yield"


@mlir_op
class DispatchConfigOp(IRDLOperation):
    """``iree_codegen.dispatch_config @f workgroup_size = [X, Y, Z] subgroup_size = N {..}``:
    the launch configuration of ``@f`` and its workgroup count region."""

    name = "iree_codegen.dispatch_config"

    function_ref = prop_def(FlatSymbolRefAttr)
    workgroup_size = opt_prop_def(DenseArrayBase.constr(i64))
    subgroup_size = opt_prop_def(IntegerAttr[I64])
    body = region_def()

    assembly_format = (
        "$function_ref (`workgroup_size` `=` $workgroup_size^)? (`subgroup_size` `=` $subgroup_size^)? "
        "attr-dict-with-keyword ($body^)?"
    )


IREECodegen = Dialect(
    "iree_codegen",
    [InnerTiledOp, WorkgroupCountHintOp, DispatchConfigOp, CodegenYieldOp],
    [TranslationInfoAttr, CodegenLoweringConfigAttr, NoPipelineAttr, TransformDialectCodegenAttr, PassPipelineAttr,
     DenormalFpMathAttr,
     WorkgroupMappingAttr],
)

DIALECTS: list[Dialect] = [IREECodegen]
