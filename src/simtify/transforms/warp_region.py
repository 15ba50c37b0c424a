"""The ``gpu.warp_execute_on_lane_0`` region and the values that cross its boundary.

A warp region runs on lane 0 only, on whole-warp values. A value crossing the boundary
with type ``vector<k_0·n_0 x k_1·n_1 ..>`` inside and ``vector<n_0 x n_1 ..>`` outside is
split per dim by the ratios ``k`` (their product is the warp size N); the lane id is
delinearized row-major over ``k`` (last dim fastest) and lane ``(l_0, l_1, ..)`` holds
the contiguous block ``[l_i·n_i, (l_i+1)·n_i)`` of each dim. That is a nested layout
with ``thread_tile = k``, ``element_tile = n`` and row-major thread strides
(`warp_layout`), so questions of ownership go to `simtify.layout`.

A value with the same type on both sides is uniform: inside, lane 0's value; outside,
lane 0's value on every lane. A value captured from above inside the region is lane
0's value too; this is why an op moved out of a region may use an outside value
directly only when every lane of the warp holds the same one (`Uniformity`), and
otherwise must receive it through the region.

This module holds what every warp pattern needs: the ratios and distributed types,
the lane digits of a distribution, uniformity, and rebuilding a warp op with more or
fewer results. Which ops may move across the boundary is decided by their memory
effects, as their traits declare them (`simtify.ir.effects`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, VectorType
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    Region,
    SSAValue,
)
from xdsl.ir.affine import AffineExpr

from simtify.ir import gpu as gpu_ir
from simtify.ir.effects import Collective, LaneVariant, SubgroupUniform, memory_effect
from simtify.layout import NestedLayout
from simtify.layout.ownership import unravel
from simtify.transforms.emit import Emitter

WARP_OP = "gpu.warp_execute_on_lane_0"


@dataclass(frozen=True)
class WarpConfig:
    """What the warp patterns need to know about the launch and the user's choices."""

    warp_size: int
    subgroup_size: int
    warps_per_workgroup: int = 1
    max_whole_write: int = 1  # transfer_writes of at most this many elements stay whole on lane 0
    write_dims: str = "innermost"  # the distribution map of writes: lanes over the innermost or outermost dim first

# --- memory effects (declared by the ops' traits: `simtify.ir.effects`) --------------


def writes_after(op: Operation) -> bool:
    """Whether an op after `op` in its block (up to the terminator) may write memory."""
    nxt = op.next_op
    while nxt is not None:
        if memory_effect(nxt) == "write" and not nxt.name.endswith("yield"):
            return True
        nxt = nxt.next_op
    return False


# --- the region ----------------------------------------------------------------------


def warp_ops(root: Operation) -> list[Operation]:
    """The warp regions under `root`, in program order."""
    return [op for op in root.walk() if op.name == WARP_OP]


def size(warp: Operation) -> int:
    return warp.warp_size.value.data


def body(warp: Operation) -> Block:
    return warp.warp_region.blocks.first


def yield_of(warp: Operation) -> Operation:
    return body(warp).last_op


def inside(warp: Operation, value: SSAValue) -> bool:
    """Whether `value` is defined in the region (at any depth)."""
    if isinstance(value, BlockArgument):
        block = value.block
    else:
        block = value.owner.parent_block()
    region = warp.warp_region
    while block is not None:
        if block.parent is region:
            return True
        parent_op = block.parent_op()
        block = parent_op.parent_block() if parent_op is not None else None
    return False




def crosses_whole(warp: Operation) -> bool:
    """Whether every value crosses the region uniformly (the same type on both sides)."""
    y = yield_of(warp)
    return all(o.type == a.type for o, a in zip(warp.args, body(warp).args)) and \
        all(r.type == v.type for r, v in zip(warp.results, y.operands))


def hoist_body(warp: Operation) -> None:
    """Move the region's ops before it, its arguments (which must cross it whole) replaced
    by the values passed in: the region keeps only its yield, of values now defined
    before it — what lane 0 ran on whole-warp values becomes every lane's program."""
    blk, y = body(warp), yield_of(warp)
    for operand, arg in zip(warp.args, blk.args):
        arg.replace_all_uses_with(operand)
    for op in list(blk.ops):
        if op is y:
            break
        op.detach()
        warp.parent_block().insert_op_before(op, warp)


