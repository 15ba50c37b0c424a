"""What IREE 3.12 prints around a dispatch function's body, besides ``hal``
(`simtify.ir.hal_interface`): the ops and attributes of ``iree_codegen``, ``iree_gpu``,
``iree_tensor_ext`` and ``amdgpu`` that its codegen stages carry.

- ``#iree_gpu.pipeline_options<no_reduce_shared_memory_bank_conflicts = false, ..>``
  (in a translation_info's configuration): kept and printed back, not interpreted;
- ``scf.forall (..) in (..) {..} {mapping = [#iree_codegen.workgroup_mapping<x>]}``:
  the loop over workgroups of the tiled stages;
- ``iree_codegen.workgroup_count_hint(512)``: the grid the function wants;
- ``iree_codegen.dispatch_config @f workgroup_size = [..] subgroup_size = N {..}``:
  the launch of ``@f`` once the translation_info is gone, with its workgroup count
  region (``iree_tensor_ext.dispatch.workgroup_count_from_slice``, ``iree_codegen.yield``);
- ``amdgpu.fat_raw_buffer_cast %m resetOffset : T to T'``: a buffer-resource view of
  the same memory (out-of-bounds reads give 0, writes are dropped);
- ``amdgpu.sched_barrier allow = none``: kept and printed back, no effect on values.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FlatSymbolRefAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Data, Dialect, Region
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.attribute_syntax import print_sorted_attr_dict, split_properties

# --- iree_gpu -------------------------------------------------------------------------


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


# --- iree_codegen ----------------------------------------------------------------------

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


def _parse_dynamic_index_list(parser: Parser):
    """``(512, %n)``: static sizes and SSA values, MLIR's dynamic index list."""
    static: list[int] = []
    dynamic = []

    def item() -> None:
        operand = parser.parse_optional_unresolved_operand()
        if operand is not None:
            dynamic.append(operand)
            static.append(-(2**63))
        else:
            static.append(parser.parse_integer(allow_boolean=False))

    parser.parse_comma_separated_list(parser.Delimiter.PAREN, item)
    return static, dynamic


@irdl_op_definition
class WorkgroupCountHintOp(IRDLOperation):
    """``iree_codegen.workgroup_count_hint(512)``: the workgroup count the function wants."""

    name = "iree_codegen.workgroup_count_hint"

    sizes = var_operand_def(IndexType)
    static_sizes = prop_def(DenseArrayBase)

    @classmethod
    def parse(cls, parser: Parser) -> WorkgroupCountHintOp:
        static, dynamic = _parse_dynamic_index_list(parser)
        props, attrs = split_properties(parser.parse_optional_attr_dict(), ("static_sizes",))
        props.setdefault("static_sizes", DenseArrayBase.from_list(i64, static))
        return cls(operands=[[parser.resolve_operand(d, IndexType()) for d in dynamic]],
                   properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        dynamic = iter(self.sizes)
        printer.print_string("(")
        for i, s in enumerate(self.static_sizes.get_values()):
            if i:
                printer.print_string(", ")
            if s == -(2**63):
                printer.print_ssa_value(next(dynamic))
            else:
                printer.print_string(str(s))
        printer.print_string(")")
        print_sorted_attr_dict(printer, self.attributes)

    def static_counts(self) -> tuple[int, ...] | None:
        values = tuple(int(v) for v in self.static_sizes.get_values())
        return None if any(v < 0 for v in values) else values


@irdl_op_definition
class CodegenYieldOp(IRDLOperation):
    """``iree_codegen.yield %x, %y, %z : index, index, index``."""

    name = "iree_codegen.yield"

    values = var_operand_def()
    traits = traits_def(IsTerminator())

    assembly_format = "attr-dict ($values^ `:` type($values))?"


@irdl_op_definition
class DispatchConfigOp(IRDLOperation):
    """``iree_codegen.dispatch_config @f workgroup_size = [X, Y, Z] subgroup_size = N {..}``:
    the launch configuration of ``@f`` and its workgroup count region."""

    name = "iree_codegen.dispatch_config"

    function_ref = prop_def(FlatSymbolRefAttr)
    workgroup_size = opt_prop_def(DenseArrayBase)
    subgroup_size = opt_prop_def(IntegerAttr)
    body = region_def()

    @classmethod
    def parse(cls, parser: Parser) -> DispatchConfigOp:
        symbol = parser.parse_symbol_name()
        props: dict[str, Attribute] = {"function_ref": FlatSymbolRefAttr(symbol.data)}
        if parser.parse_optional_keyword("workgroup_size") is not None:
            parser.parse_punctuation("=")
            sizes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                      lambda: parser.parse_integer(allow_boolean=False))
            props["workgroup_size"] = DenseArrayBase.from_list(i64, sizes)
        if parser.parse_optional_keyword("subgroup_size") is not None:
            parser.parse_punctuation("=")
            props["subgroup_size"] = IntegerAttr(parser.parse_integer(allow_boolean=False), i64)
        region = parser.parse_optional_region() or Region()  # (its braces leave no room for an attr-dict)
        return cls(properties=props, regions=[region])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.function_ref)
        if self.workgroup_size is not None:
            printer.print_string(" workgroup_size = [" + ", ".join(map(str, self.workgroup_size.get_values())) + "]")
        if self.subgroup_size is not None:
            printer.print_string(f" subgroup_size = {self.subgroup_size.value.data}")
        if self.body.blocks:
            printer.print_string(" ")
            printer.print_region(self.body, print_entry_block_args=True)


