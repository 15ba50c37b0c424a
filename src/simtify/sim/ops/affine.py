"""`affine`: apply, linearize_index and delinearize_index on per-thread indices."""

from __future__ import annotations

import numpy as np

from simtify.sim.affine_eval import eval_map
from simtify.sim.handlers import handles
from simtify.sim.values import int_array

DYNAMIC = -(2**63)


def _basis(sim, op) -> list:
    dyn = iter(op.dynamic_basis)
    return [np.asarray(sim.get(next(dyn)), dtype=np.int64) if b == DYNAMIC else np.int64(b)
            for b in int_array(op.static_basis)]


@handles("affine.apply")
def _apply(sim, op):
    m = op.properties["map"].data
    vals = [np.asarray(sim.get(o), dtype=np.int64) for o in op.operands]
    (r,) = eval_map(m, vals[: m.num_dims], vals[m.num_dims:])
    return [np.asarray(r, dtype=np.int64).reshape(np.shape(r) if np.ndim(r) >= 2 else (1, 1))]


@handles("affine.min", "affine.max")
def _min_max(sim, op):
    m = op.properties["map"].data
    vals = [np.asarray(sim.get(o), dtype=np.int64) for o in op.operands]
    rs = np.broadcast_arrays(*[np.asarray(r, dtype=np.int64) for r in eval_map(m, vals[: m.num_dims], vals[m.num_dims:])])
    out = (np.minimum if op.name == "affine.min" else np.maximum).reduce(np.stack(rs), axis=0)
    return [out.reshape(out.shape if out.ndim >= 2 else (1, 1))]


@handles("affine.delinearize_index")
def _delinearize(sim, op):
    """Digits of the index over the basis, last fastest. With one result more than the
    basis, the extra outermost digit is unbounded; the outermost digit is never wrapped
    (an index past the basis is the program's error, not a modulo)."""
    x = np.asarray(sim.get(op.linear_index), dtype=np.int64)
    basis = _basis(sim, op)
    if len(op.results) == len(basis) + 1:
        basis = [None] + basis
    out = []
    for i in range(len(basis)):
        div = np.int64(1)
        for c in basis[i + 1:]:
            div = div * c
        digit = x // div
        out.append(digit if i == 0 else digit % basis[i])
    return [d.reshape(d.shape if d.ndim >= 2 else (1, 1)) for d in np.broadcast_arrays(*out)]


@handles("affine.linearize_index")
def _linearize(sim, op):
    idx = [np.asarray(sim.get(o), dtype=np.int64) for o in op.multi_index]
    basis = _basis(sim, op)
    if len(basis) == len(idx) - 1:
        basis = [None] + basis
    acc = np.int64(0)
    for i, b in zip(idx, basis):
        acc = acc * (b if b is not None else 1) + i
    return [np.asarray(acc).reshape(np.shape(acc) if np.ndim(acc) >= 2 else (1, 1))]
