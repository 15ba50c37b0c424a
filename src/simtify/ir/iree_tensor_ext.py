"""The ``iree_tensor_ext`` ops IREE 3.12 prints around a dispatch function's body:
``%x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%w..)`` in the
workgroup count region of ``iree_codegen.dispatch_config``."""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, result_def, var_operand_def

from simtify.ir.assembly import mlir_op


@mlir_op
class DispatchWorkgroupCountFromSliceOp(IRDLOperation):
    """``%x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice(%w..)``."""

    name = "iree_tensor_ext.dispatch.workgroup_count_from_slice"

    operands_ = var_operand_def(IndexType)
    x = result_def(IndexType)
    y = result_def(IndexType)
    z = result_def(IndexType)

    assembly_format = "`(` $operands_ `)` attr-dict"


IREETensorExt = Dialect("iree_tensor_ext", [DispatchWorkgroupCountFromSliceOp], [])

DIALECTS: list[Dialect] = [IREETensorExt]
