"""`gpu`: thread and block ids, barriers, shuffles, subgroup reductions and
``warp_execute_on_lane_0`` (its region runs on lane 0 with whole-subgroup values).

Ops that read other lanes (shuffle, subgroup_reduce, warp_execute_on_lane_0's
distributed operands) read an undefined value from an inactive lane (past the block in
its last subgroup, or masked off by control flow): the reader gets `undefined` (NaN,
the most negative integer, true for i1) and the sanitizer reports an inactive-lane read."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import MemRefType

from simtify.errors import SimtifyError
from simtify.ir.xegpu import MemDescType, TensorDescType
from simtify.ir.vector import shape_of
from simtify.sim.handlers import handles
from simtify.sim.memory import SplitThreads
from simtify.sim.ops.vector import read_anywhere_lazily, reduce
from simtify.sim.report import Finding, id_ranges
from simtify.sim.types import byte_width, dtype_of, fit, held_as_is, undefined
from simtify.sim.values import lead

AXIS = {"x": 0, "y": 1, "z": 2}


def _dim(op) -> int:
    d = op.dimension
    return AXIS[d.data.value if hasattr(d.data, "value") else str(d.data)]


def _thread_coord(sim, axis: int) -> np.ndarray:
    bx, by, _bz = sim.launch.block
    tid = sim.tid()
    return [tid % bx, (tid // bx) % by, tid // (bx * by)][axis]


def block_coord(sim, axis: int) -> np.ndarray:
    """Per workgroup of the batch (``[W, 1]``), its id along `axis` of the grid."""
    gx, gy, _gz = sim.launch.grid
    wg = sim.state.wg_linear.reshape(-1, 1).astype(np.int64)
    return [wg % gx, (wg // gx) % gy, wg // (gx * gy)][axis]


@handles("gpu.thread_id")
def _thread_id(sim, op):
    return [_thread_coord(sim, _dim(op))]


@handles("gpu.block_id")
def _block_id(sim, op):
    return [block_coord(sim, _dim(op))]


@handles("gpu.block_dim")
def _block_dim(sim, op):
    return [np.full((1, 1), sim.launch.block[_dim(op)], dtype=np.int64)]


@handles("gpu.grid_dim")
def _grid_dim(sim, op):
    return [np.full((1, 1), sim.launch.grid[_dim(op)], dtype=np.int64)]


@handles("gpu.global_id")
def _global_id(sim, op):
    a = _dim(op)
    return [block_coord(sim, a) * sim.launch.block[a] + _thread_coord(sim, a)]


@handles("gpu.lane_id")
def _lane_id(sim, op):
    return [sim.tid() % sim.subgroup_size]


@handles("gpu.subgroup_id")
def _subgroup_id(sim, op):
    return [sim.tid() // sim.subgroup_size]


@handles("gpu.subgroup_size")
def _subgroup_size(sim, op):
    return [np.full((1, 1), sim.subgroup_size, dtype=np.int64)]


@handles("gpu.num_subgroups")
def _num_subgroups(sim, op):
    return [np.full((1, 1), sim.T // sim.subgroup_size, dtype=np.int64)]


@handles("gpu.barrier")
def _barrier(sim, op):
    sim.barrier(op)
    return []


def _words(t) -> int:
    """32-bit words a shuffle of a value of type `t` moves (at least one)."""
    return max(1, -(-int(np.prod(shape_of(t), dtype=np.int64)) * byte_width(t) // 4))


def _by_subgroup(sim, a: np.ndarray) -> np.ndarray:
    """[W, T, *s] -> [W, S, lanes, *s]."""
    a = np.broadcast_to(a, (max(a.shape[0], 1), sim.T) + a.shape[2:]) if a.shape[1] != sim.T else a
    sg = sim.subgroup_size
    return a.reshape((a.shape[0], sim.T // sg, sg) + a.shape[2:])


INACTIVE_LANE_READ = "inactive-lane-read"


def undefined_where(a: np.ndarray, where: np.ndarray) -> np.ndarray:
    """`a` ([W, T, *s]) with the lanes of `where` ([W, T]) holding `undefined` (NaN, the
    most negative integer, true for i1): a read of them must not look plausible."""
    w = where.reshape(where.shape + (1,) * (a.ndim - 2))
    return np.where(w, np.asarray(undefined(a.dtype), dtype=a.dtype), a)


def _report_inactive_read(sim, op, bad: np.ndarray, read: np.ndarray,
                          outcome: str = "the value read is undefined") -> None:
    """One finding per op: the active lanes that read an inactive lane (`bad`, [W, T]) and
    the inactive lanes they read (`read`, [W, T]), in the first workgroup with one;
    `outcome` says what the readers get."""
    key = (INACTIVE_LANE_READ, op.name, sim.where(op), "")
    if not sim.sanitize or key in sim.seen or not bad.any():
        return
    sim.seen.add(key)
    w = int(np.nonzero(bad.any(axis=1))[0][0])
    readers, sources = np.flatnonzero(bad[w]), np.flatnonzero(read[w])
    why = [f"past the block's {sim.threads} threads"] * bool((sources >= sim.threads).any())
    why += ["masked off by control flow"] * bool((sources < sim.threads).any())
    sim.findings.append(Finding(
        INACTIVE_LANE_READ, op.name, sim.where(op), int(sim.state.wg_linear[w]), tuple(readers[:16].tolist()),
        "", None, f"{readers.size} active lanes read threads {id_ranges(sources)}, which are inactive "
        f"({' or '.join(why)}); {outcome}"))


def _mixed_groups(act: np.ndarray, shape: tuple, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """([W, T] active lanes, [W, T] inactive lanes) of the groups of lanes (`act` reshaped
    to `shape`, a group along `axis`) that have both."""
    lanes = act.reshape(shape)
    mixed = lanes.any(axis=axis, keepdims=True) & ~lanes.all(axis=axis, keepdims=True)
    return (mixed & lanes).reshape(act.shape), (mixed & ~lanes).reshape(act.shape)


@handles("gpu.shuffle")
def _shuffle(sim, op):
    """MLIR's `gpu.shuffle`. A lane whose result is valid but whose source lane is
    inactive (past the block, or masked off by divergent control flow) reads an undefined
    value: it gets `undefined` (NaN for floats, the most negative integer for integers)
    and the sanitizer reports an inactive-lane read. A source the program excludes by
    `width` (valid = false) is its own business and is not reported."""
    if sim.T % sim.subgroup_size:
        raise SimtifyError(f"{sim.T} threads are not whole subgroups of {sim.subgroup_size}")
    value = lead(sim.get(op.value))
    off = np.broadcast_to(np.asarray(sim.get(op.offset), dtype=np.int64), (sim.W, sim.T))
    width = np.broadcast_to(np.asarray(sim.get(op.width), dtype=np.int64), (sim.W, sim.T))
    mode = op.mode.data.value if hasattr(op.mode.data, "value") else str(op.mode.data)
    # MLIR's gpu.shuffle: lanes [0, width) take part; lane k reads lane k ^ offset (xor),
    # k + offset (down), k - offset (up) or offset (idx). The result is valid where k and
    # that source lane are both below `width`; elsewhere the value is unspecified (here:
    # the lane's own value) and `valid` is false. (Not CUDA's segmented `width`.)
    lane = np.broadcast_to(sim.tid() % sim.subgroup_size, (sim.W, sim.T))
    src = {"xor": lane ^ off, "down": lane + off, "up": lane - off, "idx": off + 0 * lane}[mode]
    valid = (lane < width) & (src >= 0) & (src < width) & (src < sim.subgroup_size)
    src = np.where(valid, src, lane)
    full = np.broadcast_to(value, (sim.W, sim.T) + value.shape[2:])
    sg_base = np.broadcast_to(sim.tid() - sim.tid() % sim.subgroup_size, (sim.W, sim.T))
    src_tid = sg_base + src
    w_ix = np.arange(sim.W).reshape(sim.W, 1)
    out = full[w_ix, src_tid]
    act = sim.active()
    # shuffles per subgroup instruction: count subgroups with an active lane
    n_words = _words(op.value.type)
    sub_active = act.reshape(sim.W, -1, sim.subgroup_size).any(axis=2).sum()
    sim.counters.add(op.name, "shuffles", int(sub_active) * n_words)
    out = fit(out, op.results[0].type)
    if sim.state.mask is not None:  # some lane inactive: who reads one as a valid source?
        bad = act & valid & ~act[w_ix, src_tid]
        if bad.any():
            read = np.zeros_like(act)
            read[np.broadcast_to(w_ix, bad.shape)[bad], src_tid[bad]] = True
            _report_inactive_read(sim, op, bad, read)
            out = undefined_where(out, bad)
    return [out, valid]


@handles("gpu.subgroup_reduce")
def _subgroup_reduce(sim, op):
    """Every lane gets its cluster's reduction. A cluster with both active and inactive
    lanes reads the inactive ones (MLIR lowers the op to shuffles): its active lanes get
    `undefined` and the sanitizer reports an inactive-lane read."""
    if sim.T % sim.subgroup_size:
        raise SimtifyError(f"{sim.T} threads are not whole subgroups of {sim.subgroup_size}")
    sg = sim.subgroup_size
    size = op.cluster_size.value.data if op.cluster_size is not None else sg
    stride = op.cluster_stride.value.data if op.cluster_stride is not None else 1
    if sg % (size * stride):
        raise SimtifyError(f"cluster of {size} lanes at stride {stride} does not tile the {sg}-lane subgroup")
    kind = op.op.data.value if hasattr(op.op.data, "value") else str(op.op.data)
    held = sim.get(op.value)
    out = None
    # every thread active and its readers take it held lazily: each cluster's value broadcast
    # over the cluster's lanes, as a view
    lazy = sim.state.mask is None and held_as_is(dtype_of(op.value.type), op.results[0].type) and \
        sim.fact(op, "lazy", read_anywhere_lazily)
    if isinstance(held, SplitThreads) and sim.state.mask is None:
        out = _reduce_held_lazily(sim, kind, held, size, stride, lazy)
    if out is None:
        reuse = sim.sole_reference(op.value, held)  # its last read: the result may take its memory
        value = _by_subgroup(sim, lead(held))
        W, S = value.shape[:2]
        rest = value.shape[3:]
        grouped = value.reshape((W, S, sg // (size * stride), size, stride) + rest)
        red = reduce(kind, grouped, (3,))
        if lazy and red.dtype == dtype_of(op.results[0].type):
            out = SplitThreads(np.broadcast_to(np.expand_dims(red, 3), grouped.shape), (W, S * sg) + rest, (1, 4))
        elif reuse and grouped.flags.writeable and red.dtype == value.dtype and np.may_share_memory(grouped, value):
            grouped[...] = np.expand_dims(red, 3)  # each lane its cluster's, over the operand read last
            out = value.reshape((W, S * sg) + rest)
        else:
            out = np.repeat(np.expand_dims(red, 3), size, axis=3).reshape((W, S * sg) + rest)  # each lane its cluster's
    del held
    if sim.state.mask is None:  # every subgroup of the batch
        act, sub_active = None, sim.W * (sim.T // sg)
    else:
        act = sim.active()
        sub_active = int(act.reshape(sim.W, -1, sg).any(axis=2).sum())
    steps = int(np.ceil(np.log2(size))) if size > 1 else 0
    sim.counters.add(op.name, "shuffles", sub_active * steps * _words(op.value.type))
    if isinstance(out, SplitThreads):
        return [out]
    out = fit(out, op.results[0].type)
    if sim.state.mask is not None:
        bad, read = _mixed_groups(act, (sim.W, sim.T // sg, sg // (size * stride), size, stride), 3)
        if bad.any():
            _report_inactive_read(sim, op, bad, read)
            out = undefined_where(out, bad)
    return [out]


def _reduce_held_lazily(sim, kind: str, held: SplitThreads, size: int, stride: int,
                        lazy: bool = False) -> np.ndarray | SplitThreads | None:
    """`subgroup_reduce` (every thread active) of a value held lazily, computed once per
    cluster of distinct values: the lanes, subgroups and workgroups that hold it by a step
    of 0 are not read again, and a cluster's lanes are laid out as in the value copied out
    (contiguous), so they are combined in the same order. ``[W, 1, ...]`` where every
    thread of a workgroup gets the same; None where the digits do not regroup by subgroup
    and cluster as a view (the caller copies the value out)."""
    W, T = held.shape[:2]
    sg = sim.subgroup_size
    rest = tuple(held.shape[2:])
    grouped_shape = (W, T // sg, sg // (size * stride), size, stride) + rest
    grouped = held.digits.reshape(grouped_shape)
    if not np.may_share_memory(grouped, held.digits):
        return None
    once = tuple(slice(0, 1) if n > 1 and st == 0 else slice(None)
                 for n, st in zip(grouped.shape[:3], grouped.strides[:3]))
    red = reduce(kind, np.ascontiguousarray(grouped[once]), (3,))
    if red.shape[1:4] == (1, 1, 1):  # one value per workgroup
        return red.reshape((red.shape[0], 1) + rest)
    if lazy and red.dtype == held.digits.dtype:  # `lazy`: left a view for readers that take one
        return SplitThreads(np.broadcast_to(np.expand_dims(red, 3), grouped_shape), (W, T) + rest, (1, 4))
    return np.broadcast_to(np.expand_dims(red, 3), grouped_shape).reshape((W, T) + rest)


def _ratios(outer, inner, what: str, lanes: int) -> tuple[int, ...]:
    if len(outer) != len(inner):
        raise SimtifyError(f"{what}: ranks differ between {inner} and {outer}")
    ks = []
    for o, i in zip(outer, inner):
        if o == 0 or i % o:
            raise SimtifyError(f"{what}: {i} is not a multiple of {o}")
        ks.append(i // o)
    if np.prod(ks) != lanes:
        raise SimtifyError(f"{what}: {list(inner)} split as {list(outer)} per lane takes {int(np.prod(ks))} "
                           f"lanes, not the warp's {lanes}")
    return tuple(ks)


def _gather_lanes(piece: np.ndarray, ks, n: int) -> np.ndarray:
    """Per warp, the whole value lane 0 sees: lane (l0, l1, ..) holds block [l_i·n_i, ..)."""
    W, T = piece.shape[:2]
    small = piece.shape[2:]
    r = len(small)
    g = piece.reshape((W, T // n) + tuple(ks) + small)
    order = [0, 1] + [x for i in range(r) for x in (2 + i, 2 + r + i)]
    big = g.transpose(order).reshape((W, T // n) + tuple(k * s for k, s in zip(ks, small)))
    return np.repeat(big, n, axis=1)


def _scatter_lanes(whole: np.ndarray, ks, n: int) -> np.ndarray:
    """Inverse of `_gather_lanes` from lane 0's value: every lane gets its block."""
    W, T = whole.shape[:2]
    lane0 = whole.reshape((W, T // n, n) + whole.shape[2:])[:, :, 0]
    big = lane0.shape[2:]
    r = len(big)
    small = tuple(b // k for b, k in zip(big, ks))
    g = lane0.reshape((W, T // n) + tuple(x for k, s in zip(ks, small) for x in (k, s)))
    order = [0, 1] + [2 + 2 * i for i in range(r)] + [3 + 2 * i for i in range(r)]
    return g.transpose(order).reshape((W, T) + small)


# Memory and the descriptors over it: the simulator holds one per launch or workgroup, not
# a value per lane, so it crosses a warp region as it is.
HANDLES = (MemRefType, TensorDescType, MemDescType)


@handles("gpu.warp_execute_on_lane_0")
def _warp_execute(sim, op):
    """The region runs on lane 0 of each warp with whole-warp values. A distributed
    operand of a warp with inactive lanes holds `undefined` in their pieces (an
    inactive-lane read)."""
    n = op.warp_size.value.data
    if sim.T % n:
        raise SimtifyError(f"{sim.T} threads do not split into warps of {n}")
    laneid = np.broadcast_to(np.asarray(sim.get(op.laneid)), (sim.W, sim.T))
    expected = np.broadcast_to(sim.tid() % n, (sim.W, sim.T))
    act = sim.active()
    if not (laneid[act] == expected[act]).all():
        raise SimtifyError(f"the lane id operand must be the thread id modulo {n}")
    block = op.warp_region.blocks.first
    # a distributed operand gathers every lane's piece: inactive lanes of a warp that runs
    # the region hand over undefined pieces
    reading, gone = _mixed_groups(act, (sim.W, sim.T // n, n), 2) if sim.state.mask is not None else (None, None)
    args = []
    for operand, barg in zip(op.args, block.args):
        if isinstance(operand.type, HANDLES):
            args.append(sim.get(operand))
            continue
        v = np.broadcast_to(lead(sim.get(operand)), (sim.W, sim.T) + shape_of(operand.type))
        if operand.type == barg.type:  # uniform: lane 0 sees its own value
            args.append(v)
        else:
            ks = _ratios(shape_of(operand.type), shape_of(barg.type), "warp_execute_on_lane_0 argument", n)
            if gone is not None and gone.any():
                _report_inactive_read(sim, op, reading, gone)
                v = undefined_where(v, gone)
            args.append(_gather_lanes(v, ks, n))
    on_lane0 = expected == 0
    yielded = sim.with_mask(on_lane0, lambda: sim.run_region(op.warp_region, args))
    results = []
    for res, y, yv in zip(op.results, yielded, block.ops.last.operands):
        if isinstance(res.type, HANDLES):
            results.append(y)
            continue
        y = np.broadcast_to(lead(y), (sim.W, sim.T) + shape_of(yv.type))
        if res.type == yv.type:
            lane0 = y.reshape((sim.W, sim.T // n, n) + y.shape[2:])[:, :, :1]
            results.append(np.repeat(lane0, n, axis=2).reshape(y.shape))
        else:
            ks = _ratios(shape_of(res.type), shape_of(yv.type), "warp_execute_on_lane_0 result", n)
            results.append(_scatter_lanes(y, ks, n))
    return results


# ------------------------------------------------------------ lane permutations
# gpu.rotate / subgroup_broadcast / ballot here; amdgpu.dpp & co. in sim/ops/amdgpu.py and
# rocdl.readlane in sim/ops/rocdl.py use `read_lanes`. Each counts as one shuffle per 32-bit
# word per subgroup with an active lane (DESIGN.md's `shuffles`: lane-to-lane data
# movement), whatever instruction the hardware uses for it.


def count_lane_op(sim, op, type_) -> None:
    """One shuffle per 32-bit word of `type_` for every subgroup with an active lane."""
    act = sim.active()
    sub_active = int(act.reshape(sim.W, -1, sim.subgroup_size).any(axis=2).sum())
    sim.counters.add(op.name, "shuffles", sub_active * _words(type_))


def read_lanes(sim, op, value: np.ndarray, src_lane: np.ndarray, reading: np.ndarray,
               outcome: str = "the value read is undefined"):
    """Every lane's read of `value` ([W, T, *s]) from lane `src_lane` ([W, T], a lane of
    its own subgroup) -> (values read, [W, T] lanes whose source was inactive). Only the
    lanes of `reading` ([W, T]) read; of those, an active one that reads an inactive lane
    is reported (one `inactive-lane-read` finding per op); the caller decides what value
    such a read gives (undefined for most ops, what the ISA says for DPP)."""
    if sim.T % sim.subgroup_size:
        raise SimtifyError(f"{sim.T} threads are not whole subgroups of {sim.subgroup_size}")
    W, T = sim.W, sim.T
    full = np.broadcast_to(lead(value), (W, T) + lead(value).shape[2:])
    lane = np.broadcast_to(sim.tid() % sim.subgroup_size, (W, T))
    src = np.where(reading, np.broadcast_to(src_lane, (W, T)), lane).astype(np.int64)
    src_tid = np.broadcast_to(sim.tid() - sim.tid() % sim.subgroup_size, (W, T)) + src
    w_ix = np.arange(W).reshape(W, 1)
    out = full[w_ix, src_tid]
    act = sim.active()
    bad = act & reading & ~act[w_ix, src_tid]
    if bad.any():
        read = np.zeros_like(act)
        read[np.broadcast_to(w_ix, bad.shape)[bad], src_tid[bad]] = True
        _report_inactive_read(sim, op, bad, read, outcome)
    return out, bad


def uniform_lane(sim, op, lane: np.ndarray) -> np.ndarray:
    """The lane index ([W, T]) of an op that needs it uniform over each subgroup's active
    lanes (an SGPR on AMD); an error otherwise."""
    sg = sim.subgroup_size
    lane = np.broadcast_to(np.asarray(lane, dtype=np.int64).reshape(np.shape(lane)[:2]), (sim.W, sim.T))
    act = sim.active()
    by_sg = np.where(act, lane, np.iinfo(np.int64).min).reshape(sim.W, -1, sg)
    first = by_sg.max(axis=2, keepdims=True)
    if ((by_sg != first) & act.reshape(sim.W, -1, sg)).any():
        raise SimtifyError(f"the lane operand of '{op.name}' differs between the active lanes of a subgroup; "
                           "it must be uniform")
    return lane


def first_active_lane(sim) -> np.ndarray:
    """[W, T]: each lane's subgroup's lowest active lane (0 where none is active)."""
    sg = sim.subgroup_size
    act = sim.active().reshape(sim.W, -1, sg)
    first = np.argmax(act, axis=2)
    return np.repeat(first, sg, axis=1)


@handles("gpu.rotate")
def _rotate(sim, op):
    """MLIR's `gpu.rotate`: lane k < width reads lane ((k + offset) & (width - 1)) +
    (k & ~(width - 1)); lanes at or beyond width are not valid and keep their own value
    (poison in MLIR). Reading an inactive lane: `undefined` and a finding."""
    off, width = int(op.offset.value.data), int(op.width.value.data)
    if width > sim.subgroup_size:
        raise SimtifyError(f"gpu.rotate width {width} exceeds the {sim.subgroup_size}-lane subgroup")
    lane = np.broadcast_to(sim.tid() % sim.subgroup_size, (sim.W, sim.T))
    valid = lane < width
    src = ((lane + off) & (width - 1)) + (lane & ~(width - 1))
    out, bad = read_lanes(sim, op, sim.get(op.value), src, valid)
    count_lane_op(sim, op, op.value.type)
    out = undefined_where(fit(out, op.results[0].type), bad)
    return [out, valid]


@handles("gpu.subgroup_broadcast")
def _subgroup_broadcast(sim, op):
    """`first_active_lane`: every lane gets the value of its subgroup's lowest active
    lane. `specific_lane %l`: of lane %l (uniform, else an error); a lane out of range or
    inactive gives `undefined` (poison in MLIR) and an `inactive-lane-read` finding."""
    sg = sim.subgroup_size
    if op.lane is None:
        src = first_active_lane(sim)
        out, bad = read_lanes(sim, op, sim.get(op.src), src, sim.active())
    else:
        lane = uniform_lane(sim, op, lead(sim.get(op.lane)))
        inside = (lane >= 0) & (lane < sg)
        out, bad = read_lanes(sim, op, sim.get(op.src), np.where(inside, lane, 0), sim.active())
        outside = sim.active() & ~inside
        if outside.any():
            _report_inactive_read(sim, op, outside, np.zeros_like(outside))
        bad = bad | outside
    count_lane_op(sim, op, op.src.type)
    return [undefined_where(fit(out, op.result.type), bad)]


@handles("gpu.ballot")
def _ballot(sim, op):
    """Every lane gets its subgroup's mask of active lanes whose predicate is true: bit l
    for lane l, as an iN (a narrower N keeps the low N lanes, as ROCDL's i32 ballot on a
    64-lane wave does)."""
    sg = sim.subgroup_size
    if sim.T % sg:
        raise SimtifyError(f"{sim.T} threads are not whole subgroups of {sg}")
    pred = np.broadcast_to(lead(sim.get(op.predicate)).astype(bool), (sim.W, sim.T)) & sim.active()
    bits = np.left_shift(np.uint64(1), np.arange(sg, dtype=np.uint64) % np.uint64(64))
    bits = np.where(np.arange(sg) < 64, bits, np.uint64(0))
    mask = (pred.reshape(sim.W, -1, sg).astype(np.uint64) * bits).sum(axis=2, dtype=np.uint64)
    width = op.result.type.width.data
    if width < 64:
        mask &= np.uint64((1 << width) - 1)
    signed = mask.view(np.int64)
    count_lane_op(sim, op, op.predicate.type)
    return [fit(np.repeat(signed, sg, axis=1), op.result.type)]
