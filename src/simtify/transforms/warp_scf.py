"""Control flow out of the region: an ``scf.for`` or ``scf.if`` ending a warp region
runs on every lane, with a warp region inside its body.

    %r = warp -> (vector<4xf32>) { %ini = ..
      %f = scf.for %i = %c0 to %c128 step %c1 iter_args(%a = %ini) -> (vector<128xf32>) {
        %n = .. %a ..  scf.yield %n }
      gpu.yield %f : vector<128xf32> }
  becomes
    %ini4 = warp -> (vector<4xf32>) { %ini = ..  gpu.yield %ini : vector<128xf32> }
    %r = scf.for %i = %c0 to %c128 step %c1 iter_args(%a4 = %ini4) -> (vector<4xf32>) {
      %w = warp args(%a4 : vector<4xf32>) -> (vector<4xf32>) { ^bb0(%a: vector<128xf32>):
        %n = .. %a ..  gpu.yield %n : vector<128xf32> }
      scf.yield %w : vector<4xf32> }

Loop-carried values cross each iteration split as the region's results are (or whole);
values the body takes from the rest of the region cross once, before the loop. The
bounds and an if's condition cross whole, so every lane takes the same path. The loop
must end the region, so that moving it after the other ops changes no order.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue

from simtify.ir import gpu as gpu_ir
from simtify.transforms.warp_region import (
    Boundary,
    WarpConfig,
    after,
    crossing_type,
    inside,
    rebuild,
    size,
    yield_of,
)


def _last_op(warp: Operation, name: str) -> Operation | None:
    y = yield_of(warp)
    op = y.prev_op
    if op is None or op.name != name:
        return None
    # its results may only leave through the yield
    for r in op.results:
        if any(use.operation is not y for use in r.uses):
            return None
    return op


def _defined_in(op: Operation, v: SSAValue) -> bool:
    owner = v.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        return parent is op or (parent is not None and op.is_ancestor(parent))
    return op.is_ancestor(owner)


def _captured_values(warp: Operation, op: Operation) -> list[SSAValue]:
    seen: list[SSAValue] = []
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operands:
            if inside(warp, v) and not _defined_in(op, v) and v not in seen:
                seen.append(v)
    return seen


def _result_types(warp: Operation, op: Operation) -> list | None:
    """The outside type of each of `op`'s results: as the region hands it out, or as
    a new crossing would split it; None when two uses want different splits."""
    y = yield_of(warp)
    types = []
    for r in op.results:
        wanted = {warp.results[use.index].type for use in r.uses if use.operation is y}
        if len(wanted) > 1:
            return None
        types.append(wanted.pop() if wanted else crossing_type(r.type, size(warp)))
    return types


def _inner_warp(laneid, n, carried, carried_outer, captured, captured_outer, old_block: Block,
                remap_first: list[SSAValue], result_types) -> tuple[Operation, Block]:
    """A warp region holding the ops of `old_block` (moved), whose first block args
    `remap_first` become the region's first arguments, captured values the next."""
    inner = Block(arg_types=[v.type for v in carried] + [v.type for v in captured])
    ops = list(old_block.ops)
    term = ops[-1]
    for o in ops[:-1]:
        o.detach()
        inner.add_op(o)
    inner.add_op(gpu_ir.YieldOp(list(term.operands)))
    for old, a in zip(list(remap_first) + list(captured), inner.args):
        old.replace_uses_with_if(a, lambda use: inner.is_ancestor(use.operation))
    warp = gpu_ir.WarpExecuteOnLane0Op(laneid, n, list(carried_outer) + list(captured_outer), list(result_types),
                                       Region(inner))
    return warp, inner


def _sinkable(warp: Operation, name: str) -> tuple[Operation, list, list[SSAValue], int, Boundary] | None:
    """(the `name` op ending the region, its results' types after it, the values it
    captures, the warp size, a boundary to cross) when it can run on every lane: its
    results are yielded and it captures no memref."""
    op = _last_op(warp, name)
    if op is None:
        return None
    types = _result_types(warp, op)
    captured = _captured_values(warp, op)
    if types is None or any(isinstance(v.type, MemRefType) for v in captured):
        return None
    return op, types, captured, size(warp), Boundary(warp)


def _replace_sunk(new: Operation, old: Operation, made: Operation, y_uses: list[tuple[int, int]]) -> None:
    """`made` (the op after region `new`) stands for `old` inside it: the region's
    results that yielded `old`'s (`y_uses`: result, `old` result) go, and so does `old`."""
    after(new).add(made)
    for i, j in y_uses:
        new.results[i].replace_all_uses_with(made.results[j])
    keep = [i for i in range(len(new.results)) if i not in {i for i, _ in y_uses}]
    rebuild(new, keep)
    old.detach()
    old.erase()


def sink_scf_for(warp: Operation, cfg: WarpConfig) -> bool:
    """``scf.for`` ending the region, its results yielded: the loop runs on every lane
    with a warp region for its body (see the module docstring for the IR)."""
    sinking = _sinkable(warp, "scf.for")
    if sinking is None:
        return False
    loop, types, captured, n, b = sinking
    for bound in loop.operands[:3]:
        b.need(bound)
    inits = list(loop.operands[3:])
    for init, t in zip(inits, types):
        b.need(init, t)
    for v in captured:
        b.need(v, crossing_type(v.type, n))
    y_uses = [(use.index, j) for j, r in enumerate(loop.results) for use in r.uses if use.operation is yield_of(warp)]
    new, vals = b.cross()
    bounds, init_vals, cap_vals = vals[:3], vals[3:3 + len(inits)], vals[3 + len(inits):]
    old_body = loop.regions[0].blocks.first
    loop_block = Block(arg_types=[old_body.args[0].type] + list(types))
    old_body.args[0].replace_all_uses_with(loop_block.args[0])
    inner_warp, _ = _inner_warp(new.laneid, n, list(old_body.args[1:]), list(loop_block.args[1:]), captured,
                                cap_vals, old_body, list(old_body.args[1:]), types)
    loop_block.add_op(inner_warp)
    loop_block.add_op(scf.YieldOp(*inner_warp.results))
    new_loop = scf.ForOp(bounds[0], bounds[1], bounds[2], init_vals, Region(loop_block))
    _replace_sunk(new, loop, new_loop, y_uses)
    return True


def sink_scf_if(warp: Operation, cfg: WarpConfig) -> bool:
    """An ``scf.if`` ending the region: its condition crosses whole, each branch becomes
    a warp region inside the ``scf.if`` that now runs on every lane."""
    sinking = _sinkable(warp, "scf.if")
    if sinking is None:
        return False
    branch, types, captured, n, b = sinking
    b.need(branch.operands[0])
    for v in captured:
        b.need(v, crossing_type(v.type, n))
    y_uses = [(use.index, j) for j, r in enumerate(branch.results) for use in r.uses if use.operation is yield_of(warp)]
    new, vals = b.cross()
    cond, cap_vals = vals[0], vals[1:]
    regions = []
    for region in branch.regions:
        blk = Block()
        if region.blocks and len(region.blocks.first.ops) > 0:
            old = region.blocks.first
            inner_warp, _ = _inner_warp(new.laneid, n, [], [], captured, cap_vals, old, [], types)
            blk.add_op(inner_warp)
            blk.add_op(scf.YieldOp(*inner_warp.results))
        else:
            blk.add_op(scf.YieldOp())
        regions.append(Region(blk))
    new_if = scf.IfOp(cond, types, regions[0], regions[1] if len(regions) > 1 else None)
    _replace_sunk(new, branch, new_if, y_uses)
    return True
