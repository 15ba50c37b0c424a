"""Launching a function: find it, pick grid, block, subgroup size and level, bind its
arguments to buffers, and run its workgroups in batches."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from math import prod

import numpy as np
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Operation

from simtify.errors import SimtifyError
from simtify.ir.effects import is_per_thread
from simtify.sim.arguments import (MAX_ELEMENTS, argument_shape, argument_value, bind, check_shapes, pointer_arguments,
                                   pointer_extent, random_array, shared_contents)
from simtify.sim.counters import Counters
from simtify.sim.grid import WORKGROUP_COUNT
from simtify.sim.interpreter import BatchState, Interpreter
from simtify.sim.liveness import max_registers_per_thread
from simtify.sim.ops.memref import allocate, row_major_strides, type_strides
from simtify.sim.ops.vector import held_as_view
from simtify.sim.split_grid import processes_for, run_split
from simtify.target import Target, get_target

# Threads (or tile elements) in flight per batch: bounds memory, keeps numpy calls large.
BATCH_ELEMENTS = 1 << 22
# The most element-steps (workgroups x per-workgroup elements) one launch may ask for: a
# simulator runs ~10^7 a second, so a mistyped --grid would otherwise hang for hours.
MAX_LAUNCH_ELEMENTS = 1 << 32


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    subgroup_size: int
    level: str  # "simt" or "workgroup"

    @property
    def num_workgroups(self) -> int:
        return prod(self.grid)

    @property
    def threads(self) -> int:
        return prod(self.block) if self.level == "simt" else 1

    @property
    def padded_threads(self) -> int:
        """Threads the simulator runs per workgroup: whole subgroups. A block that is not
        whole subgroups runs ceil(threads / subgroup size) of them, as hardware does; the
        lanes past `threads` in the last one are inactive from the start."""
        if self.level != "simt":
            return self.threads
        return -(-self.threads // self.subgroup_size) * self.subgroup_size


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]  # memref arguments the kernel wrote, by name
    arguments: dict[str, np.ndarray]  # every memref argument after the run
    returns: list[np.ndarray]
    stats: dict[str, int]
    stats_by_op: dict[str, dict[str, int]]
    findings: list
    launch: Launch
    timing: dict[str, float] = field(default_factory=dict)
    unwritten: dict[str, int] = field(default_factory=dict)  # outputs: elements the launch never wrote


def find_function(module: Operation, name: str) -> Operation:
    funcs = [op for op in module.walk() if op.name in ("func.func", "gpu.func")]
    for f in funcs:
        if f.sym_name.data == name:
            if not f.body.blocks:
                raise SimtifyError(f"function '@{name}' is only declared, it has no body", "--func")
            return f
    have = ", ".join(sorted(f.sym_name.data for f in funcs)) or "none"
    raise SimtifyError(f"no function named '{name}' (functions: {have})", "--func")


def function_args(func: Operation) -> list[tuple[str, object]]:
    """(name, type) of the function's inputs, named as the text writes them without `%`;
    for an IREE dispatch function (no arguments, HAL bindings), its ``bindingN`` buffers."""
    n_inputs = len(func.function_type.inputs.data)
    if n_inputs == 0:
        from simtify.sim.dispatch import dispatch_bindings, is_dispatch

        if is_dispatch(func):
            return dispatch_bindings(func)
    out = []
    for i, a in enumerate(list(func.body.blocks.first.args)[:n_inputs]):
        out.append((a.name_hint or f"arg{i}", a.type))
    return out


def recorded_grid(func: Operation) -> tuple[int, ...] | None:
    attr = func.attributes.get(WORKGROUP_COUNT)
    if attr is not None and hasattr(attr, "get_values"):
        return tuple(int(x) for x in attr.get_values())
    return None


def default_grid(func: Operation) -> tuple[int, ...] | None:
    """The grid to launch when none is given: what the function records (a pipeline's
    ``simtify.workgroup_count``, a gpu.func's ``known_grid_size``, an IREE dispatch's
    workgroup forall or count hint), else what its writes imply (`simtify.sim.grid`)."""
    from simtify.sim.dispatch import dispatch_grid
    from simtify.sim.grid import implied_grid, known_grid_size

    return recorded_grid(func) or known_grid_size(func) or dispatch_grid(func) or implied_grid(func)


def _recorded_sizes(func: Operation) -> tuple[tuple[int, ...] | None, int | None]:
    info = func.attributes.get("translation_info")
    if info is not None and hasattr(info, "workgroup_size"):
        return info.workgroup_size, info.subgroup_size
    known = func.properties.get("known_block_size") if hasattr(func, "properties") else None
    # a func.func records it as a discardable attribute (IREE's LLVMGPUDistribute
    # pipeline keeps only that after its translation_info is dropped)
    known = known or func.attributes.get("gpu.known_block_size")
    if known is not None:
        return tuple(int(x) for x in known.get_values()), None
    from simtify.sim.dispatch import dispatch_config_sizes

    return dispatch_config_sizes(func)


def _xyz(sizes, what: str) -> tuple[int, int, int]:
    sizes = tuple(int(s) for s in sizes)
    if not 1 <= len(sizes) <= 3 or any(s < 1 for s in sizes):
        raise SimtifyError(f"{what} must be 1 to 3 positive sizes, got {list(sizes)}", f"--{what}")
    return tuple(sizes) + (1,) * (3 - len(sizes))


def first_simt_op(func: Operation) -> Operation | None:
    """The first op that makes `func` a SIMT-level (per-thread) program, or None."""
    from simtify.sim.ops.xegpu import is_lane_level

    # a barrier alone does not make a program per-thread: workgroup-level XeGPU code that
    # exchanges data through shared local memory has one and no thread ids; nor does a
    # to_simt whose registers only go back through to_simd (the pair is the identity)
    return next((op for op in func.walk() if (is_per_thread(op) and op.name != "gpu.barrier"
                                              and not _cancelled_to_simt(op) and not _tensor_dma(op))
                 or is_lane_level(op)), None)


def _tensor_dma(op: Operation) -> bool:
    """A global_load_dma on tensors: a value of the workgroup's, before bufferization."""
    return op.name == "iree_gpu.global_load_dma" and op.result is not None


