"""Rewrites of ``scf`` ops: the op is rebuilt around its distributed regions; vector
values it carries become registers."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, Region

from simtify.errors import SimtifyError
from simtify.transforms.emit import Emitter, if_regions
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.registers import distributed_type
from simtify.transforms.propagate_layouts import is_vector


def _result_types(ctx: DistributionContext, values) -> list:
    return [distributed_type(v.type, ctx.layout_of(v)) if is_vector(v) else v.type for v in values]


def distribute_for(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The loop kept, its body distributed; a carried vector becomes carried registers.

        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (vector<4x64xf32>) { ... }
      becomes
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (vector<1x1x1x1x1x4xf32>) { ... }
    """
    old_body = op.regions[0].blocks.first
    inits = [ctx.distributed(v) for v in op.operands[3:]]
    body = Block(arg_types=[IndexType()] + [v.type for v in inits])
    for old, new in zip(old_body.args, body.args):
        new.name_hint = old.name_hint
        ctx.value_map[old] = new
    ctx.loop_depth += 1
    try:
        results = ctx.distribute_block(old_body, Emitter(body))
    finally:
        ctx.loop_depth -= 1
    body.add_op(scf.YieldOp(*results))
    new = scf.ForOp(ctx.distributed(op.operands[0]), ctx.distributed(op.operands[1]), ctx.distributed(op.operands[2]),
                    inits, Region(body))
    em.add(new)
    for old, v in zip(op.results, new.results):
        ctx.value_map[old] = v


def distribute_forall(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """A workgroup ``scf.forall`` (mapped to ``#iree_codegen.workgroup_mapping``, as
    IREE's dispatches print it before vector distribution) is kept, with its bounds
    and mapping; its body is distributed like the function's. Each iteration is one
    workgroup's tile, so the body is not a loop for the threads of a workgroup.

        scf.forall (%wg) in (8) { ...vector<64xf32>... } {mapping = [#iree_codegen.workgroup_mapping<x>]}
      becomes
        scf.forall (%wg) in (8) { ...vector<1x1x4xf32>... } {mapping = [#iree_codegen.workgroup_mapping<x>]}
    """
    from simtify.ir.scf import ForallOp, InParallelOp
    from simtify.sim.dispatch import forall_workgroup_dims

    if op.outputs or op.loop_results:
        raise SimtifyError("nested distribution needs a bufferized scf.forall (no shared_outs)")
    if forall_workgroup_dims(op) is None:
        raise SimtifyError("nested distribution keeps only scf.forall loops mapped to workgroups "
                           "(#iree_codegen.workgroup_mapping); distribute other foralls first")
    old_body = op.body.block
    body = Block(arg_types=[a.type for a in old_body.args])
    for old, new in zip(old_body.args, body.args):
        new.name_hint = old.name_hint
        ctx.value_map[old] = new
    ctx.distribute_block(old_body, Emitter(body))
    body.add_op(InParallelOp())
    new = ForallOp.build(
        operands=[[ctx.distributed(v) for v in op.dynamicLowerBound], [ctx.distributed(v) for v in op.dynamicUpperBound],
                  [ctx.distributed(v) for v in op.dynamicStep], []],
        result_types=[[]],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
        regions=[Region(body)],
    )
    em.add(new)


def distribute_while(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Both regions distributed; the before region's arguments take the inits'
    layouts, the after region's arguments and the results the forwarded values'.

        %r = scf.while (%x = %v) : (vector<64xf32>) -> vector<64xf32> { ... }
      becomes
        %r = scf.while (%x = %v) : (vector<1x1x4xf32>) -> vector<1x1x4xf32> { ... }
    """
    old_before, old_after = (r.blocks.first for r in op.regions)
    inits = [ctx.distributed(v) for v in op.operands]
    blocks = []
    ctx.loop_depth += 1
    try:
        for old in (old_before, old_after):
            new = Block(arg_types=_result_types(ctx, old.args))
            for a, b in zip(old.args, new.args):
                b.name_hint = a.name_hint
                ctx.value_map[a] = b
            results = ctx.distribute_block(old, Emitter(new))
            terminator = scf.ConditionOp(*results) if old is old_before else scf.YieldOp(*results)
            new.add_op(terminator)
            blocks.append(new)
    finally:
        ctx.loop_depth -= 1
    new = scf.WhileOp(inits, _result_types(ctx, op.results), Region(blocks[0]), Region(blocks[1]))
    em.add(new)
    for old, v in zip(op.results, new.results):
        ctx.value_map[old] = v


def distribute_if(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Both branches distributed; a vector result becomes registers.

        %r = scf.if %c -> (vector<64xf32>) { scf.yield %a } else { scf.yield %b }
      becomes
        %r = scf.if %c -> (vector<1x1x4xf32>) { scf.yield %a } else { scf.yield %b }
    """
    types = _result_types(ctx, op.results)
    regions = if_regions(op, lambda old, block: ctx.distribute_block(old, Emitter(block)))
    new = scf.IfOp(ctx.distributed(op.operands[0]), types, regions[0], regions[1])
    em.add(new)
    for old, v in zip(op.results, new.results):
        ctx.value_map[old] = v


REWRITES = {
    "scf.for": distribute_for,
    "scf.forall": distribute_forall,
    "scf.while": distribute_while,
    "scf.if": distribute_if,
}
