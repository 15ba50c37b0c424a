"""The tuner: enumerate the configs of a dispatch, rank them by the cost model on
estimated counts, check the best by simulation (in worker processes), and pick the
fastest checked one by the model on measured counts.

IREE's own choice (and simtify's heuristic) join the ranking and are always checked,
so the winner's predicted time is never worse than IREE's on the same footing. A
candidate whose kernel fails to build, trips a sanitizer or disagrees with numpy is
dropped with the reason.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from math import ceil

from simtify.errors import SimtifyError
from simtify.layout.reduction_config import (
    ReductionConfig,
    ReductionPlan,
    plan_reduction,
)
from simtify.target import get_target
from simtify.tune.estimate import estimate_counts, footprint_bytes, useful_flops
from simtify.tune.heuristic import simtify_suggestion
from simtify.tune.iree_heuristic import IREE_TARGETS, Suggestion, iree_suggestion
from simtify.tune.model import KernelCounts, Prediction, predict, roofline_seconds
from simtify.tune.problem import Dispatch, ReductionProblem, dispatch_of
from simtify.tune.space import config_of, points

Progress = Callable[[str, int, int], None]


@dataclass
class Candidate:
    config: ReductionConfig
    plan: ReductionPlan
    estimate: KernelCounts
    predicted: Prediction  # on the estimate
    origin: str = "search"  # "search", "iree" or "simtify"
    measured: KernelCounts | None = None
    checked: Prediction | None = None  # on the measured counts
    error: str | None = None
    check_s: float = 0.0

    @property
    def seconds(self) -> float:
        """The best knowledge: measured if checked, else estimated."""
        return (self.checked or self.predicted).seconds

    def key(self):
        """Fastest first; among equals the smaller workgroup, fewer registers, no expand_dims."""
        return (self.seconds, self.plan.threads, self.estimate.registers, self.config.expand_dims is not None,
                str(self.config))


@dataclass
class TuneResult:
    problem: ReductionProblem
    dispatch: Dispatch
    target: str
    roofline_s: float
    iree: Suggestion
    iree_candidate: Candidate | None  # None when IREE's kernel has no reduction-config form
    iree_predicted_s: float
    simtify: Candidate | None
    best: Candidate
    checked: list[Candidate]
    enumerated: int
    valid: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """As `simtify tune reduction --json` prints it (a time that cannot be is null)."""
        def t(s: float):
            return None if s == float("inf") else s

        return {"best": {"lowering_config": str(self.best.config), "predicted_s": t(self.best.seconds)},
                "iree": {"lowering_config": self.iree.lowering_config, "predicted_s": t(self.iree_predicted_s)},
                "roofline_s": self.roofline_s}


# Workgroups one launch may have along x (HIP and CUDA alike; IREE's max_workgroup_counts).
MAX_WORKGROUPS = 2**31 - 1


def plan_for(dispatch: Dispatch, config: ReductionConfig, target_name: str) -> ReductionPlan:
    """The config's plan on the dispatch; an error if it does not fit or launches more
    workgroups than a grid holds."""
    tgt = get_target(target_name)
    plan = plan_reduction(config, dispatch.sizes, dispatch.reduction_dims, config.lane_basis.size,
                          max_workgroup_size=tgt.max_workgroup_size)
    if plan.workgroup_count > MAX_WORKGROUPS:
        raise SimtifyError(f"{plan.workgroup_count} workgroups exceed a launch's {MAX_WORKGROUPS}", "workgroup")
    return plan


def candidate(dispatch: Dispatch, config: ReductionConfig, target_name: str, origin: str = "search") -> Candidate:
    plan = plan_for(dispatch, config, target_name)
    est = estimate_counts(plan, dispatch)
    return Candidate(config, plan, est, predict(est, get_target(target_name)), origin)


def single_thread_counts(dispatch: Dispatch, vector: int = 4) -> KernelCounts:
    """IREE's Distribute kernel: one thread of one workgroup loads everything in
    `vector`-element loads, one load per trip."""
    n = dispatch.reduction_size * max(1, dispatch.parallel_size)
    trips = ceil(n / vector)
    return KernelCounts(workgroups=1, threads=1, subgroup_size=1, trips=trips,
                        footprint_bytes=footprint_bytes(dispatch), global_sectors=trips,
                        memory_instructions=trips, element_ops=2 * n, flops=useful_flops(dispatch), registers=16)


def subgroup_sizes(target_name: str) -> tuple[int, ...]:
    """The subgroup sizes worth searching: the target's that the hardware runs natively
    (IREE's choices; gfx942 and gfx950 run wave64 only, though the simulator takes 32)."""
    tgt = get_target(target_name)
    native = [s for s in IREE_TARGETS[target_name].subgroup_size_choices if s in tgt.supported_subgroup_sizes]
    return tuple(native) or (tgt.subgroup_size,)


def _progress_noop(stage: str, done: int, total: int) -> None:
    pass


def rank(dispatch: Dispatch, target_name: str, progress: Progress = _progress_noop) -> tuple[list[Candidate], int]:
    """Every valid config of the space, ranked by the model on estimates; and how many
    points were tried."""
    tgt = get_target(target_name)
    pts = list(points(dispatch, subgroup_sizes(target_name), tgt.max_workgroup_size))
    out: list[Candidate] = []
    seen: set[str] = set()
    step = max(1, len(pts) // 50)
    for i, p in enumerate(pts):
        if i % step == 0:
            progress("rank", i, len(pts))
        try:
            cand = candidate(dispatch, config_of(dispatch, p), target_name)
        except SimtifyError:
            continue
        text = str(cand.config)
        if text in seen or cand.predicted.seconds == float("inf"):
            continue
        seen.add(text)
        out.append(cand)
    progress("rank", len(pts), len(pts))
    out.sort(key=Candidate.key)
    return out, len(pts)


def _check_one(args) -> tuple[KernelCounts | None, str | None, float]:
    """Worker: measure one config (returns counts, or the reason it was dropped)."""
    from simtify.tune.measure import measure

    problem, config, target_name = args
    t0 = time.perf_counter()
    dispatch = dispatch_of(problem)
    try:
        plan = plan_for(dispatch, config, target_name)
        m = measure(dispatch, plan, estimate_counts(plan, dispatch), target_name)
        return m.counts, None, time.perf_counter() - t0
    except SimtifyError as e:
        return None, str(e), time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 - a kernel the generator cannot build is a dropped candidate
        return None, f"{type(e).__name__}: {e}", time.perf_counter() - t0


def check(problem: ReductionProblem, cands: list[Candidate], target_name: str, jobs: int = 1,
          progress: Progress = _progress_noop) -> None:
    """Measure `cands` by simulation (in `jobs` worker processes), in place."""
    tgt = get_target(target_name)
    work = [(problem, c.config, target_name) for c in cands]
    progress("check", 0, len(work))
    if jobs <= 1 or len(work) <= 1:
        results = []
        for i, w in enumerate(work):
            results.append(_check_one(w))
            progress("check", i + 1, len(work))
    else:
        import multiprocessing

        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(work)), mp_context=ctx) as pool:
            futures = [pool.submit(_check_one, w) for w in work]
            results = []
            for i, f in enumerate(futures):
                results.append(f.result())
                progress("check", i + 1, len(work))
    for c, (counts, error, seconds) in zip(cands, results):
        c.check_s = seconds
        if counts is None:
            c.error = error
        else:
            c.measured = counts
            c.checked = predict(counts, tgt)


