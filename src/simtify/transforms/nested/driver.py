"""The nested distribution of one function: refuse what cannot be distributed, make
the thread ids, then rewrite the body op by op through `REWRITES` (one rewrite per op
name, in the modules of this package); ops without one are elementwise (the same op
on registers), scalar (cloned), or refused.

    func.func @f(%src: memref<4x64xf32>, ...) {               // vectors with nested layouts
  becomes
    func.func @f(%src: memref<4x64xf32>, ...) {
      %thread_id_x = gpu.thread_id x   ...   %tid = affine.linearize_index ...
      ...the prelude: constants, id digits, writer predicates...
      ...the rewritten ops, on each thread's registers...
"""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Block, Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir.iree_vector_ext import ToLayoutOp, ToSIMDOp, ToSIMTOp
from simtify.transforms.emit import Emitter, replace_entry_block
from simtify.transforms.nested import (
    arg_compare,
    control_flow,
    conversions,
    masks,
    matrix,
    memory,
    reductions,
    scans,
    vectors,
)
from simtify.transforms.nested.budget import check_unroll_budget
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.vectors import distribute_elementwise, distribute_zero_d
from simtify.transforms.propagate_layouts import LayoutAnalysis, is_elementwise, is_vector

REWRITES = {
    **vectors.REWRITES,
    **control_flow.REWRITES,
    **memory.REWRITES,
    **conversions.REWRITES,
    **reductions.REWRITES,
    **matrix.REWRITES,
    **masks.REWRITES,
    **scans.REWRITES,
    **arg_compare.REWRITES,
}


def distribute_op(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """Rewrite one op into `em`: an op on 0-d vectors only as a scalar one, else its
    `REWRITES` entry, else as elementwise; a scalar op is cloned."""
    if not op.regions and _only_zero_d(op):
        distribute_zero_d(ctx, op, em)
        return
    rewrite = REWRITES.get(op.name)
    if rewrite is not None:
        rewrite(ctx, op, em)
        return
    if is_elementwise(op):
        distribute_elementwise(ctx, op, em)
        return
    vectors_of_op = [v for v in list(op.operands) + list(op.results) if is_vector(v)]
    if vectors_of_op or op.regions:
        raise SimtifyError(f"nested distribution does not support '{op.name}' here")
    clone = op.clone(value_mapper=dict(ctx.value_map))
    em.add(clone)
    for old, new in zip(op.results, clone.results):
        ctx.value_map[old] = new


def _only_zero_d(op: Operation) -> bool:
    """Whether the op's vector operands and results are all 0-d (and it has some)."""
    from xdsl.dialects.builtin import VectorType

    found = False
    for values in (op.operands, op.results):
        for v in values:
            t = v.type
            if isinstance(t, VectorType):
                if t.get_shape():
                    return False
                found = True
    return found


def distribute_function(func: Operation, analysis: LayoutAnalysis, subgroup_size: int, threads: int,
                        target: str | None = None) -> None:
    """Rewrite `func` (whose vectors carry the layouts of `analysis`) into the program
    of one thread of a workgroup of `threads` threads."""
    from simtify.target import get_target

    target = get_target(target or ("gfx942" if subgroup_size == 64 else "sm_90"))
    check_unroll_budget(func, analysis, target)
    old_entry = func.body.blocks.first
    new_entry = Block(arg_types=[a.type for a in old_entry.args])
    ctx = DistributionContext(func, analysis, subgroup_size, threads, target, new_entry, distribute_op)
    body = Emitter(new_entry)
    for old, new in zip(old_entry.args, new_entry.args):
        new.name_hint = old.name_hint
        ctx.value_map[old] = _to_simt(ctx, old, new, body) if is_vector(old) else new
    results = ctx.distribute_block(old_entry, body)
    terminator = old_entry.ops.last
    if terminator.name == "func.return":
        results = [_to_simd(ctx, old, new, body) if is_vector(old) else new
                   for old, new in zip(terminator.operands, results)]
    body.add(type(terminator).create(operands=results, properties=dict(terminator.properties),
                                     attributes=dict(terminator.attributes)))
    ctx.prelude_end.detach()
    ctx.prelude_end.erase()
    replace_entry_block(func, old_entry, new_entry)


def _to_simt(ctx: DistributionContext, old: SSAValue, argument: SSAValue, body: Emitter) -> SSAValue:
    """A vector argument is the workgroup's whole vector: each thread takes its registers
    by the argument's layout, at the boundary (IREE's ``to_simt``).

        func.func @f(%x: vector<256xf32>)       // %x with layout #l
      becomes
        %a = iree_vector_ext.to_layout %x to layout(#l) : vector<256xf32>
        %d = iree_vector_ext.to_simt %a : vector<256xf32> -> vector<2x1x2xf32>"""
    layout = ctx.analysis.get(old)
    if layout is None:
        raise SimtifyError(f"no layout reaches the {old.type} argument #{old.index} of the function; anchor it with "
                           "iree_vector_ext.to_layout (or pass a memref)", location_of(ctx.func))
    anchored = body.value(ToLayoutOp(argument, layout))
    return body.value(ToSIMTOp(anchored, VectorType(old.type.element_type, list(layout.distributed_shape))))


def _to_simd(ctx: DistributionContext, old: SSAValue, registers: SSAValue, body: Emitter) -> SSAValue:
    """A returned vector leaves as the workgroup's whole vector, gathered from the
    threads' registers by its layout (IREE's ``to_simd``); the function's type stays.

        func.return %e : vector<256xf32>        // %e with layout #l
      becomes
        %s = iree_vector_ext.to_simd %d : vector<2x1x2xf32> -> vector<256xf32>
        %r = iree_vector_ext.to_layout %s to layout(#l) : vector<256xf32>
        func.return %r : vector<256xf32>"""
    whole = body.value(ToSIMDOp(registers, old.type))
    return body.value(ToLayoutOp(whole, ctx.layout_of(old)))
