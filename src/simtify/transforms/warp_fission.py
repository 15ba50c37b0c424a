"""Region fission: split a warp region at an op into a chain of two regions.

The ops before the split point stay in the first region, the rest go to the second;
every value the second part uses from the first crosses between them, split over the
lanes when it can be (else whole), so that when both are lowered it goes through
workgroup memory, and when later patterns move its producer or consumer out of the
regions it does not. Splitting keeps the order of every op, so side effects keep
theirs; it is what lets a write that is not the region's last op be distributed:

    warp { %v = ..  vector.transfer_write %v, %B[..]  %w = ..  memref.store %s, .. }
  split after the transfer_write becomes
    %r = warp -> (vector<1xf32>..) { %v = ..  vector.transfer_write %v, %B[..]  gpu.yield .. }
    warp args(%r : ..) { ^bb0(..): %w = ..  memref.store %s, .. }
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue

from simtify.ir import gpu as gpu_ir
from simtify.ir.effects import memory_effect
from simtify.transforms.warp_region import (
    WarpConfig,
    body,
    crossing_type,
    size,
    yield_of,
)


def split_before(warp: Operation, at: Operation, cfg: WarpConfig) -> tuple[Operation, Operation] | None:
    """Split `warp` so that `at` starts the second region; None when a memref would
    have to cross (memrefs do not go through workgroup memory)."""
    block = body(warp)
    y = yield_of(warp)
    ops = list(block.ops)
    k = ops.index(at)
    first_ops, second_ops = ops[:k], ops[k:-1]
    second_set = set(second_ops)

    def used_later(v: SSAValue) -> bool:
        return any(use.operation is y or use.operation in second_set or
                   any(o.is_ancestor(use.operation) for o in second_ops) for use in v.uses)

    crossing = [r for op in first_ops for r in op.results if used_later(r)]
    passed_args = [a for a in block.args if used_later(a)]
    if any(isinstance(v.type, MemRefType) for v in crossing):
        return None
    n = size(warp)
    outer = [crossing_type(v.type, n) for v in crossing]
    second_block = Block(arg_types=[v.type for v in crossing] + [a.type for a in passed_args])
    for op in second_ops:
        op.detach()
        second_block.add_op(op)
    y.detach()
    second_block.add_op(y)
    for v, a in zip(crossing + passed_args, second_block.args):
        v.replace_uses_with_if(a, lambda use: second_block.is_ancestor(use.operation))
    block.add_op(gpu_ir.YieldOp(crossing))
    region = warp.detach_region(warp.warp_region)
    first = gpu_ir.WarpExecuteOnLane0Op(warp.laneid, n, list(warp.args), outer, region)
    parent = warp.parent_block()
    parent.insert_op_before(first, warp)
    outside_args = [warp.args[block.args.index(a)] for a in passed_args]
    second = gpu_ir.WarpExecuteOnLane0Op(warp.laneid, n, list(first.results) + outside_args,
                                         [r.type for r in warp.results], Region(second_block))
    parent.insert_op_before(second, warp)
    for old, new in zip(warp.results, second.results):
        old.replace_all_uses_with(new)
    warp.detach()
    warp.erase()
    return first, second


def _top_ops(warp: Operation) -> list[Operation]:
    return list(body(warp).ops)[:-1]


def split_after_write(warp: Operation, cfg: WarpConfig) -> bool:
    """A region whose last write is followed by other ops is split right after it, so
    that the write ends its region (and can be distributed) and the side effects keep
    their order.

        warp { %v = ..  vector.transfer_write %v, %B[..]  %e = math.exp %v .. }
      becomes
        %r = warp -> (vector<2xf32>) { %v = ..  vector.transfer_write %v, %B[..]  gpu.yield %v }
        warp args(%r : vector<2xf32>) { ^bb0(%v2: vector<64xf32>): %e = math.exp %v2 .. }"""
    ops = _top_ops(warp)
    for j in reversed(range(len(ops) - 1)):
        if memory_effect(ops[j]) == "write":
            return split_before(warp, ops[j + 1], cfg) is not None
    return False


def isolate_last_write(warp: Operation, cfg: WarpConfig) -> bool:
    """A write ending a region that is kept whole (a scalar store, a small or
    indivisible transfer_write, a loop that writes) goes to a region of its own, so
    the work before it can still be distributed.

        warp { %s = vector.reduction <add>, %v ..  memref.store %s, %out[%i] }
      becomes
        %r = warp -> (f32) { %s = vector.reduction <add>, %v ..  gpu.yield %s : f32 }
        warp args(%r : f32) { ^bb0(%s2: f32): memref.store %s2, %out[%i] }"""
    ops = _top_ops(warp)
    if len(ops) < 2 or memory_effect(ops[-1]) != "write":
        return False
    return split_before(warp, ops[-1], cfg) is not None

