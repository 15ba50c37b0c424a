"""`iree_vector_ext`: layout anchors and the SIMD/SIMT boundary.

In a workgroup-level program `to_layout`, `to_simd` and `to_simt` are identities: layouts
are metadata. In a SIMT program a SIMD value is the whole vector, the same in every
thread; `to_simt` hands each thread its elements by the value's layout (from its
`to_layout` anchor), and `to_simd` gathers them back from the first owner of each."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from simtify.errors import SimtifyError
from simtify.ir.vector import shape_of
from simtify.sim.handlers import handles
from simtify.sim.types import fit
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


def _is_op(value, name: str) -> bool:
    return getattr(getattr(value, "owner", None), "name", None) == name


def _map(sim, op, simd_value):
    layout = anchored_layout(simd_value)
    if layout is None:
        raise SimtifyError(f"'{op.name}': no to_layout anchor gives this value a layout")
    return layout.ownership(sim.subgroup_size, sim.T)


@handles("iree_vector_ext.to_simt", "iree_vector_ext.to_simd")
def _to_simt_or_simd(sim, op):
    """to_simt: each thread's registers of the workgroup value; to_simd: the value from
    its first owners' registers. Nothing moves at workgroup level (one logical thread
    holds every element), nor for a pair (the identity, whatever the layout)."""
    to_simt = op.name == "iree_vector_ext.to_simt"
    if sim.launch.level == "workgroup":
        return [lead(sim.get(op.operands[0]))]
    if _is_op(op.operands[0], "iree_vector_ext.to_simd" if to_simt else "iree_vector_ext.to_simt"):
        return [sim.get(op.operands[0].owner.operands[0])]
    v = lead(sim.get(op.operands[0]))
    if to_simt:
        omap = _map(sim, op, op.operands[0])
        shape = shape_of(op.operands[0].type)
        flat = np.broadcast_to(v, (v.shape[0], sim.T) + shape).reshape(v.shape[0], sim.T, -1)
        per_thread = np.take_along_axis(flat, np.broadcast_to(omap.flat[None], (flat.shape[0],) + omap.flat.shape),
                                        axis=2)
        return [per_thread.reshape(per_thread.shape[:2] + shape_of(op.results[0].type))]
    omap = _map(sim, op, op.results[0])
    order, starts, counts = omap.owner_table
    if (counts == 0).any():
        raise SimtifyError(f"'{op.name}': the layout leaves elements unowned")
    first = order[starts]  # slot (tid * regs + reg) of each element's first owner
    regs = v.reshape(v.shape[0], -1, omap.num_registers)
    regs = np.broadcast_to(regs, (regs.shape[0], sim.T, omap.num_registers)).reshape(regs.shape[0], -1)
    whole = regs[:, first]
    return [whole.reshape((whole.shape[0], 1) + shape_of(op.results[0].type))]


@handles("iree_vector_ext.transfer_gather")
def _transfer_gather(sim, op):
    """Either form, read through its IREE 3.12 maps (the seed form's translated):
    ``maps[0]`` sends each vector position (dims) and the index vectors' values there
    (symbols) to a source index, added to the offsets; ``maps[k]`` says where index
    vector k is read. Positions outside the source, or masked off, take the padding
    value."""
    from simtify.sim.affine_eval import eval_expr, eval_map

    t = op.results[0].type
    vshape = shape_of(t)
    full = (sim.W, sim.T) + vshape
    pos = [c.reshape((1, 1) + vshape) for c in np.indices(vshape, dtype=np.int64)]
    maps = list(op.gather_indexing_maps)
    w_ix = np.broadcast_to(np.arange(sim.W).reshape((sim.W, 1) + (1,) * len(vshape)), full)
    t_ix = np.broadcast_to(np.arange(sim.T).reshape((1, sim.T) + (1,) * len(vshape)), full)

    def read_through(value: SSAValue, m, dtype) -> np.ndarray:
        """`value` read at every vector position through its indexing map."""
        v = np.broadcast_to(lead(sim.get(value)).astype(dtype), (sim.W, sim.T) + shape_of(value.type))
        where = [np.broadcast_to(np.asarray(r, dtype=np.int64), full) for r in eval_map(m, pos)]
        return v[(w_ix, t_ix) + tuple(where)]

    n_vecs = len(op.index_vecs)
    syms = [read_through(vec, m, np.int64) for vec, m in zip(op.index_vecs, maps[1:])]
    mem = sim.get(op.base)
    idx = []
    for off, e in zip(op.offsets, maps[0].results):
        base = np.asarray(sim.get(off), dtype=np.int64)
        base = base.reshape(base.shape + (1,) * (len(full) - base.ndim)) if base.ndim else base
        idx.append(base + np.asarray(eval_expr(e, pos, syms), dtype=np.int64))
    valid = np.ones(full, dtype=bool)
    for i, n in zip(idx, mem.shape):
        valid &= (np.broadcast_to(i, full) >= 0) & (np.broadcast_to(i, full) < n)
    if op.mask is not None:  # the mask has its own map after the index vectors' (else: the result's positions)
        if len(maps) > 1 + n_vecs:
            valid &= read_through(op.mask, maps[1 + n_vecs], bool)
        else:
            valid &= np.broadcast_to(lead(sim.get(op.mask)).astype(bool), full)
    vals = sim.load(op, mem, idx, vshape, mask=valid)
    pad = np.asarray(sim.get(op.padding))
    pad = pad.reshape(pad.shape + (1,) * len(vshape)) if pad.ndim >= 2 else pad
    from simtify.sim.types import fit

    return [fit(np.where(valid, vals, pad), t)]


@handles("iree_vector_ext.arg_compare")
def _arg_compare(sim, op):
    """In order along `dimension`, an element replaces the running value and index when
    the comparator (element, running value) yields true (IREE's lowering to vector)."""
    x = lead(sim.get(op.input_value))
    axis = op.dimension.value.data + 2
    best = lead(sim.get(op.init_value))
    best_index = lead(sim.get(op.init_index))
    indices = lead(sim.get(op.input_index)) if op.input_index is not None else None
    kept = len(op.init_value.type.get_shape())
    base = 0
    if op.index_base is not None:
        base = np.asarray(sim.get(op.index_base), dtype=np.int64)
        base = base.reshape(base.shape + (1,) * kept) if base.ndim >= 2 else base
    for i in range(x.shape[axis]):
        candidate = np.take(x, i, axis=axis)
        take = np.asarray(sim.run_region(op.region, [candidate, best])[0], dtype=bool)  # the comparator's i1
        cand_index = np.take(indices, i, axis=axis) if indices is not None else base + i
        best = np.where(take, candidate, best)
        best_index = np.where(take, cand_index, best_index)
    return [fit(best, op.result_value.type), fit(best_index, op.result_index.type)]
