"""`iree_codegen.inner_tiled`: IREE's MMA op, at both levels.

Undistributed (``semantics = #iree_gpu.mma_semantics<distributed = false, ..>``), each
operand is ``outer dims × the intrinsic's whole matrix``; every outer iteration point
adds A·B of its inner tiles to C's (products of f16 are exact in f32; the sum is taken in
f64 and rounded once). Distributed, each lane holds its fragment of every outer tile in
the intrinsic's layout (`simtify.target.mma`) and register order; every outer point is
one subgroup-cooperative intrinsic (`simtify.sim.ops.mma.run_intrinsic`), the outer
points in row-major order of the iteration space. Inner tiles are read row-major into
the (permuted) canonical shape, then un-permuted (``permutations``: ``S[i] == C[p[i]]``).
Undistributed and opaque, an operand with no ``permutations`` whose `to_layout` anchor
(through transposes and shape_casts) puts the intrinsic's tile transposed on its inner
dims is read transposed: IREE's VectorDistribute matmuls feed B that way, and IREE's
distribution takes each lane's registers as the fragment.
"""

from __future__ import annotations

import itertools

import numpy as np

from simtify.errors import SimtifyError
from simtify.ir.iree_codegen import ROLES
from simtify.sim.handlers import handles
from simtify.sim.types import fit
from simtify.sim.values import lead


def anchored_layout(value):
    """The nested layout a value carries from the nearest ``iree_vector_ext.to_layout``
    above it, through transposes and shape_casts (None when there is none or a reshape
    has no nested layout)."""
    from simtify.errors import SimtifyError as _Error

    owner = getattr(value, "owner", None)
    name = getattr(owner, "name", None)
    try:
        if name == "iree_vector_ext.to_layout":
            return owner.nested_layout
        if name == "vector.transpose":
            parent = anchored_layout(owner.operands[0])
            return None if parent is None else parent.permute(list(owner.permutation.get_values()))
        if name == "vector.shape_cast":
            parent = anchored_layout(owner.operands[0])
            return None if parent is None else parent.reshape(tuple(value.type.get_shape()))
    except _Error:
        return None
    return None


def _canonical(op, index: int, value: np.ndarray, intr) -> np.ndarray:
    """`value` [W, T, *outer, *inner] with its inner tile in the canonical shape. An
    undistributed opaque operand is read through the layout it carries where that
    layout transposes the intrinsic's (IREE's VectorDistribute B tiles)."""
    canon = op.canonical_inner(index, intr)
    perm = op.layout_permutation(index, intr, anchored_layout(op.operands[index]))
    lead_shape = value.shape[: value.ndim - len(op.inner_shape(index))]
    if perm is None:
        return value.reshape(lead_shape + canon)
    permuted = tuple(canon[p] for p in perm)
    inverse = [perm.index(i) for i in range(len(perm))]
    base = len(lead_shape)
    v = value.reshape(lead_shape + permuted)
    return v.transpose(list(range(base)) + [base + i for i in inverse])


def _intrinsic(sim, op):
    try:
        return op.intrinsic()
    except SimtifyError as e:
        raise SimtifyError(e.what, sim.where(op)) from None


@handles("iree_codegen.inner_tiled")
def _inner_tiled(sim, op):
    intr = _intrinsic(sim, op)
    if any(not hasattr(v.type, "get_shape") or v.type.name != "vector" for v in op.operands):
        raise SimtifyError("the simulator runs inner_tiled on vectors only (bufferize or vectorize first)",
                           sim.where(op))
    vals = [lead(sim.get(v)) for v in op.operands]
    rt = op.results[0].type
    if op.distributed:
        return [fit(_distributed(sim, op, intr, vals), rt)]
    letters = "abcdefghijlopqrstuvwxyz"
    if len(op.iterators) > len(letters):
        raise SimtifyError(f"inner_tiled with {len(op.iterators)} outer dims is more than the simulator handles",
                           sim.where(op))
    inner = {"a": "MK", "b": "KN", "c": "MN"}
    subs = ["".join(letters[e.position] for e in m.results) + inner[r] for m, r in zip(op.maps, ROLES)]
    a, b, c = (_canonical(op, i, v, intr).astype(np.float64) for i, v in enumerate(vals))
    d = np.einsum(f"...{subs[0]},...{subs[1]}->...{subs[2]}", a, b) + c
    # back to the output's own (permuted, possibly opaque) inner shape
    perm = op.layout_permutation(2, intr, anchored_layout(op.operands[2]))
    if perm is not None:
        base = d.ndim - 2
        d = d.transpose(list(range(base)) + [base + p for p in perm])
    return [fit(d.reshape(d.shape[: d.ndim - 2] + op.inner_shape(2)), rt)]


def _distributed(sim, op, intr, vals) -> np.ndarray:
    """One intrinsic per outer iteration point, C's fragment carried through the reduction."""
    W, T = sim.W, sim.T
    frags = []
    for i, v in enumerate(vals):
        v = np.broadcast_to(v, (W, T) + v.shape[2:])
        canon = _canonical(op, i, v, intr)
        outer = op.outer_shape(i)
        frags.append(np.ascontiguousarray(canon).reshape((W, T) + outer + (-1,)))
    orders = [list(intr.order(r)) for r in ROLES]
    c = frags[2].astype(np.float32).copy()
    for point in itertools.product(*(range(s) for s in op.iteration_sizes())):
        idx = [tuple(point[e.position] for e in m.results) for m in op.maps]
        fa = frags[0][(slice(None), slice(None)) + idx[0]][..., orders[0]]
        fb = frags[1][(slice(None), slice(None)) + idx[1]][..., orders[1]]
        at_c = (slice(None), slice(None)) + idx[2]
        fc = c[at_c][..., orders[2]]
        d = _run(sim, op, intr, fa, fb, fc)
        back = np.empty(d.shape, dtype=np.float32)
        back[..., orders[2]] = d
        c[at_c] = back
    perm = op.permutation(2)
    canon_c = op.canonical_inner(2, intr)
    full = c.reshape((W, T) + op.outer_shape(2) + canon_c)
    if perm is not None:
        base = full.ndim - len(canon_c)
        full = full.transpose(list(range(base)) + [base + p for p in perm])
    return full.reshape((W, T) + op.outer_shape(2) + op.inner_shape(2))


def _run(sim, op, intr, fa, fb, fc):
    from simtify.sim.ops.mma import run_intrinsic

    try:
        return run_intrinsic(sim, op, intr, fa, fb, fc)
    except SimtifyError as e:
        if e.where:
            raise
        raise SimtifyError(e.what, sim.where(op)) from None
