"""Gathered dims that are contiguous become contiguous dims; a gather with none left
is a ``vector.transfer_read`` (IREE's transfer_gather folds and canonicalization).

An index vector that is ``vector.step`` reads 0, 1, 2, ... along its vector dim, so the
source dim it gathers is read directly by that dim; ``vector.step`` plus a uniform
value (a broadcast scalar or a splat constant) moves the offset as well, and a scalar
index only moves the offset::

    %s = vector.step : vector<16xindex>
    %o = vector.broadcast %k : index to vector<16xindex>
    %i = arith.addi %s, %o : vector<16xindex>
    %g = iree_vector_ext.transfer_gather %src[%c0, %c0] [%i : vector<16xindex>], %pad
           {indexing_maps = [affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>]}
           : memref<64x8xf32>, vector<16x8xf32>
  becomes
    %r0 = affine.apply affine_map<(d0, d1) -> (d0 + d1)> (%c0, %k)
    %g = vector.transfer_read %src[%r0, %c0], %pad : memref<64x8xf32>, vector<16x8xf32>

The read keeps the gather's meaning exactly: out-of-bounds positions read the padding
(`in_bounds` false, the seed form's own `in_bounds` where it is kept; IREE's 3.12 fold
writes true, as its gather does not define out-of-bounds reads), a mask is broadcast and
transposed to the read's. A gather that still has index vectors keeps its form.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import AffineMapAttr, DenseIntOrFPElementsAttr, IndexType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap, AffineSymExpr

from simtify.errors import SimtifyError
from simtify.ir.iree_vector_ext import TransferGatherOp
from simtify.ir import vector as vector_ir
from simtify.ir.effects import is_pure
from simtify.transforms.emit import Emitter, bool_array

if TYPE_CHECKING:
    from simtify.transforms.transfer_gather_forms import Gather

Addend = SSAValue | int


def _splat_index(value: SSAValue) -> int | None:
    """The value of a splat ``arith.constant dense<c> : vector<..xindex>``, else None."""
    op = value.owner
    if getattr(op, "name", None) != "arith.constant":
        return None
    attr = op.properties.get("value") or op.attributes.get("value")  # type: ignore[union-attr]
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        return None
    values = set(attr.get_values())
    return int(values.pop()) if len(values) == 1 else None


def _uniform(value: SSAValue) -> Addend | None:
    """The scalar every element of `value` equals (a broadcast index or a splat)."""
    op = value.owner
    if getattr(op, "name", None) == "vector.broadcast" and isinstance(op.operands[0].type, IndexType):  # type: ignore[union-attr]
        return op.operands[0]  # type: ignore[union-attr]
    return _splat_index(value)


def contiguous_offsets(value: SSAValue) -> list[Addend] | None:
    """If `value` is ``vector.step`` plus uniform values, those values; else None."""
    op = value.owner
    name = getattr(op, "name", None)
    if name == "vector.step":
        return []
    if name != "arith.addi":
        return None
    a, b = op.operands  # type: ignore[union-attr]
    for x, y in ((a, b), (b, a)):
        offset = _uniform(y)
        rest = contiguous_offsets(x) if offset is not None else None
        if rest is not None:
            return rest + [offset]  # type: ignore[list-item]
    return None


def _without_symbol(m: AffineMap, gone: int, replacement: AffineExpr) -> AffineMap:
    symbols = [AffineSymExpr(j - (j > gone)) for j in range(m.num_symbols)]
    symbols[gone] = replacement
    dims = [AffineDimExpr(k) for k in range(m.num_dims)]
    return m.replace_dims_and_symbols(dims, symbols, m.num_dims, m.num_symbols - 1)


def fold_index_vectors(g: Gather) -> tuple[Gather, dict[int, list[Addend]]]:
    """`g` with every contiguous index vector (and scalar index) folded away, and what
    each source dim's offset gains."""
    moves: dict[int, list[Addend]] = {}
    j = 0
    while j < len(g.index_vecs):
        vec, m = g.index_vecs[j], g.maps[1 + j]
        dims = [s for s, e in enumerate(g.source_map.results) if e == AffineSymExpr(j)]
        if len(dims) != 1:
            j += 1
            continue
        if isinstance(vec.type, IndexType):
            offsets: list[Addend] | None = [vec]
            read_at: AffineExpr = AffineConstantExpr(0)
        else:
            offsets = contiguous_offsets(vec) if len(m.results) == 1 else None
            read_at = m.results[0] if offsets is not None else AffineConstantExpr(0)
        if offsets is None:
            j += 1
            continue
        moves.setdefault(dims[0], []).extend(offsets)
        maps = tuple(_without_symbol(x, j, read_at) for k, x in enumerate(g.maps) if k != 1 + j)
        g = replace(g, index_vecs=g.index_vecs[:j] + g.index_vecs[j + 1:], maps=maps)
    return g, moves


