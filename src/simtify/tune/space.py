"""The space of reduction configs the tuner searches, and how a point becomes a config.

A point (`Point`) distributes a dispatch over two dims: `c`, the input's innermost dim
in memory, where each thread holds `vector` contiguous elements (one load of up to 128
bits), and the other of the pair - the innermost-in-memory reduction dim when `c` is
parallel, the innermost-in-memory parallel dim when `c` is a reduction dim (a row
reduction). Per dim of the pair the point names the lanes, the subgroups, and a batch
(how many lane-spans one thread covers per loop trip; on the reduction dim that is
more loads in flight per trip, on the parallel dim more outputs per workgroup). Other
parallel dims get workgroup tile 1, other reduction dims partial_reduction 1.

``expand`` > 0 splits a row reduction's dim into ``(size / expand, expand)`` with
``expand_dims`` (``output_shape = [.., ?, expand]``): each thread holds ``expand``
contiguous elements of the inner dim and the lanes spread over the outer one - the
seed's ``[?, ?, ?, 8]`` form, valid when ``expand`` divides the size. The tuner tries
``expand`` = 2 and 4 vectors: runs of 256 or 512 bits per thread, which a plain
config (one load of at most 128 bits per run) cannot express.
"""

from __future__ import annotations

from dataclasses import dataclass

from simtify.errors import SimtifyError
from simtify.layout.basis import Basis
from simtify.layout.reduction_config import ExpandDims, ReductionConfig
from simtify.tune.problem import Dispatch


@dataclass(frozen=True)
class Point:
    subgroup_size: int
    vector: int  # elements per thread along the contiguous dim
    lanes_c: int  # lanes along the contiguous dim
    subgroups_c: int
    batch_c: int
    lanes_o: int  # lanes along the other dim of the pair (1 if there is none)
    subgroups_o: int
    batch_o: int
    expand: int = 0


def pair(dispatch: Dispatch) -> tuple[int, int | None]:
    """(the contiguous dim, the other dim of the pair or None)."""
    c = dispatch.contiguous_dim
    reduction = c >= dispatch.num_parallel
    others = [d for d in reversed(dispatch.input_dims) if (d >= dispatch.num_parallel) != reduction]
    return c, (others[0] if others else None)


def config_of(dispatch: Dispatch, p: Point) -> ReductionConfig:
    """The lowering config of point `p` on `dispatch` (an error when it is not valid)."""
    c, o = pair(dispatch)
    if o is None and (p.lanes_o != 1 or p.subgroups_o != 1 or p.batch_o != 1):
        raise SimtifyError("no second dim to spread lanes or subgroups over")
    rank = dispatch.rank
    lanes = [1] * rank
    sgs = [1] * rank
    thread = [0] * rank
    tile = [1] * rank  # workgroup tile on parallel dims, partial_reduction on reduction dims
    lanes[c], sgs[c], thread[c] = p.lanes_c, p.subgroups_c, p.vector
    tile[c] = p.subgroups_c * p.lanes_c * p.vector * p.batch_c
    if o is not None:
        lanes[o], sgs[o], thread[o] = p.lanes_o, p.subgroups_o, 1
        tile[o] = p.subgroups_o * p.lanes_o * p.batch_o
    for d in dispatch.reduction_dims:
        thread[d] = max(thread[d], 1)
    workgroup = [tile[d] if d < dispatch.num_parallel else 0 for d in range(rank)]
    partial = [tile[d] if d >= dispatch.num_parallel else 0 for d in range(rank)]
    ident = tuple(range(rank))
    if not p.expand:
        return ReductionConfig(tuple(workgroup), tuple(partial), tuple(thread), Basis(tuple(lanes), ident),
                               Basis(tuple(sgs), ident))
    if c < dispatch.num_parallel or dispatch.sizes[c] % p.expand:
        raise SimtifyError(f"expand_dims by {p.expand} needs a reduction dim it divides")
    # split c into (c_outer, c_inner = expand): lanes and subgroups on the outer dim
    f = p.expand

    def split(values, outer, inner):
        return values[:c] + [outer, inner] + values[c + 1:]

    groups = [[d] if d < c else [d + 1] for d in range(rank)]
    groups[c] = [c, c + 1]
    shape = [None] * (rank + 1)
    shape[c + 1] = f
    spans = p.subgroups_c * p.lanes_c * p.batch_c
    config = ReductionConfig(
        tuple(split(workgroup, 0, 0)), tuple(split(partial, spans * p.vector // f, 0)),
        tuple(split(thread, max(p.vector // f, 1), f)), Basis(tuple(split(lanes, p.lanes_c, 1)), tuple(range(rank + 1))),
        Basis(tuple(split(sgs, p.subgroups_c, 1)), tuple(range(rank + 1))), ExpandDims(tuple(map(tuple, groups)),
                                                                                          tuple(shape)))
    return config


def _powers(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def _ceil_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def points(dispatch: Dispatch, subgroup_sizes, max_threads: int, max_load_bits: int = 128,
           max_elements_per_thread: int = 256):
    """Every point worth trying: power-of-two lanes, subgroups, vectors and batches that
    do not overshoot their dims by more than a power of two, all subgroups on one dim
    of the pair, at most `max_elements_per_thread` elements of a tile per thread."""
    c, o = pair(dispatch)
    bits = dispatch.dtype.bits
    size_c = dispatch.sizes[c]
    size_o = dispatch.sizes[o] if o is not None else 1
    c_is_reduction = c >= dispatch.num_parallel
    vectors = [v for v in _powers(max(1, max_load_bits // bits)) if v <= _ceil_pow2(size_c)]
    for S in subgroup_sizes:
        for v in vectors:
            spans_c = -(-size_c // v)
            for lanes_c in _powers(S):
                lanes_o = S // lanes_c
                if lanes_c > _ceil_pow2(spans_c) or (o is None and lanes_o > 1) or lanes_o > _ceil_pow2(size_o):
                    continue
                for G in _powers(max_threads // S):
                    for on_c in (True, False):
                        sg_c, sg_o = (G, 1) if on_c else (1, G)
                        if (o is None and sg_o > 1) or (G == 1 and not on_c):
                            continue
                        if sg_c * lanes_c > _ceil_pow2(spans_c) or sg_o * lanes_o > _ceil_pow2(size_o):
                            continue
                        for b_c in _powers(16):
                            if sg_c * lanes_c * b_c > _ceil_pow2(spans_c):
                                break
                            for b_o in _powers(16 if not c_is_reduction else 4):
                                if sg_o * lanes_o * b_o > _ceil_pow2(size_o) or v * b_c * b_o > max_elements_per_thread:
                                    break
                                yield Point(S, v, lanes_c, sg_c, b_c, lanes_o, sg_o, b_o)
                                if c_is_reduction and b_o == 1:
                                    for f in (2 * v, 4 * v):  # (v, v) would be the plain config
                                        if f * bits <= 4 * max_load_bits and size_c % f == 0:
                                            yield Point(S, v, lanes_c, sg_c, b_c, lanes_o, sg_o, b_o, expand=f)
