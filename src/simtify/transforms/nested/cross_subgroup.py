"""The cross-subgroup step of nested reductions: which thread dims go through workgroup
memory, and how their partials come back (one per lane with a cluster subgroup_reduce,
or all of them to every thread), chosen by cost on the host.

Pure functions of a layout and the launch (no IR): the distribution asks them, and so
does `tune.estimate` to predict what the distribution will do.
"""

from __future__ import annotations

from math import prod

from simtify.layout import NestedLayout

# numpy (and the ownership maps on it) is imported by the functions that cost a
# cross-subgroup reduction, not here: most distributions never ask them.


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def lanes_then_subgroups(lay: NestedLayout, d: int, subgroup_size: int) -> bool:
    """Whether thread dim `d` spans several subgroups in a way lanes can reduce first: a
    power-of-two tile at a power-of-two stride below the subgroup size, wider than it."""
    T, st = lay.thread_tile[d], lay.thread_strides[d]
    return (T > 1 and is_pow2(T) and is_pow2(st) and is_pow2(subgroup_size) and st < subgroup_size
            and T * st > subgroup_size)


def memory_thread_dims(lay: NestedLayout, red, subgroup_size: int) -> list[int]:
    """The reduced dims whose lanes are not a power-of-two strided set inside one
    subgroup: their partials go through workgroup memory with the subgroups' ones."""
    out = []
    for d in red:
        T, st = lay.thread_tile[d], lay.thread_strides[d]
        if T > 1 and not (is_pow2(T) and is_pow2(st) and subgroup_size % (T * st) == 0):
            out.append(d)
    return out


def cross_subgroup_plan(lay: NestedLayout, red, subgroup_size: int, threads: int, elem_bytes: int, target=None,
                        force: str | None = None):
    """How the partials of a reduction of `lay` over `red` come back from workgroup
    memory: (cluster size, stride, padding) to read them one per lane and combine them
    with a cluster ``gpu.subgroup_reduce`` (IREE's plan), or None to have every thread
    read all of them (the broadcast plan). `force` = "lanes" / "broadcast" overrides.

    Chosen by cost, on the host, from the counters the simulator would report for each
    plan's writes and reads: ``shared_bytes / (banks × bank width) + bank conflicts +
    shuffles`` cycles per workgroup (one workgroup-memory phase and one shuffle
    instruction per cycle: the throughput terms of the cost models in `tune` and
    bench/bench_suite.py). Per kept register and subgroup, the broadcast plan reads
    ``n × lanes`` words, the per-lane plan ``lanes`` words and log2(cluster) shuffles:
    measured, the per-lane plan wins from 2 partials on 64 lanes and from 4 on 32 lanes;
    2-3 partials on 32 lanes tie (the broadcast plan is kept: no shuffle latency), and
    a sub-word type (a shuffle moves a whole word) tips small cases to the broadcast
    plan. Rows per thread scale both plans alike, except for bank conflicts: the lanes
    of a cluster read one row of different slots, which share a bank when a slot is a
    multiple of 128 bytes (many rows per thread), so the per-lane buffer's last dim is
    padded where that is cheaper (counted too). A cluster needs ``2^k >= n`` lanes a
    power-of-two stride apart inside a subgroup that hold the same kept elements
    (reduced or replicated lane digits); without one the broadcast plan is the only
    one: never IREE's serial tail, which reads subgroup 0's partial only."""
    from simtify.target import get_target

    if force == "broadcast":
        return None
    target = get_target(target or ("gfx942" if subgroup_size == 64 else "sm_90")) if not hasattr(
        target, "shared_banks") else target
    kept = [d for d in range(lay.rank) if d not in red]
    kept_lay = lay.project(red) if kept else None
    thread_dims = memory_thread_dims(lay, red, subgroup_size)
    sub_dims = [d for d in red if lay.subgroup_tile[d] > 1]
    n = prod(lay.thread_tile[d] for d in thread_dims) * prod(lay.subgroup_tile[d] for d in sub_dims)
    if n < 2:
        return None
    clusters = _partial_clusters(kept_lay, n, subgroup_size, threads)
    if not clusters:
        return None
    writes = _partial_writers(lay, kept, thread_dims, sub_dims, subgroup_size, threads)
    launch = (subgroup_size, threads, target)
    e = kept_lay.element_tile[-1] if kept_lay is not None else 1
    pads = [0] if kept_lay is None else [0, 1] + [e << i for i in range(4) if e << i > 1]
    costs = {(c, p): _round_trip_cost(kept_lay, n, elem_bytes, writes, c, p, *launch) for c in clusters
             for p in pads}
    best = min(costs, key=lambda cp: (costs[cp], cp[1], cp[0][1]))
    if force != "lanes" and costs[best] >= _round_trip_cost(kept_lay, n, elem_bytes, writes, None, 0, *launch):
        return None
    (size, stride), pad = best
    return size, stride, pad