def tune(problem: ReductionProblem, target_name: str, jobs: int = 1, top: int = 6,
         progress: Progress = _progress_noop) -> TuneResult:
    """Search, rank, check the `top` best (plus IREE's and simtify's choices), pick."""
    t0 = time.perf_counter()
    tgt = get_target(target_name)
    dispatch = dispatch_of(problem)
    notes: list[str] = []
    iree = iree_suggestion(dispatch, target_name)
    ranked, tried = rank(dispatch, target_name, progress)
    iree_cand = None
    if iree.config is not None:
        try:
            iree_cand = candidate(dispatch, iree.config, target_name, "iree")
        except SimtifyError as e:
            notes.append(f"IREE's config does not plan here: {e}")
    ours = None
    try:
        ours = candidate(dispatch, simtify_suggestion(dispatch, target_name).config, target_name, "simtify")
    except SimtifyError as e:
        notes.append(f"simtify's heuristic config does not plan: {e}")
    if not ranked and iree_cand is None and ours is None:
        raise SimtifyError(f"no valid reduction config for {problem.describe()} on {target_name} ({tried} tried; "
                           f"{'; '.join(notes) or 'none plans'})", "tune")
    chosen: list[Candidate] = []
    texts: set[str] = set()
    for c in [iree_cand, ours] + ranked:
        if c is None or str(c.config) in texts:
            continue
        if c.origin == "search" and sum(1 for x in chosen if x.origin == "search") >= top:
            continue
        texts.add(str(c.config))
        chosen.append(c)
    check(problem, chosen, target_name, jobs, progress)
    good = [c for c in chosen if c.checked is not None and c.checked.seconds < float("inf")]
    if not good:
        reasons = "; ".join(f"{c.config}: {c.error}" for c in chosen if c.error)[:800]
        raise SimtifyError(f"no checked config survived simulation ({reasons})", "tune")
    best = min(good, key=Candidate.key)
    if iree_cand is not None and iree_cand.checked is not None:
        iree_s = iree_cand.checked.seconds
    elif iree_cand is not None:
        iree_s = iree_cand.predicted.seconds
        notes.append(f"IREE's config failed its check ({iree_cand.error}); its time is the estimate's")
    elif iree.config is None:
        iree_s = predict(single_thread_counts(dispatch), tgt).seconds
        notes.append(f"IREE's {iree.pipeline} kernel is estimated (one thread), not simulated")
    else:
        iree_s = float("inf")
    roof = roofline_seconds(best.measured or best.estimate, tgt)
    # simtify's config may be one already checked under another origin (often IREE's)
    simtify_c = next((c for c in chosen if ours is not None and str(c.config) == str(ours.config)), None)
    if IREE_TARGETS[target_name].known is False:
        notes.append(f"IREE 3.12 has no {target_name} target: its choice is its rules on {target_name}'s parameters")
    return TuneResult(problem, dispatch, target_name, roof, iree, iree_cand, iree_s, simtify_c, best, chosen,
                      tried, len(ranked), time.perf_counter() - t0, notes)


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))
