"""A kernel's launch: the options that choose it, what the function already records
(IREE's translation_info, gpu.func's known_block_size), what its layouts imply, and
recording it on the function so that `simtify run` and `emit` need no --block."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.ir import Operation

from simtify.errors import SimtifyError
from simtify.ir import location_of


@dataclass
class Options:
    """The launch and pass options of `simtify opt` and the named pipelines."""

    target: str = "gfx942"
    subgroup_size: int | None = None
    workgroup_size: int | None = None
    warp_size: int | None = None  # warp pipelines: lanes of a warp region (default: the subgroup size)
    max_whole_write: int = 1  # warp pipelines: transfer_writes of at most this many elements stay on lane 0


def functions(module: Operation, kinds: tuple[str, ...] = ("func.func",)) -> list[Operation]:
    """The module's function definitions of `kinds` (declarations have no body to transform)."""
    return [op for op in module.walk() if op.name in kinds and op.body.blocks]


def _widest_anchor(func: Operation, sg: int) -> tuple[int, Operation | None]:
    """(subgroups the anchors need, the anchor that needs the most): their subgroup spans,
    and their thread spans (thread ids are workgroup-linear, so a thread tile may spread
    over several subgroups)."""
    n, widest = 1, None
    for op in func.walk():
        if op.name == "iree_vector_ext.to_layout":
            lay = op.nested_layout
            need = max(lay.subgroup_span, -(-lay.thread_span // sg))
            if need > n:
                n, widest = need, op
    return n, widest


def launch_for(func: Operation, opts: Options) -> tuple[int, int]:
    """(subgroup size, threads per workgroup): the options, else the function's
    translation_info, else the target's subgroup size × the subgroups the layouts use
    (for their subgroup tiles and for their thread spans)."""
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
        threads = _widest_anchor(func, sg)[0] * sg
    if threads % sg:
        raise SimtifyError(f"workgroup size {threads} is not a whole number of {sg}-lane subgroups", "--workgroup-size")
    if threads > tgt.max_workgroup_size:
        where = "--workgroup-size"
        if not opts.workgroup_size and not (info is not None and info.workgroup_size):
            where = location_of(_widest_anchor(func, sg)[1])  # the layout that asks for so many threads
        raise SimtifyError(f"workgroup size {threads} exceeds {tgt.name}'s limit of {tgt.max_workgroup_size}", where)
    return sg, threads


def recorded_threads(func: Operation) -> int | None:
    """Threads per workgroup the function records (gpu.func's known_block_size, else its
    translation_info), or None."""
    known = func.properties.get("known_block_size") if func.name == "gpu.func" else None
    if known is not None:
        return prod(int(x) for x in known.get_values())
    info = func.attributes.get("translation_info")
    if info is not None and getattr(info, "workgroup_size", None):
        return prod(int(x) for x in info.workgroup_size)
    return None


def record_grid(func: Operation, grid: tuple[int, ...] | None) -> None:
    """Record the grid the workgroup-level function implied (`simtify.sim.grid`, read
    before distribution: SIMT code implies none) unless one is recorded, so that
    `simtify run` and `emit` launch it without --grid."""
    from xdsl.dialects.builtin import DenseArrayBase, i64

    from simtify.sim.grid import WORKGROUP_COUNT

    if grid is not None and WORKGROUP_COUNT not in func.attributes:
        func.attributes[WORKGROUP_COUNT] = DenseArrayBase.from_list(i64, list(grid) + [1] * (3 - len(grid)))


VECTOR_DISTRIBUTE = "#iree_gpu.pipeline<VectorDistribute>"


def record_launch(func: Operation, sg: int, threads: int, grid: tuple[int, ...] | None = None, *,
                  pipeline: str = VECTOR_DISTRIBUTE, keep_recorded: bool = False) -> None:
    """Record the launch on the function, as IREE's translation_info does, so that
    `simtify run` needs no --block (nor --grid, given the grid the input implied). A
    recorded launch of the same size stays; with `keep_recorded`, any recorded one does."""
    record_grid(func, grid)
    info = func.attributes.get("translation_info")
    if info is not None and (keep_recorded or (info.workgroup_size and prod(info.workgroup_size) == threads
                                               and info.subgroup_size == sg)):
        return
    func.attributes["translation_info"] = _translation_info(threads, sg, pipeline)


def _translation_info(threads: int, sg: int, pipeline: str):
    """IREE 3.12's attribute for the launch, read from its text (the one spelling both
    simtify and iree-opt accept)."""
    from simtify.ir import parse

    text = (f"#t = #iree_codegen.translation_info<pipeline = {pipeline} "
            f"workgroup_size = [{threads}, 1, 1] subgroup_size = {sg}>\n"
            "func.func @f() attributes {translation_info = #t} { return }")
    m = parse(text)
    return next(op for op in m.walk() if op.name == "func.func").attributes["translation_info"]
