"""The two ``rocdl`` ops AMD lowerings of subgroup reductions leave in IR that is still
above LLVM: ``rocdl.readlane %v, %lane : (f32, i32) -> f32`` (``v_readlane_b32``: every
lane gets %v of lane %lane) and ``rocdl.readfirstlane %v : f32`` (of the first active
lane). Upstream's syntax; the other ROCDL intrinsics are out of scope (semantics in
`simtify.sim.ops.rocdl`)."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import i32
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import AnyAttr, IRDLOperation, VarConstraint, operand_def, result_def, traits_def
from xdsl.traits import Pure

from simtify.ir.assembly import mlir_op
from simtify.ir.effects import Collective


@mlir_op
class ReadlaneOp(IRDLOperation):
    """``%r = rocdl.readlane %v, %lane : (f32, i32) -> f32``."""

    name = "rocdl.readlane"
    traits = traits_def(Pure(), Collective())
    T: ClassVar = VarConstraint("T", AnyAttr())
    src = operand_def(T)
    lane = operand_def(i32)
    res = result_def(T)

    assembly_format = "$src `,` $lane attr-dict `:` functional-type(operands, results)"

    def __init__(self, src: SSAValue | Operation, lane: SSAValue | Operation):
        src = SSAValue.get(src)
        super().__init__(operands=[src, lane], result_types=[src.type])


@mlir_op
class ReadfirstlaneOp(IRDLOperation):
    """``%r = rocdl.readfirstlane %v : f32``."""

    name = "rocdl.readfirstlane"
    traits = traits_def(Pure(), Collective())
    T: ClassVar = VarConstraint("T", AnyAttr())
    src = operand_def(T)
    res = result_def(T)

    assembly_format = "$src attr-dict `:` type($res)"

    def __init__(self, src: SSAValue | Operation):
        src = SSAValue.get(src)
        super().__init__(operands=[src], result_types=[src.type])


ROCDL = Dialect("rocdl", [ReadfirstlaneOp, ReadlaneOp], [])

DIALECTS: list[Dialect] = [ROCDL]

__all__ = ["DIALECTS", "ROCDL", "ReadfirstlaneOp", "ReadlaneOp"]
