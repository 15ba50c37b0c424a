"""The upstream ``bufferization`` dialect: xDSL's ops, with ``to_tensor`` and
``materialize_in_destination`` declared again because xDSL requires the memref to have
no memory space or layout, where upstream only asks that shape and element type match
(``bufferization.to_tensor %lds : memref<64xf32, #gpu.address_space<workgroup>> to
tensor<64xf32>`` is valid MLIR). These two are where a tensor program meets memory:

    %t = bufferization.to_tensor %A restrict : memref<64x256xi8> to tensor<64x256xi8>
    bufferization.materialize_in_destination %r in restrict writable %out : (tensor<..>, memref<..>) -> ()
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import bufferization as xdsl_bufferization
from xdsl.dialects.builtin import MemRefType, TensorType, UnitAttr
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, opt_result_def, result_def
from xdsl.utils.exceptions import VerifyException


def _check_same_data(what: str, memref: Attribute, tensor: Attribute) -> None:
    assert isinstance(memref, MemRefType) and isinstance(tensor, TensorType)
    if tuple(memref.get_shape()) != tuple(tensor.get_shape()) or memref.element_type != tensor.element_type:
        raise VerifyException(f"{what}: {tensor} does not hold the shape and elements of {memref}")


class _BufferPromises(IRDLOperation):
    """What to_tensor and materialize_in_destination may promise of their buffer, written
    in this order: ``restrict`` (tensor IR reaches it only through this op) and ``writable``."""

    restrict = opt_prop_def(UnitAttr)
    writable = opt_prop_def(UnitAttr)

    PROMISES: ClassVar[str] = "(`restrict` $restrict^)? (`writable` $writable^)?"


@irdl_op_definition
class ToTensorOp(_BufferPromises):
    """``bufferization.to_tensor %m [restrict] [writable] : memref<..> to tensor<..>``."""

    name = "bufferization.to_tensor"
    memref = operand_def(MemRefType)
    tensor = result_def(TensorType)
    assembly_format = f"$memref {_BufferPromises.PROMISES} attr-dict `:` type($memref) `to` type($tensor)"

    def verify_(self) -> None:
        _check_same_data("to_tensor", self.memref.type, self.tensor.type)


@irdl_op_definition
class MaterializeInDestinationOp(_BufferPromises):
    """``bufferization.materialize_in_destination %t in [restrict] [writable] %dest :
    (tensor<..>, memref<..>) -> ()`` (or a tensor destination, with a result)."""

    name = "bufferization.materialize_in_destination"
    source = operand_def(TensorType)
    dest = operand_def(MemRefType | TensorType)
    result = opt_result_def(TensorType)
    assembly_format = f"$source `in` {_BufferPromises.PROMISES} $dest attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        dest = self.dest.type
        if isinstance(dest, MemRefType):
            _check_same_data("materialize_in_destination", dest, self.source.type)
            if self.result is not None:
                raise VerifyException("materialize_in_destination into a memref has no result")
        elif dest != self.source.type or self.result is None or self.result.type != dest:
            raise VerifyException("materialize_in_destination into a tensor returns that tensor's type")


_REPLACED = {ToTensorOp.name, MaterializeInDestinationOp.name}

Bufferization = Dialect(
    "bufferization",
    [*(op for op in xdsl_bufferization.Bufferization.operations if op.name not in _REPLACED),
     ToTensorOp, MaterializeInDestinationOp],
    list(xdsl_bufferization.Bufferization.attributes),
)
