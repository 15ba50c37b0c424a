"""`scf`: loops and branches under the active-thread mask.

A uniform condition or trip count runs like sequential code; a divergent one runs each
region for the threads it concerns and merges the results per thread."""

from __future__ import annotations

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.handlers import handles
from simtify.sim.values import placeholder


def _is_uniform(sim, a) -> tuple[bool, object]:
    """(every active thread has the same value, that value; None when no thread is active)."""
    a = np.asarray(a)
    if sim.state.mask is None:  # every thread active: look at the value as stored, unbroadcast
        flat = a.reshape(-1)
        return bool((flat == flat[0]).all()), flat[0]
    act = sim.active()
    full = np.broadcast_to(a, (sim.W, sim.T))
    vals = full[act]
    if vals.size == 0:
        return True, None
    return bool((vals == vals[0]).all()), vals[0]


@handles("scf.if")
def _if(sim, op):
    then_r, else_r = op.regions[0], op.regions[1]
    if sim.launch.level != "simt" and "sg_id_range" in op.attributes:
        # workgroup-level code a range of subgroups runs together (XeGPU's sg_id_range):
        # for the workgroup, the branch runs
        return sim.run_region(then_r, [])
    cond = np.asarray(sim.get(op.operands[0]), dtype=bool)
    uniform, value = _is_uniform(sim, cond)
    if uniform:
        if value is None:  # no active thread: the results are never observed
            return [placeholder(r.type) for r in op.results]
        region = then_r if value else else_r
        if not region.blocks:
            return []
        return sim.run_region(region, [])
    then_vals = sim.with_mask(cond, lambda: sim.run_region(then_r, []))
    if else_r.blocks:
        else_vals = sim.with_mask(~cond, lambda: sim.run_region(else_r, []))
    else:
        else_vals = []
    return [sim.merge(cond, a, b) for a, b in zip(then_vals, else_vals)]


@handles("scf.for")
def _for(sim, op):
    lb, ub, step = (np.asarray(sim.get(o)) for o in op.operands[:3])
    values = [sim.get(o) for o in op.operands[3:]]
    body = op.regions[0]
    bounds = [_is_uniform(sim, v) for v in (lb, ub, step)]
    if all(u for u, _ in bounds):
        lo, hi, st = (int(v) if v is not None else 0 for _, v in bounds)
        if st <= 0 and lo < hi:
            raise SimtifyError(f"scf.for step {st} must be positive")
        for i in range(lo, hi, st):
            values = sim.run_region(body, [np.full((1, 1), i, dtype=np.int64)] + values)
        return values
    # divergent bounds: every thread runs its own trip count, masked
    iv = np.broadcast_to(lb, (sim.W, sim.T)).astype(np.int64)
    ub = np.broadcast_to(ub, (sim.W, sim.T))
    st = np.broadcast_to(step, (sim.W, sim.T))
    active = sim.active() & (iv < ub)
    while active.any():
        cur = iv.copy()
        new = sim.with_mask(active, lambda cur=cur, values=values: sim.run_region(body, [cur] + values))
        values = [sim.merge(active, n, v) for n, v in zip(new, values)]
        iv = iv + st
        active = active & (iv < ub)
    return values


@handles("scf.while")
def _while(sim, op):
    values = [sim.get(o) for o in op.operands]
    before, after = op.regions
    active = sim.active().copy()
    results = None
    while True:
        res = sim.with_mask(active, lambda values=values: sim.run_region(before, values))
        cond, forwarded = np.broadcast_to(np.asarray(res[0], dtype=bool), (sim.W, sim.T)), res[1:]
        leaving = active & ~cond
        results = forwarded if results is None else [sim.merge(leaving, f, r) for f, r in zip(forwarded, results)]
        active = active & cond
        if not active.any():
            return results
        new = sim.with_mask(active, lambda forwarded=forwarded: sim.run_region(after, forwarded))
        values = [sim.merge(active, n, v) for n, v in zip(new, values)]


@handles("scf.execute_region")
def _execute_region(sim, op):
    return sim.run_region(op.regions[0], [])
