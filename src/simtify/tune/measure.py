"""`KernelCounts` of a config from the simulator: build the kernel for a sample of the
problem, run it on random data (sanitizers on, result checked against numpy), and
scale its counters to the whole launch.

The sample keeps the config and the rank and shrinks the sizes:

- parallel dims: whole workgroup tiles, at most 4 workgroups (a dim smaller than its
  tile is kept as it is); counters scale by ``launch workgroups / sample workgroups``;
- reduction dims whose loop runs more than 3 trips: cut to 1 and to 2 tiles plus the
  original remainder (the masked tail stays), and the counters of the two runs are
  extrapolated linearly in the number of trips, ``c(t) = c1 + (c2 - c1) x (t - t1) /
  (t2 - t1)``; a dim split by ``expand_dims`` is cut in its outer ("?") part.

The simulator counts sectors, workgroup-memory bytes and bank conflicts, shuffles,
barriers and registers; memory instructions and element operations stay the
estimate's (`simtify.tune.estimate`). Known to be wrong: ragged parallel dims are
sampled with full tiles only (their last, masked workgroup is charged as full), and
sector counts of a sample's rows assume the full problem's row alignment (same row
lengths, so the same alignment, except for the first row of a workgroup beyond the
sample).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.reduction_config import ReductionConfig, ReductionPlan
from simtify.tune.model import KernelCounts
from simtify.tune.problem import Dispatch
from simtify.tune.program import FUNCTION, program_text

MAX_SAMPLE_WORKGROUPS = 4
MAX_FULL_TRIPS = 3
SIMULATED = ("global_sectors", "shared_bytes", "shared_bank_conflicts", "shuffles", "barriers")


@dataclass(frozen=True)
class Sample:
    sizes: tuple[int, ...]  # dispatch sizes of the sample
    workgroups: int
    steps: int  # loop trips of the sample's workgroups


@dataclass(frozen=True)
class Measurement:
    counts: KernelCounts
    samples: tuple[Sample, ...]
    simulate_s: float


def _groups(plan: ReductionPlan, rank: int) -> list[list[int]]:
    """Per dispatch dim, its dims in the plan's (expanded) space, outer first."""
    return [[k for k in range(plan.rank) if plan.origin[k] == d] for d in range(rank)]


def _strides_agree(dispatch: Dispatch, sample) -> bool:
    """Whether every operand's memory strides in the sample equal the full problem's
    modulo a sector (and are at least as far apart, up to two sectors): then every
    subgroup access touches as many sectors in the sample as in the full problem."""
    operands = [dispatch.input_dims] + ([dispatch.vector_dims] if dispatch.operation == "matvec" else [])
    eb = dispatch.dtype.bits // 8
    for dims in operands:
        full_stride = sample_stride = eb
        for d in reversed(dims):
            if full_stride != sample_stride and ((full_stride - sample_stride) % 32 or
                                                 sample_stride < min(full_stride, 64)):
                return False
            full_stride *= dispatch.sizes[d]
            sample_stride *= sample[d]
    return True


