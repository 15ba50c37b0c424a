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

from typing import ClassVar

from xdsl.dialects.builtin import (
    I32, ArrayAttr, IndexType, IntegerAttr, MemRefType, UnitAttr, VectorType,
)
from xdsl.ir import Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, irdl_attr_definition, operand_def,
    opt_operand_def, opt_prop_def, prop_def, result_def, traits_def, var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import OptionalIntList, i64_array, int_values, mlir_op
from simtify.ir.gpu import verify_indexed_copy, verify_mma_fragments


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
        verify_indexed_copy(self)
        element = self.dst.type.element_type
        bits = getattr(element, "bitwidth", None)
        if isinstance(bits, int) and self.elements * bits not in (32, 64, 128):
            raise VerifyException(f"{self.elements} elements of {element} per thread: cp.async copies 4, 8 or 16 bytes")


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


@mlir_op
class MmaSyncOp(IRDLOperation):
    """A warp's ``mma.sync``: each lane passes its rows of 32-bit registers of A, B and C
    and gets its fragment of D = A·B + C (see the module docstring)."""

    name = "nvgpu.mma.sync"

    matrixA = operand_def(VectorType)
    matrixB = operand_def(VectorType)
    matrixC = operand_def(VectorType)
    res = result_def(VectorType)
    mmaShape = prop_def(ArrayAttr)
    tf32Enabled = opt_prop_def(UnitAttr)

    traits = traits_def(Pure())

    irdl_options = (ParsePropInAttrDict(),)
    custom_directives = (OptionalIntList,)
    PROPERTIES_IN_ATTR_DICT: ClassVar[bool] = True
    assembly_format = (
        "`(` $matrixA `,` $matrixB `,` $matrixC `)` (`mmaShape` `=` custom<OptionalIntList>($mmaShape)^)? attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, c: SSAValue | Operation,
                 shape: tuple[int, int, int]):
        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type],
                         properties={"mmaShape": i64_array(shape)})

    @property
    def shape(self) -> tuple[int, int, int]:
        return int_values(self.mmaShape)  # type: ignore[return-value]

    def verify_(self) -> None:
        shape = self.shape
        if len(shape) != 3:
            raise VerifyException(f"mmaShape must be [m, n, k], got {list(shape)}")
        if self.res.type != self.matrixC.type:
            raise VerifyException(f"the result type {self.res.type} must be C's type {self.matrixC.type}")
        for name, v in (("A", self.matrixA), ("B", self.matrixB), ("C", self.matrixC)):
            if len(v.type.get_shape()) != 2:
                raise VerifyException(f"{name} must be a 2-D vector of registers, got {v.type}")
        verify_mma_fragments("mma.sync", 32, shape, self.matrixA, self.matrixB, self.matrixC)


NVGPU = Dialect("nvgpu", [DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp, DeviceAsyncWaitOp, MmaSyncOp],
                [DeviceAsyncTokenType])

DIALECTS: list[Dialect] = [NVGPU]