def _moved_offsets(g: Gather, moves: dict[int, list[Addend]], em: Emitter) -> Gather:
    offsets = list(g.offsets)
    for s, addends in moves.items():
        if not addends:  # a bare vector.step: the offset stays
            continue
        values = [a for a in addends if isinstance(a, SSAValue)]
        constant = sum(a for a in addends if isinstance(a, int))
        expr: AffineExpr = AffineDimExpr(0) + constant
        for k in range(len(values)):
            expr = expr + AffineDimExpr(1 + k)
        offsets[s] = em.apply(expr, [offsets[s], *values])
    return replace(g, offsets=tuple(offsets))


def canonicalize_gather(op: TransferGatherOp) -> bool:
    """Fold `op`'s contiguous index vectors; a read when none is left. False: unchanged."""
    from simtify.transforms.transfer_gather_forms import (  # imported here: most functions have no gather
        Gather,
        build_indexing_maps_form,
        build_seed_form,
        mask_in_dims,
        plan_seed_form,
        replace_gather,
    )

    g, moves = fold_index_vectors(Gather.of(op))
    if not moves:
        return False
    try:
        plan = plan_seed_form(g) if (op.is_seed_form or not g.index_vecs) else None
    except SimtifyError:
        if op.is_seed_form:
            return False  # its folded dims no longer fit its form (it stays as written)
        plan = None  # no read either (a vector dim read twice): a gather without index vectors
    em = Emitter(op.parent_block(), op)  # type: ignore[arg-type]
    g = _moved_offsets(g, moves, em)
    same_reads = plan is not None and op.is_seed_form and plan.permutation_map == op.permutation_map.data  # type: ignore[union-attr]
    in_bounds = ([bool(b.value.data) for b in op.in_bounds.data] if same_reads  # type: ignore[union-attr]
                 else [s is None for s in plan.carrier] if plan is not None else None)
    if g.index_vecs or plan is None:
        new = build_seed_form(g, em, in_bounds) if op.is_seed_form else build_indexing_maps_form(g)
    else:
        assert in_bounds is not None
        mask = []
        if g.mask is not None:
            assert g.mask_map is not None
            mask = [mask_in_dims(em, g.mask, g.mask_map, plan.mask_dims, g.vector_type.get_shape())]
        new = vector_ir.TransferReadOp.build(
            operands=[g.base, list(g.offsets), g.padding, mask], result_types=[g.vector_type],
            properties={"permutation_map": AffineMapAttr(plan.permutation_map), "in_bounds": bool_array(tuple(in_bounds))})
    old_index_vecs = list(op.index_vecs)
    replace_gather(op, new)
    _erase_unused(old_index_vecs)
    return True


def _erase_unused(values: list[SSAValue]) -> None:
    """Drop the pure ops that computed `values` once nothing reads them (the folded
    steps and offsets), as canonicalization does."""
    work = [v.owner for v in values]
    while work:
        op = work.pop()
        if not isinstance(op, Operation) or op.parent is None or not op.results:
            continue
        if any(r.uses for r in op.results) or not is_pure(op):
            continue
        operands = list(op.operands)
        op.detach()
        op.erase()
        work.extend(v.owner for v in operands)


def canonicalize_gathers(func: Operation) -> int:
    """Canonicalize every transfer_gather in `func`; returns how many changed."""
    return sum(canonicalize_gather(op) for op in [o for o in func.walk() if isinstance(o, TransferGatherOp)])
