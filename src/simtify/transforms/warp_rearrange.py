"""Ops that move elements around without combining them: transpose, bitcast and
interleave leave the region when every lane can rearrange its own block.

A lane's block of the result must be the rearrangement of a block of the source that
the warp's implicit layout can name (contiguous blocks, lane digits row-major over the
ratios, DESIGN.md); when it is not (a transpose that reorders the distributed dims, a
bitcast whose split cuts an element), the op stays on lane 0, which is always correct.
Upstream's VectorDistribute.cpp has none of these three (its XeGPU distribution has
transpose and bitcast, driven by explicit layouts).

    %r = warp -> (vector<16x1xf32>) { %t = vector.transpose %v, [1, 0] : vector<32x16xf32> to vector<16x32xf32>
                                      gpu.yield %t : vector<16x32xf32> }
  becomes
    %s = warp -> (vector<1x16xf32>) { gpu.yield %v : vector<32x16xf32> }
    %r = vector.transpose %s, [1, 0] : vector<1x16xf32> to vector<16x1xf32>
"""

from __future__ import annotations

from xdsl.ir import Operation

from simtify.ir import vector as vector_ir
from simtify.ir.assembly import int_values
from simtify.transforms.warp_region import Boundary, WarpConfig, after, copy_of, distributed_type, ratios, shape


def sink_transpose(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.transpose %v, [1, 0]`` yielded split: %v crosses split on the dims the
    permutation sends to the result's split dims, and each lane transposes its block.
    The split dims must keep their order (else the lanes would be numbered
    differently on the two sides); a uniform result takes %v whole."""
    if op.name != "vector.transpose":
        return False
    perm = int_values(op.permutation)
    src = op.vector
    inner_t, res_t = op.result.type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    split = [perm[d] for d, k in enumerate(ks) if k > 1]
    if split != sorted(split):
        return False
    src_ks = [1] * len(perm)
    for d, k in enumerate(ks):
        src_ks[perm[d]] = k
    b = Boundary(warp)
    b.need(src, distributed_type(src.type, src_ks) if split else src.type)
    new, (s,) = b.cross()
    made = after(new).add(vector_ir.TransposeOp(s, perm, res_t))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_bitcast(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.bitcast %v : vector<64xf32> to vector<128xf16>`` yielded as
    ``vector<4xf16>``: lane l holds bytes [8l, 8l + 8), which are %v's elements
    [2l, 2l + 2); %v crosses split by the same ratios when its innermost dim divides
    by the innermost ratio (no lane's block starts inside an element)."""
    if op.name != "vector.bitcast":
        return False
    src = op.source
    inner_t, res_t = op.result.type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    src_shape = shape(src.type)
    if not src_shape or src_shape[-1] % ks[-1]:
        return False
    b = Boundary(warp)
    b.need(src, distributed_type(src.type, ks) if any(k > 1 for k in ks) else src.type)
    new, (s,) = b.cross()
    made = after(new).add(copy_of(op, [s], [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_interleave(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.interleave %a, %b : vector<32xf32> -> vector<64xf32>`` yielded as
    ``vector<2xf32>``: lane l's elements [2l, 2l + 2) interleave %a's and %b's element
    l; both cross split by the same ratios when the innermost block of the result is
    even (whole pairs)."""
    if op.name != "vector.interleave":
        return False
    lhs, rhs = op.lhs, op.rhs
    inner_t, res_t = op.result.type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    if not ks or shape(lhs.type)[-1] % ks[-1]:
        return False
    t = distributed_type(lhs.type, ks) if any(k > 1 for k in ks) else lhs.type
    b = Boundary(warp)
    b.need(lhs, t)
    b.need(rhs, t)
    new, (a, c) = b.cross()
    made = after(new).add(copy_of(op, [a, c], [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


REARRANGE_SINKS = [sink_transpose, sink_bitcast, sink_interleave]
