"""Copies into workgroup memory written on tensors, given the memory the DMA lowering needs.

Before bufferization a DMA copy is a value: ``linalg.copy {lowering_config =
#iree_gpu.use_global_load_dma}`` (or the seed's tile-level ``iree_gpu.global_load_dma
%src[] -> %dst[]``) from a tensor read out of global memory into a ``tensor.empty``. The
design's tensor-level lowering emits its per-subgroup loop on those tensors and leaves the
rest to bufferization, on one condition: the destination tensor must become one
contiguous allocation in workgroup memory. simtify does not bufferize, so this pass takes
that step for the copy alone: the ``tensor.empty`` becomes that allocation, the source
the memory it was read from, the copy the memref form `simtify.transforms.lower_dma`
lowers (global_load_lds on AMD, cp.async on NVIDIA), and every read of the copied tensor
a read of the allocation::

    %s = bufferization.to_tensor %A restrict : memref<64x256xi8> to tensor<64x256xi8>
    %e = tensor.empty() : tensor<64x256xi8>
    %c = linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%s ..) outs(%e ..) -> tensor<64x256xi8>
    bufferization.materialize_in_destination %c in restrict writable %out : (..) -> ()
    =>  %lds = memref.alloc() : memref<64x256xi8, #gpu.address_space<workgroup>>
        linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%A ..) outs(%lds ..)
        linalg.copy {lowering_config = #iree_gpu.derived_thread_config} ins(%lds ..) outs(%out ..)

Sources: ``bufferization.to_tensor`` of a memref, through ``tensor.extract_slice``
(which becomes ``memref.subview``). Reads of the result: ``vector.transfer_read``,
``tensor.extract_slice`` and ``bufferization.materialize_in_destination`` into a memref
(a copy out through registers, tagged as IREE tags them). Anything else is an error
naming the op, before the function is changed. Copies tagged
``#iree_gpu.derived_thread_config`` are given memory the same way. The lane-level
``global_load_dma`` on tensors (the design's loop carrying the destination tensor) is not
taken: its destination is a loop value, not one allocation.
"""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType
from xdsl.dialects.linalg.ops import CopyOp
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.transforms.emit import Emitter
from simtify.transforms.launch import functions

TAGS = ("iree_gpu.use_global_load_dma", "iree_gpu.derived_thread_config")


def _tag(op: Operation) -> str | None:
    return getattr(op.attributes.get("lowering_config"), "name", None)


def tensor_copies(func: Operation) -> list[Operation]:
    """The copies on tensors that lower_dma would lower, were they on memrefs."""
    out = []
    for op in func.walk():
        if op.name == "linalg.copy" and _tag(op) in TAGS and op.res:
            out.append(op)
        elif op.name == "iree_gpu.global_load_dma" and op.result is not None:
            out.append(op)
    return out


def _operands(op: Operation) -> tuple[SSAValue, SSAValue, SSAValue]:
    if op.name == "linalg.copy":
        return op.inputs[0], op.outputs[0], op.res[0]
    return op.source, op.target, op.result


def _mixed(static, dynamic) -> list:
    it = iter(dynamic)
    return [next(it) if s == DYNAMIC_INDEX else s for s in static.get_values()]


def _slice_args(op: Operation) -> tuple[list, list, list]:
    return (_mixed(op.static_offsets, op.offsets), _mixed(op.static_sizes, op.sizes),
            _mixed(op.static_strides, op.strides))


def _check_slice(op: Operation) -> None:
    if op.result.type.get_num_dims() != op.source.type.get_num_dims():
        raise SimtifyError("a rank-reducing tensor.extract_slice has no one-to-one subview here", location_of(op))


def _source_chain(v: SSAValue) -> list[Operation]:
    """The ops from the memory `v` is read from to `v`: a ``bufferization.to_tensor``,
    then ``tensor.extract_slice`` ops; an error if `v` does not come from memory."""
    chain = []
    while isinstance(v.owner, Operation) and v.owner.name == "tensor.extract_slice":
        _check_slice(v.owner)
        chain.append(v.owner)
        v = v.owner.source
    if not (isinstance(v.owner, Operation) and v.owner.name == "bufferization.to_tensor"):
        raise SimtifyError("the copy's source tensor is not read from memory (bufferization.to_tensor of a memref, "
                           "through tensor.extract_slice): DMA needs the global memory it reads")
    chain.append(v.owner)
    return list(reversed(chain))


READERS = ("vector.transfer_read", "tensor.extract_slice", "bufferization.materialize_in_destination")


