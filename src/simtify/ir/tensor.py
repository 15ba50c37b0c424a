"""The upstream ``tensor`` dialect: xDSL's ops plus ``tensor.parallel_insert_slice``,
the op an ``scf.forall.in_parallel`` terminator is made of (see `simtify.ir.scf`):

    tensor.parallel_insert_slice %part into %out[%i, 0] [16, 256] [1, 1]
        : tensor<16x256xi8> into tensor<64x256xi8>
"""

from __future__ import annotations

from xdsl.dialects import tensor as xdsl_tensor
from xdsl.dialects.builtin import DenseArrayBase, IndexType, TensorType, i64
from xdsl.dialects.utils import DynamicIndexList
from xdsl.ir import Dialect
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent
from xdsl.utils.exceptions import VerifyException

from simtify.ir.scf import InParallelOp, verify_index_lists


@irdl_op_definition
class ParallelInsertSliceOp(IRDLOperation):
    """Insert ``source`` into the shared output ``dest`` at offsets/sizes/strides, once
    per iteration of the enclosing ``scf.forall``."""

    name = "tensor.parallel_insert_slice"
    source = operand_def(TensorType)
    dest = operand_def(TensorType)
    traits = traits_def(HasParent(InParallelOp))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    offsets = var_operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    static_offsets = prop_def(DenseArrayBase.constr(i64))
    static_sizes = prop_def(DenseArrayBase.constr(i64))
    static_strides = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$source `into` $dest ``"
        "custom<DynamicIndexList>($offsets, $static_offsets)"
        "custom<DynamicIndexList>($sizes, $static_sizes)"
        "custom<DynamicIndexList>($strides, $static_strides)"
        "attr-dict `:` type($source) `into` type($dest)"
    )
    custom_directives = (DynamicIndexList,)

    def verify_(self) -> None:
        verify_index_lists(("offset arguments", self.static_offsets, self.offsets),
                           ("size arguments", self.static_sizes, self.sizes),
                           ("stride arguments", self.static_strides, self.strides))
        rank = self.dest.type.get_num_dims()
        if not len(self.static_offsets) == len(self.static_sizes) == len(self.static_strides) == rank:
            raise VerifyException(f"needs one offset, size and stride per dim of {self.dest.type}")
        if self.source.type.element_type != self.dest.type.element_type:
            raise VerifyException(f"cannot insert {self.source.type} into {self.dest.type}: element types differ")


Tensor = Dialect(
    "tensor",
    [*xdsl_tensor.Tensor.operations, ParallelInsertSliceOp],
    list(xdsl_tensor.Tensor.attributes),
)
