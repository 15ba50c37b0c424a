"""The two ``rocdl`` ops AMD lowerings of subgroup reductions leave in IR that is still
above LLVM: ``rocdl.readlane %v, %lane : (f32, i32) -> f32`` (``v_readlane_b32``: every
lane gets %v of lane %lane) and ``rocdl.readfirstlane %v : f32`` (of the first active
lane). Upstream's syntax; the other ROCDL intrinsics are out of scope (semantics in
`simtify.sim.ops.rocdl`)."""

from __future__ import annotations

from xdsl.dialects.builtin import i32
from xdsl.ir import Dialect
from xdsl.irdl import operand_def, result_def

from simtify.ir.assembly import mlir_op
from simtify.ir.gpu import SAME, LaneExchangeOp, LaneValueOp


@mlir_op
class ReadlaneOp(LaneExchangeOp):
    """``%r = rocdl.readlane %v, %lane : (f32, i32) -> f32``."""

    name = "rocdl.readlane"
    src = operand_def(SAME)
    lane = operand_def(i32)
    result = result_def(SAME)

    assembly_format = "$src `,` $lane attr-dict `:` functional-type(operands, results)"


@mlir_op
class ReadfirstlaneOp(LaneValueOp):
    """``%r = rocdl.readfirstlane %v : f32``."""

    name = "rocdl.readfirstlane"
    assembly_format = "$src attr-dict `:` type($result)"


ROCDL = Dialect("rocdl", [ReadfirstlaneOp, ReadlaneOp], [])

DIALECTS: list[Dialect] = [ROCDL]