def _check_readers(v: SSAValue) -> None:
    """Every use of the copied tensor `v` must be one this pass moves onto the allocation."""
    for use in v.uses:
        user = use.operation
        if user.name not in READERS or (user.name == "vector.transfer_read" and use.index != 0):
            raise SimtifyError(f"the tensor a copy into workgroup memory makes is used by '{user.name}', which cannot "
                               f"read it from the allocation here (uses taken: {', '.join(READERS)})",
                               location_of(user))
        if user.name == "bufferization.materialize_in_destination":
            if use.index != 0 or not isinstance(user.dest.type, MemRefType):
                raise SimtifyError("materialize_in_destination of a DMA copy's tensor must store it into a memref",
                                   location_of(user))
        elif user.name == "tensor.extract_slice":
            _check_slice(user)
            _check_readers(user.result)


def _check(op: Operation) -> None:
    src, dst, result = _operands(op)
    if op.name == "iree_gpu.global_load_dma" and (op.source_indices or op.target_indices):
        raise SimtifyError("the lane-level global_load_dma on tensors writes into a loop-carried tensor, not one "
                           "workgroup allocation; give the tile-level copy (linalg.copy tagged "
                           "#iree_gpu.use_global_load_dma, or global_load_dma without indices)", location_of(op))
    empty = dst.owner
    if not (isinstance(empty, Operation) and empty.name == "tensor.empty"):
        raise SimtifyError("the copy's destination tensor is not a tensor.empty: a copy into workgroup memory on "
                           "tensors fills a new allocation, one contiguous block", location_of(op))
    if any(d < 0 for d in dst.type.get_shape()):
        raise SimtifyError(f"the destination {dst.type} has dynamic dims: DMA needs a static tile", location_of(op))
    try:
        _source_chain(src)
    except SimtifyError as e:
        raise e.at(location_of(op)) from None
    _check_readers(result)


def _subview(em: Emitter, source: SSAValue, slice_op: Operation) -> SSAValue:
    offsets, sizes, strides = _slice_args(slice_op)
    rt = memref.SubviewOp.infer_result_type(source.type, offsets, sizes, strides)
    view = em.value(memref.SubviewOp.get(source, offsets, sizes, strides, rt))
    view.name_hint = slice_op.result.name_hint
    return view


def _memory_of(em: Emitter, src: SSAValue) -> SSAValue:
    chain = _source_chain(src)
    mem = chain[0].memref
    for s in chain[1:]:
        mem = _subview(em, mem, s)
    return mem


def _move_readers(v: SSAValue, mem: SSAValue) -> None:
    """Point every reader of tensor `v` at memref `mem` (a view of the allocation)."""
    for use in list(v.uses):
        user = use.operation
        em = Emitter(user.parent_block(), before=user)
        if user.name == "vector.transfer_read":
            user.operands[0] = mem
        elif user.name == "tensor.extract_slice":
            _move_readers(user.result, _subview(em, mem, user))
            user.detach()
            user.erase()
        else:  # materialize_in_destination: the copy out, through registers as IREE tags it
            from simtify.ir.iree_gpu import DerivedThreadConfigAttr

            em.add(CopyOp([mem], [user.dest], [], attributes={"lowering_config": DerivedThreadConfigAttr()}))
            user.detach()
            user.erase()


def bufferize_copy(op: Operation) -> SSAValue:
    """Rewrite one checked copy on tensors (see the module docstring); returns the
    workgroup allocation."""
    src, dst, result = _operands(op)
    empty = dst.owner
    alloc_at = Emitter(empty.parent_block(), before=empty)
    t: TensorType = dst.type
    lds = alloc_at.workgroup_alloc(list(t.get_shape()), t.element_type)
    lds.name_hint = dst.name_hint or "lds"
    em = Emitter(op.parent_block(), before=op)
    source = _memory_of(em, src)
    if op.name == "linalg.copy":
        em.add(CopyOp([source], [lds], [], attributes=dict(op.attributes)))
    else:
        from simtify.ir.iree_gpu import GlobalLoadDMAOp

        em.add(GlobalLoadDMAOp.build(operands=[source, [], lds, []], result_types=[[]],
                                     attributes=dict(op.attributes)))
    _move_readers(result, lds)
    op.detach()
    op.erase()
    for dead in [empty] + list(reversed(_source_chain(src))):  # the source's slices, then its to_tensor
        if dead.parent is not None and not any(r.uses for r in dead.results):
            dead.detach()
            dead.erase()
    return lds


def bufferize_tensor_copies(module: Operation, opts=None) -> None:  # opts: a pass takes them; none is read
    """Every copy on tensors of every function, checked before any is changed."""
    for func in functions(module):
        copies = tensor_copies(func)
        for op in copies:
            _check(op)
        for op in copies:
            bufferize_copy(op)


__all__ = ["bufferize_copy", "bufferize_tensor_copies", "tensor_copies"]
