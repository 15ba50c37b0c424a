"""Refusals before any rewriting: a function whose distribution cannot run (a value
needs more registers per thread than the target has) or would unroll past reading
(more register groups than `MAX_UNROLLED_GROUPS`)."""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.layout import NestedLayout
from simtify.transforms.nested.arg_compare import reduced_in_subgroup
from simtify.transforms.nested.registers import line_layout
from simtify.transforms.propagate_layouts import LayoutAnalysis, is_vector

# Distribution unrolls every value into its batch x outer register groups, one op (or
# more) per group; past this many groups in one function the output is unreadable and
# the pass takes over ten seconds, so it stops before doing any work (a 25,000-op
# function of 18,750 single-group values distributes in a few seconds).
MAX_UNROLLED_GROUPS = 32768


def registers_of_value(vt: VectorType, lay: NestedLayout) -> int:
    """32-bit registers one thread needs to hold its part of `vt` under `lay`."""
    elt = vt.element_type
    bits = elt.bitwidth if hasattr(elt, "bitwidth") else 64
    return -(-prod(lay.distributed_shape) * max(1, bits) // 32)


def check_unroll_budget(func: Operation, analysis: LayoutAnalysis, target) -> None:
    """Refuse, before any rewriting, a function one of whose values needs more registers
    per thread than the target's per-lane register file holds (it cannot run), or whose
    values together unroll into more than `MAX_UNROLLED_GROUPS` register groups."""
    total = 0
    for op in func.walk():
        if op.name == "iree_vector_ext.arg_compare":
            check_arg_compare_lines(op, analysis, target)
        values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
        for v in values:
            lay = analysis.get(v) if is_vector(v) else None
            if lay is None or lay.rank == 0:
                continue
            regs = registers_of_value(v.type, lay)
            if regs > target.registers_per_lane:
                raise SimtifyError(
                    f"a {v.type} value distributed as {'x'.join(map(str, lay.distributed_shape))} elements per "
                    f"thread needs {regs} 32-bit registers per thread; {target.name} has {target.registers_per_lane} "
                    f"per lane (use fewer batch/element tiles or more threads)", location_of(op))
            groups = prod(lay.batch_tile) * prod(lay.outer_tile)
            total += groups
            if total > MAX_UNROLLED_GROUPS:
                raise SimtifyError(
                    f"distribution would unroll more than {MAX_UNROLLED_GROUPS} register groups (batch x outer tiles "
                    f"summed over the function's vector values; this {v.type} value alone has {groups})", location_of(op))


def check_arg_compare_lines(op: Operation, analysis: LayoutAnalysis, target) -> None:
    """An arg_compare whose dim is not reduced inside a subgroup gives every thread whole
    lines (of values, and of indices where they are given) and compares them one by one:
    refuse it, before any work, when such a line value needs more registers per thread
    than the target has, as for any value (a dim over 16 subgroups of 64 lanes × 4 f32 is
    4096 values per thread)."""
    lay = analysis.get(op.input_value)
    if lay is None:
        return
    dim = op.dimension.value.data
    if reduced_in_subgroup(lay, dim, analysis.launch.subgroup_size):
        return
    threads = lay.thread_tile[dim]
    line = line_layout(lay, dim)
    regs = registers_of_value(op.input_value.type, line)
    if op.input_index is not None:  # else the index is the position, computed per step
        regs = max(regs, registers_of_value(op.input_index.type, line))
    if regs > target.registers_per_lane:
        raise SimtifyError(
            f"arg_compare along dim {dim} ({lay.undistributed_shape[dim]} elements over {lay.subgroup_tile[dim]} "
            f"subgroups and {threads} threads) would give every thread whole lines: {regs} 32-bit registers per thread; "
            f"{target.name} has {target.registers_per_lane} per lane (keep the dim inside "
            f"one subgroup, or reduce it in two steps)", location_of(op))

