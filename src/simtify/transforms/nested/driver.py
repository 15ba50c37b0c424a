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

from xdsl.ir import Block, Operation

from simtify.errors import SimtifyError
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
from simtify.ir import location_of
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

    types = [v.type for v in list(op.operands) + list(op.results)]
    vector_types = [t for t in types if isinstance(t, VectorType)]
    return bool(vector_types) and all(len(t.get_shape()) == 0 for t in vector_types)


def distribute_function(func: Operation, analysis: LayoutAnalysis, subgroup_size: int, threads: int,
                        target: str | None = None) -> None:
    """Rewrite `func` (whose vectors carry the layouts of `analysis`) into the program
    of one thread of a workgroup of `threads` threads."""
    from simtify.target import get_target

    target = get_target(target or ("gfx942" if subgroup_size == 64 else "sm_90"))
    check_unroll_budget(func, analysis, target)
    old_entry = func.body.blocks.first
    new_entry = Block(arg_types=[a.type for a in old_entry.args])
    for old in old_entry.args:
        if is_vector(old):
            raise SimtifyError("vector function arguments are not distributed; pass memrefs", location_of(func))
    ctx = DistributionContext(func, analysis, subgroup_size, threads, target, new_entry, distribute_op)
    for old, new in zip(old_entry.args, new_entry.args):
        new.name_hint = old.name_hint
        ctx.value_map[old] = new
    body = Emitter(new_entry)
    results = ctx.distribute_block(old_entry, body)
    terminator = old_entry.ops.last
    body.add(type(terminator).create(operands=results, properties=dict(terminator.properties),
                                     attributes=dict(terminator.attributes)))
    ctx.prelude_end.detach()
    ctx.prelude_end.erase()
    replace_entry_block(func, old_entry, new_entry)
