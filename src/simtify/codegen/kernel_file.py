"""One emitted file: the function to emit and its launch (block, grid, subgroup size),
its parameters (global buffers and scalars), gpu.func attributions, and the CUDA/HIP
kernel around a `KernelWriter` body."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Operation

from simtify.codegen.c_values import Val, memory_space
from simtify.codegen.expressions import Fact
from simtify.codegen.kernel_writer import XE_ONLY, KernelWriter
from simtify.codegen.launch import LaunchDescription
from simtify.errors import SimtifyError
from simtify.ir import location_of


def function_inputs(func: Operation) -> list:
    """The entry block arguments that are the function's inputs (not gpu.func
    attributions)."""
    n = len(func.function_type.inputs.data)
    return list(func.body.blocks.first.args)[:n]


@dataclass
class EmittedKernel:
    """One emitted file: its text and how to launch what it defines."""

    language: str  # "cuda", "hip", "host"
    source: str
    launch: LaunchDescription


def emission_target(target, vendor: str | None = None, refusal: str = ""):
    """The Target, given by name or as one; a language that runs on one vendor's GPUs
    refuses the others' (`refusal` says which it takes)."""
    from simtify.target import get_target

    tgt = get_target(target) if isinstance(target, str) else target
    if vendor is not None and tgt.vendor != vendor:
        raise SimtifyError(f"{refusal}, not {tgt.name}", "--target")
    return tgt


def kernel_setup(module: Operation, func_name: str, target, grid, block, subgroup_size=None):
    """The function to emit and its launch: block and subgroup size from the options,
    else what the function records (translation_info / known_block_size)."""
    from simtify.codegen.launch import recorded_block, xyz
    from simtify.sim import find_function
    from simtify.sim.launch import default_grid

    func = find_function(module, func_name)
    xe = next((op for op in func.walk() if op.name.startswith("xegpu.")), None)
    if xe is not None:  # before the subgroup size, whose advice does not apply
        raise SimtifyError(f"'{xe.name}': cannot emit this op ({XE_ONLY})", location_of(xe))
    rec_block, rec_sg = recorded_block(func)
    if block is None:
        block = rec_block
    if block is None:
        if any(op.name.startswith("iree_vector_ext.") for op in func.walk()):
            raise SimtifyError("a workgroup-level program: distribute it first (e.g. --pipeline "
                               "nested-distribute-shuffles)", "emit")
        raise SimtifyError("the function records no workgroup size (translation_info or known_block_size); "
                           "give --block", "--block")
    block = xyz(block, "block")
    grid = xyz(grid or default_grid(func) or (1,), "grid")
    sg = subgroup_size or rec_sg or target.subgroup_size
    if sg not in target.supported_subgroup_sizes:
        raise SimtifyError(f"the function is distributed for {sg}-lane subgroups; {target.name} runs "
                           f"{' or '.join(map(str, target.supported_subgroup_sizes))} lanes "
                           f"(distribute it with --target {target.name})", "--target")
    if prod(block) > target.max_workgroup_size:
        raise SimtifyError(f"{prod(block)} threads per workgroup exceed {target.name}'s {target.max_workgroup_size}",
                           "--block")
    return func, grid, block, sg


def bind_arguments(writer: KernelWriter, func: Operation, *, restrict: str = "__restrict__") -> tuple[list[str], list]:
    """Name the function's inputs as kernel parameters; returns (C parameters,
    KernelArg descriptions)."""
    from simtify.codegen.launch import (
        KernelArg,
        memref_access,
        read_memrefs,
        written_memrefs,
    )

    written, read = written_memrefs(func), read_memrefs(func)
    params, args = [], []
    for i, a in enumerate(function_inputs(func)):
        name = writer.names.fresh(a.name_hint or f"arg{i}")
        if isinstance(a.type, MemRefType):
            if memory_space(a.type) != "global":
                raise SimtifyError(f"argument {name} is in {memory_space(a.type)} memory; kernel arguments are "
                                   "global buffers", "--func")
            m = writer.bind_memref(a, name, "global")
            access = memref_access(a, written, read)
            const = "const " if access == "read" else ""
            params.append(f"{const}{m.ctype}* {restrict} {name}".replace("  ", " "))
            args.append(KernelArg(a.name_hint or f"arg{i}", "buffer", m.ctype, m.shape, access, name))
        elif isinstance(a.type, VectorType):
            raise SimtifyError(f"argument {name} is a vector; kernels take buffers and scalars", "--func")
        else:
            ct = writer.ctype(a.type)
            writer.vals[a] = Val(ct, (), "var", name)
            writer.immutable.add(name)
            writer.facts[name] = Fact(False, 1)
            params.append(f"{ct} {name}")
            args.append(KernelArg(a.name_hint or f"arg{i}", "scalar", ct, (), "value", name))
    return params, args


def bind_attributions(writer: KernelWriter, func: Operation) -> None:
    """gpu.func workgroup(...) and private(...) buffers."""
    if func.name != "gpu.func":
        return
    _inputs, workgroup, private = func.argument_groups()
    for a in workgroup:
        writer.workgroup_array(a, writer.ctype(a.type), prod(a.type.get_shape()))
    for a in private:
        ct = writer.ctype(a.type)
        writer.bind_memref(a, writer.private_array(a, ct, prod(a.type.get_shape())), "private")


def comment(lines: list[str]) -> str:
    return "".join(f"// {x}\n" if x else "//\n" for x in lines)


def emit_kernel(writer_cls, module: Operation, func_name: str, target, *, grid=None, block=None,
                subgroup_size=None, name: str | None = None, prelude: str, qualifier: str) -> EmittedKernel:
    """The kernel file: launch comment, prelude, and the ``extern "C"`` kernel (named
    `name`, default the function's name)."""
    func, grid, block, sg = kernel_setup(module, func_name, target, grid, block, subgroup_size)
    w = writer_cls(func, block=block, subgroup_size=sg, target=target)
    name = w.names.fresh(name or func_name)
    params, args = bind_arguments(w, func)
    bind_attributions(w, func)
    w.emit_block(func.body.blocks.first)
    launch = LaunchDescription(name, grid, block, sg, w.shared_bytes, 0, tuple(args))
    threads = block[0] * block[1] * block[2]
    head = comment([f"{w.language_name()} kernel emitted by simtify from @{func_name} for {target.name} "
                    f"({target.part})"] + launch.comment_lines())
    sig = f'extern "C" {qualifier} void __launch_bounds__({threads}) {name}({", ".join(params)})'
    body = ["  " + t for t in w.top] + w.lines
    return EmittedKernel(w.language, f"{head}{prelude}\n{sig} {{\n" + "\n".join(body) + "\n}\n", launch)
