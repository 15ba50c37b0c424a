"""simtify's own reduction heuristic (``--strategy simtify``): one config by rules, no
search. Where IREE's rules give up or go narrow it keeps the VectorDistribute kernel,
whose masked tails make any size work:

1. Loads of 128 bits along the input's innermost dim in memory, narrower when the dim
   is shorter or not a multiple (so rows start aligned), or, when that dim is parallel
   (an outer reduction), while narrower loads give the GPU more workgroups than the
   subgroups it needs (rule 3).
2. The lanes of a subgroup cover that dim first; lanes left over go to the other dim of
   the pair (`simtify.tune.space.pair`): several short rows per subgroup, or, when the
   innermost dim is parallel (an outer reduction), several reduction rows.
3. Enough subgroups in flight: with W workgroups, ``8 x compute units / W`` subgroups
   per workgroup (a power of two, at most 16 and at most what the reduction dim can
   keep busy) go on the reduction dim.
4. Each thread loads up to 32 elements per loop trip in lane-spans (more bytes in
   flight, fewer trips), as the reduction length allows.

Other parallel dims get one output per workgroup, other reduction dims are looped over.
"""

from __future__ import annotations

from math import prod

from simtify.target import get_target
from simtify.tune.iree_heuristic import VECTOR_DISTRIBUTE, Suggestion
from simtify.tune.problem import Dispatch
from simtify.tune.space import Point, config_of, pair

SUBGROUPS_PER_CU = 8
MAX_SUBGROUPS = 16
MAX_ELEMENTS_PER_THREAD = 32


def _floor_pow2(n: float) -> int:
    n = int(n)
    return 1 if n < 1 else 1 << (n.bit_length() - 1)


def _ceil_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def simtify_point(dispatch: Dispatch, target_name: str) -> Point:
    tgt = get_target(target_name)
    S = tgt.subgroup_size
    c, o = pair(dispatch)
    size_c = dispatch.sizes[c]
    size_o = dispatch.sizes[o] if o is not None else 1
    target_subgroups = SUBGROUPS_PER_CU * tgt.compute_units
    others = prod(dispatch.sizes[d] for d in dispatch.parallel_dims if d not in (c, o))
    v = max(1, 128 // dispatch.dtype.bits)
    while v > 1 and (v > size_c or size_c % v):
        v //= 2
    while True:
        spans_c = -(-size_c // v)
        lanes_c = S if o is None else min(S, _ceil_pow2(spans_c))
        lanes_o = S // lanes_c
        if c >= dispatch.num_parallel:  # row reduction: outputs along o
            workgroups = others * (-(-size_o // lanes_o) if o is not None else 1)
            red_spans = -(-spans_c // lanes_c)  # lane-spans along the row
        else:  # outer reduction: outputs along c, the reduction along o
            workgroups = others * -(-spans_c // lanes_c)
            red_spans = -(-size_o // lanes_o)
        cap = min(MAX_SUBGROUPS, tgt.max_workgroup_size // S, _floor_pow2(red_spans))
        if c >= dispatch.num_parallel or v == 1 or workgroups * cap >= target_subgroups:
            break
        v //= 2
    G = max(1, min(cap, _floor_pow2(target_subgroups / max(workgroups, 1))))
    batch = max(1, min(MAX_ELEMENTS_PER_THREAD // v, _floor_pow2(red_spans / G)))
    if c >= dispatch.num_parallel:
        return Point(S, v, lanes_c, G, batch, lanes_o, 1, 1)
    return Point(S, v, lanes_c, 1, 1, lanes_o, G, batch)


def simtify_suggestion(dispatch: Dispatch, target_name: str) -> Suggestion:
    p = simtify_point(dispatch, target_name)
    config = config_of(dispatch, p)
    threads = config.subgroup_basis.size * p.subgroup_size
    batch = p.batch_c if dispatch.contiguous_dim >= dispatch.num_parallel else p.batch_o
    note = (f"simtify's heuristic: {p.vector}-element loads along the innermost dim in memory, lanes there first, "
            f"{config.subgroup_basis.size} subgroup(s) on the reduction, {batch} lane-span(s) per thread per trip")
    return Suggestion(VECTOR_DISTRIBUTE, threads, p.subgroup_size, str(config), config, dispatch, (note,))
