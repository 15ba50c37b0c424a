"""Named pipelines and passes for `simtify opt --pipeline NAME` / `--pass NAME`."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from simtify.errors import SimtifyError
from simtify.transforms.launch import Options, functions, launch_for, record_launch
from simtify.transforms.simd_boundary import fold_boundary_pairs


def propagate_layouts(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.propagate_layouts import Launch, annotate, propagate

    for func in functions(module):
        fold_boundary_pairs(func)
        sg, threads = launch_for(func, opts)
        annotate(func, propagate(func, Launch(sg, threads)))


def nested_distribute(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.nested.driver import distribute_function
    from simtify.transforms.propagate_layouts import Launch, propagate

    from simtify.sim.grid import implied_grid

    from simtify.ir.live_ops import erase_dead_ops
    from simtify.transforms.transfer_gather_canonicalize import canonicalize_gathers

    for func in functions(module):
        fold_boundary_pairs(func)
        canonicalize_gathers(func)  # as IREE canonicalizes just before vector distribution
        # no layout needs to reach a value nothing reads; anchors stay, they give layouts
        erase_dead_ops(func, keep=lambda op: op.name == "iree_vector_ext.to_layout")
        sg, threads = launch_for(func, opts)
        grid = implied_grid(func)  # read off the workgroup-level writes, before they are distributed
        analysis = propagate(func, Launch(sg, threads))
        distribute_function(func, analysis, sg, threads, target=opts.target)
        record_launch(func, sg, threads, grid)


def canonicalize_transfer_gather(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.transfer_gather_canonicalize import canonicalize_gathers

    for func in functions(module):
        canonicalize_gathers(func)


def transfer_gather_to_indexing_maps(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.transfer_gather_forms import to_indexing_maps_form

    to_indexing_maps_form(module)


def transfer_gather_to_seed_form(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.transfer_gather_forms import to_seed_form

    to_seed_form(module)


def lower_inner_tiled(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.lower_inner_tiled import lower_function

    for func in functions(module):
        lower_function(func)


def expand_subgroup_reduce(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.expand_subgroup_reduce import expand_all

    for func in functions(module):
        sg, _threads = launch_for(func, opts)
        expand_all(func, sg)


def lower_reduction_configs(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.reduction_kernel import lower_function

    for func in functions(module):
        lower_function(func, opts.target, opts.subgroup_size, opts.workgroup_size)



def _dma(step_name: str, pass_module: str = "lower_dma"):
    """A step of `simtify.transforms.lower_dma` (or another DMA pass module), imported
    when it runs."""

    def step(module: ModuleOp, opts: Options) -> None:
        import importlib

        getattr(importlib.import_module(f"simtify.transforms.{pass_module}"), step_name)(module, opts)

    step.__name__ = step_name
    return step


lower_to_global_loads = _dma("lower_to_global_loads")
lower_to_global_loads_auto = _dma("lower_to_global_loads_auto")
lower_global_loads_to_gather = _dma("lower_global_loads_to_gather")
promote_operands_dma = _dma("promote_operands_dma")
bufferize_tensor_copies = _dma("bufferize_tensor_copies", "tensor_dma")
lower_gathers_to_lds = _dma("lower_gathers_to_lds", "gather_to_lds")
lower_gathers_to_lds_auto = _dma("lower_gathers_to_lds_auto", "gather_to_lds")

PASSES = {
    "lower-reduction-configs": (lower_reduction_configs,
                                "configured linalg.generic reductions -> workgroup-level vector programs "
                                "with to_layout anchors from their lowering_config"),
    "expand-subgroup-reduce": (expand_subgroup_reduce, "gpu.subgroup_reduce -> gpu.shuffle xor butterfly"),
    "lower-inner-tiled": (lower_inner_tiled, "distributed iree_codegen.inner_tiled -> one amdgpu.mfma / "
                          "nvgpu.mma.sync per outer tile"),
    "propagate-layouts": (propagate_layouts, "give every vector value a nested layout; print them"),
    "bufferize-tensor-copies": (bufferize_tensor_copies,
                                "copies into workgroup memory on tensors -> the memref form: the tensor.empty "
                                "destination becomes a workgroup memref.alloc, its readers read that"),
    "canonicalize-transfer-gather": (canonicalize_transfer_gather,
                                     "transfer_gather index vectors that are vector.step (plus a uniform offset) "
                                     "-> contiguous dims; none left -> vector.transfer_read"),
    "transfer-gather-to-indexing-maps": (transfer_gather_to_indexing_maps,
                                         "seed-form transfer_gather (indexed_maps, permutation_map) -> "
                                         "IREE 3.12's indexing_maps form"),
    "transfer-gather-to-seed-form": (transfer_gather_to_seed_form,
                                     "IREE 3.12's transfer_gather -> the seed form (indexed_maps, permutation_map); "
                                     "an error for a gather that has none"),
    "lower-to-global-loads": (lower_to_global_loads,
                              "copies tagged use_global_load_dma -> per-subgroup iree_gpu.global_load_dma loops "
                              "(cp.async on sm_90); derived_thread_config copies -> per-thread loads and stores"),
    "lower-global-load-dma": (lower_global_loads_to_gather, "lane-level iree_gpu.global_load_dma -> amdgpu.gather_to_lds"),
    "lower-gather-to-lds": (lower_gathers_to_lds,
                            "per-lane vector.gather / transfer_gather written only to workgroup memory -> "
                            "amdgpu.gather_to_lds (an error where gather_to_lds cannot do it)"),
    "lower-gather-to-lds-auto": (lower_gathers_to_lds_auto,
                                 "lower-gather-to-lds, keeping the gathers gather_to_lds cannot do"),
    "lower-to-global-loads-auto": (lower_to_global_loads_auto,
                                   "lower-to-global-loads, falling back to registers for copies DMA cannot do"),
    "promote-operands-dma": (promote_operands_dma,
                             "contract / multi_reduction operand tiles -> workgroup memory by a tile-level "
                             "iree_gpu.global_load_dma"),
}
def _warp_pipeline(name: str):
    def step(module: ModuleOp, opts: Options) -> None:
        from simtify.transforms import warp_distribute

        warp_distribute.run(module, name, opts)

    step.__name__ = name.replace("-", "_")
    return step


WARP_PIPELINES = {
    "warp-wrap": "put the function body on lane 0 in a gpu.warp_execute_on_lane_0 (always correct)",
    "warp-to-scf-if": "warp-wrap, then lower warp regions to scf.if %laneid == 0 through workgroup memory",
    "warp-propagate": "warp-wrap, hoist uniform scalars, move ops out of warp regions (reads, arithmetic, reductions)",
    "warp-distribute": "warp-wrap, hoist, distribute writes, propagate, lower what is left to scf.if",
}

PIPELINES = {
    **{name: ([_warp_pipeline(name)], help_text) for name, help_text in WARP_PIPELINES.items()},
    "nested-distribute": ([nested_distribute],
                          "propagate nested layouts, then distribute to SIMT code (IREE vector distribution)"),
    "nested-distribute-mma": ([nested_distribute, lower_inner_tiled],
                              "nested-distribute, then distributed iree_codegen.inner_tiled -> amdgpu.mfma / "
                              "nvgpu.mma.sync"),
    "nested-distribute-shuffles": ([nested_distribute, expand_subgroup_reduce],
                                   "nested-distribute, with subgroup reductions expanded to xor shuffles"),
    "lower-dma": ([bufferize_tensor_copies, lower_to_global_loads, lower_global_loads_to_gather,
                   lower_gathers_to_lds],
                  "copies into workgroup memory (on memrefs or tensors) and per-lane gathers written to it -> "
                  "amdgpu.gather_to_lds (or cp.async on sm_90) / registers; an error when DMA cannot do a tagged "
                  "copy or such a gather"),
    "lower-dma-auto": ([bufferize_tensor_copies, lower_to_global_loads_auto, lower_global_loads_to_gather,
                        lower_gathers_to_lds_auto],
                       "lower-dma, falling back to registers for copies and gathers DMA cannot do"),
    "nested-distribute-dma": ([promote_operands_dma, nested_distribute, lower_to_global_loads_auto,
                               lower_global_loads_to_gather],
                              "nested-distribute with contract / reduction operand tiles promoted to workgroup "
                              "memory by DMA (gather_to_lds on AMD, cp.async on sm_90)"),
    "reduction-from-config-dma": ([lower_reduction_configs, promote_operands_dma, nested_distribute,
                                   lower_to_global_loads_auto, lower_global_loads_to_gather],
                                  "reduction-from-config with the reduction's input tiles promoted to workgroup "
                                  "memory by DMA (gather_to_lds on AMD, cp.async on sm_90)"),
    "reduction-from-config": ([lower_reduction_configs, nested_distribute],
                              "lower-reduction-configs, then nested-distribute: a SIMT reduction kernel from "
                              "a linalg.generic and its lowering_config"),
}



def _xegpu(stage: str):
    """A step of the XeGPU pipelines (`simtify.transforms.xegpu_pipeline`), imported when run."""

    def step(module: ModuleOp, opts: Options) -> None:
        from simtify.transforms import xegpu_pipeline

        getattr(xegpu_pipeline, stage)(module, opts)

    step.__name__ = stage
    return step


PIPELINES.update({
    "xegpu-propagate": ([_xegpu("xegpu_propagate")],
                        "XeGPU layouts from the anchors to every value; missing inst/lane fields from xe"),
    "xegpu-wg-to-sg": ([_xegpu("xegpu_wg_to_sg")],
                       "XeGPU workgroup tiles -> each subgroup's tiles (round-robin rounds, shared data, SLM)"),
    "xegpu-blocking": ([_xegpu("xegpu_blocking")], "XeGPU subgroup tiles -> inst_data blocks (xe DPAS 8x16x16)"),
    "xegpu-sg-to-lane": ([_xegpu("xegpu_sg_to_lane")], "XeGPU instruction blocks -> per-lane vectors"),
    "xegpu-distribute": ([_xegpu("xegpu_distribute")],
                         "all XeGPU stages: propagate, wg-to-sg, blocking, sg-to-lane (target xe, subgroup 16)"),
})

# The options of `Options` each pass reads, as `--pass-pipeline` spells them
# (``nested-distribute{target=gfx942 subgroup-size=64}``); a pipeline takes its passes'.
LAUNCH_OPTIONS = ("target", "subgroup-size", "workgroup-size")
PASS_OPTIONS = {
    **{name: LAUNCH_OPTIONS for name in PASSES},
    "lower-inner-tiled": (),
    "promote-operands-dma": (),
    "bufferize-tensor-copies": (),
    "canonicalize-transfer-gather": (),
    "transfer-gather-to-indexing-maps": (),
    "transfer-gather-to-seed-form": (),
    "nested-distribute": LAUNCH_OPTIONS,
    **{name: LAUNCH_OPTIONS + ("warp-size", "max-whole-write") for name in WARP_PIPELINES},
    **{name: ("subgroup-size",) for name in PIPELINES if name.startswith("xegpu-")},  # always on xe
}


def pipeline_steps(name: str) -> list[tuple[str, object]]:
    """The passes a pass or pipeline name runs, in order, each with its registered name
    (the name `--mlir-print-ir-after` takes and the IR dumps print)."""
    if name in PASSES:
        return [(name, PASSES[name][0])]
    named = {id(fn): n for n, (fn, _) in PASSES.items()}
    named.update({id(steps[0]): n for n, (steps, _) in PIPELINES.items() if len(steps) == 1})
    return [(named.get(id(step), step.__name__.replace("_", "-")), step) for step in PIPELINES[name][0]]


def options_of(name: str) -> tuple[str, ...]:
    """The options a pass or pipeline name takes."""
    taken = [o for step, _ in pipeline_steps(name) for o in PASS_OPTIONS.get(step, ())]
    return tuple(dict.fromkeys(taken))


class InvalidIntermediate(RuntimeError):
    """A pipeline stage produced IR that does not verify: a simtify bug, never the
    user's; the CLI reports it as an internal error and prints no output."""


def run_stage(op, pipeline: str, stage, opts: Options, label: str = "") -> None:
    """Run one stage of `pipeline` on `op` and verify what it leaves (`label`: the
    stage's registered name, shown beside its function's)."""
    from simtify.ir import verify

    stage(op, opts)
    try:
        verify(op)
    except SimtifyError as e:
        named = f"'{stage.__name__}'" + (f" ({label})" if label else "")
        raise InvalidIntermediate(f"pipeline '{pipeline}': the IR after stage {named} does not verify: {e}") from None


def run_pipeline(module: ModuleOp, name: str, opts: Options) -> None:
    """Run the pipeline's stages in order, verifying the IR after each one."""
    if name not in PIPELINES:
        raise SimtifyError(f"unknown pipeline '{name}' (pipelines: {', '.join(PIPELINES)})", "--pipeline")
    for step in PIPELINES[name][0]:
        run_stage(module, name, step, opts)


def run_pass(module: ModuleOp, name: str, opts: Options) -> None:
    if name not in PASSES:
        raise SimtifyError(f"unknown pass '{name}' (passes: {', '.join(PASSES)})", "--pass")
    PASSES[name][0](module, opts)