def _cancelled_to_simt(op: Operation) -> bool:
    return op.name == "iree_vector_ext.to_simt" and bool(op.results[0].uses) and all(
        use.operation.name == "iree_vector_ext.to_simd" for use in op.results[0].uses)


def detect_level(func: Operation) -> str:
    return "simt" if first_simt_op(func) is not None else "workgroup"


def random_inputs(func: Operation, seed: int = 0, shapes: dict | None = None) -> dict[str, np.ndarray]:
    """Random, never-zero values for every argument (`simtify.sim.arguments.random_array`),
    the dynamic dims of memrefs from `shapes` (argument name -> whole shape); index
    arguments are left for the caller to choose."""
    rng = np.random.default_rng(seed)
    args = function_args(func)
    check_shapes(args, shapes or {})
    names = [n for n, _ in args]
    pointers = pointer_arguments(func, names)
    out = {name: random_array(t, argument_shape(name, t, shapes), rng) for name, t in args if name not in pointers}
    for name, elem in pointers.items():  # the memory there reaches as far as the other arguments say
        out[name] = random_array(elem, (pointer_extent(func, names, name, out),), rng)
    return {name: out[name] for name in names}


def run(module: Operation, func_name: str, args: dict[str, np.ndarray], *, grid=None, block=None,
        target: str | Target = "gfx942", sanitize: bool = True, subgroup_size: int | None = None,
        level: str | None = None, progress=None, jobs: int | None = None) -> RunResult:
    """Run `func_name` of `module` on `args` (name -> array); `progress(done, total)`, if
    given, is told the workgroups done after each batch. `jobs`: processes to share the
    batches (`simtify.sim.split_grid`; default: every core when the launch is large)."""
    t0 = time.perf_counter()
    tgt = get_target(target) if isinstance(target, str) else target
    func = find_function(module, func_name)
    rec_block, rec_sg = _recorded_sizes(func)
    level = level or detect_level(func)
    if block is None:
        if rec_block is None and level == "simt":
            raise SimtifyError("the function records no workgroup size; give --block", "--block")
        block = rec_block or (1,)
    block = _xyz(block, "block")
    if rec_block is not None and block != _xyz(rec_block, "block"):
        raise SimtifyError(f"the function is compiled for workgroups of {list(_xyz(rec_block, 'block'))} threads, "
                           f"not {list(block)}", "--block")
    if subgroup_size is not None and rec_sg is not None and int(subgroup_size) != int(rec_sg):
        raise SimtifyError(f"the function is compiled for subgroups of {rec_sg} lanes, not {subgroup_size}",
                           "--subgroup-size")
    launch = Launch(
        grid=_xyz(grid or default_grid(func) or (1,), "grid"),
        block=block,
        subgroup_size=int(subgroup_size or rec_sg or tgt.subgroup_size),
        level=level,
    )
    if launch.level == "simt":
        if tgt.vendor != "intel" and any(op.name.startswith("xegpu.") for op in func.walk()):
            # its lane code is compiled for Xe's subgroups: another target's lanes would compute garbage
            raise SimtifyError(f"per-lane XeGPU code runs on Intel Xe GPUs, not {tgt.name}; give --target xe",
                               "--target")
        _check_launch(launch, tgt, "--subgroup-size" if subgroup_size or not rec_sg else "--target")
    params = function_args(func)
    bound = bind(params, args, pointer_arguments(func, [n for n, _ in params]))
    buffers = bound.buffers
    counters = Counters()
    findings: list = []
    interp = Interpreter(launch, tgt, counters, findings, sanitize)
    interp.bindings = buffers  # the HAL bindings of a dispatch function (`simtify.sim.dispatch`)
    T, T_run = launch.threads, launch.padded_threads
    # threads past the block (padding of the last subgroup) never become active
    real = None if T_run == T else (np.arange(T_run) < T).reshape(1, T_run)
    n_wg = launch.num_workgroups
    per_wg = T_run * max(1, _largest_vector(func))
    if per_wg > MAX_ELEMENTS:
        raise SimtifyError(f"its largest vector times {T_run} thread(s) is {per_wg} elements per workgroup, more than "
                           f"the simulator holds ({MAX_ELEMENTS}); simulate a smaller shape", f"@{func_name}")
    if n_wg * per_wg > MAX_LAUNCH_ELEMENTS:
        raise SimtifyError(f"{n_wg} workgroups of {per_wg} elements each are more than the simulator runs "
                           f"({MAX_LAUNCH_ELEMENTS} in all); give a smaller grid", "--grid")
    held = _largest_vector(func, lambda op: held_as_view(op, interp.fact))
    batch = max(1, min(n_wg, BATCH_ELEMENTS // (T_run * max(1, held))))
    wanted = processes_for(func, n_wg * per_wg, n_wg, jobs)
    if -(-n_wg // batch) < wanted:  # a batch for each process that shares the launch
        batch = -(-n_wg // wanted)
    for plane in (launch.grid[0] * launch.grid[1], launch.grid[0]):  # whole rows of the grid per batch:
        if plane <= batch < n_wg:  # block ids stay affine in the batch's digits
            batch -= batch % plane
            break
    n_inputs = len(func.function_type.inputs.data)
    block_args = list(func.body.blocks.first.args)
    starts = range(0, n_wg, batch)

    def run_batch(i: int) -> list:
        start = starts[i]
        W = min(batch, n_wg - start)
        interp.state = BatchState(W, T_run, np.arange(start, start + W), mask=real)
        given = {name: argument_value(interp, name, t, bound, _strides) for name, t in params}
        values = list(given.values())[:n_inputs]  # (a dispatch function's bindings are not block arguments)
        for a in block_args[n_inputs:]:  # gpu.func workgroup/private attributions
            values.append(allocate(interp, a.name_hint or "attribution", a.type, tuple(a.type.get_shape())))
        # what each batch leaves in shared-memory arguments rides with its returned values
        return interp.run_block(func.body.blocks.first, values) + shared_contents(interp, bound, given)

    told = None if progress is None else (lambda done: progress(min(n_wg, done * batch), n_wg))
    t1 = time.perf_counter()
    processes = min(wanted, len(starts))
    if processes > 1:
        returns = run_split(interp, buffers, len(starts), run_batch, processes, told)
    else:
        returns = []
        for i in range(len(starts)):
            returns.append(run_batch(i))
            if told is not None:
                told(i + 1)
    t2 = time.perf_counter()
    stats = counters.to_json()
    stats["max_registers_per_thread"] = max_registers_per_thread(func) if launch.level == "simt" else 0
    arguments = {name: buf.data.reshape(buf.data_shape) for name, buf in buffers.items()}
    outputs = {name: arguments[name] for name, buf in buffers.items() if buf.written}
    unwritten = {name: int(buf.wrote.size - np.count_nonzero(buf.wrote)) for name, buf in buffers.items()
                 if buf.written and buf.wrote is not None}
    # returned values per workgroup: each batch's values, widened to its workgroups, in order
    sizes = [min(batch, n_wg - s) for s in range(0, n_wg, batch)]
    rets = [np.concatenate([np.broadcast_to(np.asarray(r[i]), (w,) + np.asarray(r[i]).shape[1:])
                            for w, r in zip(sizes, returns)])
            for i in range(len(returns[0]))] if returns and returns[0] else []
    n_shared = 2 * len(bound.shared)
    rets, shared = (rets[:len(rets) - n_shared], rets[len(rets) - n_shared:]) if n_shared else (rets, [])
    for name, contents, wrote in zip(bound.shared, shared[::2], shared[1::2]):
        arguments[name] = contents
        if wrote.any():
            outputs[name] = contents
    rets = [r[:, :T] if r.ndim >= 2 and r.shape[1] == T_run else r for r in rets]  # real threads only
    return RunResult(outputs, arguments, rets, stats, counters.by_op_json(), findings, launch,
                     {"simulate_s": t2 - t1, "setup_s": t1 - t0, "processes": processes}, {k: n for k, n in unwritten.items() if n})


def _check_launch(launch: Launch, tgt: Target, where: str) -> None:
    """A launch the target can run. A block need not be whole subgroups: its last
    subgroup runs with the lanes past the block inactive."""
    threads = prod(launch.block)
    if threads > tgt.max_workgroup_size:
        raise SimtifyError(f"{threads} threads per workgroup exceed {tgt.name}'s limit of {tgt.max_workgroup_size}",
                           "--block")
    for axis, size, limit in zip("xyz", launch.block, tgt.max_workgroup_dims):
        if size > limit:
            raise SimtifyError(f"{size} threads along {axis} exceed {tgt.name}'s limit of {limit}", "--block")
    if launch.subgroup_size not in tgt.supported_subgroup_sizes:
        raise SimtifyError(f"{tgt.name} runs subgroups of {' or '.join(map(str, tgt.supported_subgroup_sizes))} "
                           f"lanes, not {launch.subgroup_size}", where)


def _largest_vector(func: Operation, held_as_view=lambda op: False) -> int:
    """The largest vector `func` makes; with `held_as_view`, the largest the simulator holds
    per thread (what bounds a batch's memory): values it keeps as views of memory or of a
    smaller value take none of their own."""
    n = 1
    for op in func.walk():
        if held_as_view(op):
            continue
        for r in op.results:
            if isinstance(r.type, VectorType):
                n = max(n, prod(r.type.get_shape()))
    return n


def _strides(t: MemRefType | None, shape) -> tuple[int, ...]:
    """A memref type's strides (row-major where there is no type: a descriptor's memory)."""
    return type_strides(t, shape) if t is not None else row_major_strides(shape)