def _partial_clusters(kept_lay: NestedLayout | None, n: int, sg: int, threads: int) -> list[tuple[int, int]]:
    """Every (size, stride) cluster of power-of-two size >= n whose lanes all hold the
    same kept elements (decided on the launch's threads)."""
    size = 1 << (n - 1).bit_length()
    if not is_pow2(sg) or size > sg or threads % sg:
        return []
    import numpy as np

    tids = np.arange(threads)
    key = np.zeros((threads, 1), dtype=np.int64) if kept_lay is None else kept_lay.thread_digits(tids, sg)[1]
    out = []
    stride = 1
    while stride * size <= sg:
        first = tids - ((tids // stride) % size) * stride
        if np.array_equal(key, key[first]):
            out.append((size, stride))
        stride *= 2
    return out


def _partial_writers(lay: NestedLayout, kept, thread_dims, sub_dims, sg: int, threads: int):
    """(writer tids, their slots): one thread per partial, the one `writer` picks."""
    import numpy as np

    tids = np.arange(threads)
    s_dig, t_dig = lay.thread_digits(tids, sg)
    digits = np.concatenate([t_dig[:, list(kept) + list(thread_dims)], s_dig], axis=1)
    first = np.sort(np.unique(digits, axis=0, return_index=True)[1])
    slot = np.zeros(threads, dtype=np.int64)
    for d in thread_dims:
        slot = slot * lay.thread_tile[d] + t_dig[:, d]
    for d in sub_dims:
        slot = slot * lay.subgroup_tile[d] + s_dig[:, d]
    return first, slot[first]


def _round_trip_cost(kept_lay: NestedLayout | None, n: int, b: int, writes, cluster, pad: int, sg: int,
                     threads: int, target) -> float:
    """Cycles per workgroup of the partials' round trip (see `cross_subgroup_plan`) with
    `cluster` (None: the broadcast plan) and the buffer's last dim padded by `pad`, from
    the counters the simulator gives its accesses: shared bytes, bank conflicts
    (`count_bank_conflicts`, per register group and subgroup) and shuffles."""
    import numpy as np

    from simtify.layout.memory_access import count_bank_conflicts
    from simtify.layout.ownership import unravel

    T = threads
    tids = np.arange(T)
    if kept_lay is None:
        regs, slot_words = np.zeros((T, 1, 1), dtype=np.int64), 1
    else:
        shape = list(kept_lay.undistributed_shape)
        coords = unravel(kept_lay.ownership(sg, T).flat, shape)
        padded = shape[:-1] + [shape[-1] + pad]
        regs = np.ravel_multi_index(coords, padded).reshape(T, -1, prod(kept_lay.element_tile))
        slot_words = prod(padded)
    _, G, E = regs.shape
    if cluster is None:  # n reads per thread; the slot shifts every address alike
        slots, reads, shuffles = np.zeros(T, dtype=np.int64), n, 0
    else:
        size, stride = cluster
        slots, reads = (tids // stride) % size, 1
        shuffles = (T // sg) * (size.bit_length() - 1) * max(1, -(-G * E * b // 4))
    writers, writer_slots = writes
    total = 0.0
    for who, where, times in ((writers, writer_slots, 1), (tids[slots < n], slots[slots < n], reads)):
        total += times * who.size * G * E * b / target.shared_phase_bytes
        for g in range(G):
            addr = (where[:, None] * slot_words + regs[who, g, :]) * b
            total += times * count_bank_conflicts(
                np.repeat(who // sg, E), np.repeat(who % sg, E), np.tile(np.arange(E), who.size), addr.ravel(), E, b,
                target.shared_banks, target.bank_width_bytes, True)
    return total + shuffles
