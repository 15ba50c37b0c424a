"""`iree_gpu` DMA ops: the seed's `global_load_dma` (tile level and lane level) and IREE
3.12's `coalesced_gather_dma`; all move global memory into workgroup memory without
registers, so their bytes count as ``dma_bytes``.

- ``iree_gpu.global_load_dma %src[] -> %dst[]`` (no indices): the tile-level block
  copy of `src` into `dst` that the workgroup performs together (the seed's op, emitted
  when the decision to use DMA is taken and lowered later). In a SIMT program every
  thread of a workgroup must name the same tile; it is copied once, between two
  barriers, as its lowering does it. On tensors (``%r = ... -> tensor<..>``) it is a
  workgroup-level value: a new tensor holding the source (`simtify.sim.ops.tensor`).
- ``iree_gpu.global_load_dma %src[%i..] -> %dst[%k..]``: one subgroup instruction,
  exactly `amdgpu.gather_to_lds` (which it lowers to) with a 32-bit transfer per lane, as
  IREE had it, or the width of a ``transfer_type`` attribute.
- ``iree_gpu.coalesced_gather_dma %src[%idx..] into %init lane(%l)``: a subgroup fills
  its whole `init` tile; dim d < (number of index vectors) of the source is read at
  ``idx_d[p_d]`` (a row gather), the other dims at ``p_d``; a dim whose ``in_bounds`` is
  false reads zeros outside the source.
"""

from __future__ import annotations

from math import prod

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.memory import MemRef
from simtify.sim.handlers import handles
from simtify.sim.ops.amdgpu import (
    check_width,
    first_active,
    index_values,
    subgroup_gather,
    transfer_bytes,
)

IREE_TRANSFER_BYTES = 4  # what IREE lowered global_load_dma to: gather_to_lds of i32


def _memrefs(sim, op, *values) -> list[MemRef]:
    out = [sim.get(v) for v in values]
    if not all(isinstance(m, MemRef) for m in out):
        raise SimtifyError("the simulator runs DMA ops on memrefs; bufferize the tensor form first")
    return out


