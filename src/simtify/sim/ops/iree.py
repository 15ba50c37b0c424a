"""`iree_vector_ext`: layout anchors and the SIMD/SIMT boundary.

In a workgroup-level program `to_layout`, `to_simd` and `to_simt` are identities: layouts
are metadata. In a SIMT program a SIMD value is the whole vector, the same in every
thread; `to_simt` hands each thread its elements by the value's layout (from its
`to_layout` anchor), and `to_simd` gathers them back from the first owner of each."""

from __future__ import annotations

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.ops import handles
from simtify.sim.types import shape_of
from simtify.sim.values import lead


@handles("iree_vector_ext.to_layout")
def _to_layout(sim, op):
    return [sim.get(op.operands[0])]


def anchored_layout(value):
    """The nested layout of a SIMD value: its own to_layout anchor, or one it feeds."""
    owner = getattr(value, "owner", None)
    if getattr(owner, "name", None) == "iree_vector_ext.to_layout":
        return owner.nested_layout
    for use in value.uses:
        if use.operation.name == "iree_vector_ext.to_layout":
            return use.operation.nested_layout
    return None


def _map(sim, op, simd_value):
    layout = anchored_layout(simd_value)
    if layout is None:
        raise SimtifyError(f"'{op.name}': no to_layout anchor gives this value a layout")
    return layout.ownership(sim.subgroup_size, sim.T)


@handles("iree_vector_ext.to_simt")
def _to_simt(sim, op):
    v = lead(sim.get(op.operands[0]))
    if sim.launch.level == "workgroup":
        return [v]
    omap = _map(sim, op, op.operands[0])
    shape = shape_of(op.operands[0].type)
    flat = np.broadcast_to(v, (v.shape[0], sim.T) + shape).reshape(v.shape[0], sim.T, -1)
    per_thread = np.take_along_axis(flat, np.broadcast_to(omap.flat[None], (flat.shape[0],) + omap.flat.shape), axis=2)
    return [per_thread.reshape(per_thread.shape[:2] + shape_of(op.results[0].type))]


@handles("iree_vector_ext.to_simd")
def _to_simd(sim, op):
    v = lead(sim.get(op.operands[0]))
    if sim.launch.level == "workgroup":
        return [v]
    omap = _map(sim, op, op.results[0])
    order, starts, counts = omap.owner_table
    if (counts == 0).any():
        raise SimtifyError(f"'{op.name}': the layout leaves elements unowned")
    first = order[starts]  # slot (tid * regs + reg) of each element's first owner
    regs = v.reshape(v.shape[0], -1, omap.num_registers)
    regs = np.broadcast_to(regs, (regs.shape[0], sim.T, omap.num_registers)).reshape(regs.shape[0], -1)
    whole = regs[:, first]
    return [whole.reshape((whole.shape[0], 1) + shape_of(op.results[0].type))]
