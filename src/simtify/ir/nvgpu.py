"""The ``nvgpu`` ops this project uses, in upstream MLIR's syntax as iree-opt 3.12 prints it.

Asynchronous copies (``cp.async``), global memory to shared memory per thread:
``%t = nvgpu.device_async_copy %src[%i], %dst[%j], 4 (, %n)? (bypassL1)? : memref<..> to
memref<.., #gpu.address_space<workgroup>>`` copies `dstElements` elements (only `%n` of
them read, the rest zero-filled); ``%g = nvgpu.device_async_create_group %t, ..`` commits
them; ``nvgpu.device_async_wait %g (numGroups = 1)?`` waits until at most `numGroups`
groups are in flight. Tokens have type ``!nvgpu.device.async.token``.

``mma.sync``, a warp's matrix multiply-accumulate:
``%d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16] : (vector<4x2xf16>,
vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>`` (upstream MLIR's syntax as
iree-opt 3.12 prints it; the older ``{mmaShape = [..]}`` dictionary form is read too).
Each of the 32 lanes passes its fragments of A (M×K), B (K×N) and C (M×N) as rows of
32-bit registers (two f16 per row) in PTX's register order; the result is its fragment
of D = A·B + C.
"""

from __future__ import annotations

from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
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
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import mlir_op
from simtify.ir.attribute_syntax import print_sorted_attr_dict, split_properties


@irdl_attr_definition
class DeviceAsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """``!nvgpu.device.async.token``: names an asynchronous copy or group of them."""

    name = "nvgpu.device.async.token"


@mlir_op
class DeviceAsyncCopyOp(IRDLOperation):
    """One thread's ``cp.async`` of `dstElements` elements from `src` to shared `dst`."""

    name = "nvgpu.device_async_copy"

    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    src_elements = opt_operand_def(IndexType)
    dstElements = prop_def(IntegerAttr[IndexType])
    bypassL1 = opt_prop_def(UnitAttr)
    async_token = result_def(DeviceAsyncTokenType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$src `[` $src_indices `]` `,` $dst `[` $dst_indices `]` `,` $dstElements (`,` $src_elements^)? "
        "(`bypassL1` $bypassL1^)? attr-dict `:` type($src) `to` type($dst)"
    )

    @property
    def elements(self) -> int:
        return int(self.dstElements.value.data)

    def verify_(self) -> None:
        src, dst = self.src.type, self.dst.type
        if len(self.src_indices) != src.get_num_dims():
            raise VerifyException(f"expected {src.get_num_dims()} source indices, got {len(self.src_indices)}")
        if len(self.dst_indices) != dst.get_num_dims():
            raise VerifyException(f"expected {dst.get_num_dims()} destination indices, got {len(self.dst_indices)}")
        if src.element_type != dst.element_type:
            raise VerifyException(f"source and destination element types differ: {src.element_type} vs "
                                  f"{dst.element_type}")
        bits = getattr(dst.element_type, "bitwidth", None)
        if isinstance(bits, int) and self.elements * bits not in (32, 64, 128):
            raise VerifyException(f"{self.elements} elements of {dst.element_type} per thread: cp.async copies 4, 8 "
                                  "or 16 bytes")


@mlir_op
class DeviceAsyncCreateGroupOp(IRDLOperation):
    """Commit the copies issued so far as one group (``cp.async.commit_group``)."""

    name = "nvgpu.device_async_create_group"

    inputTokens = var_operand_def(DeviceAsyncTokenType)
    async_token = result_def(DeviceAsyncTokenType)

    assembly_format = "$inputTokens attr-dict"


@mlir_op
class DeviceAsyncWaitOp(IRDLOperation):
    """Wait until at most `numGroups` (default 0) committed groups are in flight."""

    name = "nvgpu.device_async_wait"

    asyncDependencies = operand_def(DeviceAsyncTokenType)
    numGroups = opt_prop_def(IntegerAttr[I32])

    assembly_format = "$asyncDependencies (`numGroups` `=` $numGroups^)? attr-dict"

    @property
    def groups_left(self) -> int:
        return 0 if self.numGroups is None else int(self.numGroups.value.data)


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    name = "nvgpu.mma.sync"

    matrixA = operand_def(VectorType)
    matrixB = operand_def(VectorType)
    matrixC = operand_def(VectorType)
    res = result_def(VectorType)
    mmaShape = prop_def(ArrayAttr)
    tf32Enabled = opt_prop_def(UnitAttr)

    traits = traits_def(Pure())

    PROPERTY_NAMES: ClassVar[tuple[str, ...]] = ("mmaShape", "tf32Enabled")

    def __init__(self, a, b, c, shape: tuple[int, int, int]):
        from xdsl.ir import SSAValue

        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type],
                         properties={"mmaShape": ArrayAttr([IntegerAttr(v, i64) for v in shape])})

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(x.value.data) for x in self.mmaShape.data)

    @classmethod
    def parse(cls, parser: Parser) -> MmaSyncOp:
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("mmaShape") is not None:
            parser.parse_punctuation("=")
            props["mmaShape"] = parser.parse_attribute()
        extra, attrs = split_properties(parser.parse_optional_attr_dict(), cls.PROPERTY_NAMES)
        props.update(extra)
        if "mmaShape" not in props:
            parser.raise_error("nvgpu.mma.sync needs mmaShape = [m, n, k]")
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        result = parser.parse_type()
        if len(operands) != 3 or len(types) != 3:
            parser.raise_error("nvgpu.mma.sync takes three operands (A, B, C) and their three types")
        return cls.build(operands=[parser.resolve_operand(o, t) for o, t in zip(operands, types)],
                         result_types=[result], properties=props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(f") mmaShape = [{', '.join(map(str, self.shape))}]")
        extra = dict(self.attributes)
        if self.tf32Enabled is not None:
            extra["tf32Enabled"] = self.tf32Enabled
        print_sorted_attr_dict(printer, extra)
        printer.print_string(" : (")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.res.type)

    def verify_(self) -> None:
        shape = self.shape
        if len(shape) != 3:
            raise VerifyException(f"mmaShape must be [m, n, k], got {list(shape)}")
        m, n, k = shape
        if self.res.type != self.matrixC.type:
            raise VerifyException(f"the result type {self.res.type} must be C's type {self.matrixC.type}")
        for name, v, elems in (("A", self.matrixA, m * k), ("B", self.matrixB, k * n), ("C", self.matrixC, m * n)):
            t = v.type
            if len(t.get_shape()) != 2:
                raise VerifyException(f"{name} must be a 2-D vector of registers, got {t}")
            if prod(t.get_shape()) * 32 != elems:
                raise VerifyException(f"{name} holds {prod(t.get_shape())} elements per lane; an "
                                      f"{m}x{n}x{k} mma.sync needs {elems // 32}")


NVGPU = Dialect("nvgpu", [DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp, DeviceAsyncWaitOp, MmaSyncOp],
                [DeviceAsyncTokenType])

DIALECTS: list[Dialect] = [NVGPU]

__all__ = [
    "DIALECTS",
    "NVGPU",
    "DeviceAsyncCopyOp",
    "DeviceAsyncCreateGroupOp",
    "DeviceAsyncTokenType",
    "DeviceAsyncWaitOp",
    "MmaSyncOp",
]
