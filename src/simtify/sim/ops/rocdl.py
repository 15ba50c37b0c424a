"""`rocdl.readlane` and `rocdl.readfirstlane`: a value of one lane, given to every lane of
the subgroup (``v_readlane_b32`` / ``v_readfirstlane_b32``, results in an SGPR). Each
counts as a shuffle (see sim/ops/gpu.py `count_lane_op`)."""

from __future__ import annotations

import numpy as np

from simtify.sim.handlers import handles
from simtify.sim.ops.gpu import (
    count_lane_op,
    first_active_lane,
    read_lanes,
    undefined_where,
    uniform_lane,
)
from simtify.sim.types import fit
from simtify.sim.values import lead


@handles("rocdl.readlane")
def _readlane(sim, op):
    """Every lane gets `src` of lane `lane` mod the subgroup size (the instruction uses
    the low bits of the lane select). The lane must be uniform over the subgroup's active
    lanes (it is an SGPR operand): an error otherwise. ``v_readlane`` ignores EXEC, so
    reading an inactive lane returns whatever its register holds: `undefined`, and an
    `inactive-lane-read` finding."""
    lane = uniform_lane(sim, op, lead(sim.get(op.lane))) % sim.subgroup_size
    out, bad = read_lanes(sim, op, sim.get(op.src), lane, sim.active())
    count_lane_op(sim, op, op.src.type)
    return [undefined_where(fit(out, op.result.type), bad)]


@handles("rocdl.readfirstlane")
def _readfirstlane(sim, op):
    """Every lane gets `src` of its subgroup's lowest active lane."""
    out, _ = read_lanes(sim, op, sim.get(op.src), first_active_lane(sim), np.ones((sim.W, sim.T), bool))
    count_lane_op(sim, op, op.src.type)
    return [fit(out, op.result.type)]
