"""Warp distribution end to end, one pattern application at a time.

    warp-wrap       the function body on lane 0 (always correct, nothing distributed)
    warp-to-scf-if  wrap, then lower every region to ``scf.if %laneid == 0`` through
                    workgroup memory
    warp-propagate  wrap, hoist uniform scalars, move the ops behind the regions'
                    results out (reads, gathers, arithmetic, reshuffles, transposes,
                    bitcasts, reductions, multi_reductions, contracts, loops)
    warp-distribute wrap, hoist, distribute writes (transfer_write, vector.store;
                    splitting regions after them),
                    propagate, keep what cannot be distributed on lane 0 in regions
                    of their own, and lower those to ``scf.if``

A function that already holds warp regions starts from them. `rewrite` applies one
pattern to one region at a time and calls back after each, so that every intermediate
program can be checked (the tests simulate each one against the original).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from simtify.errors import SimtifyError
from simtify.transforms.launch import record_launch
from simtify.transforms.warp_contract import sink_contract
from simtify.transforms.warp_cse import merge_identical_ops
from simtify.transforms.warp_fission import isolate_last_write, split_after_write
from simtify.transforms.warp_hoist import hoist_uniform
from simtify.transforms.warp_lower import WarpMemory, lower_warp
from simtify.transforms.warp_propagate import (
    SINKS,
    broadcast_captured_scalar,
    forward_yields,
    merge_duplicate_yields,
    remove_dead_results,
    sinking,
)
from simtify.transforms.warp_rearrange import REARRANGE_SINKS
from simtify.transforms.warp_reduce import MULTI_REDUCTION_SINKS, sink_reduction
from simtify.transforms.warp_region import WarpConfig, warp_ops
from simtify.transforms.warp_scf import sink_scf_for, sink_scf_if
from simtify.transforms.warp_transfer import (
    distribute_last_store,
    distribute_last_write,
    sink_gather,
    sink_load,
    sink_transfer_read,
)
from simtify.transforms.warp_wrap import wrap_function

OnStep = Callable[[str], None]

CLEANUP = [remove_dead_results, forward_yields, merge_duplicate_yields]
HOIST = [hoist_uniform]
WRITES = [distribute_last_write, distribute_last_store, split_after_write]
PROPAGATE = [sinking(SINKS + REARRANGE_SINKS + [sink_transfer_read, sink_load, sink_gather, sink_reduction]
                     + MULTI_REDUCTION_SINKS + [sink_contract]), sink_scf_for, sink_scf_if,
             broadcast_captured_scalar]
ISOLATE = [isolate_last_write]
MAX_STEPS = 10_000


def rewrite(func: Operation, patterns, cfg: WarpConfig, on_step: OnStep | None = None) -> list[str]:
    """Apply `patterns` (in priority order) to the warp regions of `func` until none
    applies; returns the names of the applications, in order."""
    done: list[str] = []
    while len(done) < MAX_STEPS:
        if merge_identical_ops(func):
            done.append("merge_identical_ops")
            if on_step is not None:
                on_step("merge_identical_ops")
            continue
        for warp in warp_ops(func):
            applied = None
            for pattern in patterns:
                result = pattern(warp, cfg)
                if result:
                    applied = result if isinstance(result, str) else pattern.__name__
                    break
            if applied:
                done.append(applied)
                if on_step is not None:
                    on_step(applied)
                break
        else:
            return done
    raise SimtifyError(f"warp patterns did not settle after {MAX_STEPS} steps (a pattern cycle)")


def functions(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if op.name == "func.func" and op.body.blocks]


def config_for(func: Operation, opts) -> WarpConfig:
    """Warp size (default: the subgroup size), subgroup size (the options', the
    function's translation_info, the target's) and warps per workgroup."""
    from simtify.target import get_target

    tgt = get_target(opts.target)
    info = func.attributes.get("translation_info")
    sg = opts.subgroup_size or (info.subgroup_size if info is not None and info.subgroup_size else None) \
        or tgt.subgroup_size
    n = getattr(opts, "warp_size", None) or sg
    if n < 1 or sg % n:
        raise SimtifyError(f"a warp of {n} lanes must divide the {sg}-lane subgroup", "--warp-size")
    for warp in warp_ops(func):
        if warp.warp_size.value.data != n:
            n = warp.warp_size.value.data  # the regions say how wide the warp is
            if sg % n:
                raise SimtifyError(f"the function's warps of {n} lanes do not divide the {sg}-lane subgroup",
                                   "--subgroup-size")
            break
    if opts.workgroup_size:
        threads = opts.workgroup_size
    elif info is not None and info.workgroup_size:
        threads = prod(info.workgroup_size)
    else:
        threads = n
    if threads % n:
        raise SimtifyError(f"workgroup size {threads} is not a whole number of {n}-lane warps", "--workgroup-size")
    if threads > tgt.max_workgroup_size:
        raise SimtifyError(f"workgroup size {threads} exceeds {tgt.name}'s limit of {tgt.max_workgroup_size}",
                           "--workgroup-size")
    whole = getattr(opts, "max_whole_write", 1)
    if whole < 0:
        raise SimtifyError(f"--max-whole-write {whole} must not be negative", "--max-whole-write")
    return WarpConfig(n, sg, threads // n, whole)


def drop_layout_anchors(func: Operation) -> None:
    """``iree_vector_ext.to_layout`` is an identity that anchors nested distribution;
    warp distribution goes by its own patterns (upstream's knows no layouts), so its
    anchors go: kept, they would stay on lane 0 and pin what they touch there, and a
    layout wider than the warp would not fit its launch."""
    for op in [op for op in func.walk() if op.name == "iree_vector_ext.to_layout"]:
        op.results[0].replace_all_uses_with(op.operands[0])
        op.detach()
        op.erase()


def wrap(func: Operation, cfg: WarpConfig, on_step: OnStep | None = None) -> None:
    from simtify.sim.grid import implied_grid

    drop_layout_anchors(func)
    record_launch(func, cfg.subgroup_size, cfg.warp_size * cfg.warps_per_workgroup, implied_grid(func),
                  pipeline="#iree_codegen.no_pipeline", keep_recorded=True)
    if wrap_function(func, cfg.warp_size, cfg.subgroup_size) and on_step is not None:
        on_step("wrap")


def lower(func: Operation, cfg: WarpConfig, on_step: OnStep | None = None) -> None:
    mem = WarpMemory(func, cfg.warps_per_workgroup, cfg.subgroup_size)
    for warp in warp_ops(func):
        lower_warp(warp, mem)
        if on_step is not None:
            on_step("lower_to_scf_if")


STEPS = {
    "warp-wrap": ("wrap",),
    "warp-to-scf-if": ("wrap", "lower"),
    "warp-propagate": ("wrap", "propagate"),
    "warp-distribute": ("wrap", "distribute", "lower"),
}

PATTERN_SETS = {
    "hoist": CLEANUP + HOIST,
    "writes": CLEANUP + HOIST + WRITES + ISOLATE,
    "propagate": CLEANUP + HOIST + PROPAGATE,
    "distribute": CLEANUP + HOIST + WRITES + PROPAGATE + ISOLATE,
}


def run(module: ModuleOp, pipeline, opts, on_step: OnStep | None = None) -> None:
    """Run a warp pipeline (a name of `STEPS`, or a sequence of stages: "wrap", "lower"
    or a name of `PATTERN_SETS`) on every function of `module`."""
    stages = STEPS[pipeline] if isinstance(pipeline, str) else tuple(pipeline)
    for func in functions(module):
        cfg = config_for(func, opts)
        for stage in stages:
            if stage == "wrap":
                wrap(func, cfg, on_step)
            elif stage == "lower":
                lower(func, cfg, on_step)
            else:
                rewrite(func, PATTERN_SETS[stage], cfg, on_step)