@irdl_op_definition
class DispatchWorkgroupCountFromSliceOp(IRDLOperation):
    """``%x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%w..)``."""

    name = "iree_tensor_ext.dispatch.workgroup_count_from_slice"

    operands_ = var_operand_def(IndexType)
    results_ = var_result_def(IndexType)

    @classmethod
    def parse(cls, parser: Parser) -> DispatchWorkgroupCountFromSliceOp:
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        index = IndexType()
        return cls(operands=[[parser.resolve_operand(o, index) for o in operands]],
                   result_types=[[index] * 3], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.operands_, printer.print_ssa_value)
        printer.print_string(")")
        print_sorted_attr_dict(printer, self.attributes)


IREETensorExt = Dialect("iree_tensor_ext", [DispatchWorkgroupCountFromSliceOp], [])

DIALECTS: list[Dialect] = [IREETensorExt]


# --- amdgpu ------------------------------------------------------------------------------


@irdl_op_definition
class FatRawBufferCastOp(IRDLOperation):
    """``amdgpu.fat_raw_buffer_cast %m [validBytes(%n)] [cacheSwizzleStride(%s)]
    [boundsCheck(false)] [resetOffset] : T to T'``: the same memory as a buffer resource."""

    name = "amdgpu.fat_raw_buffer_cast"

    source = operand_def(MemRefType)
    valid_bytes = opt_operand_def(i64)
    cache_swizzle_stride = opt_operand_def()
    result = result_def(MemRefType)
    bounds_check = opt_prop_def(Attribute, prop_name="boundsCheck")
    reset_offset = opt_prop_def(UnitAttr, prop_name="resetOffset")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser) -> FatRawBufferCastOp:
        from xdsl.dialects.builtin import BoolAttr, IntegerType

        source = parser.parse_unresolved_operand()
        valid = swizzle = None
        props: dict[str, Attribute] = {}
        while True:
            if parser.parse_optional_keyword("validBytes") is not None:
                parser.parse_punctuation("(")
                valid = parser.parse_unresolved_operand()
                parser.parse_punctuation(")")
            elif parser.parse_optional_keyword("cacheSwizzleStride") is not None:
                parser.parse_punctuation("(")
                swizzle = parser.parse_unresolved_operand()
                parser.parse_punctuation(")")
            elif parser.parse_optional_keyword("boundsCheck") is not None:
                parser.parse_punctuation("(")
                props["boundsCheck"] = BoolAttr.from_bool(parser.parse_boolean())
                parser.parse_punctuation(")")
            elif parser.parse_optional_keyword("resetOffset") is not None:
                props["resetOffset"] = UnitAttr()
            else:
                break
        extra, attrs = split_properties(parser.parse_optional_attr_dict(), ("boundsCheck", "resetOffset"))
        props.update(extra)
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_keyword("to")
        dst_type = parser.parse_type()
        return cls(
            operands=[parser.resolve_operand(source, src_type),
                      [parser.resolve_operand(valid, i64)] if valid is not None else [],
                      [parser.resolve_operand(swizzle, IntegerType(14))] if swizzle is not None else []],
            result_types=[dst_type], properties=props, attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.source)
        if self.valid_bytes is not None:
            printer.print_string(" validBytes(")
            printer.print_ssa_value(self.valid_bytes)
            printer.print_string(")")
        if self.cache_swizzle_stride is not None:
            printer.print_string(" cacheSwizzleStride(")
            printer.print_ssa_value(self.cache_swizzle_stride)
            printer.print_string(")")
        if self.bounds_check is not None and not self.checks_bounds:
            printer.print_string(" boundsCheck(false)")
        if self.reset_offset is not None:
            printer.print_string(" resetOffset")
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)

    @property
    def checks_bounds(self) -> bool:
        value = getattr(self.bounds_check, "value", None)
        return self.bounds_check is None or bool(getattr(value, "data", 1))

    def verify_(self) -> None:
        src, dst = self.source.type, self.result.type
        if tuple(src.get_shape()) != tuple(dst.get_shape()) or src.element_type != dst.element_type:
            raise VerifyException(f"the result {dst} must have the shape and element type of the source {src}")


__all__ = [
    "CodegenYieldOp",
    "DispatchConfigOp",
    "DispatchWorkgroupCountFromSliceOp",
    "FatRawBufferCastOp",
    "IREETensorExt",
    "PipelineOptionsAttr",
    "WorkgroupCountHintOp",
    "WorkgroupMappingAttr",
]

# The classes above that belong to dialects declared elsewhere (added to them there).
IREE_CODEGEN_OPS = [WorkgroupCountHintOp, DispatchConfigOp, CodegenYieldOp]
IREE_CODEGEN_ATTRIBUTES = [WorkgroupMappingAttr]
IREE_GPU_ATTRIBUTES = [PipelineOptionsAttr]


@irdl_op_definition
class SchedBarrierOp(IRDLOperation):
    """``amdgpu.sched_barrier allow = none`` (or ``valu|all_vmem``..): which instructions
    the backend's scheduler may move across this point. No effect on values."""

    name = "amdgpu.sched_barrier"

    opts = prop_def(Attribute)

    @classmethod
    def parse(cls, parser: Parser) -> SchedBarrierOp:
        from xdsl.dialects.builtin import StringAttr

        parser.parse_keyword("allow")
        parser.parse_punctuation("=")
        names = [parser.parse_identifier()]
        while parser.parse_optional_punctuation("|") is not None:
            names.append(parser.parse_identifier())
        extra, attrs = split_properties(parser.parse_optional_attr_dict(), ())
        return cls.build(properties={"opts": StringAttr("|".join(names))} | extra, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" allow = {self.opts.data}")
        print_sorted_attr_dict(printer, dict(self.attributes))


AMDGPU_OPS = [FatRawBufferCastOp, SchedBarrierOp]
