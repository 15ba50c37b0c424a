"""Named pipelines and passes for `simtify opt --pipeline NAME` / `--pass NAME`."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from simtify.errors import SimtifyError


@dataclass
class Options:
    target: str = "gfx942"
    subgroup_size: int | None = None
    workgroup_size: int | None = None


def _functions(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if op.name == "func.func" and op.body.blocks]


def _anchored_subgroups(func: Operation) -> int:
    n = 1
    for op in func.walk():
        if op.name == "iree_vector_ext.to_layout":
            n = max(n, op.nested_layout.subgroup_span)
    return n


def launch_for(func: Operation, opts: Options) -> tuple[int, int]:
    """(subgroup size, threads per workgroup): the options, else the function's
    translation_info, else the target's subgroup size × the subgroups the layouts use."""
    from simtify.target import get_target

    tgt = get_target(opts.target)
    info = func.attributes.get("translation_info")
    sg = opts.subgroup_size or (info.subgroup_size if info is not None and info.subgroup_size else None) \
        or tgt.subgroup_size
    if opts.workgroup_size:
        threads = opts.workgroup_size
    elif info is not None and info.workgroup_size:
        threads = prod(info.workgroup_size)
    else:
        threads = _anchored_subgroups(func) * sg
    if threads % sg:
        raise SimtifyError(f"workgroup size {threads} is not a whole number of {sg}-lane subgroups", "--workgroup-size")
    if threads > tgt.max_workgroup_size:
        raise SimtifyError(f"workgroup size {threads} exceeds {tgt.name}'s limit of {tgt.max_workgroup_size}",
                           "--workgroup-size")
    return sg, threads


def propagate_layouts(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.propagate_layouts import Launch, annotate, propagate

    for func in _functions(module):
        sg, threads = launch_for(func, opts)
        annotate(func, propagate(func, Launch(sg, threads)))


def nested_distribute(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.distribute_nested import distribute_function
    from simtify.transforms.propagate_layouts import Launch, propagate

    for func in _functions(module):
        sg, threads = launch_for(func, opts)
        analysis = propagate(func, Launch(sg, threads))
        distribute_function(func, analysis, sg, threads)
        _record_launch(func, sg, threads)


def _record_launch(func: Operation, sg: int, threads: int) -> None:
    """Record the launch on the function, as IREE's translation_info does, so that
    `simtify run` needs no --block."""
    from simtify.ir.iree_codegen import TranslationInfoAttr

    info = func.attributes.get("translation_info")
    if info is not None and info.workgroup_size and prod(info.workgroup_size) == threads and info.subgroup_size == sg:
        return
    func.attributes["translation_info"] = TranslationInfoAttr.make(threads, sg) if hasattr(
        TranslationInfoAttr, "make") else _translation_info(threads, sg)


def _translation_info(threads: int, sg: int):
    from simtify.ir import parse

    text = (f"#t = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
            f"workgroup_size = [{threads}, 1, 1] subgroup_size = {sg}>\n"
            "func.func @f() attributes {translation_info = #t} { return }")
    m = parse(text)
    return next(op for op in m.walk() if op.name == "func.func").attributes["translation_info"]


def expand_subgroup_reduce(module: ModuleOp, opts: Options) -> None:
    from simtify.transforms.expand_subgroup_reduce import expand_all

    for func in _functions(module):
        sg, _threads = launch_for(func, opts)
        expand_all(func, sg)


PASSES = {
    "expand-subgroup-reduce": (expand_subgroup_reduce, "gpu.subgroup_reduce -> gpu.shuffle xor butterfly"),
    "propagate-layouts": (propagate_layouts, "give every vector value a nested layout; print them"),
}
PIPELINES = {
    "nested-distribute": ([nested_distribute],
                          "propagate nested layouts, then distribute to SIMT code (IREE vector distribution)"),
    "nested-distribute-shuffles": ([nested_distribute, expand_subgroup_reduce],
                                   "nested-distribute, with subgroup reductions expanded to xor shuffles"),
}


def run_pipeline(module: ModuleOp, name: str, opts: Options) -> None:
    if name not in PIPELINES:
        raise SimtifyError(f"unknown pipeline '{name}' (pipelines: {', '.join(PIPELINES)})", "--pipeline")
    for step in PIPELINES[name][0]:
        step(module, opts)


def run_pass(module: ModuleOp, name: str, opts: Options) -> None:
    if name not in PASSES:
        raise SimtifyError(f"unknown pass '{name}' (passes: {', '.join(PASSES)})", "--pass")
    PASSES[name][0](module, opts)
