"""`KernelCounts` of a config without running it: what the reduction kernel generator
builds from the plan, counted by hand. Fast enough to rank thousands of configs;
`simtify.tune.measure` checks the best by simulation.

Per loop trip each thread loads its tile of the input (and of a matvec's vector) in
loads of its contiguous run, at most 128 bits; one subgroup instruction touches, per
distinct row its lanes address, the 32-byte sectors their runs cover. After the loop
each thread folds its registers, the lanes on reduction dims combine by shuffles
(log2 of their count per output held), and subgroups on reduction dims exchange
partials through workgroup memory behind one barrier, every thread reading every
partial of the outputs it holds, or one per lane and a cluster subgroup_reduce where
the distribution chooses that (`cross_subgroup_plan`). The output is read and written
once per workgroup.
"""

from __future__ import annotations

from functools import lru_cache
from math import ceil, log2, prod

import numpy as np

from simtify.layout.reduction_config import ReductionPlan
from simtify.tune.model import KernelCounts
from simtify.tune.problem import Dispatch

SECTOR = 32
# Registers a thread holds besides its tile (ids, offsets, the loop counter), and per
# element of its tile: the accumulator, the loaded value and the temporaries between
# them; more with a tail mask (indices, compares) or a matvec's second operand. Fitted
# to the simulator's liveness count over a few hundred configs (within ~30%).
REGISTER_BASE = 20
REGISTERS_PER_ELEMENT = 4.0
REGISTERS_PER_MASKED_ELEMENT = 5.0
REGISTERS_PER_MATVEC_ELEMENT = 1.5


def footprint_bytes(dispatch: Dispatch) -> int:
    """Unique bytes the launch moves: the input (and vector) once, the output read and written."""
    d = dispatch.dtype
    acc_bytes = 8 if d.accumulator in ("f64", "i64") else 4
    total = prod(dispatch.sizes) * d.bits // 8
    if dispatch.operation == "matvec":
        total += prod(dispatch.sizes[k] for k in dispatch.vector_dims) * d.bits // 8
    return total + 2 * dispatch.parallel_size * acc_bytes


def useful_flops(dispatch: Dispatch) -> int:
    return prod(dispatch.sizes) * (2 if dispatch.operation == "matvec" else 1)


def _memory_strides(plan: ReductionPlan, dims: tuple[int, ...]) -> dict[int, int]:
    """Element strides in memory of the plan's (expanded) dims of an operand stored
    row-major over dispatch dims `dims`."""
    size = {}
    for k in range(plan.rank):
        size.setdefault(plan.origin[k], 1)
        size[plan.origin[k]] *= plan.sizes[k]
    strides: dict[int, int] = {}
    step = 1
    for d in reversed(dims):
        for k in reversed([k for k in range(plan.rank) if plan.origin[k] == d]):
            strides[k] = step
            step *= plan.sizes[k]
    return strides


