"""The XeGPU stages as `simtify opt` runs them, on every ``func.func`` and ``gpu.func``.

Each stage reads the layouts the IR states (anchors, ``layout_result_i``) and
propagates them before it rewrites, so it can run alone on IR at its level, as
upstream's passes do:

- ``xegpu-propagate``: layouts everywhere, missing inst/lane fields from the xe target;
- ``xegpu-wg-to-sg``: workgroup tiles to subgroup tiles (records the workgroup size);
- ``xegpu-blocking``: subgroup tiles to instruction blocks (``inst_data``);
- ``xegpu-sg-to-lane``: instruction blocks to per-lane vectors;
- ``xegpu-distribute``: all of them.

XeGPU runs on the ``xe`` target with 16-lane subgroups.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i32
from xdsl.ir import Operation

from simtify.errors import SimtifyError
from simtify.layout.xegpu import flatten
from simtify.ir import location_of
from simtify.transforms import warp_region
from simtify.transforms.launch import functions, record_launch, recorded_threads
from simtify.transforms.xegpu_propagate import XeGPULayouts, annotate, propagate

SUBGROUP_SIZE = 16
TARGET = "xe"
XEGPU_FUNCTIONS = ("func.func", "gpu.func")  # XeGPU kernels come as either


def _subgroup_size(opts) -> int:
    sg = getattr(opts, "subgroup_size", None) or SUBGROUP_SIZE
    if sg != SUBGROUP_SIZE:
        raise SimtifyError(f"XeGPU distribution runs {SUBGROUP_SIZE}-lane subgroups (xe's DPAS), not {sg}",
                           "--subgroup-size")
    return sg


def reductions_as_multi_reductions(func: Operation) -> None:
    """``vector.reduction`` of a 1-D vector is a ``vector.multi_reduction`` over dim 0 to
    a scalar (from the kind's neutral value when it has no accumulator), which every
    XeGPU level distributes: rewritten so before a distributing stage propagates."""
    from xdsl.dialects import arith

    from simtify.ir.vector import MultiReductionOp
    from simtify.transforms.emit import kind_of, neutral_value, scalar_attr

    for op in [o for o in func.walk() if o.name == "vector.reduction" and o.vector.type.get_num_dims() == 1]:
        block, kind, acc = op.parent_block(), kind_of(op), op.acc
        if acc is None:
            t = op.dest.type
            start = arith.ConstantOp(scalar_attr(neutral_value(kind, t), t), t)
            block.insert_op_before(start, op)
            acc = start.result
        new = MultiReductionOp(kind, op.vector, acc, [0])
        new.attributes.update(op.attributes)
        block.insert_op_before(new, op)
        op.dest.replace_all_uses_with(new.results[0])
        op.detach()
        op.erase()


def _analyze(func: Operation, opts, *, inst: bool, lanes: bool, workgroup_input: bool = False,
             distributing: bool = True) -> XeGPULayouts:
    if distributing:  # `xegpu-propagate` alone only annotates
        reductions_as_multi_reductions(func)
    analysis = propagate(func, subgroup_size=_subgroup_size(opts), target=TARGET, inst=inst, lanes=lanes,
                         workgroup_input=workgroup_input)
    annotate(analysis)
    verified("xegpu-propagate", func)  # the conversions it put on edges
    return analysis


def record_xegpu_launch(func: Operation, threads: int) -> None:
    """The workgroup size on the function, so that `simtify run` needs no --block; a
    gpu.func records it as its known_block_size."""
    recorded = recorded_threads(func)
    if recorded is not None:
        if recorded != threads:
            raise SimtifyError(f"the function records {recorded} threads per workgroup, but its layouts use "
                               f"{threads // SUBGROUP_SIZE} subgroups of {SUBGROUP_SIZE}", location_of(func))
        return
    if func.name == "gpu.func":
        func.properties["known_block_size"] = DenseArrayBase.from_list(i32, (threads, 1, 1))
        return
    record_launch(func, SUBGROUP_SIZE, threads)


def verified(stage: str, func: Operation) -> None:
    """The IR a stage leaves must verify before anything reads it: an invalid
    intermediate is a bug of that stage, reported as one (the stage and the op), never
    handed to the next stage or printed."""
    from simtify.ir import verify

    try:
        verify(func)
    except SimtifyError as e:
        raise SimtifyError(f"internal error: {stage} left IR that does not verify: {e.what}", e.where) from None


def xegpu_propagate(module: ModuleOp, opts) -> None:
    for func in functions(module, XEGPU_FUNCTIONS):
        _analyze(func, opts, inst=True, lanes=True, workgroup_input=True, distributing=False)


def xegpu_wg_to_sg(module: ModuleOp, opts) -> None:
    for func in functions(module, XEGPU_FUNCTIONS):
        _wg_to_sg(func, opts)


def _wg_to_sg(func: Operation, opts, *, inst: bool = False, lanes: bool = False) -> None:
    from simtify.transforms.xegpu_wg_to_sg import distribute

    analysis = _analyze(func, opts, inst=inst, lanes=lanes, workgroup_input=True)
    distribute(func, analysis)
    if analysis.workgroup_level:
        record_xegpu_launch(func, analysis.threads)
    elif recorded_threads(func) is None:
        record_xegpu_launch(func, SUBGROUP_SIZE)  # one subgroup's program
    verified("xegpu-wg-to-sg", func)


def xegpu_blocking(module: ModuleOp, opts) -> None:
    for func in functions(module, XEGPU_FUNCTIONS):
        _blocking(func, opts, lanes=False)


def _blocking(func: Operation, opts, *, lanes: bool) -> None:
    from simtify.transforms.xegpu_blocking import block

    block(func, _analyze(func, opts, inst=True, lanes=lanes), opts)
    verified("xegpu-blocking", func)


def xegpu_sg_to_lane(module: ModuleOp, opts) -> None:
    for func in functions(module, XEGPU_FUNCTIONS):
        _sg_to_lane(func, opts)


def _sg_to_lane(func: Operation, opts) -> None:
    from simtify.transforms.xegpu_sg_to_lane import distribute_to_lanes

    _open_warp_regions(func, _subgroup_size(opts))
    analysis = _analyze(func, opts, inst=False, lanes=True)
    _check_lane_counts(func, analysis)
    distribute_to_lanes(func, analysis)
    verified("xegpu-sg-to-lane", func)


def _open_warp_regions(func: Operation, subgroup_size: int) -> None:
    """A subgroup's XeGPU program may come inside ``gpu.warp_execute_on_lane_0`` (upstream's
    test pass for lane distribution starts there, the lane id a function argument): the
    region's body is the subgroup's program, distributed like any other. A region whose
    values cross it whole is replaced by its body; one that hands distributed values out
    keeps only its yield, and lane distribution makes each of its results the lane's share
    of the value yielded (`LaneDistribution.op_gpu_warp_execute_on_lane_0`). A lane's share
    going in is not put back together into the subgroup's value: refused."""
    for warp in warp_region.warp_ops(func):
        where = location_of(warp)
        if warp_region.size(warp) != subgroup_size:
            raise SimtifyError(f"a warp region of {warp_region.size(warp)} lanes; xegpu-sg-to-lane takes the "
                               f"region of a {subgroup_size}-lane XeGPU subgroup (distribute other warp programs "
                               "with warp-distribute)", where)
        for i, (operand, arg) in enumerate(zip(warp.args, warp_region.body(warp).args)):
            if operand.type != arg.type:
                raise SimtifyError(f"warp region argument {i} goes in as {operand.type} (a lane's share) and is "
                                   f"used as {arg.type} inside: xegpu-sg-to-lane does not put lane shares back "
                                   "together into a subgroup's value; pass it whole (or through memory)", where)
        if warp_region.crosses_whole(warp):
            warp_region.open_region(warp)
        else:
            warp_region.hoist_body(warp)


def _check_lane_counts(func: Operation, analysis: XeGPULayouts) -> None:
    """A lane layout must divide the subgroup: its lanes are the lanes that run, fewer of
    them wrapping around it as upstream's lane ids do (lane ``l`` is lane ``l % lanes``).
    Refused here, not by the simulator after distribution."""
    for op in func.walk():
        for value in op.results:
            layout = analysis.layouts.get(value)
            lanes = flatten(layout)[0].lane_layout if layout is not None else None
            if lanes and analysis.subgroup_size % prod(lanes):
                raise SimtifyError(f"lane_layout {list(lanes)} has {prod(lanes)} lanes, but XeGPU code runs on "
                                   f"{analysis.subgroup_size}-lane subgroups; give the layout a number of lanes "
                                   f"that divides {analysis.subgroup_size}", location_of(op))


def xegpu_distribute(module: ModuleOp, opts) -> None:
    for func in functions(module, XEGPU_FUNCTIONS):
        _wg_to_sg(func, opts, inst=True, lanes=True)
        _blocking(func, opts, lanes=True)
        _sg_to_lane(func, opts)