def samples_for(plan: ReductionPlan, dispatch: Dispatch) -> tuple[list[Sample], int]:
    """The one or two samples to simulate, and the launch's trip count. Dims are cut
    from the innermost in memory outwards, each to the smallest size that keeps the
    memory strides (`_strides_agree`)."""
    groups = _groups(plan, dispatch.rank)
    a, b = list(dispatch.sizes), list(dispatch.sizes)
    budget = MAX_SAMPLE_WORKGROUPS
    wg = 1
    steps_full = plan.trip_count
    steps_a = steps_b = steps_full
    cut = False
    for d in reversed(dispatch.input_dims):
        if d < dispatch.num_parallel:
            (k,) = groups[d]
            tile = plan.tile[k]
            if dispatch.sizes[d] <= tile:
                continue
            n_full = dispatch.sizes[d] // tile
            first = min(n_full, budget)
            for n in list(range(first, 0, -1)) + list(range(first + 1, n_full + 1)):
                trial_a, trial_b = list(a), list(b)
                trial_a[d] = trial_b[d] = n * tile
                if _strides_agree(dispatch, trial_a) and _strides_agree(dispatch, trial_b):
                    a, b = trial_a, trial_b
                    wg *= n
                    budget = max(1, budget // n)
                    break
            else:
                wg *= -(-dispatch.sizes[d] // tile)
            continue
        outer = groups[d][0]
        inner = prod(plan.sizes[k] for k in groups[d][1:])
        tile, size = plan.tile[outer], plan.sizes[outer]
        trips = -(-size // tile)
        static_outer = plan.expansion is not None and len(groups[d]) > 1 and \
            plan.expansion.output_shape[outer] is not None
        if trips <= MAX_FULL_TRIPS or static_outer:
            continue
        rem = size % tile
        found = []
        for k in range(1, trips - 1):
            trial = list(a if not found else b)
            trial[d] = (k * tile + rem) * inner
            if _strides_agree(dispatch, trial):
                found.append(k)
                if len(found) == 2:
                    break
        if len(found) < 2:
            continue
        cut = True
        a[d] = (found[0] * tile + rem) * inner
        b[d] = (found[1] * tile + rem) * inner
        steps_a = steps_a // trips * (found[0] + (rem > 0))
        steps_b = steps_b // trips * (found[1] + (rem > 0))
    if not cut:
        return [Sample(tuple(a), wg, steps_full)], steps_full
    return [Sample(tuple(a), wg, steps_a), Sample(tuple(b), wg, steps_b)], steps_full


def _workgroup_memory_bytes(func) -> int:
    from simtify.sim.types import byte_width

    total = 0
    for op in func.walk():
        if op.name == "memref.alloc":
            t = op.results[0].type
            space = getattr(t, "memory_space", None)
            if space is not None and "workgroup" in str(space):
                total += prod(t.get_shape()) * byte_width(t.element_type)
    return total


def reference(dispatch: Dispatch, inputs: dict[str, np.ndarray], sizes) -> np.ndarray:
    """numpy's answer for the sample: the output plus the reduction of the input."""
    acc = np.int64 if dispatch.dtype.kind == "i" else np.float64
    x = inputs["in"].astype(acc)
    order = np.argsort(dispatch.input_dims)
    x = np.transpose(x.reshape([sizes[k] for k in dispatch.input_dims]), order)
    if dispatch.operation == "matvec":
        v = inputs["v"].astype(acc).reshape([sizes[k] for k in dispatch.vector_dims])
        v = np.transpose(v, np.argsort(dispatch.vector_dims))
        x = x * v.reshape((1,) * dispatch.num_parallel + v.shape)
    return x.sum(axis=tuple(dispatch.reduction_dims)) + inputs["out"].astype(acc)


def simulate_sample(dispatch: Dispatch, config: ReductionConfig, target: str, sizes, check: bool) -> tuple[dict, int]:
    """(simulator stats, workgroup memory bytes) of the config's kernel on `sizes`;
    with `check`, sanitizers on and the result compared with numpy."""
    from simtify.ir import parse
    from simtify.sim import find_function, random_inputs, run
    from simtify.transforms.pipelines import Options, run_pipeline

    module = parse(program_text(dispatch, str(config), sizes), "candidate.mlir")
    run_pipeline(module, "reduction-from-config", Options(target=target, subgroup_size=config.lane_basis.size))
    func = find_function(module, FUNCTION)
    inputs = random_inputs(func, seed=1)
    result = run(module, FUNCTION, {k: v.copy() for k, v in inputs.items()}, target=target, sanitize=check)
    if check:
        if result.findings:
            raise SimtifyError(f"the kernel has sanitizer findings: {result.findings[0]}", "simulation")
        want = reference(dispatch, inputs, sizes)
        got = result.arguments["out"]
        if dispatch.dtype.kind == "i":  # random integers are small: no overflow
            ok = np.array_equal(got.astype(np.int64), want)
        else:
            ok = np.allclose(got, want, rtol=1e-3, atol=1e-3)
        if not ok:
            raise SimtifyError("the kernel's result differs from numpy's", "simulation")
    return result.stats, _workgroup_memory_bytes(func)


def measure(dispatch: Dispatch, plan: ReductionPlan, estimate: KernelCounts, target: str,
            check: bool = True) -> Measurement:
    """The estimate with the simulator's counters of a sample, scaled to the launch."""
    t0 = time.perf_counter()
    samples, steps_full = samples_for(plan, dispatch)
    runs = []
    for i, s in enumerate(samples):
        stats, smem = simulate_sample(dispatch, plan.config, target, s.sizes, check and i == 0)
        runs.append((s, stats, smem))
    scale = plan.workgroup_count / samples[0].workgroups
    values = {}
    for key in SIMULATED:
        if len(runs) == 1:
            per = runs[0][1][key]
        else:
            (s1, c1, _), (s2, c2, _) = runs
            per = c1[key] + (c2[key] - c1[key]) * (steps_full - s1.steps) / max(1, s2.steps - s1.steps)
        values[key] = round(max(0.0, per) * scale)
    registers = max(r[1]["max_registers_per_thread"] for r in runs)
    counts = replace(estimate, registers=registers, shared_memory_bytes=runs[0][2], **values)
    return Measurement(counts, tuple(samples), time.perf_counter() - t0)
