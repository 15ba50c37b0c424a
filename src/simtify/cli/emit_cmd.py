"""`simtify emit cuda|hip|host FILE.mlir --func NAME [--target T] [-o FILE]`: GPU source
from SIMT-level MLIR.

``cuda`` writes a CUDA C++ kernel (sm_90), ``hip`` a HIP C++ kernel (gfx942, gfx950),
``host`` a C++ program that runs the same body on the CPU one workgroup at a time
(threads as loops, phases between barriers and shuffles) for checking with g++. Every
file starts with its launch description (grid, block, shared memory, argument order);
``--launch FILE.json`` writes it as JSON. A workgroup-level input can be distributed
first with ``--pipeline`` (e.g. nested-distribute-shuffles). ``--check`` compiles the
output (nvcc / hipcc / g++, when on PATH) and prints, for CUDA, the registers and shared
memory ptxas reports next to the simulator's register estimate.
"""

from __future__ import annotations

import sys

from simtify.errors import SimtifyError

LANGUAGES = {"cuda": "sm_90", "hip": "gfx942", "host": "sm_90"}


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise SimtifyError(f"expected sizes like 4 or 3,2 ; got '{text}'", "--grid/--block") from None
    if not 1 <= len(sizes) <= 3 or any(s < 1 for s in sizes):
        raise SimtifyError(f"expected 1 to 3 positive sizes, got '{text}'", "--grid/--block")
    return sizes


def add_parser(sub, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__.split("\n\n")[1])
    p.add_argument("language", choices=sorted(LANGUAGES), help="cuda, hip or host (the host emulation)")
    p.add_argument("file", metavar="FILE.mlir", help="SIMT-level MLIR ('-' reads standard input, example:NAME a "
                                                       "built-in example)")
    p.add_argument("--func", help="function to emit (default: the only one)")
    p.add_argument("--target", help="sm_90 for cuda; gfx942 or gfx950 for hip (default: sm_90 / gfx942; for host, "
                                    "the one whose subgroup size the function records)")
    p.add_argument("--grid", type=_sizes, help="workgroups X[,Y,Z] for the launch description (default: what the "
                   "function records or its writes imply, else 1)")
    p.add_argument("--block", type=_sizes, help="threads per workgroup X[,Y,Z] (default: what the function records)")
    p.add_argument("--subgroup-size", type=int, help="lanes per subgroup (default: recorded, else the target's)")
    p.add_argument("--pipeline", help="distribute the input first with this pipeline (see simtify opt --list-pipelines)")
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="where to write the source (default: stdout)")
    p.add_argument("--launch", metavar="FILE.json", help="also write the launch description as JSON")
    p.add_argument("--check", action="store_true", help="compile the output and report (registers, shared memory)")
    p.add_argument("--json", action="store_true",
                   help='print {"language", "target", "kernel", "launch", "source"} instead of the source '
                        "(with -o FILE the source is written there too)")
    p.set_defaults(run=run)


def _only_function(module, given: str | None) -> str:
    if given:
        return given
    funcs = [op.sym_name.data for op in module.walk() if op.name in ("func.func", "gpu.func") and op.body.blocks]
    if len(funcs) != 1:
        raise SimtifyError(f"give --func (functions: {', '.join(funcs) or 'none'})", "--func")
    return funcs[0]


def _default_target(language: str, module, func: str | None) -> str:
    """cuda: sm_90, hip: gfx942; host: the target whose subgroup size the function records
    (before any pipeline: IREE's inputs record it in their translation_info)."""
    if language != "host":
        return LANGUAGES[language]
    from simtify.codegen.launch import recorded_block
    from simtify.sim import find_function

    try:
        _, sg = recorded_block(find_function(module, _only_function(module, func)))
    except SimtifyError:
        return LANGUAGES[language]
    return "gfx942" if sg == 64 else "sm_90"


def run(args) -> int:
    from simtify.cli.opt_cmd import read_source, write_output
    from simtify.ir import parse
    from simtify.target import get_target

    text, name = read_source(args.file)
    module = parse(text, name)
    target = args.target or _default_target(args.language, module, args.func)
    get_target(target)
    if args.pipeline:
        from simtify.transforms.pipelines import Options, run_pipeline

        run_pipeline(module, args.pipeline, Options(target, args.subgroup_size))
    from simtify.codegen import emit

    func = _only_function(module, args.func)
    if args.subgroup_size is not None and args.subgroup_size < 1:
        raise SimtifyError(f"subgroup size {args.subgroup_size} must be positive", "--subgroup-size")
    if args.block is not None:
        from simtify.codegen.launch import recorded_block, xyz
        from simtify.sim import find_function

        recorded, _ = recorded_block(find_function(module, func))
        if recorded is not None and xyz(args.block, "block") != recorded:
            raise SimtifyError(f"the function is compiled for workgroups of {list(recorded)} threads, "
                               f"not {list(xyz(args.block, 'block'))}", "--block")
    kernel = emit(args.language, module, func, target, grid=args.grid, block=args.block,
                  subgroup_size=args.subgroup_size)
    if args.json:
        import json

        if args.output != "-":
            write_output(args.output, kernel.source)
        print(json.dumps({"language": args.language, "target": target, "kernel": kernel.launch.kernel,
                          "launch": kernel.launch.as_dict(), "source": kernel.source}))
    else:
        write_output(args.output, kernel.source)
    if args.launch:
        write_output(args.launch, kernel.launch.to_json())
    if args.check:
        check(args.language, kernel, module, func, target)
    return 0


def check(language: str, kernel, module, func: str, target: str) -> None:
    """Compile `kernel` and report to stderr; say so and go on when the compiler is absent."""
    import tempfile

    from simtify.codegen import toolchain

    tool = {"cuda": "nvcc", "hip": "hipcc", "host": "g++"}[language]
    if not toolchain.have(tool):
        print(f"check: {tool} is not on PATH; not compiled", file=sys.stderr)
        return
    name = f"{kernel.launch.kernel}.{'cu' if language == 'cuda' else 'hip' if language == 'hip' else 'cpp'}"
    if language == "cuda":
        rep = toolchain.compile_cuda({name: kernel.source}, arch=target)
    elif language == "hip":
        rep = toolchain.compile_hip({name: kernel.source}, arch=target)
    else:
        with tempfile.TemporaryDirectory() as d:
            rep = toolchain.compile_host(kernel.source, f"{d}/{kernel.launch.kernel}")
    for line in rep.errors + rep.warnings:
        print(f"check: {line}", file=sys.stderr)
    if not rep.ok:
        raise SimtifyError(f"{tool} failed:\n{rep.log.strip()}", "check")
    status = "compiles" + (f" with {len(rep.warnings)} warning(s)" if rep.warnings else " with no warning")
    usage = rep.usage.get(kernel.launch.kernel)
    estimate = simulated_registers(module, func, target, kernel.launch)
    if usage is not None:
        status += (f"; ptxas: {usage.registers} registers, {usage.shared_bytes} bytes shared, "
                   f"{usage.spill_bytes} bytes spilled; simulator: {estimate} registers (live values, upper bound)")
    print(f"check: {kernel.launch.kernel}: {tool} {status}", file=sys.stderr)


def simulated_registers(module, func: str, target: str, launch) -> int | None:
    """The simulator's max_registers_per_thread: live per-thread values, in 32-bit words."""
    from simtify.sim import find_function
    from simtify.sim.liveness import max_registers_per_thread

    try:
        return max_registers_per_thread(find_function(module, func))
    except SimtifyError:
        return None
