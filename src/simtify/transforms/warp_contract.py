"""``vector.contract`` out of the region when every lane can compute its block of the
result alone: the result's split dims are parallel iteration dims; an operand that
indexes all of them (in the result's order) crosses split, one that indexes none
crosses whole (at least one must be split); the accumulator is split as the result.

    %r = warp -> (vector<1x8xf32>) { %c = vector.contract {..(m, n, k)..} %a, %b, %acc
                                       : vector<32x4xf32>, vector<4x8xf32> into vector<32x8xf32>
                                     gpu.yield %c : vector<32x8xf32> }
  becomes (lane l computes row l)
    %p:3 = warp -> (vector<1x4xf32>, vector<4x8xf32>, vector<1x8xf32>) { gpu.yield %a, %b, %acc }
    %r = vector.contract {..} %p#0, %p#1, %p#2 : vector<1x4xf32>, vector<4x8xf32> into vector<1x8xf32>

A result split over dims taken from both operands (an m x n tile over the lanes) would
need each operand replicated over part of the warp, which a warp region's types cannot
say: that contract, and a uniform one, stay on lane 0. Upstream's VectorDistribute.cpp
has no contract pattern (IREE distributes contracts with explicit layouts).
"""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation

from simtify.errors import SimtifyError
from simtify.sim.affine_eval import result_dims
from simtify.transforms.warp_region import Boundary, WarpConfig, after, copy_of, distributed_type, ratios


def _operand_ratios(dims: list, split: dict[int, int], order: list[int]) -> tuple[int, ...] | None:
    """The split of an operand indexing iteration dims `dims`: all of the split
    iteration dims in the result's order, or none of them; None otherwise."""
    mine = [d for d in dims if d in split]
    if not mine:
        return (1,) * len(dims)
    if sorted(mine, key=order.index) != mine or set(mine) != set(split):
        return None
    return tuple(split.get(d, 1) for d in dims)


def sink_contract(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """The contract behind a split result runs after the region on each lane's block
    (see the module docstring for when it can)."""
    if op.name != "vector.contract":
        return False
    inner_t, res_t = op.result.type, warp.results[i].type
    if not isinstance(res_t, VectorType) or inner_t == res_t:
        return False
    try:
        lhs_dims, rhs_dims, acc_dims = (result_dims(m.data) for m in op.indexing_maps.data)
    except SimtifyError:
        return False
    if None in lhs_dims + rhs_dims + acc_dims:
        return False
    ks = ratios(inner_t, res_t)
    split = {acc_dims[j]: k for j, k in enumerate(ks) if k > 1}
    order = [d for d in acc_dims if d in split]
    lhs_ks = _operand_ratios(lhs_dims, split, order)
    rhs_ks = _operand_ratios(rhs_dims, split, order)
    if lhs_ks is None or rhs_ks is None or (all(k == 1 for k in lhs_ks) and all(k == 1 for k in rhs_ks)):
        return False
    b = Boundary(warp)
    for operand, oks in ((op.lhs, lhs_ks), (op.rhs, rhs_ks)):
        b.need(operand, distributed_type(operand.type, oks) if any(k > 1 for k in oks) else operand.type)
    b.need(op.acc, res_t)
    new, vals = b.cross()
    made = after(new).add(copy_of(op, vals, [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True