def _operand_accesses(plan: ReductionPlan, dims: tuple[int, ...], bits: int) -> tuple[int, int, int]:
    """(accesses per thread per trip, sectors per subgroup access, 128-bit-or-less loads
    per thread per trip) of an operand read through dispatch dims `dims` (memory order).
    An access is one lane's contiguous run; a subgroup access touches the sectors of
    every lane's run, the lanes placed as the layout places them (batch 0)."""
    L = plan.layout
    exp = plan.expanded_map(dims)
    strides = _memory_strides(plan, dims)
    run = max(1, plan.contiguous_elements(dims))
    elements = prod(L.elements_per_thread[k] for k in exp)
    width = plan.load_width_bits(dims, bits)
    accesses = max(1, elements // run)
    loads = accesses * max(1, ceil(run * bits / width))
    lanes = np.arange(plan.subgroup_size)
    addr = np.zeros(plan.subgroup_size, dtype=np.int64)
    for k in exp:
        t = (lanes // max(L.thread_strides[k], 1)) % L.thread_tile[k]
        addr += t * L.element_tile[k] * strides[k]
    run_bytes = max(1, run * bits // 8)
    first = addr * bits // 8 // SECTOR
    last = (addr * bits // 8 + run_bytes - 1) // SECTOR
    sectors = set()
    for a, b in zip(first.tolist(), last.tolist()):
        sectors.update(range(a, b + 1))
    return accesses, len(sectors), loads


def utilization(plan: ReductionPlan) -> float:
    """The fraction of the tiles' elements inside the iteration space (masked tails)."""
    u = 1.0
    for size, tile in zip(plan.sizes, plan.tile):
        u *= size / (-(-size // tile) * tile)
    return u


@lru_cache(maxsize=4096)
def _per_lane_plan(layout, red, subgroup_size: int, threads: int, acc_bytes: int):
    """The distribution's choice for the cross-subgroup step (None: every thread reads
    every partial)."""
    from simtify.transforms.nested.cross_subgroup import cross_subgroup_plan

    return cross_subgroup_plan(layout, list(red), subgroup_size, threads, acc_bytes)


def estimate_counts(plan: ReductionPlan, dispatch: Dispatch) -> KernelCounts:
    """The counts of the kernel `reduction-from-config` builds for `plan`."""
    d = dispatch.dtype
    acc_bytes = 8 if d.accumulator in ("f64", "i64") else 4
    L = plan.layout
    W, T, S, trips = plan.workgroup_count, plan.threads, plan.subgroup_size, plan.trip_count
    sg = plan.subgroups
    accesses, sectors, loads = _operand_accesses(plan, dispatch.input_dims, d.bits)
    instr_per_trip = loads
    sectors_per_trip = accesses * sectors
    tile_per_thread = prod(L.elements_per_thread)
    ops = 1 + (d.name != d.accumulator)
    if dispatch.operation == "matvec":
        v_accesses, v_sectors, v_loads = _operand_accesses(plan, dispatch.vector_dims, d.bits)
        instr_per_trip += v_loads
        sectors_per_trip += v_accesses * v_sectors
        ops += 1 + (d.name != d.accumulator)
    if any(plan.reduction[k] for k in plan.tail_dims):
        ops += 4  # the tail mask: index add, compare, and, select
    outputs_wg = plan.outputs_per_workgroup
    out_sectors = 2 * ceil(outputs_wg * acc_bytes / SECTOR)
    red = plan.reduction_dims
    outputs_thread = prod(L.elements_per_thread[k] for k in plan.parallel_dims)
    lanes_r = prod(L.thread_tile[k] for k in red)
    sg_r = prod(L.subgroup_tile[k] for k in red)
    shuffles = outputs_thread * ceil(log2(lanes_r)) * (acc_bytes // 4) if lanes_r > 1 else 0
    shared = outputs_wg * sg_r * acc_bytes + T * outputs_thread * sg_r * acc_bytes if sg_r > 1 else 0
    per_lane = _per_lane_plan(L, tuple(red), S, T, acc_bytes) if sg_r > 1 else None
    if per_lane is not None:  # partials read one per lane, then a cluster subgroup_reduce
        size = per_lane[0]
        shuffles += outputs_thread * int(log2(size)) * (acc_bytes // 4)
        shared = outputs_wg * sg_r * acc_bytes + T * sg_r // size * outputs_thread * acc_bytes
    masked = any(plan.reduction[k] for k in plan.tail_dims)
    per_element = (REGISTERS_PER_ELEMENT + d.bits / 32 + (acc_bytes // 4 - 1)
                   + REGISTERS_PER_MASKED_ELEMENT * masked
                   + REGISTERS_PER_MATVEC_ELEMENT * (dispatch.operation == "matvec"))
    registers = int(REGISTER_BASE + per_element * tile_per_thread)
    return KernelCounts(
        workgroups=W, threads=T, subgroup_size=S, trips=trips,
        footprint_bytes=footprint_bytes(dispatch),
        global_sectors=int(W * (sg * trips * sectors_per_trip * utilization(plan) + out_sectors)),
        memory_instructions=W * sg * (trips * instr_per_trip + 2),
        element_ops=W * T * trips * tile_per_thread * ops,
        flops=useful_flops(dispatch),
        shared_bytes=W * shared, shared_bank_conflicts=0,
        shuffles=W * sg * shuffles, barriers=W if sg_r > 1 else 0,
        registers=registers,
        shared_memory_bytes=outputs_wg * sg_r * acc_bytes if sg_r > 1 else 0,
        accumulate_bits=acc_bytes * 8)
