"""Wrapping: the always-correct first step of warp distribution.

A workgroup-level function (one value = what the whole warp computes) becomes a SIMT
function whose body runs on lane 0 of each warp, inside a
``gpu.warp_execute_on_lane_0``; later patterns move work out of the region one op at
a time:

    %i0 = arith.muli %gid, %c32 : index
    %l = vector.transfer_read %A[%i0], %cst : memref<128xf32>, vector<32xf32>
    vector.transfer_write %l, %B[%i0] : vector<32xf32>, memref<128xf32>
  becomes
    %laneid = gpu.lane_id
    gpu.warp_execute_on_lane_0(%laneid)[32] {
      %i0 = arith.muli %gid, %c32 : index
      ... (the same ops)
    }

Values the rest of the function uses (the returned ones) leave the region whole
(uniform results). A function that already uses lane ids, barriers or shuffles is SIMT
code, which lane 0 alone cannot run for the others: it is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Block, Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import arith
from simtify.ir import gpu as gpu_ir
from simtify.ir.effects import is_per_thread
from simtify.transforms.emit import Emitter
from simtify.transforms.warp_region import (
    make_warp,
    warp_ops,
)
from simtify.ir import location_of

# Ops only a SIMT program holds, besides the lane-variant and collective ones.
def lane_id(block: Block, warp_size: int, subgroup_size: int) -> SSAValue:
    """``%laneid``: the lane within its warp, made at the top of `block`."""
    if subgroup_size % warp_size:
        raise SimtifyError(f"a warp of {warp_size} lanes does not divide the {subgroup_size}-lane subgroup",
                           "--warp-size")
    first = block.first_op
    em = Emitter(block, before=first)
    lane = em.value(gpu_ir.LaneIdOp())
    if warp_size != subgroup_size:
        lane = em.value(arith.RemUIOp(lane, em.index(warp_size)))
    lane.name_hint = "laneid"
    return lane


def wrap_range(ops: Sequence[Operation], laneid: SSAValue, warp_size: int) -> Operation:
    """Put `ops` (consecutive, in one block) in a warp region; values used after them
    become uniform results."""
    first = ops[0]
    inner = set(ops)
    escaping: list[SSAValue] = []
    for op in ops:
        for r in op.results:
            if any(u.operation not in inner and not any(o.is_ancestor(u.operation) for o in ops) for u in r.uses):
                escaping.append(r)
    block = Block()
    warp = make_warp(laneid, warp_size, [], [v.type for v in escaping], block)
    first.parent_block().insert_op_before(warp, first)
    for op in ops:
        op.detach()
        block.add_op(op)
    block.add_op(gpu_ir.YieldOp(escaping))
    for j, v in enumerate(escaping):
        v.replace_uses_with_if(warp.results[j], lambda use: not warp.is_ancestor(use.operation))
    return warp


def _simt_op(op: Operation) -> Operation | None:
    for inner in op.walk():
        if is_per_thread(inner):
            return inner
    return None


def wrap_function(func: Operation, warp_size: int, subgroup_size: int) -> list[Operation]:
    """Wrap the body of a workgroup-level function; a function that already holds warp
    regions is left as it is. Returns the regions made."""
    if warp_ops(func):
        return []
    block = func.body.blocks.first
    body_ops = list(block.ops)[:-1]
    for op in body_ops:
        bad = _simt_op(op)
        if bad is not None:
            raise SimtifyError(f"'{bad.name}' makes @{func.sym_name.data} a SIMT function; warp wrapping takes a "
                               "workgroup-level one (one value = the whole warp's)", location_of(bad))
    if not body_ops:
        return []
    laneid = lane_id(block, warp_size, subgroup_size)
    return [wrap_range(body_ops, laneid, warp_size)]


def laneid_of(func: Operation) -> SSAValue | None:
    for warp in warp_ops(func):
        return warp.laneid
    return None

