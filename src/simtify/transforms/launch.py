"""Recording a kernel's launch on its function, as IREE's translation_info does."""

from __future__ import annotations

from math import prod

from xdsl.ir import Operation


def record_grid(func: Operation, grid: tuple[int, ...] | None) -> None:
    """Record the grid the workgroup-level function implied (`simtify.sim.grid`, read
    before distribution: SIMT code implies none) unless one is recorded, so that
    `simtify run` and `emit` launch it without --grid."""
    from xdsl.dialects.builtin import DenseArrayBase, i64

    from simtify.sim.launch import WORKGROUP_COUNT

    if grid is not None and WORKGROUP_COUNT not in func.attributes:
        func.attributes[WORKGROUP_COUNT] = DenseArrayBase.from_list(i64, list(grid) + [1] * (3 - len(grid)))


def record_launch(func: Operation, sg: int, threads: int, grid: tuple[int, ...] | None = None) -> None:
    """Record the launch on the function, as IREE's translation_info does, so that
    `simtify run` needs no --block (nor --grid, given the grid the input implied)."""
    record_grid(func, grid)
    info = func.attributes.get("translation_info")
    if info is not None and info.workgroup_size and prod(info.workgroup_size) == threads and info.subgroup_size == sg:
        return
    func.attributes["translation_info"] = _translation_info(threads, sg)


def _translation_info(threads: int, sg: int):
    """IREE 3.12's attribute for the launch, read from its text (the one spelling both
    simtify and iree-opt accept)."""
    from simtify.ir import parse

    text = (f"#t = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
            f"workgroup_size = [{threads}, 1, 1] subgroup_size = {sg}>\n"
            "func.func @f() attributes {translation_info = #t} { return }")
    m = parse(text)
    return next(op for op in m.walk() if op.name == "func.func").attributes["translation_info"]
