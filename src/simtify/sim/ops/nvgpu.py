"""`nvgpu` asynchronous copies (``cp.async``): global memory to shared memory, per thread,
without registers, landing only when waited for.

``device_async_copy`` reads its source when issued and keeps the data in flight;
``device_async_create_group`` commits every copy issued and not yet committed (as
``cp.async.commit_group`` does: the token operands only order the ops);
``device_async_wait`` lands every committed group but the `numGroups` newest. A copy
never waited for never lands, so reading its destination reads stale or uninitialised
memory, which the sanitizers report. Widths are the target's (`dma_widths_bytes`:
4, 8 or 16 bytes on sm_90); on an AMD target the op is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.memory import MemRef
from simtify.sim.handlers import handles
from simtify.sim.ops.amdgpu import advance, index_values

PENDING = "nvgpu.in_flight"  # key of the batch's in-flight copies in the interpreter's environment


@dataclass
class InFlight:
    op: object
    dst: MemRef
    idx: list
    values: np.ndarray
    mask: object
    elements: int
    group: int | None = None  # commit order; None until committed


def _state(sim) -> dict:
    st = sim.state.env.get(PENDING)
    if st is None:
        st = sim.state.env[PENDING] = {"copies": [], "groups": 0}
    return st


def _token(n: int) -> np.ndarray:
    return np.full((1, 1), n, dtype=np.int64)


@handles("nvgpu.device_async_copy")
def _async_copy(sim, op):
    tgt = sim.target
    if tgt.vendor != "nvidia":
        raise SimtifyError(f"nvgpu.device_async_copy is NVIDIA's cp.async; {tgt.name} has none "
                           "(use amdgpu.gather_to_lds)")
    src, dst = sim.get(op.src), sim.get(op.dst)
    if dst.space != "workgroup":
        raise SimtifyError("the destination is not shared memory")
    n = op.elements
    nbytes = n * src.buffer.elem_bytes
    if nbytes not in tgt.dma_widths_bytes:
        raise SimtifyError(f"a {nbytes}-byte cp.async is not supported on {tgt.name} "
                           f"(it copies {', '.join(map(str, tgt.dma_widths_bytes))} bytes)")
    k = np.arange(n, dtype=np.int64).reshape(1, 1, n)
    read = None
    if op.src_elements is not None:  # read only srcElements, zero-fill the rest
        count = np.asarray(sim.get(op.src_elements), dtype=np.int64)
        read = np.broadcast_to(k < count.reshape(count.shape[:2] + (1,)) if count.ndim else k < count,
                               (sim.W, sim.T, n))
    values = sim.load(op, src, advance(src, index_values(sim, op.src_indices), k), (n,), mask=read, contiguous=True)
    if read is not None:
        values = np.where(read, values, np.zeros((), dtype=values.dtype))
    st = _state(sim)
    mask = sim.state.mask
    st["copies"].append(InFlight(op, dst, advance(dst, index_values(sim, op.dst_indices), k), values, mask, n))
    act = sim.active()
    sg = min(sim.subgroup_size, sim.T)
    sim.counters.add(op.name, "dma_bytes", int(act.sum()) * nbytes)
    sim.counters.add(op.name, "dma_instructions", int(act.reshape(sim.W, -1, sg).any(axis=2).sum()))
    return [_token(len(st["copies"]))]


@handles("nvgpu.device_async_create_group")
def _create_group(sim, op):
    st = _state(sim)
    group = st["groups"]
    for c in st["copies"]:
        if c.group is None:
            c.group = group
    st["groups"] += 1
    return [_token(group)]


@handles("nvgpu.device_async_wait")
def _wait(sim, op):
    st = _state(sim)
    keep = op.groups_left
    landed = [c for c in st["copies"] if c.group is not None and c.group < st["groups"] - keep]
    st["copies"] = [c for c in st["copies"] if c not in landed]
    saved = sim.state.mask
    try:
        for c in landed:
            sim.state.mask = c.mask
            sim.store(c.op, c.dst, c.idx, c.values, (c.elements,), contiguous=True)
    finally:
        sim.state.mask = saved
    return []
