"""Lowering a warp region to ``scf.if %laneid == 0`` through workgroup memory.

Every value that crosses the boundary goes through a workgroup buffer of its whole
(inside) shape: a distributed argument is stored by each lane at its block, a barrier
makes it visible, lane 0 loads the whole value, runs the region and stores what it
yields; after a second barrier each lane loads its block (or, for a uniform result,
the whole value). Arguments of the same type inside and outside, and values captured
from above, need no memory: lane 0 uses its own value, which is what the region means.

    %r = gpu.warp_execute_on_lane_0(%laneid)[32] args(%v : vector<4xf32>) -> (vector<1xf32>) {
    ^bb0(%a: vector<128xf32>):  ...  gpu.yield %y : vector<32xf32> }
  becomes
    vector.store %v, %in[%laneid · 4]          gpu.barrier
    scf.if %laneid == 0 { %a = vector.load %in[0] : vector<128xf32>  ...
                          vector.store %y, %out[0] }
    gpu.barrier                                %r = vector.load %out[%laneid] : vector<1xf32>

A lane's block starts at ``digit_i · n_i`` in each dim, with its digits from the
row-major delinearization of the lane id over the ratios (not the raw lane id in
every distributed dim). With several warps in a workgroup each buffer has a leading
dim indexed by the warp, so that warps never share a buffer. Buffers are allocated
once at the function entry.
"""

from __future__ import annotations

from xdsl.dialects import affine, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    IndexType,
    IntegerType,
    VectorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.transforms.emit import Emitter
from simtify.transforms.warp_region import (
    block_offsets,
    body,
    ratios,
    shape,
    size,
    warp_ops,
    yield_of,
)
from simtify.ir import location_of


class WarpMemory:
    """Workgroup buffers for the warp regions of one function."""

    def __init__(self, func: Operation, warps_per_workgroup: int, subgroup_size: int):
        self.func = func
        self.warps = warps_per_workgroup
        self.subgroup_size = subgroup_size
        self.entry = func.body.blocks.first
        self.slot_value: SSAValue | None = None
        self.last: Operation | None = None  # the entry ops made so far go after this one

    def _top(self, op: Operation) -> SSAValue:
        if self.last is None:
            self.entry.insert_op_before(op, self.entry.first_op)
        else:
            self.entry.insert_op_after(op, self.last)
        self.last = op
        return op.results[0]

    def slot(self, warp_size: int) -> list[SSAValue]:
        """The warp's index into the leading buffer dim ([] with one warp)."""
        if self.warps == 1:
            return []
        if self.slot_value is None:
            sg = self._top(gpu_ir.SubgroupIdOp())
            lane = self._top(gpu_ir.LaneIdOp())
            per_sg = self.subgroup_size // warp_size
            d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
            m = AffineMap(2, 0, (d0 * per_sg + d1 // warp_size,))
            self.slot_value = self._top(affine.ApplyOp([sg, lane], AffineMapAttr(m)))
            self.slot_value.name_hint = "warp_slot"
        return [self.slot_value]

    def alloc(self, t) -> SSAValue:
        elt = t.element_type if isinstance(t, VectorType) else t
        dims = list(shape(t)) or [1]
        lead = [self.warps] if self.warps > 1 else []
        space = gpu_ir.AddressSpaceAttr(gpu_ir.AddressSpace.WORKGROUP)
        return self._top(memref.AllocOp.get(elt, shape=lead + dims, memory_space=space))


def _whole(slot: list[SSAValue], t, c0: SSAValue) -> list[SSAValue]:
    """Index of a whole value in its buffer (scalars and 0-D vectors use one element)."""
    return slot + [c0] * max(1, len(shape(t)))


def _store(em: Emitter, value: SSAValue, buf: SSAValue, idx: list[SSAValue]) -> None:
    t = value.type
    if isinstance(t, VectorType) and t.get_num_dims() > 0:
        em.add(vector_ir.StoreOp(value, buf, idx))
    elif isinstance(t, VectorType):  # 0-D vector: its element
        em.add(memref.StoreOp.get(em.extract(value, [], t.element_type), buf, idx))
    else:
        em.add(memref.StoreOp.get(value, buf, idx))


def _load(em: Emitter, t, buf: SSAValue, idx: list[SSAValue]) -> SSAValue:
    if isinstance(t, VectorType) and t.get_num_dims() > 0:
        return em.value(vector_ir.LoadOp(buf, idx, t))
    if isinstance(t, VectorType):
        return em.broadcast(em.value(memref.LoadOp.get(buf, idx)), t)
    return em.value(memref.LoadOp.get(buf, idx))


def _in_loop(op: Operation) -> bool:
    p = op.parent_op()
    while p is not None:
        if p.name in ("scf.for", "scf.while"):
            return True
        p = p.parent_op()
    return False


def lower_warp(warp: Operation, mem: WarpMemory) -> Operation:
    """Replace one warp region by its ``scf.if``; returns the ``scf.if``."""
    for t in [a.type for a in warp.args] + [r.type for r in warp.results]:
        if not isinstance(t, (VectorType, IntegerType, IndexType, AnyFloat)):
            raise SimtifyError(f"a {t} cannot cross a warp region through workgroup memory", location_of(warp))
    n = size(warp)
    laneid = warp.laneid
    em = Emitter(warp.parent_block(), before=warp)
    crossing = bool(warp.results) or any(a.type != b.type for a, b in zip(warp.args, body(warp).args))
    slot = mem.slot(n) if crossing else []
    c0 = em.index(0)
    is_lane0 = em.cmpi("eq", laneid, c0)
    block = body(warp)
    loads = []
    for operand, barg in zip(warp.args, block.args):
        if operand.type == barg.type:
            barg.replace_all_uses_with(operand)
            continue
        buf = mem.alloc(barg.type)
        offsets = block_offsets(em, laneid, ratios(barg.type, operand.type), shape(operand.type))
        _store(em, operand, buf, slot + [o if o is not None else c0 for o in offsets])
        loads.append((barg, buf))
    if loads or (warp.results and _in_loop(warp)):
        em.barrier()  # arguments visible to lane 0; last round's results all read
    then = em.if_then(is_lane0)
    for barg, buf in loads:
        barg.replace_all_uses_with(_load(then, barg.type, buf, _whole(slot, barg.type, c0)))
    y = yield_of(warp)
    for op in list(block.ops):
        if op is y:
            break
        op.detach()
        then.add(op)
    outs = []
    for value, result in zip(y.operands, warp.results):
        buf = mem.alloc(value.type)
        _store(then, value, buf, _whole(slot, value.type, c0))
        outs.append((result, buf, value.type))
    if outs:
        em.barrier()  # lane 0's stores visible to every lane
    if_op = then.block.parent_op()
    for result, buf, inner_type in outs:
        if result.type == inner_type:
            idx = _whole(slot, inner_type, c0)
        else:
            offsets = block_offsets(em, laneid, ratios(inner_type, result.type), shape(result.type))
            idx = slot + [o if o is not None else c0 for o in offsets]
        result.replace_all_uses_with(_load(em, result.type, buf, idx))
    warp.detach()
    warp.erase()
    return if_op


def lower_function(func: Operation, warps_per_workgroup: int, subgroup_size: int) -> int:
    """Lower every warp region of `func`; returns how many there were."""
    mem = WarpMemory(func, warps_per_workgroup, subgroup_size)
    count = 0
    for warp in warp_ops(func):
        for inner in warp.walk():
            if inner is not warp and inner.name == warp.name:
                raise SimtifyError("warp regions cannot nest", location_of(inner))
        lower_warp(warp, mem)
        count += 1
    return count
