"""Which ops a kernel must emit: those with effects, and what they depend on. Pure ops
nothing live reads are left out (distribution leaves many behind)."""

from __future__ import annotations

from xdsl.ir import BlockArgument, Operation, OpResult

PURE_PREFIXES = ("arith.", "math.")
PURE = frozenset([
    "affine.apply", "affine.linearize_index", "affine.delinearize_index", "affine.min", "affine.max",
    "vector.broadcast", "vector.shape_cast", "vector.transpose", "vector.extract", "vector.insert",
    "vector.extract_strided_slice", "vector.insert_strided_slice", "vector.multi_reduction", "vector.reduction",
    "vector.contract", "vector.fma", "vector.step", "vector.create_mask", "vector.constant_mask",
    "vector.from_elements", "vector.to_elements", "vector.interleave", "vector.deinterleave",
    "vector.transfer_read", "vector.load", "vector.bitcast", "vector.gather", "vector.scan", "ub.poison",
    "iree_vector_ext.transfer_gather", "memref.load", "memref.alloc", "memref.alloca",
    "memref.subview", "memref.cast", "memref.memory_space_cast", "memref.expand_shape", "memref.collapse_shape",
    "gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.global_id", "gpu.lane_id",
    "gpu.subgroup_id", "gpu.subgroup_size", "gpu.num_subgroups", "gpu.shuffle", "gpu.subgroup_reduce",
    "gpu.ballot",
])


def is_pure(op: Operation) -> bool:
    return op.name in PURE or op.name.startswith(PURE_PREFIXES)


def read_operands(op: Operation):
    """The operands whose values `op` reads: an inclusive vector.scan ignores its initial
    value."""
    if op.name == "vector.scan" and op.inclusive.value.data:
        return [op.source]
    return op.operands


def live_ops(func: Operation) -> set[Operation]:
    """Ops whose effects or results matter: side effects, and what they depend on."""
    live: set[Operation] = set()
    work = [op for op in func.walk() if op is not func and not is_pure(op)
            and op.name not in ("scf.for", "scf.if", "scf.yield")]

    def mark(op):
        if op is not None and op is not func and op not in live:
            live.add(op)
            work.append(op)

    for op in list(work):
        live.add(op)
    while work:
        op = work.pop()
        for v in read_operands(op):
            if isinstance(v, OpResult):
                mark(v.op)
            elif isinstance(v, BlockArgument):
                mark(v.block.parent_op())
        parent = op.parent_op()
        if parent is not None and parent is not func:
            mark(parent)
        if op.name in ("scf.for", "scf.if", "scf.while"):
            for r in op.regions:
                for b in r.blocks:
                    if b.ops.last is not None:
                        mark(b.ops.last)
    return live