def open_region(warp: Operation) -> None:
    """Replace a region whose values all cross it whole (`crosses_whole`) by its body,
    where the region stood (`hoist_body`) — a subgroup's program, as XeGPU's lane stage
    takes one."""
    yielded = list(yield_of(warp).operands)
    hoist_body(warp)
    for r, v in zip(warp.results, yielded):
        r.replace_all_uses_with(v)
    warp.detach()
    warp.erase()


# --- types and ratios ----------------------------------------------------------------


def shape(t: Attribute) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, VectorType) else ()


def ratios(expanded: Attribute, distributed: Attribute) -> tuple[int, ...]:
    """Per-dim ratio of a crossing value's inside and outside sizes (all 1: uniform)."""
    if expanded == distributed:
        return (1,) * len(shape(expanded))
    return tuple(a // b for a, b in zip(shape(expanded), shape(distributed)))




def lane_blocks(expanded: VectorType, distributed: VectorType) -> np.ndarray | None:
    """The elements (row-major indices) each lane holds of a value yielded as `expanded`
    and handed out as `distributed`: lane ``(l_0, l_1, ..)`` (row-major over the ratios)
    the contiguous block ``[l_i·n_i, (l_i+1)·n_i)`` of each dim. None where the shapes do
    not split that way (ranks differ, or a size does not divide)."""
    big, small = shape(expanded), shape(distributed)
    if len(big) != len(small) or any(b % s for b, s in zip(big, small)):
        return None
    ks = ratios(expanded, distributed)
    whole = np.arange(prod(big)).reshape(big)
    return np.stack([whole[tuple(slice(c * n, (c + 1) * n) for c, n in zip(unravel(lane, ks), small))]
                     .ravel() for lane in range(prod(ks))])


def distributed_type(t: VectorType, ks: Sequence[int]) -> VectorType:
    return VectorType(t.element_type, [d // k for d, k in zip(t.get_shape(), ks)])


def split_lanes(dims_shape: Sequence[int], warp_size: int, order: Sequence[int]) -> tuple[int, ...] | None:
    """Ratios that spread `warp_size` lanes over the dims in `order` (the distribution
    map: the dims taking lanes, first taking most): a dim takes all remaining lanes if
    its size is a multiple of them, or all of its size if that divides the remaining
    lanes; None if the lanes cannot be spread evenly."""
    ks = [1] * len(dims_shape)
    left = warp_size
    for d in order:
        if left == 1:
            break
        n = dims_shape[d]
        if n % left == 0:
            ks[d], left = left, 1
        elif left % n == 0:
            ks[d], left = n, left // n
        else:
            return None
    return tuple(ks) if left == 1 else None


def innermost_first(t: Attribute, warp_size: int) -> tuple[int, ...] | None:
    """The default distribution map: lanes over the innermost dim first (coalesced)."""
    s = shape(t)
    if not isinstance(t, VectorType) or not s:
        return None
    return split_lanes(s, warp_size, list(reversed(range(len(s)))))


def crossing_type(t: Attribute, warp_size: int) -> Attribute:
    """How a value crosses a boundary a pass creates: split over the lanes when it
    can be, whole (uniform) otherwise."""
    ks = innermost_first(t, warp_size)
    return distributed_type(t, ks) if ks is not None else t


def warp_layout(full_shape: Sequence[int], ks: Sequence[int]) -> NestedLayout:
    """The nested layout of a warp distribution: lane digits row-major over the ratios,
    contiguous blocks."""
    r = len(full_shape)
    strides, acc = [0] * r, 1
    for i in reversed(range(r)):
        strides[i] = acc if ks[i] > 1 else 0
        acc *= ks[i]
    ones = (1,) * r
    return NestedLayout(ones, ones, ones, tuple(ks), tuple(n // k for n, k in zip(full_shape, ks)),
                        (0,) * r, tuple(strides))


# --- lane digits ---------------------------------------------------------------------


def lane_digits(em: Emitter, laneid: SSAValue, ks: Sequence[int]) -> list[SSAValue | None]:
    """Per dim, the lane's digit of the row-major delinearization over `ks` (None where
    the ratio is 1). Each digit is exact for 3+ distributed dims: digit i is
    ``(lane // prod(ks[i+1:])) % ks[i]``, the stride of a dim being the product of the
    ratios after it, not the running count before it."""
    used = [i for i, k in enumerate(ks) if k > 1]
    out: list[SSAValue | None] = [None] * len(ks)
    if not used:
        return out
    if len(used) == 1:
        out[used[0]] = laneid
        return out
    digits = em.delinearize(laneid, [ks[i] for i in used[1:]])
    for i, d in zip(used, digits):
        out[i] = d
    return out


def block_offsets(em: Emitter, laneid: SSAValue, ks: Sequence[int], block: Sequence[int]) -> list[SSAValue | None]:
    """Per dim, where the lane's block starts (``digit · n``), None where the ratio is 1."""
    out = []
    for digit, n in zip(lane_digits(em, laneid, ks), block):
        if digit is None:
            out.append(None)
        elif n == 1:
            out.append(digit)
        else:
            out.append(em.apply(AffineExpr.dimension(0) * n, [digit]))
    return out


def add_offset(em: Emitter, base: SSAValue, offset: SSAValue | None) -> SSAValue:
    if offset is None:
        return base
    return em.apply(AffineExpr.dimension(0) + AffineExpr.dimension(1), [base, offset])


# --- uniformity ----------------------------------------------------------------------


class Uniformity:
    """Whether a value outside any region is the same on every lane of a warp:
    function arguments, constants, workgroup/subgroup ids, undistributed results of
    warp regions and anything computed (or loaded) from uniform values only. Lane ids,
    distributed results and values of divergent control flow are not."""

    def __init__(self):
        self.memo: dict[SSAValue, bool] = {}

    def __call__(self, value: SSAValue) -> bool:
        if value in self.memo:
            return self.memo[value]
        self.memo[value] = False  # cycles (loop-carried values) are not proven uniform
        self.memo[value] = result = self._compute(value)
        return result

    def _compute(self, value: SSAValue) -> bool:
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if owner is None or owner.name in ("func.func", "gpu.func"):
                return True
            if owner.name == "scf.for":
                if value.index == 0:
                    return all(self(o) for o in owner.operands[:3])
                i = value.index - 1
                return self(owner.operands[3 + i]) and self(value.block.last_op.operands[i]) and all(
                    self(o) for o in owner.operands[:3])
            return False
        op = value.owner
        if op.name == WARP_OP:
            i = op.results.index(value)
            return yield_of(op).operands[i].type == value.type
        if op.has_trait(LaneVariant) or op.has_trait(Collective):
            return False
        if op.has_trait(SubgroupUniform):
            return True
        if op.name == "scf.if":
            i = op.results.index(value)
            return self(op.operands[0]) and all(self(r.block.last_op.operands[i]) for r in op.regions if r.blocks)
        if op.name == "scf.for":
            i = op.results.index(value)
            return self(op.regions[0].blocks.first.args[i + 1])
        if op.regions:
            return False
        return all(self(o) for o in op.operands)


# --- rebuilding warp ops -------------------------------------------------------------


def make_warp(laneid: SSAValue, warp_size: int, args: Sequence[tuple[SSAValue, Attribute]],
              result_types: Sequence[Attribute], block: Block | None = None) -> Operation:
    """A new warp op; `args` pairs an outside operand with its type inside."""
    if block is None:
        block = Block(arg_types=[t for _, t in args])
        block.add_op(gpu_ir.YieldOp())
    return gpu_ir.WarpExecuteOnLane0Op(laneid, warp_size, [v for v, _ in args], list(result_types), Region(block))


def rebuild(warp: Operation, keep: Sequence[int], extra: Sequence[tuple[SSAValue, Attribute]] = (),
            keep_args: Sequence[int] | None = None) -> tuple[Operation, list[SSAValue]]:
    """Replace `warp` by a warp op with the results `keep` (in that order) and the
    extra yields `extra` (value inside, type outside); an extra that is already
    yielded with the same type reuses that result. Returns the new op and the results
    for the extras."""
    y = yield_of(warp)
    old_yields = list(y.operands)
    values = [old_yields[i] for i in keep]
    types = [warp.results[i].type for i in keep]
    extra_results: list[int] = []
    for v, t in extra:
        for j, (w, u) in enumerate(zip(values, types)):
            if w is v and u == t:
                extra_results.append(j)
                break
        else:
            values.append(v)
            types.append(t)
            extra_results.append(len(values) - 1)
    block = body(warp)
    arg_ids = list(range(len(warp.args))) if keep_args is None else list(keep_args)
    region = warp.detach_region(warp.warp_region)
    new = gpu_ir.WarpExecuteOnLane0Op(warp.laneid, size(warp), [warp.args[i] for i in arg_ids], types, region)
    new.attributes.update(warp.attributes)
    for i in sorted(set(range(len(block.args))) - set(arg_ids), reverse=True):
        block.erase_arg(block.args[i])
    warp.parent_block().insert_op_before(new, warp)
    new_yield = gpu_ir.YieldOp(values)
    block.insert_op_before(new_yield, y)
    y.detach()
    y.erase()
    for j, i in enumerate(keep):
        warp.results[i].replace_all_uses_with(new.results[j])
    warp.detach()
    warp.erase()
    return new, [new.results[j] for j in extra_results]


def copy_of(op: Operation, operands, result_types) -> Operation:
    """`op` (its properties and attributes) over other operands and result types: the
    per-lane copy of an op sunk out of a warp region."""
    return type(op).create(operands=list(operands), result_types=list(result_types),
                           properties=dict(op.properties), attributes=dict(op.attributes))


def after(warp: Operation) -> Emitter:
    """An emitter placing ops right after `warp`."""
    return Emitter(warp.parent_block(), before=warp.next_op)




class Boundary:
    """Values an op moved out of `warp` needs, gathered before the warp op is rebuilt:
    each is used directly when it is an outside value of the wanted type that every
    lane holds, else yielded from the region with the wanted type (lane 0's value,
    split over the lanes or broadcast)."""

    def __init__(self, warp: Operation, uniform: Uniformity | None = None):
        self.warp = warp
        self.uniform = uniform or Uniformity()
        self.items: list[tuple[SSAValue, Attribute]] = []
        self.direct: dict[int, SSAValue] = {}

    def need(self, value: SSAValue, outside_type: Attribute | None = None) -> int:
        t = value.type if outside_type is None else outside_type
        k = len(self.items)
        self.items.append((value, t))
        if not inside(self.warp, value) and t == value.type and self.uniform(value):
            self.direct[k] = value
        return k

    def cross(self, keep_all: bool = True) -> tuple[Operation, list[SSAValue]]:
        """Rebuild the warp op; returns it and the outside value of every `need`."""
        yielded = [(v, t) for k, (v, t) in enumerate(self.items) if k not in self.direct]
        keep = list(range(len(self.warp.results)))
        new, results = rebuild(self.warp, keep, yielded)
        it = iter(results)
        out = [self.direct[k] if k in self.direct else next(it) for k in range(len(self.items))]
        return new, out


def shuffle_source(em: Emitter, laneid: SSAValue, owner: SSAValue | int, cfg: WarpConfig) -> SSAValue:
    """The i32 ``gpu.shuffle idx`` operand that reads lane `owner` of this lane's warp
    (the warp's first lane in its subgroup plus `owner` when warps are smaller)."""
    from xdsl.dialects.builtin import i32

    from simtify.ir import arith as arith_ir

    if isinstance(owner, int):
        owner = em.index(owner)
    if cfg.warp_size != cfg.subgroup_size:
        sg_lane = em.value(gpu_ir.LaneIdOp())
        d0, d1, d2 = AffineExpr.dimension(0), AffineExpr.dimension(1), AffineExpr.dimension(2)
        owner = em.apply(d0 - d1 + d2, [sg_lane, laneid, owner])
    return em.value(arith_ir.IndexCastOp(owner, i32))


def i32_const(em: Emitter, n: int) -> SSAValue:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i32

    return em.value(arith.ConstantOp(IntegerAttr(n, i32)))
