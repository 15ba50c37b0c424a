"""Semantics of what an IREE dispatch function is wrapped in (`simtify.sim.dispatch`):

- ``hal.interface.binding.subspan``: the buffer bound as ``bindingN``, viewed with the
  subspan's memref type (the view at the subspan's constant byte offset, see
  `dispatch_bindings`);
- ``hal.interface.workgroup.id/count/size[D]``: the workgroup's coordinate along D, the
  grid, the block (as ``gpu.block_id`` / ``grid_dim`` / ``block_dim``);
- ``amdgpu.fat_raw_buffer_cast``: a view of the same memory. An AMD buffer access out of
  the resource's range reads 0 and drops its writes; the simulator does the same for any
  access outside the memref (it checks each dim, which is stricter than the hardware's
  range check on the whole buffer) and the sanitizer reports it as out-of-bounds;
- ``memref.assume_alignment``: the same memref (handled with ``memref.dealloc``'s no-op);
  an alignment the bound buffer does not have is not checked;
- ``ub.poison`` (and ``llvm.mlir.poison``): an undefined value (`simtify.sim.types.undefined`: NaN for floats, the
  most negative integer for integers), so that a result that depends on it shows;
- ``scf.forall`` mapped to ``#iree_codegen.workgroup_mapping``: one iteration per
  workgroup, the induction variables from the workgroup's coordinates (x, y, z as the
  mapping says); workgroups past the loop's trip count run nothing;
- ``iree_codegen.workgroup_count_hint``: nothing at run time (it sets the grid).
"""

from __future__ import annotations

import numpy as np

from simtify.errors import SimtifyError
from simtify.ir.vector import shape_of
from simtify.sim.dispatch import binding_name, forall_trip_counts, forall_workgroup_dims
from simtify.sim.memory import MemRef
from simtify.sim.handlers import handles
from simtify.sim.ops.gpu import block_coord
from simtify.sim.ops.memref import type_strides
from simtify.sim.types import dtype_of, undefined


@handles("hal.interface.binding.subspan")
def _subspan(sim, op):
    name = binding_name(op.binding.value.data)
    buffers = getattr(sim, "bindings", None) or {}
    if name not in buffers:
        raise SimtifyError(f"binding {op.binding.value.data} is not bound (give --arg {name}=FILE.npy)")
    buf = buffers[name]
    shape = tuple(op.result.type.get_shape())
    return [MemRef(buf, shape, type_strides(op.result.type, shape), 0)]


@handles("hal.interface.workgroup.id")
def _workgroup_id(sim, op):
    return [block_coord(sim, op.dimension.value.data)]


@handles("hal.interface.workgroup.count")
def _workgroup_count(sim, op):
    return [np.full((1, 1), sim.launch.grid[op.dimension.value.data], dtype=np.int64)]


@handles("hal.interface.workgroup.size")
def _workgroup_size(sim, op):
    return [np.full((1, 1), sim.launch.block[op.dimension.value.data], dtype=np.int64)]


@handles("amdgpu.fat_raw_buffer_cast")
def _fat_raw_buffer_cast(sim, op):
    source = sim.get(op.source)
    if op.valid_bytes is not None or op.cache_swizzle_stride is not None:
        raise SimtifyError("validBytes and cacheSwizzleStride are not supported by the simulator")
    return [source]  # with or without resetOffset, the view's indexing is unchanged


@handles("ub.poison", "llvm.mlir.poison")
def _poison(sim, op):
    t = op.results[0].type
    shape = shape_of(t)
    return [np.full((1, 1) + shape, undefined(dtype_of(getattr(t, "element_type", t))))]


@handles("iree_codegen.workgroup_count_hint")
def _count_hint(sim, op):
    return []


@handles("amdgpu.sched_barrier")
def _sched_barrier(sim, op):
    return []  # a scheduling hint for the backend: no effect on values


@handles("scf.forall.in_parallel")
def _in_parallel(sim, op):
    if any(block.ops for region in op.regions for block in region.blocks):
        raise SimtifyError("scf.forall with tensor results is not supported by the simulator (bufferize first)")
    return []


@handles("scf.forall")
def _forall(sim, op):
    axes = forall_workgroup_dims(op)
    if axes is None:
        raise SimtifyError("the simulator runs scf.forall only when it is mapped to workgroups "
                           "(#iree_codegen.workgroup_mapping); distribute other foralls first")
    counts = forall_trip_counts(op)
    grid = sim.launch.grid
    for axis, n in zip(axes, counts):
        if n > grid[axis]:
            raise SimtifyError(f"the loop has {n} iterations along workgroup axis {'xyz'[axis]} but the grid has "
                               f"only {grid[axis]} there; give --grid")
    coords = [block_coord(sim, axis) for axis in axes]
    lows, steps = op.lower_bounds(), op.steps()
    ivs = [lo + c * s for lo, c, s in zip(lows, coords, steps)]
    inside = np.ones_like(coords[0], dtype=bool)
    for c, n in zip(coords, counts):
        inside &= c < n
    body = op.body
    if inside.all():
        sim.run_region(body, ivs)
    elif inside.any():
        sim.with_mask(inside, lambda: sim.run_region(body, ivs))
    return []
