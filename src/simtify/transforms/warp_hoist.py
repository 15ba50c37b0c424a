"""Hoisting: scalar work every lane can do for itself leaves the region first.

An op of the region that has no side effects, makes no vector, and reads only values
every lane of the warp holds the same (function arguments, constants, workgroup ids,
values already hoisted) computes the same on every lane; moving it before the region
costs nothing and lets the ops that will be distributed use it directly:

    warp { %c32 = arith.constant 32 : index  %i0 = arith.muli %gid, %c32 : index  .. }
  becomes
    %c32 = arith.constant 32 : index  %i0 = arith.muli %gid, %c32 : index  warp { .. }

Lane ids are pure but not uniform: they stay (inside the region they mean lane 0's).
Vector ops stay too: each lane would compute the whole warp's vector.
"""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation

from simtify.ir.effects import LaneVariant, is_pure
from simtify.transforms.warp_region import (
    Uniformity,
    WarpConfig,
    body,
    inside,
    yield_of,
)


def hoist_uniform(warp: Operation, cfg: WarpConfig) -> bool:
    """Move every uniform scalar op before the region (one step for the region).

        warp { %i0 = arith.muli %gid, %c32 : index  %v = vector.transfer_read %A[%i0] .. }
      becomes
        %i0 = arith.muli %gid, %c32 : index  warp { %v = vector.transfer_read %A[%i0] .. }"""
    uniform = Uniformity()
    moved = False
    y = yield_of(warp)
    for op in list(body(warp).ops):
        if op is y:
            break
        if op.regions or not is_pure(op) or op.has_trait(LaneVariant):
            continue
        if any(isinstance(r.type, VectorType) for r in op.results):
            continue
        if all(not inside(warp, o) and uniform(o) for o in op.operands):
            op.detach()
            warp.parent_block().insert_op_before(op, warp)
            moved = True
    return moved
