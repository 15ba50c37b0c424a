"""Affine expressions evaluated on arrays of per-thread indices."""

from __future__ import annotations

from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)

from simtify.errors import SimtifyError


def eval_expr(e: AffineExpr, dims, syms):
    import numpy as np  # here, not at import: the passes read maps (`result_dims`) without arrays

    if isinstance(e, AffineConstantExpr):
        return np.int64(e.value)
    if isinstance(e, AffineDimExpr):
        return dims[e.position]
    if isinstance(e, AffineSymExpr):
        return syms[e.position]
    if isinstance(e, AffineBinaryOpExpr):
        a = eval_expr(e.lhs, dims, syms)
        b = eval_expr(e.rhs, dims, syms)
        k = e.kind
        if k == AffineBinaryOpKind.Add:
            return a + b
        if k == AffineBinaryOpKind.Mul:
            return a * b
        if k == AffineBinaryOpKind.Mod:
            return np.mod(a, b)
        if k == AffineBinaryOpKind.FloorDiv:
            return np.floor_divide(a, b)
        if k == AffineBinaryOpKind.CeilDiv:
            return -np.floor_divide(-a, b)
    raise SimtifyError(f"cannot evaluate affine expression {e}")


def eval_map(m: AffineMap, dims, syms=()) -> list:
    return [eval_expr(e, list(dims), list(syms)) for e in m.results]


def result_dims(m: AffineMap) -> list[int | None]:
    """For a permutation/projection/broadcast map: each result's dim, None for constant 0."""
    out = []
    for e in m.results:
        if isinstance(e, AffineDimExpr):
            out.append(e.position)
        elif isinstance(e, AffineConstantExpr) and e.value == 0:
            out.append(None)
        else:
            raise SimtifyError(f"expected a permutation or broadcast map, found {m}")
    return out
