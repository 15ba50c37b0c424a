"""Tensors at workgroup level: `tensor.empty`, `tensor.extract_slice` and the
`bufferization` ops at a tensor program's edges, so that a program whose DMA copies are
still on tensors runs before it is bufferized.

A tensor value is held as a view of a buffer of its own, one per workgroup, that nothing
writes after the op making it: an op returning a new tensor (`linalg.copy`, a tile-level
`iree_gpu.global_load_dma`) fills a fresh buffer. `tensor.empty` is a buffer never
written, so reading it is an uninitialised read, as the sanitizer reports it.
Only workgroup-level programs hold tensors: a SIMT program's lanes would each need their
own, which no tensor op says how to share.
"""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects.builtin import TensorType

from simtify.errors import SimtifyError
from simtify.sim.handlers import handles
from simtify.sim.memory import MemRef
from simtify.sim.ops.memref import MAX_ALLOCATION_ELEMENTS, row_major_strides


def new_tensor(sim, op, t: TensorType, name: str = "tensor") -> MemRef:
    """A fresh, unwritten buffer holding a value of tensor type `t`."""
    if sim.launch.level != "workgroup":
        raise SimtifyError(f"'{op.name}' makes a tensor in a SIMT program; tensors run at workgroup level "
                           "(lower its DMA copies to memrefs first: --pipeline lower-dma)")
    shape = tuple(t.get_shape())
    if any(d < 0 for d in shape):
        raise SimtifyError(f"the simulator holds tensors of static shape, not {t}")
    if prod(shape) > MAX_ALLOCATION_ELEMENTS:
        raise SimtifyError(f"a {t} holds more elements than the simulator allocates ({MAX_ALLOCATION_ELEMENTS})")
    buf = sim.new_workgroup_buffer(name, t.element_type, prod(shape))
    return MemRef(buf, shape, row_major_strides(shape), 0)


def copy_whole(sim, op, src: MemRef, dst: MemRef) -> None:
    """Every element of `src` into `dst` (equal shapes)."""
    if src.shape != dst.shape:
        raise SimtifyError(f"'{op.name}' copies between shapes {list(src.shape)} and {list(dst.shape)}")
    idx = [i.reshape((1, 1) + i.shape) for i in np.indices(src.shape, dtype=np.int64)]
    vals = sim.load(op, src, idx, src.shape, contiguous=True)
    sim.store(op, dst, idx, vals, src.shape, contiguous=True)


def copied_tensor(sim, op, src: MemRef, result_type: TensorType) -> MemRef:
    """The result of a whole copy in destination-passing style: a new tensor holding `src`
    (the destination's old values are all overwritten, so it is not read)."""
    out = new_tensor(sim, op, result_type)
    copy_whole(sim, op, src, out)
    return out


@handles("tensor.empty")
def _empty(sim, op):
    if op.dynamic_sizes:
        raise SimtifyError("the simulator holds tensors of static shape; tensor.empty has dynamic sizes")
    return [new_tensor(sim, op, op.tensor.type, op.tensor.name_hint or "empty")]


@handles("bufferization.to_tensor")
def _to_tensor(sim, op):
    mem = sim.get(op.memref)
    out = new_tensor(sim, op, op.tensor.type, op.tensor.name_hint or "tensor")
    copy_whole(sim, op, mem, out)
    return [out]


@handles("bufferization.materialize_in_destination")
def _materialize(sim, op):
    if op.result is not None:
        raise SimtifyError("the simulator materializes tensors into memrefs, not into tensors")
    copy_whole(sim, op, sim.get(op.source), sim.get(op.dest))
    return []
