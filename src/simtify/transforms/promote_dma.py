"""Promoting operand tiles of contractions and reductions into workgroup memory by DMA.

IREE's GPUPromoteMatmulOperandsPass copies an operand tile into workgroup memory with a
``linalg.copy`` that threads then distribute through registers
(``#iree_gpu.derived_thread_config``); the seed's alternative tags the copy
``#iree_gpu.use_global_load_dma`` so that the bytes go straight from global memory to
LDS. Here the decision is taken on workgroup-level vector programs, before layouts are
distributed, so the copy is emitted as the seed's tile-level
``iree_gpu.global_load_dma`` (no region: distribution carries it over unchanged) and
lowered afterwards by `simtify.transforms.lower_dma` (global_load_lds on AMD, cp.async
on NVIDIA)::

    %a = vector.transfer_read %A[%i, %k], %pad : memref<..>, vector<16x64xf16>
    =>  %lds = memref.alloc() : memref<16x64xf16, #gpu.address_space<workgroup>>   (function entry)
        %tile = memref.subview %A[%i, %k] [16, 64] [1, 1]
        iree_gpu.global_load_dma %tile[] -> %lds[]
        %a = vector.transfer_read %lds[%c0, %c0], %pad : memref<16x64xf16, ..>, vector<16x64xf16>

A ``to_layout {shared_memory_conversion = #iree_gpu.use_global_load_dma}`` asks for the
same on its input (IREE 3.12's attribute value names how the tile reaches workgroup
memory); an input that cannot be promoted is then an error.

An operand is promoted when it is (through ``to_layout`` anchors and elementwise ops) a
full-rank, in-bounds, unmasked, minor-identity ``transfer_read`` of global memory;
others are left as they are, and `promote_operands` says which it skipped and why.
"""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.errors import SimtifyError
from simtify.ir.assembly import memory_space_name
from simtify.transforms.emit import Emitter
from simtify.ir import location_of

# consumer op -> indices of the operands whose tiles are promoted
PROMOTED_OPERANDS = {"vector.contract": (0, 1), "vector.multi_reduction": (0,)}


def producer_reads(v: SSAValue) -> list[Operation]:
    """The transfer_reads whose values reach `v` through to_layout anchors, elementwise
    ops and loop-carried accumulators (the tile a contraction or a reduction consumes,
    before its prologue: ``exp(read)`` promotes ``read``)."""
    from simtify.transforms.propagate_layouts import is_elementwise, is_vector

    reads: list[Operation] = []
    stack, seen = [v], set()
    while stack:
        value = stack.pop()
        op = value.owner
        if not isinstance(op, Operation) or op in seen:
            continue
        seen.add(op)
        if op.name == "scf.for":  # a loop-carried accumulator: what each iteration yields
            stack.append(op.body.blocks.first.last_op.operands[value.index])
            seen.discard(op)
        elif op.name == "vector.transfer_read":
            reads.append(op)
        elif op.name == "iree_vector_ext.to_layout":
            stack.append(op.operands[0])
        elif is_elementwise(op):
            stack.extend(o for o in op.operands if is_vector(o))
    return reads


def why_not_promotable(read: Operation) -> str | None:
    """None if `read` can read its tile from workgroup memory instead; else why not."""
    src = read.source.type
    vt = read.results[0].type
    if not isinstance(src, MemRefType):
        return "it reads a tensor"
    if memory_space_name(src.memory_space) not in (None, "global", "fat_raw_buffer"):
        return "it does not read global memory"
    if read.mask is not None:
        return "it is masked"
    if not all(bool(b.value.data) for b in read.in_bounds.data):
        return "it may read out of bounds (promotion does not pad)"
    m = read.permutation_map.data
    rank = src.get_num_dims()
    if isinstance(vt, VectorType) and vt.get_num_dims() != rank:
        return f"it reads a rank-{vt.get_num_dims()} vector from a rank-{rank} memref"
    if tuple(m.results) != tuple(AffineDimExpr(d) for d in range(rank)):
        return "its permutation map is not the identity"
    return None


DMA = "iree_gpu.use_global_load_dma"


def _config_name(attr) -> str | None:
    return getattr(attr, "name", None)


def _is_zero(v: SSAValue) -> bool:
    op = v.owner
    return isinstance(op, Operation) and op.name == "arith.constant" and getattr(op.value, "value", None) is not None \
        and op.value.value.data == 0


def promote_read(read: Operation, func: Operation) -> SSAValue:
    """Rewrite `read` to read a workgroup copy of its tile; returns the new buffer."""
    from simtify.ir.iree_gpu import GlobalLoadDMAOp

    src = read.source
    vt: VectorType = read.results[0].type
    shape = list(vt.get_shape())
    entry = func.body.blocks.first
    first = entry.first_op
    lds = Emitter(entry, before=first).workgroup_alloc(shape, vt.element_type)
    lds.name_hint = "promoted"
    em = Emitter(read.parent_block(), before=read)
    full = list(src.type.get_shape()) == shape and all(_is_zero(i) for i in read.indices)
    tile = src
    if not full:
        offsets = list(read.indices)
        strides = [1] * len(shape)
        rt = memref.SubviewOp.infer_result_type(src.type, offsets, shape, strides)
        tile = em.value(memref.SubviewOp.get(src, offsets, shape, strides, rt))
        tile.name_hint = "tile"
    em.add(GlobalLoadDMAOp.build(operands=[tile, [], lds, []], result_types=[[]]))
    zero = em.index(0)
    read.operands = [lds] + [zero] * len(shape) + list(read.operands[1 + len(read.indices):])
    return lds


def promote_operands(func: Operation, consumers=PROMOTED_OPERANDS) -> tuple[list[Operation], list[str]]:
    """Promote the operand tiles of every consumer op of `func`; returns the promoted
    reads and, for each operand left in registers, the reason."""
    done: list[Operation] = []
    skipped: list[str] = []
    for op in list(func.walk()):  # to_layout {shared_memory_conversion = #iree_gpu.use_global_load_dma}
        if op.name != "iree_vector_ext.to_layout" or _config_name(op.shared_memory_conversion) != DMA:
            continue
        reads = [r for r in producer_reads(op.operands[0]) if r.results[0].type == op.operands[0].type]
        why = "its input is not a transfer_read" if not reads else why_not_promotable(reads[0])
        if why is not None:
            raise SimtifyError(f"this to_layout asks for DMA into workgroup memory, but {why}", location_of(op))
        if reads[0] not in done:
            promote_read(reads[0], func)
            done.append(reads[0])
        del op.properties["shared_memory_conversion"]  # the tile now arrives through workgroup memory
    for op in list(func.walk()):
        for k in consumers.get(op.name, ()):
            reads = producer_reads(op.operands[k])
            if not reads:
                skipped.append(f"{location_of(op)}: operand {k} is not read from memory by a transfer_read")
            for read in reads:
                if read in done:
                    continue
                why = why_not_promotable(read)
                if why is not None:
                    skipped.append(f"{location_of(read)}: {why}")
                    continue
                promote_read(read, func)
                done.append(read)
    return done, skipped


__all__ = ["PROMOTED_OPERANDS", "promote_operands", "promote_read", "why_not_promotable"]