def _one_thread_per(sim, group: int) -> tuple[np.ndarray, np.ndarray]:
    """A [W, T] mask of the first active thread of each group of `group` threads, and the
    [W, T // group] groups that have one."""
    first, any_ = first_active(sim, group)
    mask = np.zeros((sim.W, sim.T // group, group), dtype=bool)
    np.put_along_axis(mask, first[:, :, None], True, axis=2)
    mask &= any_[:, :, None]
    return mask.reshape(sim.W, sim.T), any_


def _require_uniform(sim, mems: list[MemRef], group: int, what: str) -> None:
    act = sim.active().reshape(sim.W, sim.T // group, group)
    first, _ = first_active(sim, group)
    for m in mems:
        off = np.broadcast_to(np.asarray(m.offset, dtype=np.int64), (sim.W, sim.T)).reshape(act.shape)
        chosen = np.take_along_axis(off, first[:, :, None], axis=2)
        if (act & (off != chosen)).any():
            raise SimtifyError(f"{what}: threads of one {'workgroup' if group == sim.T else 'subgroup'} name "
                               f"different tiles of '{m.buffer.name}'")


def _count_dma(sim, op, nbytes_per_group: int, groups: np.ndarray) -> None:
    sim.counters.add(op.name, "dma_bytes", int(groups.sum()) * nbytes_per_group)


@handles("iree_gpu.global_load_dma")
def _global_load_dma(sim, op):
    if op.result is not None:
        if op.source_indices or op.target_indices:
            raise SimtifyError("the simulator runs the lane-level global_load_dma on memrefs; the tensor form "
                               "needs bufferizing first")
        from simtify.sim.ops.tensor import copied_tensor  # the tile-level copy on tensors: a new tensor

        return [copied_tensor(sim, op, sim.get(op.source), op.result.type)]
    src, dst = _memrefs(sim, op, op.source, op.target)
    if op.source_indices or op.target_indices:
        t = op.attributes.get("transfer_type")
        nbytes = IREE_TRANSFER_BYTES if t is None else transfer_bytes(getattr(t, "type", t))
        check_width(sim, nbytes, "iree_gpu.global_load_dma")
        subgroup_gather(sim, op, src, index_values(sim, op.source_indices), dst,
                        index_values(sim, op.target_indices), nbytes)
        return []
    # the tile-level block copy: once per workgroup
    if src.shape != dst.shape:
        raise SimtifyError(f"the tile-level global_load_dma copies equal shapes, not {list(src.shape)} to "
                           f"{list(dst.shape)}")
    if dst.space != "workgroup":
        raise SimtifyError("the destination is not workgroup memory")
    _require_uniform(sim, [src, dst], sim.T, "the tile-level global_load_dma copies one tile per workgroup")
    mask, groups = _one_thread_per(sim, sim.T)
    shape = dst.shape
    idx = [i.reshape((1, 1) + shape) for i in np.indices(shape, dtype=np.int64)]

    def copy():
        vals = sim.load(op, src, idx, shape, contiguous=True)
        sim.store(op, dst, idx, vals, shape, contiguous=True)

    simt = sim.launch.level == "simt"
    if simt:
        sim.barrier(op)
    sim.with_mask(mask, copy)
    if simt:
        sim.barrier(op)
    _count_dma(sim, op, prod(shape) * src.buffer.elem_bytes, groups)
    return []


def _index_vector(sim, op, v) -> np.ndarray:
    """[W?, T?, n] int64 values of a 1-D index vector or memref operand."""
    value = sim.get(v)
    if isinstance(value, MemRef):
        n = value.shape[0]
        return sim.load(op, value, [np.arange(n, dtype=np.int64).reshape(1, 1, n)], (n,)).astype(np.int64)
    return np.asarray(value, dtype=np.int64)


@handles("iree_gpu.coalesced_gather_dma")
def _coalesced_gather_dma(sim, op):
    if op.result is not None:
        raise SimtifyError("the simulator runs coalesced_gather_dma on memrefs; bufferize the tensor form first")
    src, init = _memrefs(sim, op, op.source, op.init)
    if init.space != "workgroup":
        raise SimtifyError("the destination (init) is not workgroup memory")
    if len(src.shape) != len(init.shape):
        raise SimtifyError(f"source rank {len(src.shape)} differs from init rank {len(init.shape)}")
    sg = min(sim.subgroup_size, sim.T)
    _require_uniform(sim, [src, init], sg, "coalesced_gather_dma fills one tile per subgroup")
    shape = init.shape
    pos = [p.reshape((1, 1) + shape) for p in np.indices(shape, dtype=np.int64)]
    idx = list(pos)
    for d, v in enumerate(op.indices):
        table = _index_vector(sim, op, v)
        idx[d] = table[:, :, pos[d][0, 0]]
    in_bounds = [True] * len(shape) if op.in_bounds is None else [bool(b.value.data) for b in op.in_bounds.data]
    full = (sim.W, sim.T) + shape
    valid = np.ones((1, 1) + shape, dtype=bool)
    for d, (i, n) in enumerate(zip(idx, src.shape)):
        if not in_bounds[d]:
            valid = valid & (i >= 0) & (i < n)
    mask, groups = _one_thread_per(sim, sg)

    def copy():
        take = None if valid.all() else np.broadcast_to(valid, full)
        vals = sim.load(op, src, idx, shape, mask=take, contiguous=True)
        if take is not None:
            vals = np.where(take, vals, np.zeros((), dtype=vals.dtype))
        sim.store(op, init, pos, vals, shape, contiguous=True)

    sim.with_mask(mask, copy)
    nbytes = prod(shape) * src.buffer.elem_bytes
    _count_dma(sim, op, nbytes, groups)
    sim.counters.add(op.name, "dma_instructions", int(groups.sum()) * -(-nbytes // (sg * IREE_TRANSFER_BYTES)))
    return []


@handles("iree_gpu.subgroup_scan")
def _subgroup_scan(sim, op):
    """IREE's cluster scan of one scalar per lane (see `SubgroupScanOp`). Counted as its
    lowering's shuffles: log2(size) Hillis-Steele steps, the shift and the total."""
    from simtify.sim.ops.gpu import _words
    from simtify.sim.values import lead

    sg = sim.subgroup_size
    if sim.T % sg:
        raise SimtifyError(f"{sim.T} threads are not whole subgroups of {sg}")
    size = op.cluster_size.value.data if op.cluster_size is not None else sg
    stride = op.cluster_stride.value.data if op.cluster_stride is not None else 1
    if size * stride > sg:
        raise SimtifyError(f"cluster of {size} lanes at stride {stride} does not fit the {sg}-lane subgroup")
    full = np.broadcast_to(lead(sim.get(op.value)), (sim.W, sim.T))
    tid = np.arange(sim.T)
    lane = tid % sg
    p = (lane // stride) % size
    first = tid - p * stride
    members = [full[:, first + q * stride] for q in range(size)]
    inclusive = [members[0]]
    for q in range(1, size):
        inclusive.append(np.asarray(sim.run_region(op.combiner, [inclusive[-1], members[q]])[0]))
    if op.inclusive is not None:
        scans = inclusive
    else:
        identity = np.broadcast_to(np.asarray(sim.get(op.identity)), (sim.W, sim.T))
        scans = [identity] + [np.asarray(sim.run_region(op.combiner, [identity, x])[0]) for x in inclusive[:-1]]
    stacked = np.stack([np.broadcast_to(s, (sim.W, sim.T)) for s in scans])
    result = np.take_along_axis(stacked, np.broadcast_to(p, (1, sim.W, sim.T)), axis=0)[0]
    total = np.broadcast_to(inclusive[-1], (sim.W, sim.T))
    active_subgroups = int(sim.active().reshape(sim.W, -1, sg).any(axis=2).sum())
    steps = max(size - 1, 0).bit_length() + 2
    sim.counters.add(op.name, "shuffles", active_subgroups * steps * _words(op.value.type))
    return [result.astype(full.dtype), total.astype(full.dtype)]
