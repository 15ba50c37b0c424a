"""The ``iree_codegen`` attributes: how a function is compiled and how an op is tiled.

``#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute>
workgroup_size = [256, 1, 1] subgroup_size = 64, {config}>`` on a function gives the
threads of a workgroup and the lanes of a subgroup, which vector distribution needs
(and `iree-llvmgpu-vector-distribute` requires). Since IREE 3.12 the pipeline is an
attribute; the older bare names (``pipeline = LLVMGPUVectorDistribute``) are read and
printed in the 3.12 form. ``#iree_codegen.lowering_config<tile_sizes = [[..], ..]>``
is IREE's default (non-GPU-specific) config.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute, Data, Dialect
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from simtify.ir.attribute_syntax import ParameterlessAttr, int_tree_of, parse_int_list, print_attribute_value
from simtify.ir.iree_gpu import PIPELINES, PipelineAttr
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


@irdl_attr_definition
class PassPipelineAttr(Data[str]):
    """``#iree_codegen.pass_pipeline<"builtin.module(...)">``: a textual pass pipeline."""

    name = "iree_codegen.pass_pipeline"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> str:
        with parser.in_angle_brackets():
            return parser.parse_str_literal()

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.data)
        printer.print_string(">")


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
        if self.workgroup_size is None:
            return None
        total = 1
        for w in self.workgroup_size:
            total *= w
        return total


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


IREECodegen = Dialect(
    "iree_codegen",
    [],
    [TranslationInfoAttr, CodegenLoweringConfigAttr, NoPipelineAttr, TransformDialectCodegenAttr, PassPipelineAttr],
)

DIALECTS: list[Dialect] = [IREECodegen]

__all__ = [
    "CodegenLoweringConfigAttr",
    "DIALECTS",
    "IREECodegen",
    "NoPipelineAttr",
    "PassPipelineAttr",
    "TransformDialectCodegenAttr",
    "TranslationInfoAttr",
]
