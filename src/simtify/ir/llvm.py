"""The few ``llvm`` dialect ops that appear in GPU-level IR simtify reads.

``%p = llvm.mlir.poison : vector<8xf16>``: an undefined value (the start of a vector
built element by element). The simulator gives it the undefined values the sanitizers
know, as it does ``ub.poison``.
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, result_def, traits_def
from xdsl.traits import Pure

from simtify.ir.assembly import mlir_op


@mlir_op
class PoisonOp(IRDLOperation):
    """``%p = llvm.mlir.poison : T``."""

    name = "llvm.mlir.poison"

    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"


LLVM = Dialect("llvm", [PoisonOp], [])

DIALECTS: list[Dialect] = [LLVM]
